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
// and each ir.Loop steps through the h elements with the row cursors
// moving by stride floats. A Param load is element i's value, broadcast.
// Each lane of an accumulator sums a whole row, in chunks when h may
// exceed ir.SumChunk (loopColumns).
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
	fn.LSL(2, l.stride, l.stride)
	fn.LSR(2, l.rows, l.rows)
	fn.CBZ(l.rows, exit)
}

// nextBlock moves every array but the Params to the next four rows: their
// element 0 (row arrays) or their value (per-row scalars) is four floats on.
func (l *lowering) nextBlock() {
	l.fn.Comment("next block of 4 rows")
	for i, a := range l.k.Arrays {
		if a.Role != ir.Param {
			l.fn.ADD(arm64asm.Imm(16), l.base[i], l.base[i])
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
		// four consecutive floats at the base.
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
	fn.Comment(fmt.Sprintf("guard: the block is left to the caller unless %g <= s%d <= %g in every lane", st.Lo, st.Args[0], st.Hi))
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
// block's rows: one vector per element, the row cursors stepping by the
// stride, the Param values broadcast at each step. The accumulators are
// per-row sums as they are, what the following SSum reads. When h may
// exceed ir.SumChunk (a run-time h, or a fixed one past it) they sum in
// chunks (sums.go), one lane per row, as ir.BlockedSum does; a fixed h of
// one chunk or less is summed as one, without the chunk loop.
func (l *lowering) loopColumns(si int, lp *ir.Loop) error {
	l.loopN++
	fn := l.fn
	fn.Comment(fmt.Sprintf("pass %d over the block's rows", l.loopN))
	p, err := l.plan(lp)
	if err != nil {
		return err
	}
	for _, acc := range p.accs {
		r := p.acc[acc].B16()
		fn.VEOR(r, r, r)
	}
	var arrays []int // row arrays, each with a cursor
	for a := range l.k.Arrays {
		if _, ok := p.final[a]; ok {
			arrays = append(arrays, a)
			p.cursor[a] = l.gp()
			fn.MOVD(l.base[a], p.cursor[a])
		}
		if _, ok := p.bparam[a]; ok {
			p.pcur[a] = l.gp()
			fn.MOVD(l.base[a], p.pcur[a])
		}
	}
	label := func(s string) arm64asm.Label { return arm64asm.Label(fmt.Sprintf("pass%d%s", l.loopN, s)) }
	cnt := l.gp()
	var h arm64asm.Operand = l.hReg
	if l.h > 0 {
		h = arm64asm.Imm(l.h)
	}
	iter := func() {
		l.broadcastParams(p)
		l.body(p, 1, 0, false)
		for _, a := range arrays {
			fn.ADD(l.stride, p.cursor[a], p.cursor[a])
		}
	}
	var sum *sums
	if chunks, super := chunked(l.h); chunks && len(p.accs) > 0 {
		if sum, err = l.sumsStart(p, super); err != nil {
			return err
		}
		fn.MOVD(h, sum.rem)
		l.chunks(sum, p, cnt, label, iter)
		for _, acc := range p.accs {
			l.sumsInto(sum, acc, p.acc[acc])
		}
		l.sumsEnd(sum)
	} else {
		fn.MOVD(h, cnt)
		top := label("")
		fn.Label(top)
		iter()
		fn.SUBS(arm64asm.Imm(1), cnt, cnt)
		fn.BNE(top)
	}

	l.gpFree(cnt)
	for _, a := range arrays {
		l.gpFree(p.cursor[a])
	}
	l.freeParams(p)
	for _, acc := range p.accs {
		if l.sumsAfter(si, acc) == 0 {
			l.vFree(p.acc[acc], 1)
		} else {
			l.accOut[acc] = p.acc[acc]
		}
	}
	return nil
}
