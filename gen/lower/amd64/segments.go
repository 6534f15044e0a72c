package amd64

import (
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
	l.label("row")
	l.body(1, exitLabel)
	l.comment("next row")
	var stepRow, stepParam reg.GPVirtual
	for i, a := range l.k.Arrays {
		switch a.Role {
		case ir.RowIn, ir.RowOut:
			if stepRow == nil {
				stepRow = l.argBytes("rowstride")
			}
			l.I(x86.ADDQ(stepRow, l.ptr[i]))
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
func (l *lowering) argBytes(name string) reg.GPVirtual {
	t := l.gp64()
	l.I(x86.MOVQ(l.argAddr(l.sig, name), t))
	l.I(x86.SHLQ(operand.U8(2), t))
	return t
}

// segmentSweep lowers one IR loop over a row of segments: the partial sums
// start once, before the first segment, and run on across the segments
// (runtimeSweep finds them started); each segment is swept like a row of
// seglen elements, its parameters broadcast from the value the parameter
// pointer stands on (see load). The pointers the loop uses move on by a
// segment after each, and back to the row's start after the last, where
// the scalar statements (SLoad of the row's first element) expect them.
func (l *lowering) segmentSweep(sw *sweepState) {
	l.startAccs(sw, unroll, !l.avx512)
	used := make([]bool, len(l.k.Arrays))
	for _, op := range sw.loop.Ops {
		if op.Code == ir.VLoad || op.Code == ir.VStore {
			used[op.Array] = true
		}
	}
	k := l.gp64()
	l.I(x86.MOVQ(l.argAddr(l.sig, "segs"), k))
	l.label(sw.name + "_seg")
	l.runtimeSweep(sw)
	step := l.argBytes("segstride")
	for i, u := range used {
		switch {
		case !u:
		case l.k.Arrays[i].Role == ir.Param:
			l.I(x86.ADDQ(operand.U8(4), l.ptr[i]))
		default:
			l.I(x86.ADDQ(step, l.ptr[i]))
		}
	}
	l.I(x86.DECQ(k))
	l.I(x86.JNZ(operand.LabelRef(sw.name + "_seg")))

	// Back by segs segments: segs*segstride floats, or segs parameters.
	var back, params reg.GPVirtual
	for i, u := range used {
		switch {
		case !u:
		case l.k.Arrays[i].Role == ir.Param:
			if params == nil {
				params = l.argBytes("segs")
			}
			l.I(x86.SUBQ(params, l.ptr[i]))
		default:
			if back == nil {
				back = l.argBytes("segs")
				l.I(x86.IMULQ(l.argAddr(l.sig, "segstride"), back))
			}
			l.I(x86.SUBQ(back, l.ptr[i]))
		}
	}
}
