package arm64

import (
	"fmt"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
)

// loopPlan is the register assignment of one Loop, shared by its phases.
type loopPlan struct {
	ops    []ir.VecOp
	reg    []arm64asm.VReg // first register of each value's group; a splat's scalar register
	splat  []bool
	dead   []bool                // makes a value nobody reads: not emitted
	tmp    map[int]arm64asm.VReg // VStore of a splat: the group it is copied into
	half   map[int]halfStore     // VStore to a half array: the registers it narrows into
	acc    map[int]arm64asm.VReg // accumulator groups
	accs   []int                 // accumulators in order of first use
	cursor map[int]arm64asm.Reg  // array -> pointer walking the row
	final  map[int]int           // array -> its last access, the one that advances the cursor

	// Segments: a Param load is the broadcast of the segment's value, made
	// before the body and read like a splat (Columns: accessColumns).
	bparam map[int]arm64asm.VReg // Param array -> its broadcast register
	pcur   map[int]arm64asm.Reg  // Param array -> pointer to the next value
	// Segments: the scalar tail of every segment adds into these, so that
	// the accumulators' vector partial sums survive until the last segment.
	tailAcc map[int]arm64asm.VReg
	noPost  bool // Columns: no post-indexed accesses; the cursors step by the stride
	// stp: a float32 store -> how many of its register pairs the main
	// iteration stores by STP (storeform.go).
	stp map[int]int
	// Columns: off[k] holds k strides in bytes, the offset of an
	// iteration's k-th element from the cursors; addr is a store's address.
	off  []arm64asm.Reg
	addr arm64asm.Reg
	// held marks the registers of the body's values. plan frees a value's
	// group at its last use so that a later value of the body can take
	// it, and holds every such register again once the body is planned:
	// what the sweep allocates after plan (the sums' totals) must not take
	// a register the body writes. release frees them after the sweep.
	held [32]bool
}

// vec is the register of value v in unroll copy c.
func (p *loopPlan) vec(v ir.V, c int) arm64asm.VReg {
	if p.splat[v] {
		return p.reg[v]
	}
	return p.reg[v] + arm64asm.VReg(c)
}

// loop lowers one sweep over the row (statement si).
func (l *lowering) loop(si int, lp *ir.Loop) error {
	if l.k.Layout == ir.Columns {
		return l.loopColumns(si, lp)
	}
	l.loopN++
	if chainBound(l.k, lp) && l.u == unrolls[0] {
		// Twice the partial sums: with 4, the FMLA chains (4 cycles, 2 when
		// forwarded) leave the three load pipes of Neoverse V1/V2 idle.
		defer func(u int) { l.u = u }(l.u)
		l.u *= 2
	}
	fn, u := l.fn, l.u
	over := "the row"
	if l.k.Layout == ir.Segments {
		over = "the row, segment by segment"
	}
	fn.Comment(fmt.Sprintf("pass %d over %s: %s", l.k.Pass(lp), over, l.k.LoopText(lp)))
	p, err := l.plan(lp)
	if err != nil {
		return err
	}
	for _, acc := range p.accs {
		g := p.acc[acc]
		for c := 0; c < u; c++ {
			r := (g + arm64asm.VReg(c)).B16()
			fn.VEOR(r, r, r)
		}
	}
	arrays := make([]int, 0, len(p.cursor))
	for a := range l.k.Arrays {
		if _, ok := p.final[a]; ok {
			arrays = append(arrays, a)
		}
	}
	for _, a := range arrays {
		p.cursor[a] = l.gp()
		fn.MOVD(l.base[a], p.cursor[a])
	}
	cnt := l.gp()
	label := func(s string) arm64asm.Label { return arm64asm.Label(fmt.Sprintf("pass%d%s", l.loopN, s)) }
	segs := l.k.Layout == ir.Segments
	var segCnt arm64asm.Reg
	var sum *sums
	if segs {
		// The totals and the chunk's room last the whole row.
		if len(p.accs) > 0 {
			if sum, err = l.sumsStart(p, true); err != nil {
				return err
			}
		}
		segCnt = l.segmentsStart(p, label("seg"))
	}
	// counted repeats body n times, n in cnt; zero skips it.
	counted := func(name string, body func()) {
		fn.CBZ(cnt, label(name+"Done"))
		fn.Label(label(name))
		body()
		fn.SUBS(arm64asm.Imm(1), cnt, cnt)
		fn.BNE(label(name))
		fn.Label(label(name + "Done"))
	}

	// Sums by ir.BlockedSum (sums.go): a fixed H of at most SumChunk
	// iterations keeps its plain loop.
	start := func(super bool) error {
		if len(p.accs) == 0 {
			return nil
		}
		var err error
		sum, err = l.sumsStart(p, super)
		return err
	}
	iter := func() { l.body(p, u, 0, false) }
	if l.h > 0 {
		per := 4 * u
		main, vecs, tail := l.h/per, l.h%per/4, l.h%4
		if chunks, super := chunked(main); main > 0 && chunks {
			if err := start(super); err != nil {
				return err
			}
		}
		switch {
		case sum != nil:
			fn.MOVD(arm64asm.Imm(main), sum.rem)
			l.chunks(sum, p, cnt, label, iter)
		case main == 1:
			iter()
		case main > 1:
			fn.MOVD(arm64asm.Imm(main), cnt)
			fn.Label(label("main"))
			iter()
			fn.SUBS(arm64asm.Imm(1), cnt, cnt)
			fn.BNE(label("main"))
		}
		// Leftover vectors go to the partial sums in turn (vecs < u).
		for c := 0; c < vecs; c++ {
			l.body(p, 1, c, false)
		}
		l.reduce(p, l.h >= 4, sum)
		for i := 0; i < tail; i++ {
			l.body(p, 1, 0, true)
		}
	} else {
		shift := 2
		for w := u; w > 1; w /= 2 {
			shift++
		}
		if !segs {
			if err := start(true); err != nil {
				return err
			}
		}
		if sum != nil {
			fn.LSR(arm64asm.Imm(shift), l.hReg, sum.rem)
			l.chunks(sum, p, cnt, label, iter)
		} else {
			fn.LSR(arm64asm.Imm(shift), l.hReg, cnt)
			counted("main", iter)
		}
		if segs && sum != nil {
			l.segmentTails(sum, p, label)
		}
		// The (h/4)%u leftover vectors, one to each partial sum at most:
		// the bits of h/4 below u, from the top.
		cb := 0
		for w := u / 2; w >= 1; w /= 2 {
			fn.AND(arm64asm.Imm(4*w), l.hReg, cnt)
			fn.CBZ(cnt, label(fmt.Sprintf("vec%dDone", w)))
			l.body(p, w, cb, false)
			fn.Label(label(fmt.Sprintf("vec%dDone", w)))
			cb += w
		}
		if !segs {
			l.reduce(p, true, sum)
		}
		fn.AND(arm64asm.Imm(3), l.hReg, cnt)
		counted("tail", func() { l.body(p, 1, 0, true) })
	}
	if segs {
		l.segmentsEnd(p, segCnt, label("seg"), arrays, sum)
	}
	l.sumsEnd(sum)
	l.release(p)

	l.gpFree(cnt)
	for _, a := range arrays {
		l.gpFree(p.cursor[a])
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

// chainBound reports whether a Rows sweep only sums one streamed array's
// values or squares into one accumulator, one FP op a vector: its
// speed is then set by the accumulators' chains, not by the pipes.
func chainBound(k *ir.Kernel, lp *ir.Loop) bool {
	if k.Layout != ir.Rows {
		return false
	}
	loads, accs := 0, 0
	for _, op := range lp.Ops {
		switch op.Code {
		case ir.VLoad:
			loads++
		case ir.VAcc, ir.VAccMul:
			accs++
		default:
			return false
		}
	}
	return loads == 1 && accs == 1
}

// plan broadcasts the scalars the loop needs and assigns registers: a
// group of u for each accumulator and each value, a value's group reused
// by the first value computed from it at its last use (FMA: only its
// addend, which VFMLA accumulates into).
func (l *lowering) plan(lp *ir.Loop) (*loopPlan, error) {
	ops, u := lp.Ops, l.u
	p := &loopPlan{
		ops:    ops,
		reg:    make([]arm64asm.VReg, len(ops)),
		splat:  make([]bool, len(ops)),
		dead:   make([]bool, len(ops)),
		tmp:    map[int]arm64asm.VReg{},
		half:   map[int]halfStore{},
		acc:    map[int]arm64asm.VReg{},
		cursor: map[int]arm64asm.Reg{},
		final:  map[int]int{},
		bparam: map[int]arm64asm.VReg{},
		pcur:   map[int]arm64asm.Reg{},

		tailAcc: map[int]arm64asm.VReg{},
		noPost:  l.k.Layout == ir.Columns,
	}
	last := make([]int, len(ops))
	for i := range last {
		last[i] = -1
	}
	for i, op := range ops {
		for _, a := range op.Args {
			last[a] = i
		}
	}
	for i, op := range ops {
		switch {
		case op.Code == ir.VSplat:
			p.splat[i] = true
			p.reg[i] = l.sReg[op.Scalar]
			// A Columns scalar is already a vector of per-row values.
			if !l.inv[op.Scalar] && !l.bcast[op.Scalar] && l.k.Layout != ir.Columns {
				l.bcast[op.Scalar] = true
				r := l.sReg[op.Scalar]
				l.fn.VDUP(r.SLane(0), r.S4())
			}
		case op.Code.MakesValue() && last[i] < 0:
			p.dead[i] = true
		case op.Code == ir.VLoad && l.k.Arrays[op.Array].Role == ir.Param && l.k.Layout == ir.Segments:
			p.splat[i] = true
			r, ok := p.bparam[op.Array]
			if !ok {
				var err error
				if r, err = l.vreg(); err != nil {
					return nil, err
				}
				p.bparam[op.Array] = r
			}
			p.reg[i] = r
		case op.Code == ir.VLoad || op.Code == ir.VStore:
			p.final[op.Array] = i
		}
		if (op.Code == ir.VAcc || op.Code == ir.VAccMul) && !hasAcc(p, op.Acc) {
			g, err := l.group(u)
			if err != nil {
				return nil, err
			}
			p.acc[op.Acc] = g
			p.accs = append(p.accs, op.Acc)
			if l.k.Layout == ir.Segments {
				t, err := l.vreg()
				if err != nil {
					return nil, err
				}
				p.tailAcc[op.Acc] = t
			}
		}
	}
	for i, op := range ops {
		if p.splat[i] {
			continue
		}
		var dying []ir.V
		for _, a := range op.Args {
			if last[a] == i && !p.splat[a] && !containsV(dying, a) {
				dying = append(dying, a)
			}
		}
		reuse := ir.V(-1)
		switch {
		case p.dead[i] || !op.Code.MakesValue():
		case op.Code == ir.VFMA:
			if containsV(dying, op.Args[2]) {
				reuse = op.Args[2]
			}
		case len(dying) > 0:
			reuse = dying[0]
		}
		if !p.dead[i] && op.Code.MakesValue() {
			if reuse >= 0 {
				p.reg[i] = p.reg[reuse]
			} else {
				g, err := l.group(u)
				if err != nil {
					return nil, err
				}
				p.hold(g, u)
				p.reg[i] = g
			}
		}
		if op.Code == ir.VStore && l.elem(op.Array).Half() {
			hs, err := l.planHalfStore(op.Array)
			if err != nil {
				return nil, err
			}
			p.half[i] = hs
		} else if op.Code == ir.VStore && p.splat[op.Args[0]] {
			g, err := l.group(u)
			if err != nil {
				return nil, err
			}
			p.hold(g, u)
			p.tmp[i] = g
			l.vFree(g, u)
		}
		for _, a := range dying {
			if a != reuse {
				l.vFree(p.reg[a], u)
			}
		}
	}
	for r, h := range p.held {
		if h {
			l.vUsed[r] = true
		}
	}
	p.stp = l.storePairs(p)
	return p, nil
}

// hold marks the n registers from g as written by the body.
func (p *loopPlan) hold(g arm64asm.VReg, n int) {
	for r := g; r < g+arm64asm.VReg(n); r++ {
		p.held[r] = true
	}
}

// release frees the registers of the body's values, after the sweep.
func (l *lowering) release(p *loopPlan) {
	for r, h := range p.held {
		if h {
			l.vFree(arm64asm.VReg(r), 1)
		}
	}
}

func hasAcc(p *loopPlan, acc int) bool { _, ok := p.acc[acc]; return ok }

func containsV(vs []ir.V, v ir.V) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// body emits the loop body once: width vectors per op starting at unroll
// copy cb, or, when scalar, one element in the low lanes of copy 0 with
// the accumulators already reduced to scalars.
func (l *lowering) body(p *loopPlan, width, cb int, scalar bool) {
	fn := l.fn
	s4 := func(r arm64asm.VReg) arm64asm.VArr { return r.S4() }
	halfLoad := func(i int) bool {
		op := p.ops[i]
		return op.Code == ir.VLoad && l.elem(op.Array).Half() && !p.noPost && !p.splat[i] && !p.dead[i]
	}
	// Adjacent half loads issue their LD1s first and then widen vector by
	// vector, alternating between the arrays: vector k of every array is
	// ready early, so the ops combining them interleave with the
	// conversions (FCVTL issues on one pipe of N1 and N2) instead of
	// queueing behind all of them. The loads' groups are disjoint (all are
	// live until an op after them), so the order changes no value.
	var widens [][]func()
	flush := func() {
		n := 0
		for _, ws := range widens {
			n = max(n, len(ws))
		}
		for c := 0; c < n; c++ {
			for _, ws := range widens {
				if c < len(ws) {
					ws[c]()
				}
			}
		}
		widens = nil
	}
	for i, op := range p.ops {
		if p.splat[i] || p.dead[i] {
			continue
		}
		a := func(j int) ir.V { return op.Args[j] }
		cur := p.cursor[op.Array]
		post := p.final[op.Array] == i && !p.noPost
		if halfLoad(i) {
			widens = append(widens, l.loadHalf(op.Array, cur, p.reg[i]+arm64asm.VReg(cb), width, post, scalar))
			next := i + 1
			for next < len(p.ops) && (p.splat[next] || p.dead[next]) {
				next++
			}
			if scalar || next == len(p.ops) || !halfLoad(next) {
				flush()
			}
			continue
		}
		if op.Code == ir.VStore && l.elem(op.Array).Half() && !p.noPost {
			val := func(c int) arm64asm.VReg { return p.vec(a(0), cb+c) }
			l.storeHalf(op.Array, p.half[i], cur, val, width, post, scalar)
			continue
		}
		if scalar {
			f := func(v ir.V) arm64asm.FReg { return p.vec(v, 0).F() }
			d := p.reg[i].F()
			var acc arm64asm.FReg
			if op.Code == ir.VAcc || op.Code == ir.VAccMul {
				acc = p.acc[op.Acc].F()
				if t, ok := p.tailAcc[op.Acc]; ok {
					acc = t.F()
				}
			}
			switch op.Code {
			case ir.VLoad:
				if post {
					fn.FMOVSP(arm64asm.Mem{Base: cur, Off: 4}, d)
				} else {
					fn.FMOVS(arm64asm.Mem{Base: cur}, d)
				}
			case ir.VStore:
				if post {
					fn.FMOVSP(f(a(0)), arm64asm.Mem{Base: cur, Off: 4})
				} else {
					fn.FMOVS(f(a(0)), arm64asm.Mem{Base: cur})
				}
			case ir.VAdd:
				fn.FADDS(f(a(1)), f(a(0)), d)
			case ir.VSub:
				fn.FSUBS(f(a(1)), f(a(0)), d)
			case ir.VMul:
				fn.FMULS(f(a(1)), f(a(0)), d)
			case ir.VFMA:
				fn.FMADDS(f(a(1)), f(a(2)), f(a(0)), d)
			case ir.VAcc:
				fn.FADDS(f(a(0)), acc, acc)
			case ir.VAccMul:
				fn.FMADDS(f(a(1)), acc, f(a(0)), acc)
			}
			continue
		}
		if p.noPost && (op.Code == ir.VLoad || op.Code == ir.VStore) {
			l.accessColumns(p, i, width, cb)
			continue
		}
		list := func(first arm64asm.VReg) arm64asm.VList {
			return (first + arm64asm.VReg(cb)).List(width, arm64asm.S4)
		}
		switch op.Code {
		case ir.VLoad:
			if post {
				// LD1 takes at most 4 registers (chainBound sweeps run 8).
				for c := 0; c < width; c += 4 {
					first := p.reg[i] + arm64asm.VReg(cb+c)
					fn.VLD1P(cur, first.List(min(4, width-c), arm64asm.S4))
				}
			} else {
				fn.VLD1(arm64asm.Mem{Base: cur}, list(p.reg[i]))
			}
			continue
		case ir.VStore:
			src := p.reg[a(0)]
			if p.splat[a(0)] {
				src = p.tmp[i]
				for c := cb; c < cb+width; c++ {
					fn.VMOV(p.reg[a(0)].B16(), (src + arm64asm.VReg(c)).B16())
				}
			}
			if n := p.stp[i]; n > 0 && post && width == l.u {
				l.storeMixed(src+arm64asm.VReg(cb), width, n, cur)
			} else if post {
				fn.VST1P(list(src), cur)
			} else {
				fn.VST1(list(src), arm64asm.Mem{Base: cur})
			}
			continue
		}
		for c := cb; c < cb+width; c++ {
			v := func(j int) arm64asm.VArr { return s4(p.vec(a(j), c)) }
			d := s4(p.reg[i] + arm64asm.VReg(c))
			switch op.Code {
			case ir.VAdd:
				fn.VFADD(v(1), v(0), d)
			case ir.VSub:
				fn.VFSUB(v(1), v(0), d)
			case ir.VMul:
				fn.VFMUL(v(1), v(0), d)
			case ir.VFMA:
				if d != v(2) {
					fn.VMOV(v(2).Reg.B16(), d.Reg.B16())
				}
				fn.VFMLA(v(1), v(0), d)
			case ir.VAcc:
				acc := s4(p.acc[op.Acc] + arm64asm.VReg(c))
				fn.VFADD(v(0), acc, acc)
			case ir.VAccMul:
				acc := s4(p.acc[op.Acc] + arm64asm.VReg(c))
				fn.VFMLA(v(1), v(0), acc)
			}
		}
	}
}

// reduce turns each accumulator's u partial-sum vectors into one scalar in
// the low lane of its group's first register (summed, when vectors ran,
// with the totals of sum when chunked), and releases the rest of the group.
func (l *lowering) reduce(p *loopPlan, vectors bool, sum *sums) {
	fn, u := l.fn, l.u
	for _, acc := range p.accs {
		g := p.acc[acc]
		if vectors {
			pairwise(fn, g, u)
			l.sumsInto(sum, acc, g)
			fn.VFADDP(g.S4(), g.S4(), g.S4())
			fn.FADDP(g.S2(), g.F())
		}
		l.vFree(g+1, u-1)
	}
}
