package arm64

import (
	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
)

// The Segments layout (ir.Segments) is the row lowering with one more loop:
// a row is segs segments of seglen contiguous floats, segstride apart, and
// each ir.Loop sweeps the segments in turn with the row lowering's phases
// over seglen elements (l.hReg holds seglen). The accumulators' vector
// partial sums are zeroed once before the first segment and reduced after
// the last; each segment's scalar tail adds into a separate scalar
// (loopPlan.tailAcc), added to the reduced sum at the end, since a scalar
// write would clear the lanes of the partial sums. Both are summed in
// chunks that run across segments (sums.go). A Param load is the
// segment's value, broadcast at the segment's start (loopPlan.bparam).
// Guards and the exit are the row lowering's: one row at a time.

// segmentsArgs loads seglen, the length of each sweep, and the step from a
// segment's end to the next one's start. segs and rowstride are read from
// the arguments where needed, once per row or per loop, to spare registers.
func (l *lowering) segmentsArgs() {
	fn := l.fn
	l.hReg, l.segSkip = l.gp(), l.gp()
	fn.MOVD(l.shape["seglen"], l.hReg)
	fn.MOVD(l.shape["segstride"], l.segSkip)
	fn.SUB(l.hReg, l.segSkip, l.segSkip)
	if l.hasHalf() {
		l.segSkipHalf = l.gp()
		fn.LSL(1, l.segSkip, l.segSkipHalf)
	}
	fn.LSL(2, l.segSkip, l.segSkip)
}

// segmentsStart opens the loop over the row's segments (label top): it
// sets the Param pointers to the row's first segment and the segment
// counter, which it returns; each segment starts by broadcasting its Param
// values. The row cursors are already at the row's first element.
func (l *lowering) segmentsStart(p *loopPlan, top arm64asm.Label) arm64asm.Reg {
	fn := l.fn
	for a := range l.k.Arrays {
		if _, ok := p.bparam[a]; ok {
			p.pcur[a] = l.gp()
			fn.MOVD(l.base[a], p.pcur[a])
		}
	}
	for _, acc := range p.accs {
		fn.FMOVS(arm64asm.ZR, p.tailAcc[acc].F())
	}
	n := l.gp()
	fn.MOVD(l.shape["segs"], n)
	fn.Label(top)
	l.broadcastParams(p)
	return n
}

// broadcastParams loads the next value of each Param array the loop reads
// into every lane of its register, advancing its pointer by one float.
func (l *lowering) broadcastParams(p *loopPlan) {
	for a := range l.k.Arrays {
		if r, ok := p.bparam[a]; ok {
			l.fn.FMOVSP(arm64asm.Mem{Base: p.pcur[a], Off: 4}, r.F())
			l.fn.VDUP(r.SLane(0), r.S4())
		}
	}
}

// segmentsEnd moves the row cursors (arrays) from the end of one segment
// to the start of the next, closes the segment loop, and reduces each
// accumulator to the scalar its SSum reads: the partial sums, then the
// tails' sum.
func (l *lowering) segmentsEnd(p *loopPlan, n arm64asm.Reg, top arm64asm.Label, arrays []int, sum *sums) {
	fn := l.fn
	for _, a := range arrays {
		skip := l.segSkip
		if l.elem(a).Half() {
			skip = l.segSkipHalf
		}
		fn.ADD(skip, p.cursor[a], p.cursor[a])
	}
	fn.SUBS(arm64asm.Imm(1), n, n)
	fn.BNE(top)
	l.gpFree(n)
	l.reduce(p, true, sum)
	for _, acc := range p.accs {
		g, t := p.acc[acc], p.tailAcc[acc]
		fn.FADDS(t.F(), g.F(), g.F())
		l.vFree(t, 1)
	}
	l.freeParams(p)
}

// freeParams releases the broadcast registers and pointers of Param loads.
func (l *lowering) freeParams(p *loopPlan) {
	for a, r := range p.bparam {
		l.vFree(r, 1)
		if c, ok := p.pcur[a]; ok {
			l.gpFree(c)
		}
	}
}

// nextSegmentsRow moves every array to the next row: row arrays by
// rowstride values, Param arrays by segs values, per-row scalars by one.
func (l *lowering) nextSegmentsRow() {
	fn := l.fn
	fn.Comment("next row")
	type key struct {
		arg  string
		size int
	}
	step := map[key]arm64asm.Reg{}
	var regs []arm64asm.Reg
	stepOf := func(arg string, size int) arm64asm.Reg {
		if r, ok := step[key{arg, size}]; ok {
			return r
		}
		r := l.gp()
		fn.MOVD(l.shape[arg], r)
		fn.LSL(arm64asm.Imm(size/2), r, r)
		step[key{arg, size}] = r
		regs = append(regs, r)
		return r
	}
	for i, a := range l.k.Arrays {
		switch {
		case a.Role.PerRow():
			fn.ADD(arm64asm.Imm(4), l.base[i], l.base[i])
		case a.Role == ir.Param:
			fn.ADD(stepOf("segs", 4), l.base[i], l.base[i])
		default:
			fn.ADD(stepOf("rowstride", a.Elem.Bytes()), l.base[i], l.base[i])
		}
	}
	for _, r := range regs {
		l.gpFree(r)
	}
}
