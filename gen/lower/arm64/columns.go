package arm64

import (
	"fmt"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
)

// The Columns layout (ir.Columns) is lowered across rows: row r's element
// i is at i*stride + r, so the same element of four consecutive rows is
// one vector. The function runs the per-row program on blocks of four
// rows, one row per lane: every scalar of the program is a vector of the
// four rows' values (an SSum is the accumulator itself, with no
// horizontal sum; SDiv and SSqrt are the exact vector FDIV and FSQRT),
// and each ir.Loop steps through the h elements, u at a time, with the
// row cursors moving by stride floats each. A Param load is element i's
// value, broadcast. Each lane of an accumulator sums a whole row, in u
// partial sums, in chunks when h may exceed u*ir.SumChunk (loopColumns).
//
// The rows%4 left after the last block are not done: the function returns
// the rows of the blocks it completed and the Go caller does the rest (see
// target.Func.AsmSignature). A guard checks all four lanes and abandons
// the whole block, returning its first row, when any of them fails.

// columnsArgs loads h (when taken at run time) and stride*4, and turns
// l.rows into the number of blocks of four rows, leaving at once when
// there is none.
func (l *lowering) columnsArgs() {
	fn := l.fn
	if l.h == 0 {
		l.hReg = l.gp()
		fn.MOVD(l.shape["h"], l.hReg)
	}
	l.stride = l.gp()
	fn.MOVD(l.shape["stride"], l.stride)
	// With half storage the stride is in 16-bit units: the loops' row
	// arrays are then all half (accessColumns).
	fn.LSL(arm64asm.Imm(l.columnUnit()/2), l.stride, l.stride)
	fn.LSR(2, l.rows, l.rows)
	fn.CBZ(l.rows, exit)
}

// columnUnit is the size of the elements the stride counts: 2 when a row
// array is half, else 4.
func (l *lowering) columnUnit() int {
	if l.hasHalf() {
		return 2
	}
	return 4
}

// nextBlock moves every array but the Params to the next four rows: their
// element 0 (row arrays) or their value (per-row scalars) is four values on.
func (l *lowering) nextBlock() {
	l.fn.Comment("next block of 4 rows")
	for i, a := range l.k.Arrays {
		if a.Role != ir.Param {
			l.fn.ADD(arm64asm.Imm(4*a.Elem.Bytes()), l.base[i], l.base[i])
		}
	}
}

// emitScalarColumns writes st for the four rows of the block, one per
// lane of d. Row-invariant values (constants, 1/h) are computed as
// scalars and broadcast.
func (l *lowering) emitScalarColumns(st *ir.Scalar, d arm64asm.VReg) error {
	fn := l.fn
	arg := func(i int) arm64asm.VArr { return l.sReg[st.Args[i]].S4() }
	switch st.Code {
	case ir.SConst, ir.SInvLen, ir.SArg:
		if err := l.emitScalarLane(st, d); err != nil {
			return err
		}
		fn.VDUP(d.SLane(0), d.S4())
	case ir.SAdd:
		fn.VFADD(arg(1), arg(0), d.S4())
	case ir.SSub:
		fn.VFSUB(arg(1), arg(0), d.S4())
	case ir.SMul:
		fn.VFMUL(arg(1), arg(0), d.S4())
	case ir.SDiv:
		fn.VFDIV(arg(1), arg(0), d.S4())
	case ir.SSqrt:
		fn.VFSQRT(arg(0), d.S4())
	case ir.SLoad:
		// A per-row scalar of the block's rows, or their element 0: both
		// four consecutive values at the base.
		if e := l.elem(st.Array); e.Half() {
			fn.VLD1(arm64asm.Mem{Base: l.base[st.Array]}, d.List(1, arm64asm.H4))
			l.widen(e, d.H4(), d)
			break
		}
		fn.VLD1(arm64asm.Mem{Base: l.base[st.Array]}, d.List(1, arm64asm.S4))
	case ir.SStore:
		fn.VST1(l.sReg[st.Args[0]].List(1, arm64asm.S4), arm64asm.Mem{Base: l.base[st.Array]})
	default:
		return fmt.Errorf("unknown scalar op %v", st.Code)
	}
	return nil
}

// guardColumns leaves the block for the exit unless Lo <= v <= Hi in every
// lane: FCMGE gives all ones where v >= Lo and where Hi >= v, and zero
// where the compare fails or is unordered (NaN), so the AND of both masks
// is all ones exactly in the lanes that pass; its two halves ANDed in a
// general register are all ones (adding 1 gives 0) when every lane does.
// Infinite bounds are compared too: that is what catches NaN.
func (l *lowering) guardColumns(st *ir.Scalar) error {
	fn := l.fn
	v := l.sReg[st.Args[0]].S4()
	fn.Comment(l.k.BlockGuardText(st))
	lo, err := l.vreg()
	if err != nil {
		return err
	}
	hi, err := l.vreg()
	if err != nil {
		return err
	}
	l.constant(st.Lo, lo)
	fn.VDUP(lo.SLane(0), lo.S4())
	l.constant(st.Hi, hi)
	fn.VDUP(hi.SLane(0), hi.S4())
	fn.VFCMGE(lo.S4(), v, lo.S4()) // v >= Lo
	fn.VFCMGE(v, hi.S4(), hi.S4()) // Hi >= v
	fn.VAND(hi.B16(), lo.B16(), lo.B16())
	a, b := l.gp(), l.gp()
	fn.VMOVLane(lo.DLane(0), a)
	fn.VMOVLane(lo.DLane(1), b)
	fn.AND(b, a, a)
	fn.ADD(arm64asm.Imm(1), a, a)
	fn.CBNZ(a, exit)
	l.gpFree(a)
	l.gpFree(b)
	l.vFree(lo, 1)
	l.vFree(hi, 1)
	return nil
}

// loopColumns lowers one sweep (statement si) over the h elements of the
// block's rows, u consecutive elements (one vector each) per iteration:
// element k of an iteration is k strides past the row cursors (p.off),
// which step by u strides, and the Param pointers step one float per
// element (accessColumns). Each accumulator keeps u partial sums, one per
// element of the iteration, so that u chains run at once; they are added
// pairwise at every fold and at the end (sums.go), each lane a row. When
// a chain may pass ir.SumChunk terms (a run-time h, or a fixed one of
// more than u*SumChunk) the sums run in chunks, as ir.BlockedSum does. The
// h%u elements left take one partial sum each: after the last (short)
// chunk, which holds fewer than SumChunk terms, so no chain passes it.
func (l *lowering) loopColumns(si int, lp *ir.Loop) error {
	l.loopN++
	fn, u := l.fn, l.u
	fn.Comment(fmt.Sprintf("pass %d over the block's rows: %s", l.k.Pass(lp), l.k.LoopText(lp)))
	p, err := l.plan(lp)
	if err != nil {
		return err
	}
	for _, acc := range p.accs {
		for c := 0; c < u; c++ {
			r := (p.acc[acc] + arm64asm.VReg(c)).B16()
			fn.VEOR(r, r, r)
		}
	}
	// Registers: the cursors, u-1 offsets, a store address, the counter
	// and the chunk counters. Short of them, a smaller unroll is tried.
	stores := false // or half loads: both go through an address register
	for _, op := range lp.Ops {
		stores = stores || op.Code == ir.VStore || op.Code == ir.VLoad && l.elem(op.Array).Half()
		if (op.Code == ir.VLoad || op.Code == ir.VStore) && l.k.Arrays[op.Array].Role != ir.Param && l.elem(op.Array).Bytes() != l.columnUnit() {
			return fmt.Errorf("a Columns loop over float32 and half row arrays (%s)", l.k.Arrays[op.Array].Name)
		}
	}
	if l.gpLeft() < len(p.final)+u-1+b2i(stores)+1+2 {
		return errPressure
	}
	var arrays []int // row arrays, each with a cursor stepping by the stride
	for a := range l.k.Arrays {
		if _, ok := p.final[a]; ok {
			p.cursor[a] = l.gp()
			fn.MOVD(l.base[a], p.cursor[a])
			if l.k.Arrays[a].Role != ir.Param {
				arrays = append(arrays, a)
			}
		}
	}
	p.off = make([]arm64asm.Reg, u+1)
	p.off[1] = l.stride
	for k := 2; k <= u; k++ {
		p.off[k] = l.gp()
		fn.ADD(l.stride, p.off[k-1], p.off[k])
	}
	if stores {
		p.addr = l.gp()
	}
	label := func(s string) arm64asm.Label { return arm64asm.Label(fmt.Sprintf("pass%d%s", l.loopN, s)) }
	cnt := l.gp()
	advance := func(k int) {
		for _, a := range arrays {
			fn.ADD(p.off[k], p.cursor[a], p.cursor[a])
		}
	}
	iter := func() {
		l.body(p, u, 0, false)
		advance(u)
	}
	var sum *sums
	if l.h > 0 {
		main, rest := l.h/u, l.h%u
		chunks, super := chunked(main + b2i(rest > 0))
		switch {
		case chunks && len(p.accs) > 0:
			if sum, err = l.sumsStart(p, super); err != nil {
				return err
			}
			fn.MOVD(arm64asm.Imm(main), sum.rem)
			l.chunks(sum, p, cnt, label, iter)
		case main == 1:
			iter()
		case main > 1:
			fn.MOVD(arm64asm.Imm(main), cnt)
			fn.Label(label(""))
			iter()
			fn.SUBS(arm64asm.Imm(1), cnt, cnt)
			fn.BNE(label(""))
		}
		if rest > 0 {
			l.body(p, rest, 0, false)
		}
	} else {
		shift := 0
		for w := u; w > 1; w /= 2 {
			shift++
		}
		// n = h/u, the iterations.
		n := func(d arm64asm.Reg) {
			if shift > 0 {
				fn.LSR(arm64asm.Imm(shift), l.hReg, d)
			} else {
				fn.MOVD(l.hReg, d)
			}
		}
		if len(p.accs) > 0 {
			if sum, err = l.sumsStart(p, true); err != nil {
				return err
			}
			n(sum.rem)
			l.chunks(sum, p, cnt, label, iter)
		} else {
			n(cnt)
			fn.CBZ(cnt, label("done"))
			fn.Label(label(""))
			iter()
			fn.SUBS(arm64asm.Imm(1), cnt, cnt)
			fn.BNE(label(""))
			fn.Label(label("done"))
		}
		// The h%u elements left, one partial sum each: the bits of h
		// below u, from the top.
		cb := 0
		for w := u / 2; w >= 1; w /= 2 {
			fn.AND(arm64asm.Imm(w), l.hReg, cnt)
			fn.CBZ(cnt, label(fmt.Sprintf("vec%dDone", w)))
			l.body(p, w, cb, false)
			if w > 1 {
				advance(w)
			}
			fn.Label(label(fmt.Sprintf("vec%dDone", w)))
			cb += w
		}
	}
	for _, acc := range p.accs {
		g := p.acc[acc]
		pairwise(fn, g, u)
		l.sumsInto(sum, acc, g)
		l.vFree(g+1, u-1)
	}
	l.sumsEnd(sum)
	l.release(p)

	l.gpFree(cnt)
	for a := range p.final {
		l.gpFree(p.cursor[a])
	}
	for k := 2; k <= u; k++ {
		l.gpFree(p.off[k])
	}
	if stores {
		l.gpFree(p.addr)
	}
	for _, acc := range p.accs {
		if l.sumsAfter(si, acc) == 0 {
			l.vFree(p.acc[acc], 1)
		} else {
			l.accOut[acc] = p.acc[acc]
		}
	}
	return nil
}

// accessColumns emits load or store op i of copies cb to cb+width-1, copy
// c being element c-cb past the cursors: element 0 at the cursor (VLD1,
// VST1), element k through the offset p.off[k] (a register-offset load; a
// store through an address added first, since that costs Neoverse N1 less
// than a register-offset store). A Param load is element k's value in
// every lane (LD1R), its pointer stepping one float per element; a load of
// the same Param before the last one steps it back.
func (l *lowering) accessColumns(p *loopPlan, i, width, cb int) {
	fn, op := l.fn, p.ops[i]
	cur := p.cursor[op.Array]
	if op.Code == ir.VLoad && l.k.Arrays[op.Array].Role == ir.Param {
		for c := cb; c < cb+width; c++ {
			fn.VLD1RP(cur, (p.reg[i]+arm64asm.VReg(c)).List(1, arm64asm.S4))
		}
		if p.final[op.Array] != i {
			fn.SUB(arm64asm.Imm(4*width), cur, cur)
		}
		return
	}
	if e := l.elem(op.Array); e.Half() {
		for c := cb; c < cb+width; c++ {
			at := cur
			if k := c - cb; k > 0 {
				fn.ADD(p.off[k], cur, p.addr)
				at = p.addr
			}
			if op.Code == ir.VLoad {
				d := p.reg[i] + arm64asm.VReg(c)
				fn.VLD1(arm64asm.Mem{Base: at}, d.List(1, arm64asm.H4))
				l.widen(e, d.H4(), d)
				continue
			}
			hs := p.half[i]
			l.narrow1(op.Array, hs, p.vec(op.Args[0], c), hs.out)
			fn.VST1(hs.out.List(1, arm64asm.H4), arm64asm.Mem{Base: at})
		}
		return
	}
	for c := cb; c < cb+width; c++ {
		k := c - cb
		if op.Code == ir.VLoad {
			d := p.reg[i] + arm64asm.VReg(c)
			if k == 0 {
				fn.VLD1(arm64asm.Mem{Base: cur}, d.List(1, arm64asm.S4))
			} else {
				fn.VLDRQ(cur, p.off[k], d.S4())
			}
			continue
		}
		src := p.vec(op.Args[0], c).List(1, arm64asm.S4) // a splat is stored as it is
		if k == 0 {
			fn.VST1(src, arm64asm.Mem{Base: cur})
		} else {
			fn.ADD(p.off[k], cur, p.addr)
			fn.VST1(src, arm64asm.Mem{Base: p.addr})
		}
	}
}

// gpLeft is the number of general registers free.
func (l *lowering) gpLeft() int {
	n := 0
	for _, r := range gpRegs {
		if !l.gpUsed[r] {
			n++
		}
	}
	return n
}
