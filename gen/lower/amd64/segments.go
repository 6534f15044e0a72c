package amd64

import (
	"math/bits"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
)

// segments lowers a kernel of layout ir.Segments: the row loop of the
// Rows lowering, one row at a time, in which each IR loop sweeps the row's
// segments in turn (segmentSweep). The sweeps take the segment length for
// the row length (l.h, and l.tail for its last partial vector), and every
// pointer stands at the current row: rows rowstride floats apart, per-row
// scalars one float, parameters segs floats (one value per segment).
func (l *lowering) segments() {
	l.loadArgs()
	l.tailMask()
	if l.kernelAccumulates() {
		l.segmentShape()
	}
	l.label("row")
	l.body(1, exitLabel)
	l.comment("next row")
	var stepParam reg.GPVirtual
	stepRow := map[int]reg.GPVirtual{} // by element size
	for i, a := range l.k.Arrays {
		switch a.Role {
		case ir.RowIn, ir.RowOut:
			size := a.Elem.Bytes()
			if stepRow[size] == nil {
				stepRow[size] = l.argSized("rowstride", size)
			}
			l.I(x86.ADDQ(stepRow[size], l.ptr[i]))
		case ir.Param:
			if stepParam == nil {
				stepParam = l.argBytes("segs")
			}
			l.I(x86.ADDQ(stepParam, l.ptr[i]))
		default:
			l.I(x86.ADDQ(operand.U8(4), l.ptr[i]))
		}
	}
	l.I(x86.DECQ(l.rows))
	l.I(x86.JNZ(operand.LabelRef("row")))
	l.epilogue(l.sig)
}

// argBytes loads a count argument times 4, the size of that many floats.
// Shape arguments are read from the frame where they are needed rather
// than held in registers for the whole function.
func (l *lowering) argBytes(name string) reg.GPVirtual { return l.argSized(name, 4) }

// argSized loads a count argument times size (4 or 2): the bytes of that
// many values of a float32 or a half array.
func (l *lowering) argSized(name string, size int) reg.GPVirtual {
	t := l.gp64()
	l.I(x86.MOVQ(l.argAddr(l.sig, name), t))
	l.I(x86.SHLQ(operand.U8(bits.TrailingZeros(uint(size))), t))
	return t
}

// segmentSweep lowers one IR loop over a row of segments: the partial sums
// start once, before the first segment, and run on across the segments
// (runtimeSweep finds them started); each segment is swept like a row of
// seglen elements, its parameters broadcast from the value the parameter
// pointer stands on (see load). The pointers the loop uses move on by a
// segment after each, and back to the row's start after the last, where
// the scalar statements (SLoad of the row's first element) expect them.
//
// A loop that accumulates is laid out twice: with its sums in chunks by
// the policy across the segments (see segmentEnd), and plainly for calls
// whose rows are too short for any partial sum to add more than
// ir.SumChunk terms (an InstanceNorm of 7x7 positions), where the chunks'
// bookkeeping would cost as much as the sums. Both leave each
// accumulator's partial sums folded into its first.
func (l *lowering) segmentSweep(sw *sweepState) {
	l.startAccs(sw, unroll, !l.masked())
	sw.levels = 1
	used := make([]bool, len(l.k.Arrays))
	for _, op := range sw.loop.Ops {
		if op.Code == ir.VLoad || op.Code == ir.VStore {
			used[op.Array] = true
		}
	}
	if !l.accumulates(sw.loop) {
		l.segmentLoop(sw, used)
	} else {
		var vecs [][]reg.Register
		sw.eachAcc(l, func(st *accState) { vecs = append(vecs, st.vec) })
		scal := append([]reg.Register(nil), l.rowScal[0]...)
		l.I(x86.CMPQ(l.counter(countShort), operand.U8(0)))
		l.I(x86.JNE(operand.LabelRef(sw.name + "_short")))
		sw.levels = 3
		l.startLevels(sw)
		l.I(x86.MOVQ(imm32(ir.SumChunk), l.counter(countRoom)))
		l.I(x86.MOVQ(imm32(ir.SumTotal), l.counter(countChunks)))
		l.segmentLoop(sw, used)
		l.finishSums(sw)
		l.I(x86.JMP(operand.LabelRef(sw.name + "_summed")))

		l.label(sw.name + "_short")
		l.comment("pass %d for rows too short for chunks", l.k.Pass(sw.loop))
		copy(l.rowScal[0], scal)
		i := 0
		sw.eachAcc(l, func(st *accState) { st.vec = vecs[i]; i++ })
		short := *sw
		short.name += "s"
		short.levels = 1
		l.segmentLoop(&short, used)
		sw.eachAcc(l, func(st *accState) {
			l.foldPartials(st.vec)
			st.vec = st.vec[:1]
		})
		l.label(sw.name + "_summed")
		copy(l.rowScal[0], scal)
	}

	// Back by segs segments: segs*segstride values, or segs parameters.
	var params reg.GPVirtual
	back := map[int]reg.GPVirtual{} // by element size
	for i, u := range used {
		switch {
		case !u:
		case l.k.Arrays[i].Role == ir.Param:
			if params == nil {
				params = l.argBytes("segs")
			}
			l.I(x86.SUBQ(params, l.ptr[i]))
		default:
			size := l.elem(i).Bytes()
			if back[size] == nil {
				back[size] = l.argSized("segs", size)
				l.I(x86.IMULQ(l.argAddr(l.sig, "segstride"), back[size]))
			}
			l.I(x86.SUBQ(back[size], l.ptr[i]))
		}
	}
}

// segmentLoop sweeps the row's segments one by one, moving the pointers
// the loop uses on by a segment after each.
func (l *lowering) segmentLoop(sw *sweepState, used []bool) {
	k := l.gp64()
	l.I(x86.MOVQ(l.argAddr(l.sig, "segs"), k))
	l.label(sw.name + "_seg")
	l.runtimeSweep(sw)
	if sw.levels > 1 {
		l.segmentEnd(sw)
	}
	step := map[int]reg.GPVirtual{} // by element size
	for i, u := range used {
		switch {
		case !u:
		case l.k.Arrays[i].Role == ir.Param:
			l.I(x86.ADDQ(operand.U8(4), l.ptr[i]))
		default:
			size := l.elem(i).Bytes()
			if step[size] == nil {
				step[size] = l.argSized("segstride", size)
			}
			l.I(x86.ADDQ(step[size], l.ptr[i]))
		}
	}
	l.I(x86.DECQ(k))
	l.I(x86.JNZ(operand.LabelRef(sw.name + "_seg")))
}

// kernelAccumulates reports whether any loop of the kernel accumulates.
func (l *lowering) kernelAccumulates() bool {
	for _, st := range l.k.Body {
		if loop, ok := st.(*ir.Loop); ok && l.accumulates(loop) {
			return true
		}
	}
	return false
}

// The counts of a Segments sweep's sums, in frame slots (they change
// once per segment or chunk, or once per call): room, the terms each
// partial sum may still add to its chunk; most, the most terms one
// segment adds to a partial sum (the blocks' iterations plus one
// leftover vector, or on AVX2 the element tail's terms if more); chunks,
// the chunks the totals may still take before the super-totals take
// them; short, not zero when the plain sweep's partial sums (with every
// leftover vector and the tail in the first, and the AVX2 element tail)
// add at most ir.SumChunk terms over the whole row.
const (
	countRoom = iota
	countMost
	countChunks
	countShort
)

// segmentShape sets most and short for the call.
func (l *lowering) segmentShape() {
	iters := l.gp64()
	l.I(x86.MOVQ(l.h, iters))
	l.I(x86.SHRQ(operand.U8(bits.TrailingZeros(uint(unroll*l.lanes))), iters))
	most := l.gp64()
	l.I(x86.LEAQ(operand.Mem{Base: iters, Disp: 1}, most))
	if !l.masked() {
		t := l.gp64()
		l.I(x86.MOVQ(l.h, t))
		l.I(x86.ANDQ(imm32(l.lanes-1), t))
		l.I(x86.CMPQ(t, most))
		l.I(x86.CMOVQGT(t, most))
	}
	l.I(x86.MOVQ(most, l.counter(countMost)))
	// The plain sweep adds a segment's leftover vectors and masked tail
	// (at most unroll) to the first partial sum, and on AVX2 up to
	// lanes-1 elements to the scalar one.
	extra := unroll
	if !l.masked() {
		extra = max(unroll-1, l.lanes-1)
	}
	plain := l.gp64()
	l.I(x86.LEAQ(operand.Mem{Base: iters, Disp: extra}, plain))
	l.I(x86.IMULQ(l.argAddr(l.sig, "segs"), plain))
	flag := l.gp64()
	l.I(x86.XORQ(flag, flag))
	l.I(x86.CMPQ(plain, imm32(ir.SumChunk)))
	l.I(x86.SETLS(flag.As8()))
	l.I(x86.MOVQ(flag, l.counter(countShort)))
}

// segmentEnd ends the chunks after a segment when the next segment might
// overrun them: a segment shorter than a chunk's elements adds at most
// most terms to each partial sum (the AVX2 scalar sum included), so the
// chunk runs on while room is left for that many; a longer segment's
// chunks end within it (runtimeSweep) and after it.
func (l *lowering) segmentEnd(sw *sweepState) {
	room := l.gp64()
	l.I(x86.MOVQ(l.counter(countRoom), room))
	l.I(x86.SUBQ(l.counter(countMost), room))
	l.I(x86.MOVQ(room, l.counter(countRoom)))
	l.I(x86.CMPQ(room, l.counter(countMost)))
	l.I(x86.JGE(operand.LabelRef(sw.name + "_room")))
	l.comment("no room for another segment: the sums into the totals")
	l.chunkDone(sw, true)
	l.segmentChunkCount(sw, "_segchunk")
	l.label(sw.name + "_room")
}

// segmentChunkCount counts a chunk that ended (in a segment or after
// one), restarts room, and every ir.SumTotal chunks adds the totals into
// the super-totals; label names its end.
func (l *lowering) segmentChunkCount(sw *sweepState, label string) {
	l.I(x86.MOVQ(imm32(ir.SumChunk), l.counter(countRoom)))
	l.I(x86.DECQ(l.counter(countChunks)))
	l.I(x86.JNZ(operand.LabelRef(sw.name + label)))
	l.comment("%d chunks done: the totals into the super-totals", ir.SumTotal)
	l.promote(sw)
	l.I(x86.MOVQ(imm32(ir.SumTotal), l.counter(countChunks)))
	l.label(sw.name + label)
}
