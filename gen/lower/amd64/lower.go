package amd64

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/gotypes"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

const (
	// unroll is the number of vectors per block of a streaming sweep, and
	// the number of partial sums per reduction (measured: 8 is no faster
	// than 4, and 4 hides the add latency).
	unroll = 4
	// residentBudget is how many of the 32 ZMM registers an AVX-512
	// function may spend keeping row values across loops; the rest hold
	// partial sums, broadcast scalars and temporaries.
	residentBudget = 16
	// maxH keeps every byte offset of a row within a signed 32-bit
	// displacement.
	maxH = 1 << 28
	// nosplitFrame is the largest frame of a NOSPLIT function (the
	// linker allows a chain of NOSPLIT frames 792 bytes deep); a function
	// with a larger one (Columns totals in the frame) is not NOSPLIT.
	nosplitFrame = 512
)

// lowering is the state of one function being lowered.
type lowering struct {
	*emitter
	f     target.Func
	k     *ir.Kernel
	sig   *gotypes.Signature
	isa   *target.Desc // capabilities: vector width, registers, masks
	lanes int          // float32 lanes per vector

	// Chunked sums (sums.go): stackSums says which levels of the sums
	// live in the frame rather than in registers (0: none, 1: the
	// super-totals, 2: the totals too, 3 and 4: the Columns lowering's
	// per-row scalars as well, columnLowering.set); regSupers and regTotals say that
	// some super-totals or totals are in registers. sumSlots are the
	// frame slots of those levels, reused by every loop; counters are the
	// Segments sums' counts.
	stackSums int
	// noPrefetch turns off the Columns loops' prefetch of the rows
	// ahead, which needs a general-purpose register of its own.
	noPrefetch bool
	regSupers  bool
	regTotals  bool
	sumSlots   []operand.Mem
	counters   []operand.Mem
	// scalarSlots are the Columns scalars' frame slots (stackSums 3).
	scalarSlots []operand.Mem
	// hoistCut lowers the Columns loops' estimate of the registers free
	// for frame scalars loaded once before the loop (hoistSplats);
	// hoisted says some loop did so.
	hoistCut int
	hoisted  bool
	// small is the stackSums and hoistCut of a Columns function's
	// smaller groups, its blocks and its tail, and (maxBlock) the blocks
	// of those groups; nil: one group size (compileColumnGroups).
	small *lowerConfig

	ptr  []reg.GPVirtual // one per kernel array, advanced row by row
	rows reg.GPVirtual   // rows left, counting down
	h    reg.GPVirtual   // row length when f.H == 0 (Segments: the segment length)
	tail reg.Register    // AVX-512 mask of the row's (segment's) last partial vector, or nil
	// bf16Consts are the rounding bias 0x7fff and the quiet bit 0x40<<16 in
	// every lane, set before a sweep that stores bf16 (half.go).
	bf16Consts [2]reg.VecVirtual
	// bf16Narrows numbers the subnormal checks of VCVTNEPS2BF16 stores,
	// for their labels.
	bf16Narrows int

	scal []reg.Register    // scalar values of the current row, in XMM registers
	accs map[int]*accState // partial sums of each accumulator's latest loop, current row

	// Row blocks (block.go): block rows per trip of the block loop; while
	// a body is lowered, row is the current row within it, rowScal and
	// rowAccs hold each row's scalars and partial sums, abandon is where
	// its guards jump, loopIdx counts its loops and bodies the bodies.
	block   int
	row     int
	rowScal [][]reg.Register
	rowAccs []map[int]*accState
	abandon string
	loopIdx int
	bodies  int

	// resident marks the arrays kept in registers from one loop of a row
	// to the next (AVX-512, fixed H, whole row fits); rowRegs holds them
	// by vector number while the row is lowered.
	resident []bool
	rowRegs  map[int][]reg.Register

	// Streaming (stream.go): ntFrom[a] is the first loop whose stores to
	// array a may be non-temporal (-1: none); shift marks the loops that
	// make such stores, laid out from the outputs' first aligned element,
	// head (a register; -1: the call cannot stream) elements into the
	// row, with the edges under edgeMask. pf is the byte offset of the
	// lines to prefetch from each of pfStreams, pfLines lines per block
	// iteration of each of the loops 1..pfLoops.
	ntFrom    []int
	shift     []bool
	head      reg.GPVirtual
	edgeMask  [2]reg.Register
	pf        reg.GPVirtual
	pfStreams []int
	pfLines   int
	pfLoops   int
	pfElem    int // bytes per element of the streams
	// ntFlag is the frame slot of a Columns call's streaming gate (nil:
	// no output pass streams), which the epilogue reads.
	ntFlag *operand.Mem
}

// accState is where one accumulator's partial sums live during and after
// its loop.
type accState struct {
	owner *sweepState    // the loop that fills them
	vec   []reg.Register // vector partial sums (of the current chunk)
	sc    reg.Register   // scalar partial sum of an AVX2 element tail, or nil
	lv    sumLevel       // the total and super-total above vec[0] of a chunked loop
}

// lower builds the avo function of f, with virtual registers, with blocks
// of at most maxBlock rows (0: no limit), and the levels of chunked sums
// that stackSums names in the frame (see lowering). It
// returns the rows per block it chose (Columns: blocks per group) and the
// next stackSums worth trying (0: none, no level of the sums that is in
// registers could move to the frame).
func lower(f target.Func, maxBlock int, stackSums int, noPrefetch bool) (*avoir.Function, int, int, error) {
	fn, block, next, _, err := lowerWith(f, maxBlock, stackSums, noPrefetch, 0)
	return fn, block, next, err
}

// lowerWith is lower with the Columns loops' register estimate lowered
// by hoistCut (lowering.hoistCut); it also returns the lowering, whose
// hoisted says whether some loop loaded frame scalars before its first
// element (nil when it failed before lowering).
func lowerWith(f target.Func, maxBlock int, stackSums int, noPrefetch bool, hoistCut int) (*avoir.Function, int, int, *lowering, error) {
	return lowerOpts(f, lowerConfig{maxBlock, stackSums, noPrefetch, hoistCut}, nil)
}

// lowerOpts is lowerWith with its settings in c; small, when not nil, is
// the settings of a Columns function's groups of fewer blocks
// (compileColumnGroups).
func lowerOpts(f target.Func, c lowerConfig, small *lowerConfig) (*avoir.Function, int, int, *lowering, error) {
	maxBlock, stackSums, noPrefetch, hoistCut := c.maxBlock, c.stackSums, c.noPrefetch, c.hoistCut
	k := f.Kernel
	if err := ir.Check(k); err != nil {
		return nil, 0, 0, nil, err
	}
	l := &lowering{f: f, k: k, accs: map[int]*accState{}, stackSums: stackSums, noPrefetch: noPrefetch, hoistCut: hoistCut, small: small}
	l.isa = f.ISA.Desc()
	if d := streamingDesc(f); d != nil {
		l.isa = d
	}
	if l.isa.GOARCH != "amd64" || (l.isa.VectorBytes != 32 && l.isa.VectorBytes != 64) {
		return nil, 0, 0, nil, fmt.Errorf("ISA %s is not an amd64 vector target (want %s or %s)", f.ISA, target.AVX512, target.AVX2)
	}
	l.lanes = l.isa.Lanes
	if f.H < 0 || f.H > maxH {
		return nil, 0, 0, nil, fmt.Errorf("hidden size %d is out of range 0..%d", f.H, maxH)
	}
	sig, err := gotypes.ParseSignature(f.AsmSignature())
	if err != nil {
		return nil, 0, 0, nil, fmt.Errorf("signature %s: %w", f.AsmSignature(), err)
	}
	fn := avoir.NewFunction(f.Name())
	fn.Attributes = attr.NOSPLIT
	fn.SetSignature(sig)
	l.sig = sig
	l.emitter = newEmitter(fn)
	// The other layouts take the simple path: no resident rows, no row
	// blocks, no streaming (target.ISA.NonTemporal refuses them NT).
	// Every layout may put levels of its chunked sums in the frame.
	block := 1
	switch k.Layout {
	case ir.Columns:
		block = l.columns(maxBlock)
	case ir.Segments:
		l.segments()
	default:
		if f.NT && !f.ISA.NonTemporal(k.Layout, f.H) {
			return nil, 0, 0, nil, fmt.Errorf("%s has no non-temporal variant at hidden size %d", f.ISA, f.H)
		}
		l.rowsLayout(maxBlock)
		block = l.block
	}
	if fn.FrameBytes() > nosplitFrame {
		// Past what the linker lets a NOSPLIT function take below its
		// caller's frame: the toolchain's stack check instead.
		fn.Attributes &^= attr.NOSPLIT
	}
	next := 0
	switch {
	case l.regSupers && stackSums < 1:
		next = 1
	case l.regTotals && stackSums < 2:
		next = 2
	case k.Layout == ir.Columns && stackSums < 4:
		next = max(stackSums+1, 3)
	}
	return fn, block, next, l, l.err
}

// rowsLayout lowers a kernel of layout ir.Rows.
func (l *lowering) rowsLayout(maxBlock int) {
	l.planResident()
	l.planStreaming()

	l.planBlock(maxBlock)

	l.prologue(l.sig)
	l.ntPrologue()
	if l.block > 1 {
		l.blockLoop()
	}
	// The row loop: rows >= 1 is the caller's guarantee.
	l.label("row")
	l.startPrefetch()
	l.body(1, exitLabel)
	l.advance(1)
	l.I(x86.DECQ(l.rows))
	l.I(x86.JNZ(operand.LabelRef("row")))
	l.epilogue(l.sig)
}

// blockLoop lowers the loop over blocks of l.block rows, which runs while
// that many rows are left and hands the rest to the loop over single rows.
// A guard that trips on any row of a block hands the whole block to the
// single rows too, which do its rows again from the start: nothing before
// the guards stores, so the rows before the abandoned one are completed
// and the abandoned one is untouched.
func (l *lowering) blockLoop() {
	b := l.block
	l.comment("blocks of %d rows", b)
	l.I(x86.CMPQ(l.rows, imm32(b)))
	l.I(x86.JB(operand.LabelRef("row")))
	l.label("rows")
	l.startPrefetch()
	l.body(b, "row")
	l.advance(b)
	l.I(x86.SUBQ(imm32(b), l.rows))
	l.I(x86.CMPQ(l.rows, imm32(b)))
	l.I(x86.JAE(operand.LabelRef("rows")))
	l.I(x86.TESTQ(l.rows, l.rows))
	l.I(x86.JZ(operand.LabelRef(exitLabel)))
}

// exitLabel is where a guard that abandons a row jumps; the loop over the
// rows falls through to it with no rows left.
const exitLabel = "done"

// epilogue is the one exit: it returns the rows completed, rows minus
// the rows left (l.rows counts the abandoned row as left), after
// VZEROUPPER.
func (l *lowering) epilogue(sig *gotypes.Signature) {
	l.label(exitLabel)
	n := l.gp64()
	l.I(x86.MOVQ(l.argAddr(sig, "rows"), n))
	l.I(x86.SUBQ(l.rows, n))
	ret, err := sig.Results().At(0).Resolve()
	if err != nil {
		l.fail(fmt.Errorf("result: %w", err))
	} else {
		l.I(x86.MOVQ(n, ret.Addr))
	}
	l.ntEpilogue()
	l.columnNTEpilogue()
	l.I(x86.VZEROUPPER())
	l.I(x86.RET())
}

// argAddr is the frame address of a named argument.
func (l *lowering) argAddr(sig *gotypes.Signature, name string) operand.Mem {
	b, err := sig.Params().Lookup(name).Resolve()
	if err != nil {
		l.fail(fmt.Errorf("argument %s: %w", name, err))
		return operand.Mem{}
	}
	return b.Addr
}

// planResident decides whether every row is kept in registers across the
// loops of the kernel: only on AVX-512 with H fixed, and only when the
// arrays that a later loop reads again fit in residentBudget registers.
func (l *lowering) planResident() {
	if l.isa.VectorRegs < 32 || l.f.H == 0 || l.f.NT {
		return
	}
	seen := make([]bool, len(l.k.Arrays)) // touched by an earlier loop
	reread := make([]bool, len(l.k.Arrays))
	count := 0
	for _, st := range l.k.Body {
		loop, ok := st.(*ir.Loop)
		if !ok {
			continue
		}
		for _, op := range loop.Ops {
			if op.Code == ir.VLoad && seen[op.Array] && !reread[op.Array] {
				reread[op.Array] = true
				count++
			}
		}
		for _, op := range loop.Ops {
			if op.Code == ir.VLoad || op.Code == ir.VStore {
				seen[op.Array] = true
			}
		}
	}
	vectors := (l.f.H + l.lanes - 1) / l.lanes
	if count > 0 && count*vectors <= residentBudget {
		l.resident = reread
	}
}

// prologue loads the arguments and sets up the tail mask.
func (l *lowering) prologue(sig *gotypes.Signature) {
	l.loadArgs()
	l.tailMask()
}

// loadArgs loads the array pointers, rows, and the row length when it is
// taken at run time: h, or for Segments the segment length, which the
// sweeps then treat as the row length.
func (l *lowering) loadArgs() {
	for _, a := range l.k.Arrays {
		p := l.gp64()
		l.I(x86.MOVQ(l.argAddr(l.sig, a.Name), p))
		l.ptr = append(l.ptr, p)
	}
	l.rows = l.gp64()
	l.I(x86.MOVQ(l.argAddr(l.sig, "rows"), l.rows))
	if l.f.H == 0 {
		name := "h"
		if l.k.Layout == ir.Segments {
			name = "seglen"
		}
		l.h = l.gp64()
		l.I(x86.MOVQ(l.argAddr(l.sig, name), l.h))
	}
}

// tailMask sets l.tail, the AVX-512 mask of the last partial vector of a
// row of l.f.H or l.h elements, when there can be one.
func (l *lowering) tailMask() {
	if !l.masked() {
		return
	}
	rem := l.f.H % l.lanes
	if l.f.H > 0 && rem == 0 {
		return
	}
	// The mask has one bit per element of the last partial vector.
	var t reg.GPVirtual
	if l.f.H > 0 {
		t = l.gp32()
		l.I(x86.MOVL(operand.U32(1<<rem-1), t))
	} else {
		// h % 16 == 0 gives an empty mask, and the masked tail then
		// touches nothing.
		n := l.gp32()
		l.I(x86.MOVL(l.h.As32(), n))
		l.I(x86.ANDL(operand.U8(l.lanes-1), n))
		t = l.lowBits(n)
	}
	k := l.regs.K()
	l.I(x86.KMOVW(t, k))
	l.tail = k
}

// lowBits returns a 32-bit register holding (1 << n) - 1, for n < 32 in a
// 32-bit register, without a shift by CL: set bit n, then decrement.
func (l *lowering) lowBits(n reg.Register) reg.GPVirtual {
	t := l.gp32()
	l.I(x86.XORL(t, t))
	l.I(x86.BTSL(n, t))
	l.I(x86.DECL(t))
	return t
}

// body lowers the per-row program once for rows consecutive rows (more
// than one only for a fixed H): each loop sweeps them all together, each
// scalar statement is lowered for each row in turn, and a guard that
// trips jumps to abandon.
func (l *lowering) body(rows int, abandon string) {
	l.rowRegs = map[int][]reg.Register{}
	l.bodies++
	l.loopIdx = 0
	l.abandon = abandon
	l.rowScal = make([][]reg.Register, rows)
	l.rowAccs = make([]map[int]*accState, rows)
	for r := range rows {
		l.rowScal[r] = make([]reg.Register, l.k.NumScalars)
		l.rowAccs[r] = map[int]*accState{}
	}
	uniform := pass.RowInvariant(l.k)
	for _, st := range l.k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			l.sweep(st, rows)
		case *ir.Scalar:
			for r := range rows {
				l.row, l.scal, l.accs = r, l.rowScal[r], l.rowAccs[r]
				if r > 0 && st.Dst >= 0 && uniform[st.Dst] {
					l.scal[st.Dst] = l.rowScal[0][st.Dst]
					continue
				}
				l.scalar(st)
			}
		}
	}
	l.row = 0
}

// rowDisp is the byte offset of array a's values for row r of a block
// from those of its first row.
func (l *lowering) rowDisp(a, r int) int {
	switch l.k.Arrays[a].Role {
	case ir.RowIn, ir.RowOut:
		return l.elem(a).Bytes() * l.f.H * r
	case ir.RowScalarIn, ir.RowScalarOut, ir.RowScalarInOut:
		return 4 * r
	}
	return 0
}

// advance moves every per-row pointer on by rows rows.
func (l *lowering) advance(rows int) {
	for i, a := range l.k.Arrays {
		p := l.ptr[i]
		switch a.Role {
		case ir.RowIn, ir.RowOut:
			switch {
			case l.f.H > 0:
				l.I(x86.ADDQ(imm32(a.Elem.Bytes()*l.f.H*rows), p))
			case a.Elem.Half():
				l.I(x86.LEAQ(operand.Mem{Base: p, Index: l.h, Scale: 2}, p))
			default:
				l.I(x86.LEAQ(mem(p, l.h, 0), p))
			}
		case ir.RowScalarIn, ir.RowScalarOut, ir.RowScalarInOut:
			l.I(x86.ADDQ(operand.U8(4*rows), p))
		}
	}
}

// scalar lowers one scalar statement into XMM registers. SSqrt and SDiv
// are the exact instructions, never reciprocal approximations.
func (l *lowering) scalar(st *ir.Scalar) {
	arg := func(i int) reg.Register { return l.scal[st.Args[i]] }
	if st.Code != ir.SGuard {
		l.comment("%s", l.k.ScalarText(st, l.f.H))
	}
	var d reg.Register
	switch st.Code {
	case ir.SConst:
		d = l.constant(st.Const)
	case ir.SArg:
		d = l.arg(st.Arg)
	case ir.SInvLen:
		if l.f.H > 0 {
			d = l.constant(1 / float32(l.f.H))
			break
		}
		d = l.invLen()
	case ir.SSum:
		d = l.reduce(st.Acc)
	case ir.SAdd, ir.SSub, ir.SMul, ir.SDiv:
		d = l.xmm()
		ins := map[ir.ScalarCode]func(...operand.Op) (*avoir.Instruction, error){
			ir.SAdd: x86.VADDSS, ir.SSub: x86.VSUBSS, ir.SMul: x86.VMULSS, ir.SDiv: x86.VDIVSS,
		}[st.Code]
		l.I(ins(arg(1), arg(0), d))
	case ir.SSqrt:
		d = l.xmm()
		l.I(x86.VSQRTSS(arg(0), arg(0), d))
	case ir.SLoad:
		d = l.xmm()
		if e := l.elem(st.Array); e.Half() {
			l.loadHalfScalar(e, mem(l.ptr[st.Array], nil, l.rowDisp(st.Array, l.row)), d)
			break
		}
		l.I(x86.VMOVSS(mem(l.ptr[st.Array], nil, l.rowDisp(st.Array, l.row)), d))
	case ir.SStore:
		l.I(x86.VMOVSS(arg(0), mem(l.ptr[st.Array], nil, l.rowDisp(st.Array, l.row))))
		return
	case ir.SGuard:
		l.guard(st, arg(0))
		return
	default:
		l.fail(fmt.Errorf("scalar statement %s has no lowering", st.Code))
		return
	}
	l.scal[st.Dst] = d
}

// guard leaves the row loop for the exit, with this row counted as not
// done, unless Lo <= v <= Hi. VUCOMISS b, a sets CF=ZF=0 exactly when
// a > b, and CF=ZF=PF=1 when either is NaN: JA (CF=0 and ZF=0) takes the
// ordered "greater", JP the unordered (NaN). An infinite bound needs no
// compare, but NaN is still checked.
func (l *lowering) guard(st *ir.Scalar, v reg.Register) {
	l.comment("%s", l.k.ScalarText(st, 0))
	nanChecked := false
	if !math.IsInf(float64(st.Hi), 1) {
		l.I(x86.VUCOMISS(l.constant(st.Hi), v)) // v > Hi
		l.I(x86.JA(operand.LabelRef(l.abandon)))
		l.I(x86.JPS(operand.LabelRef(l.abandon)))
		nanChecked = true
	}
	if !math.IsInf(float64(st.Lo), -1) {
		l.I(x86.VUCOMISS(v, l.constant(st.Lo))) // Lo > v
		l.I(x86.JA(operand.LabelRef(l.abandon)))
		if !nanChecked {
			l.I(x86.JPS(operand.LabelRef(l.abandon)))
			nanChecked = true
		}
	}
	if !nanChecked {
		l.I(x86.VUCOMISS(v, v)) // unordered only for NaN
		l.I(x86.JPS(operand.LabelRef(l.abandon)))
	}
}

// invLen is 1/n in an XMM register for a row length n known only at run
// time: h, or segs*seglen for Segments (the product read from the frame,
// so that segs needs no register for the whole function).
func (l *lowering) invLen() reg.Register {
	n := l.h
	if l.k.Layout == ir.Segments {
		n = l.gp64()
		l.I(x86.MOVQ(l.argAddr(l.sig, "segs"), n))
		l.I(x86.IMULQ(l.h, n))
	}
	one := l.constant(1)
	nx := l.xmm()
	l.I(x86.VCVTSI2SSQ(n, one, nx))
	d := l.xmm()
	l.I(x86.VDIVSS(nx, one, d))
	return d
}

// arg loads the kernel's float32 argument i from the frame.
func (l *lowering) arg(i int) reg.Register {
	x := l.xmm()
	l.I(x86.VMOVSS(l.argAddr(l.sig, l.k.Args[i].Name), x))
	return x
}

// constant materialises a float32 through a general-purpose register, so
// the file needs no data section.
func (l *lowering) constant(c float32) reg.Register {
	t := l.gp32()
	l.I(x86.MOVL(operand.U32(math.Float32bits(c)), t))
	x := l.xmm()
	l.I(x86.VMOVD(t, x))
	return x
}

// vec allocates a virtual register of the target's vector width.
func (l *lowering) vec() reg.VecVirtual {
	if l.zmm() {
		return l.regs.ZMM()
	}
	return l.regs.YMM()
}

// zero clears a vector register with a zero idiom.
func (l *lowering) zero(v reg.Register) {
	if l.zmm() {
		l.zeroZ(v)
		return
	}
	l.I(x86.VXORPS(v, v, v))
}

// reduce is the horizontal sum of an accumulator's partial sums.
func (l *lowering) reduce(acc int) reg.Register {
	st := l.accs[acc]
	if st == nil {
		l.fail(fmt.Errorf("sum of accumulator %d, which no loop filled", acc))
		return l.xmm()
	}
	var x reg.Register
	if vs := st.vec; len(vs) > 0 {
		for len(vs) > 1 {
			var next []reg.Register
			for i := 0; i+1 < len(vs); i += 2 {
				d := l.vec()
				l.I(x86.VADDPS(vs[i+1], vs[i], d))
				next = append(next, d)
			}
			if len(vs)%2 == 1 {
				next = append(next, vs[len(vs)-1])
			}
			vs = next
		}
		x = l.horizontal(vs[0])
	}
	if st.sc != nil {
		if x == nil {
			return st.sc
		}
		d := l.xmm()
		l.I(x86.VADDSS(st.sc, x, d))
		x = d
	}
	return x
}

// horizontal adds the lanes of one vector into an XMM register's low lane.
func (l *lowering) horizontal(v reg.Register) reg.Register {
	if l.zmm() {
		// Only 512-bit packed forms: their EVEX encodings need AVX512F
		// alone, whichever registers the allocator picks.
		half := l.regs.ZMM()
		l.I(x86.VSHUFF32X4(operand.U8(0x4E), v, v, half))
		s8 := l.regs.ZMM()
		l.I(x86.VADDPS(half, v, s8))
		quarter := l.regs.ZMM()
		l.I(x86.VSHUFF32X4(operand.U8(0xB1), s8, s8, quarter))
		s4 := l.regs.ZMM()
		l.I(x86.VADDPS(quarter, s8, s4))
		pair := l.regs.ZMM()
		l.I(x86.VPERMILPS(operand.U8(0x4E), s4, pair))
		s2 := l.regs.ZMM()
		l.I(x86.VADDPS(pair, s4, s2))
		odd := l.regs.ZMM()
		l.I(x86.VPERMILPS(operand.U8(0xB1), s2, odd))
		s1 := l.xmm()
		l.I(x86.VADDSS(odd.AsX(), s2.AsX(), s1))
		return s1
	}
	y := v.(reg.VecVirtual)
	hi := l.xmm()
	l.I(x86.VEXTRACTF128(operand.U8(1), y, hi))
	s4 := l.xmm()
	l.I(x86.VADDPS(hi, y.AsX(), s4))
	pair := l.xmm()
	l.I(x86.VMOVHLPS(s4, s4, pair))
	s2 := l.xmm()
	l.I(x86.VADDPS(pair, s4, s2))
	odd := l.xmm()
	l.I(x86.VMOVSHDUP(s2, odd))
	s1 := l.xmm()
	l.I(x86.VADDSS(odd, s2, s1))
	return s1
}
