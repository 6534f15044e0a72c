package amd64

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
)

// The summation policy (ir.SumChunk, ir.SumTotal) in every layout: an
// accumulator's vector registers are its chunks; a loop that may add
// more than ir.SumChunk terms to one lane adds each full chunk into a
// total, and every ir.SumTotal chunks the total into a super-total. The
// totals and super-totals are touched once per chunk, so they may live
// in frame slots when the registers run out (lowering.stackSums): the
// code here is the one that Rows, Segments and Columns share.

// sumLevel is where one chunk vector's total and super-total are: a
// vector register or a frame slot, nil when the loop has no such level.
type sumLevel struct {
	total, super operand.Op
}

// sumLevels clears and returns the levels above the chunk vectors vs
// (already clear), levels being 2 (totals) or 3 (totals and
// super-totals): registers, or frame slots for the levels stackSums puts
// in the frame (1: super-totals, 2: totals too). Frame slots are reused
// by every loop, whose levels are added into its chunks at its end.
func (l *lowering) sumLevels(vs []reg.Register, levels int) []sumLevel {
	out := make([]sumLevel, len(vs))
	n := 0 // frame slots taken
	if levels >= 3 {
		for i, o := range l.sumLevel(vs, l.stackSums >= 1, &n) {
			out[i].super = o
		}
		l.regSupers = l.regSupers || l.stackSums < 1
	}
	for i, o := range l.sumLevel(vs, l.stackSums >= 2, &n) {
		out[i].total = o
	}
	l.regTotals = l.regTotals || l.stackSums < 2
	return out
}

// sumLevel clears one level for each of the (clear) chunk vectors vs:
// vector registers, or when inFrame slots of the frame, the n-th slot on,
// n counting the slots taken.
func (l *lowering) sumLevel(vs []reg.Register, inFrame bool, n *int) []operand.Op {
	out := make([]operand.Op, len(vs))
	for i, v := range vs {
		if !inFrame {
			t := l.vec()
			l.zero(t)
			out[i] = t
			continue
		}
		if *n == len(l.sumSlots) {
			l.sumSlots = append(l.sumSlots, l.fn.AllocLocal(4*l.lanes))
		}
		l.I(x86.VMOVUPS(v, l.sumSlots[*n]))
		out[i] = l.sumSlots[*n]
		*n++
	}
	return out
}

// counter is a frame slot of 8 bytes for the counts of the Segments
// sums, which change once per segment.
func (l *lowering) counter(i int) operand.Mem {
	for len(l.counters) <= i {
		l.counters = append(l.counters, l.fn.AllocLocal(8))
	}
	return l.counters[i]
}

// addChunk adds the chunk v into its total and clears v.
func (l *lowering) addChunk(lv sumLevel, v reg.Register) {
	if m, ok := lv.total.(operand.Mem); ok {
		l.I(x86.VADDPS(m, v, v))
		l.I(x86.VMOVUPS(v, m))
	} else {
		l.I(x86.VADDPS(v, lv.total, lv.total))
	}
	l.zero(v)
}

// promoteTotal adds a total into its super-total and clears it; v is a
// clear vector register, which it may use and leaves clear.
func (l *lowering) promoteTotal(lv sumLevel, v reg.Register) {
	t, s := lv.total, lv.super
	tm, tMem := t.(operand.Mem)
	sm, sMem := s.(operand.Mem)
	switch {
	case !sMem:
		l.I(x86.VADDPS(t, s, s))
		if tMem {
			l.I(x86.VMOVUPS(v, tm))
		} else {
			l.zero(t.(reg.Register))
		}
	case !tMem:
		l.I(x86.VADDPS(sm, t, t))
		l.I(x86.VMOVUPS(t, sm))
		l.zero(t.(reg.Register))
	default:
		l.I(x86.VMOVUPS(tm, v))
		l.I(x86.VADDPS(sm, v, v))
		l.I(x86.VMOVUPS(v, sm))
		l.zero(v)
		l.I(x86.VMOVUPS(v, tm))
	}
}

// addLevels makes v the whole sum, (super-total + total) + chunk v, as
// ir.BlockedSum.Value adds them.
func (l *lowering) addLevels(lv sumLevel, v reg.Register) {
	if lv.super == nil {
		l.I(x86.VADDPS(lv.total, v, v))
		return
	}
	t, s := lv.total, lv.super
	tm, tMem := t.(operand.Mem)
	switch {
	case !tMem:
		l.I(x86.VADDPS(s, t, t))
		l.I(x86.VADDPS(t, v, v))
	case !isMem(s):
		l.I(x86.VADDPS(t, s, s))
		l.I(x86.VADDPS(s, v, v))
	default:
		x := l.vec()
		l.I(x86.VMOVUPS(tm, x))
		l.I(x86.VADDPS(s, x, x))
		l.I(x86.VADDPS(x, v, v))
	}
}

// isMem reports whether a level of the sums is a frame slot.
func isMem(o operand.Op) bool {
	_, ok := o.(operand.Mem)
	return ok
}

// foldPartials adds a sweep's partial sums pairwise into the first, as
// reduce adds them.
func (l *lowering) foldPartials(vs []reg.Register) {
	for step := 1; step < len(vs); step *= 2 {
		for i := 0; i+step < len(vs); i += 2 * step {
			l.I(x86.VADDPS(vs[i+step], vs[i], vs[i]))
		}
	}
}

// chunkDone ends the chunk of every accumulator the sweep fills, in each
// of its rows: the partial sums, folded pairwise (and an AVX2 scalar
// tail's sum, whose register holds zeros above its low lane), into the
// total, and the partial sums cleared.
func (l *lowering) chunkDone(sw *sweepState, withScalar bool) {
	sw.eachAcc(l, func(st *accState) {
		l.foldPartials(st.vec)
		if withScalar && st.sc != nil {
			l.I(x86.VADDPS(st.sc.(reg.VecVirtual).AsY(), st.vec[0], st.vec[0]))
			l.I(x86.VXORPS(st.sc, st.sc, st.sc))
		}
		l.addChunk(st.lv, st.vec[0])
		for _, v := range st.vec[1:] {
			l.zero(v)
		}
	})
}

// promote adds every total of the sweep's accumulators into its
// super-total.
func (l *lowering) promote(sw *sweepState) {
	sw.eachAcc(l, func(st *accState) { l.promoteTotal(st.lv, st.vec[0]) })
}

// finishSums leaves each accumulator of a chunked sweep as one vector,
// its partial sums folded pairwise and added to its levels.
func (l *lowering) finishSums(sw *sweepState) {
	sw.eachAcc(l, func(st *accState) {
		l.foldPartials(st.vec)
		l.addLevels(st.lv, st.vec[0])
		st.vec = st.vec[:1]
	})
}

// startLevels gives every accumulator of a sweep that sums in chunks
// (sw.levels > 1) its levels above the chunks.
func (l *lowering) startLevels(sw *sweepState) {
	if sw.levels < 2 {
		return
	}
	var sts []*accState
	var vs []reg.Register
	sw.eachAcc(l, func(st *accState) {
		sts = append(sts, st)
		vs = append(vs, st.vec[0])
	})
	for i, lv := range l.sumLevels(vs, sw.levels) {
		sts[i].lv = lv
	}
}

// eachAcc calls f for the state of every accumulator the sweep fills, row
// by row, in the order of the loop's ops.
func (sw *sweepState) eachAcc(l *lowering, f func(*accState)) {
	for r := range sw.rows {
		seen := map[int]bool{}
		for _, op := range sw.loop.Ops {
			if (op.Code == ir.VAcc || op.Code == ir.VAccMul) && !seen[op.Acc] {
				seen[op.Acc] = true
				f(l.rowAccs[sw.first+r][op.Acc])
			}
		}
	}
}
