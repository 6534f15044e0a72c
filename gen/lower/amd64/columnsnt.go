package amd64

import (
	"slices"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// Streaming stores in the Columns layout. A Columns kernel's output pass
// (BatchNorm's dst over [N, C], its backward's dx) writes lines that
// nothing reads back in the call; from memory, a plain store reads each
// line in before writing it. Such a loop is lowered twice: with
// VMOVNTPS for its whole blocks, and plainly. One check per call picks
// the streaming copy when the output spans columnNTMinBytes or more (on
// AVX2, with a stride of columnNTMinStride or more) and every streaming
// store is aligned: the outputs' bases and the stride
// in bytes multiples of the vector size (each block's rows then start a
// vector on). A partial block stores under its mask, plainly.

// columnNTMinBytes is the span (h*stride*4 bytes) of a call's output from
// which its output pass streams: as target.NTMinBytes for the row
// kernels, outputs the caches would keep stay on plain stores. A
// variable so that the tests can make small calls stream.
var columnNTMinBytes = target.NTMinBytes

// columnNTMinStride is, per vector size, the stride in bytes from which
// the output pass streams. Measured on AMD EPYC (BatchNorm over [N, C]
// from DRAM), AVX2's forward at C = 768 (a 3 KiB stride, where the loops
// prefetch) was 7-13% slower streaming, its backward no faster; from
// C = 4096 both were 9-15% faster. A variable for the tests, as above.
var columnNTMinStride = map[int]int{32: columnPrefetchMaxStride}

// planColumnNT marks the statements of c.order that are loops lowered
// twice (see above): a loop that stores, does not accumulate, and stores
// only float32 row outputs that no later statement reads. Half storage
// keeps plain stores (its stride is in 16-bit units).
func (c *columnLowering) planColumnNT() {
	c.ntAt = make([]bool, len(c.order))
	if c.unit != 4 {
		return
	}
	reads := func(st ir.Stmt, a int) bool {
		switch st := st.(type) {
		case *ir.Scalar:
			return st.Code == ir.SLoad && st.Array == a
		case *ir.Loop:
			return slices.ContainsFunc(st.Ops, func(op ir.VecOp) bool { return op.Code == ir.VLoad && op.Array == a })
		}
		return false
	}
	for si, st := range c.order {
		loop, ok := st.(*ir.Loop)
		if !ok {
			continue
		}
		stores, fit := false, true
		for _, op := range loop.Ops {
			switch op.Code {
			case ir.VAcc, ir.VAccMul:
				fit = false
			case ir.VStore:
				stores = true
				if c.k.Arrays[op.Array].Role != ir.RowOut || c.elem(op.Array) != ir.F32 ||
					slices.ContainsFunc(c.order[si+1:], func(s ir.Stmt) bool { return reads(s, op.Array) }) {
					fit = false
				}
			}
		}
		if stores && fit {
			c.ntAt[si] = true
			for _, op := range loop.Ops {
				if op.Code == ir.VStore && !slices.Contains(c.ntArrays, op.Array) {
					c.ntArrays = append(c.ntArrays, op.Array)
				}
			}
		}
	}
}

// columnNTGate stores in the frame, once per call, whether the output
// passes stream (1) or not (0); the epilogue reads it too (SFENCE).
func (c *columnLowering) columnNTGate() {
	if len(c.ntArrays) == 0 {
		return
	}
	vb := 4 * c.lanes
	c.comment("stream the output pass: output spans %d bytes or more, its bases and stride %d-byte aligned", columnNTMinBytes, vb)
	if m := columnNTMinStride[vb]; m > 0 {
		c.comment("and the stride %d bytes or more", m)
	}
	if c.stackSums > 0 {
		c.ntSlot = c.fn.AllocLocal(vb)
	} else {
		c.ntSlot = c.fn.AllocLocal(8)
	}
	c.ntFlag = &c.ntSlot
	t := c.gp64()
	c.I(x86.MOVQ(c.stride, t))
	for _, a := range c.ntArrays {
		c.I(x86.ORQ(c.ptr[a], t))
	}
	c.I(x86.TESTQ(imm32(vb-1), t))
	c.I(x86.JNZ(operand.LabelRef("nont")))
	if m := columnNTMinStride[vb]; m > 0 {
		c.I(x86.CMPQ(c.stride, imm32(m)))
		c.I(x86.JB(operand.LabelRef("nont")))
	}
	c.I(x86.MOVQ(c.stride, t))
	if c.f.H > 0 {
		c.I(x86.IMUL3Q(imm32(c.f.H), t, t))
	} else {
		c.I(x86.IMULQ(c.h, t))
	}
	c.I(x86.CMPQ(t, imm32(columnNTMinBytes)))
	c.I(x86.JB(operand.LabelRef("nont")))
	c.I(x86.MOVQ(operand.U32(1), t))
	c.I(x86.JMP(operand.LabelRef("ntset")))
	c.label("nont")
	c.I(x86.XORQ(t, t))
	c.label("ntset")
	c.I(x86.MOVQ(t, c.ntSlot))
}

// ntLoop lowers loop, which planColumnNT marked, for whole blocks as its
// streaming copy and its plain one, picked by the call's gate; a partial
// block gets the plain one only.
func (c *columnLowering) ntLoop(loop *ir.Loop, name string) bool {
	if !c.ntAt[c.stmt] || c.mask != nil || c.ntFlag == nil {
		return false
	}
	t := c.gp64()
	c.I(x86.MOVQ(c.ntSlot, t))
	c.I(x86.TESTQ(t, t))
	c.I(x86.JZ(operand.LabelRef(name + "plain")))
	c.comment("streaming stores")
	c.nt = true
	c.loopAs(loop, name+"nt")
	c.nt = false
	c.I(x86.JMP(operand.LabelRef(name + "out")))
	c.label(name + "plain")
	c.loopAs(loop, name)
	c.label(name + "out")
	return true
}

// columnNTEpilogue orders a streaming call's stores before the return:
// they are weakly ordered, and the caller may hand the output to another
// goroutine.
func (l *lowering) columnNTEpilogue() {
	if l.ntFlag == nil {
		return
	}
	t := l.gp64()
	l.I(x86.MOVQ(*l.ntFlag, t))
	l.I(x86.TESTQ(t, t))
	l.I(x86.JZ(operand.LabelRef("nosfence")))
	l.I(x86.SFENCE())
	l.label("nosfence")
}
