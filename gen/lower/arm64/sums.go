package arm64

import (
	"fmt"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
)

// Every layout sums its accumulators by ir.BlockedSum's policy through one
// mechanism: a sweep's iterations, each adding one term to every lane of
// the accumulators' partial sums, run in chunks of at most ir.SumChunk. A
// full chunk is folded: the u partial-sum vectors are added pairwise
// (Segments: with the scalar tails' sum), into the accumulator's total, a
// register, and zeroed; every ir.SumTotal folds the totals go into the
// super-totals. The last, short chunk and the leftover vectors (one per
// partial sum at most) stay in the partial sums, which are added to
// super-total + total before the horizontal sum (sumsInto).
//
// Segments keep the chunk's room (terms a lane may still take) in a
// register across segments, so short segments share a chunk; a segment's
// leftover vectors and scalar tail count as tailTerms.

// sums is the chunking state of one sweep's accumulators.
type sums struct {
	total, super map[int]arm64asm.VReg
	hasSuper     bool             // super-totals kept (the sweep may pass SumChunk*SumTotal)
	rem          arm64asm.Reg     // iterations after the current chunk, negative in the last, short one
	left         arm64asm.Reg     // folds the totals still take before the super-totals
	room         arm64asm.Operand // terms the current chunk still takes: ir.SumChunk, or a register (Segments)
}

// tailTerms bounds the terms a segment's leftover vectors (one a lane) and
// scalar tail (three) add to a lane.
const tailTerms = 3

// chunked reports whether a sweep of n iterations (0: known at run time)
// sums in chunks, and whether also in super-chunks.
func chunked(n int) (chunks, super bool) {
	levels := pass.SumLevels(n)
	return levels >= pass.WithTotals, levels == pass.WithSupers
}

// sumsStart zeroes the totals (and super-totals) of p's accumulators and
// sets the counters, before the sweep.
func (l *lowering) sumsStart(p *loopPlan, super bool) (*sums, error) {
	fn := l.fn
	s := &sums{total: map[int]arm64asm.VReg{}, super: map[int]arm64asm.VReg{}, hasSuper: super, room: arm64asm.Imm(ir.SumChunk)}
	zeroed := func(m map[int]arm64asm.VReg) error {
		for _, acc := range p.accs {
			t, err := l.vreg()
			if err != nil {
				return err
			}
			m[acc] = t
			fn.VEOR(t.B16(), t.B16(), t.B16())
		}
		return nil
	}
	if err := zeroed(s.total); err != nil {
		return nil, err
	}
	if super {
		if err := zeroed(s.super); err != nil {
			return nil, err
		}
		s.left = l.gp()
		fn.MOVD(arm64asm.Imm(ir.SumTotal), s.left)
	}
	s.rem = l.gp()
	if l.k.Layout == ir.Segments {
		room := l.gp()
		fn.MOVD(arm64asm.Imm(ir.SumChunk), room)
		s.room = room
	}
	return s, nil
}

// chunks runs iter s.rem times (loaded by the caller) in chunks, cnt
// counting each chunk's iterations, folding every full chunk. The last,
// short chunk (possibly empty) stays in the partial sums.
func (l *lowering) chunks(s *sums, p *loopPlan, cnt arm64asm.Reg, label func(string) arm64asm.Label, iter func()) {
	fn := l.fn
	fn.Label(label("chunk"))
	fn.SUBS(s.room, s.rem, s.rem)
	fn.BLT(label("short"))
	fn.MOVD(s.room, cnt)
	fn.Label(label("iter"))
	iter()
	fn.SUBS(arm64asm.Imm(1), cnt, cnt)
	fn.BNE(label("iter"))
	fn.SUBS(arm64asm.Imm(0), s.rem, s.rem)
	fn.BLT(label("chunked")) // that was the short one
	l.fold(s, p, label("chunk"))
	fn.B(label("chunk"))
	fn.Label(label("short"))
	fn.ADD(s.room, s.rem, cnt)
	if r, ok := s.room.(arm64asm.Reg); ok {
		fn.SUB(cnt, r, r)
	}
	fn.CBNZ(cnt, label("iter"))
	fn.Label(label("chunked"))
}

// segmentTails makes room for a segment's tails, folding first when the
// chunk has fewer than tailTerms+1 terms left, so the next segment starts
// with room for one.
func (l *lowering) segmentTails(s *sums, p *loopPlan, label func(string) arm64asm.Label) {
	fn := l.fn
	room := s.room.(arm64asm.Reg)
	fn.SUBS(arm64asm.Imm(tailTerms), room, room)
	fn.BHI(label("room"))
	l.fold(s, p, label("tailFolded"))
	fn.Label(label("tailFolded"))
	fn.SUB(arm64asm.Imm(tailTerms), room, room)
	fn.Label(label("room"))
}

// fold adds each accumulator's chunk into its total and restarts it, and
// every ir.SumTotal folds the totals into the super-totals; the other
// folds branch to next, where the code after the fold must go on.
func (l *lowering) fold(s *sums, p *loopPlan, next arm64asm.Label) {
	fn, u := l.fn, l.u
	for _, acc := range p.accs {
		g, t := p.acc[acc], s.total[acc]
		pairwise(fn, g, u)
		if tail, ok := p.tailAcc[acc]; ok {
			// A scalar: its other lanes are zero.
			fn.VFADD(tail.S4(), g.S4(), g.S4())
			fn.VEOR(tail.B16(), tail.B16(), tail.B16())
		}
		fn.VFADD(g.S4(), t.S4(), t.S4())
		for c := 0; c < u; c++ {
			r := (g + arm64asm.VReg(c)).B16()
			fn.VEOR(r, r, r)
		}
	}
	if r, ok := s.room.(arm64asm.Reg); ok {
		fn.MOVD(arm64asm.Imm(ir.SumChunk), r)
	}
	if !s.hasSuper {
		return
	}
	fn.SUBS(arm64asm.Imm(1), s.left, s.left)
	fn.BNE(next)
	fn.Comment(fmt.Sprintf("%d chunks: the totals go into the super-totals", ir.SumTotal))
	for _, acc := range p.accs {
		t, su := s.total[acc], s.super[acc]
		fn.VFADD(t.S4(), su.S4(), su.S4())
		fn.VEOR(t.B16(), t.B16(), t.B16())
	}
	fn.MOVD(arm64asm.Imm(ir.SumTotal), s.left)
}

// pairwise adds the u partial-sum vectors from g into g, pairwise.
func pairwise(fn *arm64asm.Func, g arm64asm.VReg, u int) {
	for w := u; w > 1; w /= 2 {
		for i := 0; i < w/2; i++ {
			a, b := g+arm64asm.VReg(i), g+arm64asm.VReg(i+w/2)
			fn.VFADD(b.S4(), a.S4(), a.S4())
		}
	}
}

// sumsInto adds super-total + total into acc's register g (the last
// chunk, folded) and releases them; nil s does nothing.
func (l *lowering) sumsInto(s *sums, acc int, g arm64asm.VReg) {
	if s == nil {
		return
	}
	fn, t := l.fn, s.total[acc]
	if s.hasSuper {
		su := s.super[acc]
		fn.VFADD(t.S4(), su.S4(), t.S4())
		l.vFree(su, 1)
	}
	fn.VFADD(g.S4(), t.S4(), g.S4())
	l.vFree(t, 1)
}

// sumsEnd releases the counters.
func (l *lowering) sumsEnd(s *sums) {
	if s == nil {
		return
	}
	l.gpFree(s.rem)
	if s.hasSuper {
		l.gpFree(s.left)
	}
	if r, ok := s.room.(arm64asm.Reg); ok {
		l.gpFree(r)
	}
}
