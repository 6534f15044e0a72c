package amd64

import (
	"fmt"
	"math"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
)

// columnLowering lowers a kernel of layout ir.Columns across rows: row r's
// element i is at i*stride + r, so the rows r..r+lanes-1 are side by side
// in memory at every element. Each lane runs one row's program: every IR
// scalar is a vector of per-row values (no horizontal sums), and each IR
// loop is a loop over the elements i = 0..h-1, one vector per element.
type columnLowering struct {
	*lowering
	stride reg.GPVirtual // bytes from one element of a row to the next
	mask   reg.Register  // the lanes of a partial block's rows, nil for a whole block
	name   string        // label prefix of the current block body
	val    []reg.Register
	acc    map[int]reg.Register
	loops  int
}

// Vector compare predicates: true when the lane fails the guard bound,
// NaN included (unordered).
const (
	cmpUnordQ = 0x03 // unordered
	cmpNLEUQ  = 0x16 // !(a <= b)
	cmpNGEUQ  = 0x19 // !(a >= b)
)

// columns lowers the whole function: blocks of lanes rows while there are
// that many, then one masked block for the rest (AVX-512 k-mask, AVX2
// VMASKMOVPS: masked-off lanes neither fault nor store). A guard failing in
// any lane of a block returns the block's first row: nothing of the block
// is stored before its guards.
func (l *lowering) columns() {
	c := &columnLowering{lowering: l}
	l.loadArgs()
	c.stride = l.argBytes("stride")
	w := l.lanes
	l.I(x86.CMPQ(l.rows, imm32(w)))
	l.I(x86.JB(operand.LabelRef("tail")))
	l.label("block")
	l.comment("a block of %d rows", w)
	c.body("b", nil)
	for i, a := range l.k.Arrays {
		if a.Role != ir.Param {
			l.I(x86.ADDQ(imm32(4*w), l.ptr[i]))
		}
	}
	l.I(x86.SUBQ(imm32(w), l.rows))
	l.I(x86.CMPQ(l.rows, imm32(w)))
	l.I(x86.JAE(operand.LabelRef("block")))

	l.label("tail")
	l.I(x86.TESTQ(l.rows, l.rows))
	l.I(x86.JZ(operand.LabelRef(exitLabel)))
	l.comment("the last rows-%%%d rows, under a mask", w)
	if l.avx512 {
		k := l.regs.K()
		l.I(x86.KMOVW(l.lowBits(l.rows.As32()), k))
		c.body("t", k)
	} else {
		c.body("t", l.lanesBelow(l.rows))
	}
	l.I(x86.XORQ(l.rows, l.rows))
	l.epilogue(l.sig)
}

// body lowers the per-row program once for a block of rows, under mask
// (nil: every lane).
func (c *columnLowering) body(name string, mask reg.Register) {
	c.name, c.mask = name, mask
	c.val = make([]reg.Register, c.k.NumScalars)
	c.acc = map[int]reg.Register{}
	c.loops = 0
	for _, st := range c.k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			c.loop(st)
		case *ir.Scalar:
			c.scalar(st)
		}
	}
}

// rowMem is the address of the block's rows' element at byte offset off
// (nil: element 0) of array a.
func (c *columnLowering) rowMem(a int, off reg.Register) operand.Mem {
	m := operand.Mem{Base: c.ptr[a]}
	if off != nil {
		m.Index, m.Scale = off, 1
	}
	return m
}

// load reads one vector of the block's rows, masked in a partial block.
func (c *columnLowering) load(m operand.Mem, d reg.Register) {
	switch {
	case c.mask == nil:
		c.I(x86.VMOVUPS(m, d))
	case c.avx512:
		c.I(x86.VMOVUPS_Z(m, c.mask, d))
	default:
		c.I(x86.VMASKMOVPS(m, c.mask, d))
	}
}

// store writes one vector of the block's rows, masked in a partial block.
func (c *columnLowering) store(v reg.Register, m operand.Mem) {
	switch {
	case c.mask == nil:
		c.I(x86.VMOVUPS(v, m))
	case c.avx512:
		c.I(x86.VMOVUPS(v, c.mask, m))
	default:
		c.I(x86.VMASKMOVPS(v, c.mask, m))
	}
}

// broadcast copies the low lane of an XMM register to a whole vector.
func (c *columnLowering) broadcast(x reg.Register) reg.Register {
	v := c.vec()
	c.I(x86.VBROADCASTSS(x, v))
	return v
}

// loop lowers one IR loop: element by element down the block's rows, the
// row arrays' offset moving by stride bytes and the parameters' index by
// one (a parameter's element i is the same for every row: broadcast).
func (c *columnLowering) loop(loop *ir.Loop) {
	n := c.loops
	c.loops++
	name := fmt.Sprintf("%sloop%d", c.name, n)
	c.comment("loop %d: %s", n, describe(c.k, loop))
	// Each lane's sum runs in one register, element after element, in
	// the order ir.Eval adds.
	for _, op := range loop.Ops {
		if op.Code == ir.VAcc || op.Code == ir.VAccMul {
			v := c.vec()
			c.zero(v)
			c.acc[op.Acc] = v
		}
	}
	// fma's operand reuse needs the values' last uses; splats are the
	// scalars' own registers, which must survive the loop.
	sw := &sweepState{loop: loop, rows: 1, last: make([]int, len(loop.Ops)), keep: make([]bool, len(loop.Ops))}
	for oi, op := range loop.Ops {
		for _, a := range op.Args {
			sw.last[a] = oi
		}
		sw.keep[oi] = op.Code == ir.VSplat
	}
	i, off := c.gp64(), c.gp64()
	c.I(x86.XORQ(i, i))
	c.I(x86.XORQ(off, off))
	c.label(name)
	val := make([]reg.Register, len(loop.Ops))
	for oi, op := range loop.Ops {
		arg := func(j int) reg.Register { return val[op.Args[j]] }
		switch op.Code {
		case ir.VLoad:
			d := c.vec()
			if c.k.Arrays[op.Array].Role == ir.Param {
				c.I(x86.VBROADCASTSS(mem(c.ptr[op.Array], i, 0), d))
			} else {
				c.load(c.rowMem(op.Array, off), d)
			}
			val[oi] = d
		case ir.VSplat:
			val[oi] = c.val[op.Scalar]
		case ir.VAdd, ir.VSub, ir.VMul:
			d := c.vec()
			c.I(arith(op.Code, false)(arg(1), arg(0), d))
			val[oi] = d
		case ir.VFMA:
			val[oi] = c.fma(sw, slot{kind: full}, oi, val)
		case ir.VStore:
			c.store(arg(0), c.rowMem(op.Array, off))
		case ir.VAcc:
			a := c.acc[op.Acc]
			c.I(x86.VADDPS(arg(0), a, a))
		case ir.VAccMul:
			c.I(x86.VFMADD231PS(arg(1), arg(0), c.acc[op.Acc]))
		}
	}
	c.I(x86.INCQ(i))
	c.I(x86.ADDQ(c.stride, off))
	if c.f.H > 0 {
		c.I(x86.CMPQ(i, imm32(c.f.H)))
	} else {
		c.I(x86.CMPQ(i, c.h))
	}
	c.I(x86.JB(operand.LabelRef(name)))
}

// scalar lowers one scalar statement for every lane's row. SDiv and SSqrt
// are the exact instructions, as in the Rows lowering.
func (c *columnLowering) scalar(st *ir.Scalar) {
	arg := func(i int) reg.Register { return c.val[st.Args[i]] }
	var d reg.Register
	switch st.Code {
	case ir.SConst:
		c.comment("s%d = %g", st.Dst, st.Const)
		d = c.broadcast(c.constant(st.Const))
	case ir.SInvLen:
		if c.f.H > 0 {
			c.comment("s%d = 1/%d", st.Dst, c.f.H)
			d = c.broadcast(c.constant(1 / float32(c.f.H)))
			break
		}
		c.comment("s%d = 1/h", st.Dst)
		d = c.broadcast(c.invLen())
	case ir.SSum:
		c.comment("s%d = accumulator %d, one sum per lane", st.Dst, st.Acc)
		d = c.acc[st.Acc]
		if d == nil {
			c.fail(fmt.Errorf("sum of accumulator %d, which no loop filled", st.Acc))
			d = c.vec()
		}
	case ir.SAdd, ir.SSub, ir.SMul, ir.SDiv:
		c.comment("s%d = s%d %s s%d", st.Dst, st.Args[0], st.Code, st.Args[1])
		d = c.vec()
		ins := map[ir.ScalarCode]func(...operand.Op) (*avoir.Instruction, error){
			ir.SAdd: x86.VADDPS, ir.SSub: x86.VSUBPS, ir.SMul: x86.VMULPS, ir.SDiv: x86.VDIVPS,
		}[st.Code]
		c.I(ins(arg(1), arg(0), d))
	case ir.SSqrt:
		c.comment("s%d = sqrt s%d", st.Dst, st.Args[0])
		d = c.vec()
		c.I(x86.VSQRTPS(arg(0), d))
	case ir.SLoad:
		// A per-row scalar at index r, or a row's element 0 at r: both
		// are the block's rows side by side.
		c.comment("s%d = %s[row]", st.Dst, c.k.Arrays[st.Array].Name)
		d = c.vec()
		c.load(c.rowMem(st.Array, nil), d)
	case ir.SStore:
		c.comment("%s[row] = s%d", c.k.Arrays[st.Array].Name, st.Args[0])
		c.store(arg(0), c.rowMem(st.Array, nil))
		return
	case ir.SGuard:
		c.guard(st, arg(0))
		return
	default:
		c.fail(fmt.Errorf("scalar statement %s has no lowering", st.Code))
		return
	}
	c.val[st.Dst] = d
}

// guard abandons the block unless Lo <= v <= Hi in every lane of its rows
// (masked-off lanes of a partial block do not count). Each finite bound
// is one compare whose predicate is true for the failing lanes, NaN
// included; with both bounds infinite, NaN alone fails.
func (c *columnLowering) guard(st *ir.Scalar, v reg.Register) {
	c.comment("abandon the block unless %g <= s%d <= %g in every row", st.Lo, st.Args[0], st.Hi)
	var fails []reg.Register
	cmp := func(b reg.Register, pred uint8) {
		if c.avx512 {
			k := c.regs.K()
			if c.mask != nil {
				c.I(x86.VCMPPS(operand.U8(pred), b, v, c.mask, k))
			} else {
				c.I(x86.VCMPPS(operand.U8(pred), b, v, k))
			}
			fails = append(fails, k)
			return
		}
		y := c.vec()
		c.I(x86.VCMPPS(operand.U8(pred), b, v, y))
		fails = append(fails, y)
	}
	if !math.IsInf(float64(st.Hi), 1) {
		cmp(c.broadcast(c.constant(st.Hi)), cmpNLEUQ)
	}
	if !math.IsInf(float64(st.Lo), -1) {
		cmp(c.broadcast(c.constant(st.Lo)), cmpNGEUQ)
	}
	if len(fails) == 0 {
		cmp(v, cmpUnordQ)
	}
	f := fails[0]
	if c.avx512 {
		// ZF is set when no lane failed either bound.
		c.I(x86.KORTESTW(fails[len(fails)-1], f))
	} else {
		if len(fails) > 1 {
			y := c.vec()
			c.I(x86.VORPS(fails[1], f, y))
			f = y
		}
		// ZF is set when no lane of the mask has its failure bit set.
		m := f
		if c.mask != nil {
			m = c.mask
		}
		c.I(x86.VTESTPS(m, f))
	}
	c.I(x86.JNE(operand.LabelRef(exitLabel)))
}

// laneIndex is the AVX2 vector of the lane numbers 0..7.
func (l *lowering) laneIndex() reg.VecVirtual {
	g := l.gp64()
	l.I(x86.MOVQ(operand.U64(0x0706050403020100), g))
	x := l.xmm()
	l.I(x86.VMOVQ(g, x))
	lane := l.regs.YMM()
	l.I(x86.VPMOVZXBD(x, lane))
	return lane
}

// lanesBelow is the AVX2 lane mask (for VMASKMOVPS) of the lanes whose
// number is below n.
func (l *lowering) lanesBelow(n reg.GPVirtual) reg.VecVirtual {
	lane := l.laneIndex()
	nx := l.xmm()
	l.I(x86.VMOVQ(n, nx))
	nv := l.regs.YMM()
	l.I(x86.VPBROADCASTD(nx, nv))
	m := l.regs.YMM()
	l.I(x86.VPCMPGTD(lane, nv, m)) // n > lane
	return m
}
