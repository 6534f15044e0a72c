package amd64

import (
	"fmt"
	"math"
	"slices"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// columnLowering lowers a kernel of layout ir.Columns across rows: row r's
// element i is at i*stride + r, so the rows r..r+lanes-1 are side by side
// in memory at every element. Each lane runs one row's program: every IR
// scalar is a vector of per-row values (no horizontal sums), and each IR
// loop is a loop over the elements i = 0..h-1, one vector per element.
//
// A body may run several blocks of lanes rows side by side (a group):
// every IR scalar and accumulator is then one vector per block, and each
// element's loads are the group's consecutive cache lines. The blocks'
// chains are independent, which hides the add latency of the sums.
type columnLowering struct {
	*lowering
	stride   reg.GPVirtual // bytes from one element of a row to the next, in units of c.unit
	unit     int           // the smallest element size of the row arrays: 2 with half storage, else 4
	mask     reg.Register  // the lanes of a partial block's rows, nil for whole blocks
	tailRows reg.GPVirtual // AVX2: the rows of the partial block (its half arrays go element by element)
	labels   int           // labels made for half tails
	name     string        // label prefix of the current body
	abandon  string        // where the current body's guards jump
	blocks   int           // blocks of lanes rows in the current body
	uniform  []bool        // scalars that are the same for every row
	val      [][]reg.Register
	acc      map[int][]reg.Register
	loops    int
	// slots, when per-row scalars live in the frame (stackSums 3: those
	// live into a loop, 4: all): each scalar's vector per block, nil for
	// those in registers (always the uniform ones, one register for all
	// the blocks). nslot counts the frame slots the current body took;
	// bodies reuse them.
	slots [][]operand.Mem
	nslot int
	// lastUse is the index in the body of each scalar's last use (-1:
	// none); stmt is the statement being lowered. crosses marks the
	// scalars live into a loop (defined before it, used in or after it).
	lastUse []int
	crosses []bool
	stmt    int
	// pfStart is the frame slot of the loops' first prefetch offset, set
	// once per call (prefetchOffset).
	pfStart operand.Mem
	// order is the body as lowered (storesEarly).
	order []ir.Stmt
	// Streaming stores (columnsnt.go): ntAt marks the loops of order
	// lowered twice, ntArrays are the arrays they store, ntSlot the
	// call's gate, nt says the copy being lowered streams.
	ntAt     []bool
	ntArrays []int
	ntSlot   operand.Mem
	nt       bool
	// big is the larger groups' stackSums and hoistCut in a function of
	// two group sizes (lowering.small).
	big lowerConfig
}

// Vector compare predicates: true when the lane fails the guard bound,
// NaN included (unordered).
const (
	cmpUnordQ = 0x03 // unordered
	cmpNLEUQ  = 0x16 // !(a <= b)
	cmpNGEUQ  = 0x19 // !(a >= b)
)

// Blocks per group of the Columns lowering: 8 ZMM blocks on AVX-512 (128
// rows, 8 cache lines per element); 4 YMM blocks on AVX2 (128 bytes of
// each row per step). Either way the 16 or 32 registers then need the
// per-row scalars in the frame (compile moves them there, then halves the
// group if needed). Each step of a loop is a new element, stride bytes
// on: from memory, the bytes read per step are what counts (a new DRAM
// page and TLB entry per step once the stride passes 4 KiB). Measured on
// AMD EPYC (Zen 5, BatchNorm's backward over [N, C], 32 MiB): 8 blocks
// against 4 took C = 4096 and 8192 from about 1.9x to 1.4x the copy, 2
// blocks to 3x; AVX2 keeps 4 (8 do not fit its registers). A fixed
// element count (ConvNeXt's channels, at most a few thousand elements a
// column) keeps AVX-512 at 4: its columns stay in cache, and 4 blocks keep
// its per-row scalars in registers, where 8 put them in the frame and
// were 2-2.7x slower over 196 positions (generated benchmarks). At any
// element count, AVX-512 has groups of 4 as well, for short columns
// (columnSmallMaxH).
//
// At C = 768 from memory (the backward over 32 MiB, N = 10922) the second
// pass re-reads a group's 2*N*64*blocks bytes of dy and x: measured on the
// same machine, with N = 5461 (5.6 MB a group) the kernel was about 1.1x
// the copy, with N = 10922 1.3-1.45x, both passes then reading memory (5
// array passes to the copy's 4), and groups of 4 (5.6 MB again) did not
// win that back. Nor did 12 or 16 blocks, the output pass run backwards or
// from mid-column, prefetching 0 to 32 elements ahead or PREFETCHT1, or
// flushing the lines after their last use (interleaved, under load).
const (
	columnGroupAVX512      = 8
	columnGroupAVX512Fixed = 4
	columnGroupAVX2        = 4
)

// An AVX-512 call of any element count runs groups of
// columnGroupAVX512Fixed blocks only (their per-row scalars in registers)
// when it has at most columnSmallMaxH elements a row (BatchNorm over
// [N, C]: the batch N) or its rows span at most columnSmallMaxBytes
// (h*stride bytes); else groups of columnGroupAVX512 (scalars in the
// frame) while there are that many rows. A short column does not repay
// the larger group's frame traffic. Measured on AMD EPYC (Zen 5),
// BatchNorm forward and backward over [N, C], in cache, 4 blocks against
// 8 (thread CPU time, interleaved): at C = 4096 and 8192, 4 were 5-68%
// faster up to N = 5 (backward at 4096) to 8, within a few percent
// either way up to 8, and 8 faster from N = 10; at C = 768 (a 3 KiB
// stride), 4 were faster up to N = 32 (backward) and 44 (forward),
// 96-132 KiB of x.
const (
	columnSmallMaxH     = 8
	columnSmallMaxBytes = 128 << 10
)

// columnSmallGroup is the blocks per group of the smaller groups of f, 0
// for none: an AVX-512 Columns function of any element count has groups
// of columnGroupAVX512 and of columnGroupAVX512Fixed blocks, chosen per
// call (columnSmallMaxH, columnSmallMaxBytes).
func columnSmallGroup(f target.Func) int {
	if f.Kernel.Layout != ir.Columns || f.H > 0 || f.ISA.Desc().VectorRegs < 32 {
		return 0
	}
	return columnGroupAVX512Fixed
}

// compileColumnGroups compiles f with groups of both sizes: small blocks
// and columnBlocks'. Each size is searched for alone, as a function of
// that group size only; the two bodies then share the function on
// disjoint paths, each lowered with the settings its search found (the
// larger groups' per-row scalars in the frame, the smaller ones' in
// registers). Larger groups that keep their scalars in registers, or a
// pair that does not fit, leave f with the larger groups alone.
func compileColumnGroups(f target.Func, small int) ([]byte, error) {
	big, err := search(f, lowerConfig{})
	if err != nil || big.cfg.stackSums < 3 {
		// Larger groups whose per-row scalars stay in registers were
		// as fast as groups of 4 or faster at every N (BatchNorm at
		// inference: up to 20% at N = 8).
		return big.text, err
	}
	sm, err := search(f, lowerConfig{maxBlock: small})
	if err != nil || sm.block >= big.block {
		return big.text, nil
	}
	c := big.cfg
	c.noPrefetch = c.noPrefetch || sm.cfg.noPrefetch
	sc := sm.cfg
	sc.maxBlock = sm.block
	fn, _, _, _, err := lowerOpts(f, c, &sc)
	if err != nil {
		return nil, err
	}
	if text, err := finish(fn, f.ISA); err == nil {
		return text, nil
	}
	return big.text, nil
}

// columnBlocks is the blocks per group on isa, for an element count of h
// (0: any).
func columnBlocks(isa target.ISA, h int) int {
	switch {
	case isa.Desc().VectorRegs < 32:
		return columnGroupAVX2
	case h > 0:
		return columnGroupAVX512Fixed
	}
	return columnGroupAVX512
}

// columns lowers the whole function: groups of blocks while there are
// that many rows, blocks of lanes rows while there are that many, then
// one masked block for the rest (AVX-512 k-mask, AVX2 VMASKMOVPS:
// masked-off lanes neither fault nor store). A guard failing in any lane
// of a block returns the block's first row: nothing of the block is
// stored before its guards. A guard failing in a group hands the group,
// untouched, to the loop over blocks, which does its blocks again one by
// one up to the failing one (the same instructions per lane, so the same
// values). It returns the blocks per group it chose, at most limit when
// that is not 0.
func (l *lowering) columns(limit int) int {
	c := &columnLowering{lowering: l}
	l.loadArgs()
	c.unit = 4
	for _, a := range l.k.Arrays {
		c.unit = min(c.unit, a.Elem.Bytes())
	}
	c.stride = l.argSized("stride", c.unit)
	c.uniform = pass.RowInvariant(l.k)
	c.order = storesEarly(l.k.Body)
	c.lastUse = make([]int, l.k.NumScalars)
	for s := range c.lastUse {
		c.lastUse[s] = -1
	}
	for si, st := range c.order {
		switch st := st.(type) {
		case *ir.Loop:
			for _, op := range st.Ops {
				if op.Code == ir.VSplat {
					c.lastUse[op.Scalar] = si
				}
			}
		case *ir.Scalar:
			for _, a := range st.Args {
				c.lastUse[a] = si
			}
		}
	}
	c.crosses = make([]bool, l.k.NumScalars)
	nextLoop := len(c.order) // the first loop after the current statement
	for si := len(c.order) - 1; si >= 0; si-- {
		switch st := c.order[si].(type) {
		case *ir.Loop:
			nextLoop = si
		case *ir.Scalar:
			if st.Dst >= 0 {
				c.crosses[st.Dst] = nextLoop <= c.lastUse[st.Dst]
			}
		}
	}
	c.prefetchOffset()
	c.planColumnNT()
	c.columnNTGate()
	w := l.lanes
	g := columnBlocks(l.f.ISA, l.f.H)
	if limit > 0 {
		g = min(g, limit)
	}
	c.big = lowerConfig{stackSums: l.stackSums, hoistCut: l.hoistCut}
	sg := 0 // blocks per smaller group
	if l.small != nil && l.small.maxBlock > 1 && l.small.maxBlock < g {
		sg = l.small.maxBlock
	}
	if g > 1 {
		after := "blocks" // where the rows left after the groups go
		if sg > 0 {
			after = "sgroups"
			l.comment("at most %d elements, or rows spanning at most %d bytes: groups of %d blocks only", columnSmallMaxH, columnSmallMaxBytes, sg)
			l.I(x86.CMPQ(l.h, imm32(columnSmallMaxH)))
			l.I(x86.JBE(operand.LabelRef(after)))
			t := l.gp64()
			l.I(x86.MOVQ(c.stride, t))
			l.I(x86.IMULQ(l.h, t))
			l.I(x86.CMPQ(t, imm32(columnSmallMaxBytes)))
			l.I(x86.JBE(operand.LabelRef(after)))
		}
		l.I(x86.CMPQ(l.rows, imm32(g*w)))
		l.I(x86.JB(operand.LabelRef(after)))
		l.label("group")
		l.comment("a group of %d blocks, %d rows", g, g*w)
		c.body("g", nil, g, after)
		c.nextRows(g)
		l.I(x86.SUBQ(imm32(g*w), l.rows))
		l.I(x86.CMPQ(l.rows, imm32(g*w)))
		l.I(x86.JAE(operand.LabelRef("group")))
		if sg > 0 {
			l.label(after)
			l.I(x86.CMPQ(l.rows, imm32(sg*w)))
			l.I(x86.JB(operand.LabelRef("blocks")))
			l.label("sgroup")
			l.comment("a group of %d blocks, %d rows", sg, sg*w)
			c.body("s", nil, sg, "blocks")
			c.nextRows(sg)
			l.I(x86.SUBQ(imm32(sg*w), l.rows))
			l.I(x86.CMPQ(l.rows, imm32(sg*w)))
			l.I(x86.JAE(operand.LabelRef("sgroup")))
		}
		l.label("blocks")
	}
	l.I(x86.CMPQ(l.rows, imm32(w)))
	l.I(x86.JB(operand.LabelRef("tail")))
	l.label("block")
	l.comment("a block of %d rows", w)
	c.body("b", nil, 1, exitLabel)
	c.nextRows(1)
	l.I(x86.SUBQ(imm32(w), l.rows))
	l.I(x86.CMPQ(l.rows, imm32(w)))
	l.I(x86.JAE(operand.LabelRef("block")))

	l.label("tail")
	l.I(x86.TESTQ(l.rows, l.rows))
	l.I(x86.JZ(operand.LabelRef(exitLabel)))
	l.comment("the last rows-%%%d rows, under a mask", w)
	if l.masked() {
		k := l.regs.K()
		l.I(x86.KMOVW(l.lowBits(l.rows.As32()), k))
		c.body("t", k, 1, exitLabel)
	} else {
		c.tailRows = l.rows
		c.body("t", l.lanesBelow(l.rows), 1, exitLabel)
	}
	l.I(x86.XORQ(l.rows, l.rows))
	l.epilogue(l.sig)
	return g
}

// nextRows moves the row arrays' pointers on by blocks blocks of rows.
func (c *columnLowering) nextRows(blocks int) {
	for i, a := range c.k.Arrays {
		if a.Role != ir.Param {
			c.I(x86.ADDQ(imm32(a.Elem.Bytes()*c.lanes*blocks), c.ptr[i]))
		}
	}
}

// body lowers the per-row program once for blocks blocks of rows, under
// mask (nil: every lane), statement by statement for every block in
// turn, so that every block's guards come before any block's stores; a
// guard that trips jumps to abandon.
func (c *columnLowering) body(name string, mask reg.Register, blocks int, abandon string) {
	c.name, c.mask, c.blocks, c.abandon = name, mask, blocks, abandon
	if c.small != nil {
		// With two group sizes, only the larger groups take their
		// search's settings; the rest take the smaller groups'.
		s := c.small
		if blocks > s.maxBlock {
			s = &c.big
		}
		c.stackSums, c.hoistCut = s.stackSums, s.hoistCut
	}
	c.val = make([][]reg.Register, c.k.NumScalars)
	c.slots = make([][]operand.Mem, c.k.NumScalars)
	c.nslot = 0
	c.acc = map[int][]reg.Register{}
	c.loops = 0
	for si, st := range c.order {
		c.stmt = si
		switch st := st.(type) {
		case *ir.Loop:
			c.loop(st)
		case *ir.Scalar:
			c.scalar(st)
		}
	}
}

// storesEarly returns body with each store of a per-row scalar moved up
// to just after its value and the last guard before it (nothing is
// stored before a guard), unless a statement in between reads the
// array: BatchNorm's mean and rstd are then written before the pass
// over the rows rather than held across it.
func storesEarly(body []ir.Stmt) []ir.Stmt {
	var out []ir.Stmt
	for _, st := range body {
		sc, ok := st.(*ir.Scalar)
		if !ok || sc.Code != ir.SStore {
			out = append(out, st)
			continue
		}
		at := len(out)
		for ; at > 0; at-- {
			stop := false
			switch prev := out[at-1].(type) {
			case *ir.Scalar:
				stop = prev.Code == ir.SGuard || prev.Dst == sc.Args[0] || (prev.Code == ir.SLoad && prev.Array == sc.Array)
			case *ir.Loop:
				stop = slices.ContainsFunc(prev.Ops, func(op ir.VecOp) bool { return op.Code == ir.VLoad && op.Array == sc.Array })
			}
			if stop {
				break
			}
		}
		out = slices.Insert(out, at, st)
	}
	return out
}

// get is block b's vector of scalar s: its register, or a fresh one
// loaded from its frame slot.
func (c *columnLowering) get(s ir.S, b int) reg.Register {
	if c.slots[s] == nil {
		return c.val[s][b]
	}
	v := c.vec()
	c.I(x86.VMOVUPS(c.slots[s][b], v))
	return v
}

// set makes vs (one vector per block) the value of scalar s. With the
// scalars in the frame, a per-row scalar is stored to slots: the loops
// then hold little more than their accumulators and temporaries in
// registers, and a group of blocks fits in AVX2's 16 registers; the
// registers left over hold the splats a loop hoists (hoistSplats).
func (c *columnLowering) set(s ir.S, vs []reg.Register) {
	c.val[s] = vs
	if c.stackSums < 3 || c.uniform[s] || (c.stackSums == 3 && !c.crosses[s]) {
		return
	}
	ms := make([]operand.Mem, len(vs))
	for b, v := range vs {
		if c.nslot == len(c.scalarSlots) {
			c.scalarSlots = append(c.scalarSlots, c.fn.AllocLocal(4*c.lanes))
		}
		ms[b] = c.scalarSlots[c.nslot]
		c.nslot++
		c.I(x86.VMOVUPS(v, ms[b]))
	}
	c.slots[s] = ms
}

// rowMem is the address of block b's rows' element at byte offset off
// (nil: element 0) of array a.
func (c *columnLowering) rowMem(a int, off reg.Register, b int) operand.Mem {
	size := c.elem(a).Bytes()
	m := operand.Mem{Base: c.ptr[a], Disp: size * c.lanes * b}
	if off != nil {
		m.Index, m.Scale = off, uint8(size/c.unit)
	}
	return m
}

// load reads one vector of a block's rows of array a, masked in a
// partial block.
func (c *columnLowering) load(a int, m operand.Mem, d reg.Register) {
	if e := c.elem(a); e.Half() {
		c.loadHalf(e, m, d)
		return
	}
	switch {
	case c.mask == nil:
		c.I(x86.VMOVUPS(m, d))
	case c.masked():
		c.I(x86.VMOVUPS_Z(m, c.mask, d))
	default:
		c.I(x86.VMASKMOVPS(m, c.mask, d))
	}
}

// store writes one vector of a block's rows of array a, masked in a
// partial block.
func (c *columnLowering) store(a int, v reg.Register, m operand.Mem) {
	if e := c.elem(a); e.Half() {
		c.storeHalf(e, v, m)
		return
	}
	switch {
	case c.mask == nil && c.nt:
		c.I(x86.VMOVNTPS(v, m))
	case c.mask == nil:
		c.I(x86.VMOVUPS(v, m))
	case c.masked():
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

// loop lowers one IR loop: element by element down the rows, the row
// arrays' offset moving by stride bytes and the parameters' index by one
// (a parameter's element i is the same for every row: broadcast once per
// element for all the blocks). Each element is the loop body once per
// block.
func (c *columnLowering) loop(loop *ir.Loop) {
	n := c.loops
	c.loops++
	name := fmt.Sprintf("%sloop%d", c.name, n)
	c.comment("pass %d over the block's rows: %s", c.k.Pass(loop), c.k.LoopText(loop))
	if !c.ntLoop(loop, name) {
		c.loopAs(loop, name)
	}
}

// loopAs lowers loop with its labels named from name.
func (c *columnLowering) loopAs(loop *ir.Loop, name string) {
	// Each lane's sum runs in one register, element after element, in
	// the order ir.Eval adds: the whole row when it has at most
	// pass.ChunkTerms elements, else a chunk of that many at a time, each
	// chunk's sum then added into the accumulator's total and the chunk's
	// register cleared; when the row may be longer than pass.SuperTerms,
	// every pass.SuperTerms elements the total is added into the
	// accumulator's super-total and cleared. Totals and super-totals are
	// registers, or frame slots when the registers do not suffice
	// (lowering.stackSums).
	var accs []int // the loop's accumulators, in order
	for _, op := range loop.Ops {
		if op.Code == ir.VAcc || op.Code == ir.VAccMul {
			vs := make([]reg.Register, c.blocks)
			for b := range vs {
				vs[b] = c.vec()
				c.zero(vs[b])
			}
			c.acc[op.Acc] = vs
			accs = append(accs, op.Acc)
		}
	}
	// Each lane adds one term per element of its row.
	levels := pass.ChunkOnly // of the sums: chunks, totals, super-totals
	if len(accs) > 0 {
		levels = pass.SumLevels(c.f.H)
	}
	chunked := levels > pass.ChunkOnly
	// A call whose rows have at most pass.ChunkTerms elements (BatchNorm over
	// [N, C] with a small batch) never moves a chunk into a total: it
	// skips clearing the totals and adding them in, which would cost as
	// much as the few elements.
	short := ""
	var lvs []sumLevel // per accumulator of accs, then per block
	if chunked {
		var vs []reg.Register
		for _, a := range accs {
			vs = append(vs, c.acc[a]...)
		}
		if c.f.H == 0 {
			short = name + "short"
			c.I(x86.CMPQ(c.h, imm32(pass.ChunkTerms)))
			c.I(x86.JBE(operand.LabelRef(short)))
		}
		lvs = c.sumLevels(vs, levels)
		if short != "" {
			c.label(short)
		}
	}
	// fma's operand reuse needs the values' last uses; splats are the
	// scalars' own registers, which must survive the loop, and a
	// parameter's broadcast serves every block (sweepState.shared).
	sw := &sweepState{loop: loop, rows: c.blocks, last: make([]int, len(loop.Ops)), keep: make([]bool, len(loop.Ops))}
	for oi, op := range loop.Ops {
		for _, a := range op.Args {
			sw.last[a] = oi
		}
		sw.keep[oi] = op.Code == ir.VSplat
	}
	c.bf16Setup(loop)
	i, off := c.gp64(), c.gp64()
	c.I(x86.XORQ(i, i))
	c.I(x86.XORQ(off, off))
	pfArrays, pf := c.startPrefetch(loop)
	var end reg.GPVirtual // the end of the current chunk
	if chunked {
		end = c.gp64()
		c.I(x86.MOVQ(imm32(pass.ChunkTerms), end))
		if c.f.H == 0 {
			c.I(x86.CMPQ(end, c.h))
			c.I(x86.CMOVQGT(c.h, end))
		}
	}
	hoist := c.hoistSplats(loop, len(accs))
	c.label(name)
	c.prefetchRows(pfArrays, pf, name+"fetched")
	shared := make([]reg.Register, len(loop.Ops))
	for b := range c.blocks {
		val := make([]reg.Register, len(loop.Ops))
		splats := map[ir.S]reg.Register{} // a scalar from the frame is loaded once per element
		for oi, op := range loop.Ops {
			arg := func(j int) reg.Register { return val[op.Args[j]] }
			switch op.Code {
			case ir.VLoad:
				if c.k.Arrays[op.Array].Role == ir.Param {
					if shared[oi] == nil {
						shared[oi] = c.vec()
						c.I(x86.VBROADCASTSS(mem(c.ptr[op.Array], i, 0), shared[oi]))
					}
					val[oi] = shared[oi]
					break
				}
				d := c.vec()
				c.load(op.Array, c.rowMem(op.Array, off, b), d)
				val[oi] = d
			case ir.VSplat:
				if h := hoist[op.Scalar]; h != nil && h[b] != nil {
					val[oi] = h[b]
					break
				}
				if splats[op.Scalar] == nil {
					splats[op.Scalar] = c.get(op.Scalar, b)
				}
				val[oi] = splats[op.Scalar]
			case ir.VAdd, ir.VSub, ir.VMul:
				d := c.vec()
				c.I(arith(op.Code, false)(arg(1), arg(0), d))
				val[oi] = d
			case ir.VFMA:
				val[oi] = c.fma(sw, slot{kind: full, row: b}, oi, val)
			case ir.VStore:
				c.store(op.Array, arg(0), c.rowMem(op.Array, off, b))
			case ir.VAcc:
				a := c.acc[op.Acc][b]
				c.I(x86.VADDPS(arg(0), a, a))
			case ir.VAccMul:
				c.I(x86.VFMADD231PS(arg(1), arg(0), c.acc[op.Acc][b]))
			}
		}
	}
	c.I(x86.INCQ(i))
	c.I(x86.ADDQ(c.stride, off))
	if !chunked {
		if c.f.H > 0 {
			c.I(x86.CMPQ(i, imm32(c.f.H)))
		} else {
			c.I(x86.CMPQ(i, c.h))
		}
		c.I(x86.JB(operand.LabelRef(name)))
		return
	}
	c.I(x86.CMPQ(i, end))
	c.I(x86.JB(operand.LabelRef(name)))
	var h reg.GPVirtual
	if c.f.H > 0 {
		c.I(x86.CMPQ(i, imm32(c.f.H)))
	} else {
		h = c.h
		c.I(x86.CMPQ(i, h))
	}
	c.I(x86.JAE(operand.LabelRef(name + "end")))
	j := 0 // the chunk vectors' index in lvs
	c.comment("a chunk of %d elements done: its sums into the totals", pass.ChunkTerms)
	for _, a := range accs {
		for _, v := range c.acc[a] {
			c.addChunk(lvs[j], v)
			j++
		}
	}
	if levels == pass.WithSupers {
		// Chunks end at multiples of pass.ChunkTerms short of the row's end,
		// so every ir.SumTotal-th one ends at a multiple of pass.SuperTerms.
		c.I(x86.TESTQ(imm32(pass.SuperTerms-1), i))
		c.I(x86.JNZ(operand.LabelRef(name + "next")))
		c.comment("%d chunks done: the totals into the super-totals", ir.SumTotal)
		j = 0
		for _, a := range accs {
			for _, v := range c.acc[a] { // v is clear: a scratch register
				c.promoteTotal(lvs[j], v)
				j++
			}
		}
		c.label(name + "next")
	}
	// The next chunk ends pass.ChunkTerms elements on, or at the row's end.
	if h == nil {
		h = c.gp64()
		c.I(x86.MOVQ(imm32(c.f.H), h))
	}
	c.I(x86.ADDQ(imm32(pass.ChunkTerms), end))
	c.I(x86.CMPQ(end, h))
	c.I(x86.CMOVQGT(h, end))
	c.I(x86.JMP(operand.LabelRef(name)))
	c.label(name + "end")
	if levels == pass.WithTotals {
		c.comment("the sums: totals plus the last chunk's")
	} else {
		c.comment("the sums: super-totals plus totals, plus the last chunk's")
	}
	if short != "" {
		c.I(x86.CMPQ(c.h, imm32(pass.ChunkTerms)))
		c.I(x86.JBE(operand.LabelRef(name + "summed")))
	}
	j = 0
	for _, a := range accs {
		for _, v := range c.acc[a] {
			c.addLevels(lvs[j], v)
			j++
		}
	}
	if short != "" {
		c.label(name + "summed")
	}
}

// maxHoistCut bounds the retries with fewer hoisted splats (compile) at
// one level of the frame: past it, the pressure is not the loops'.
const maxHoistCut = 3

// loadInPlace makes the frame slots of a per-row scalar that SLoad reads
// from a float32 input the slots of the input itself, when the scalar
// would go to the frame: no copy to store. A row input (a row's first
// element) qualifies only while nothing is stored: an output may be the
// same slice. Partial blocks load under their mask instead.
func (c *columnLowering) loadInPlace(st *ir.Scalar) bool {
	if st.Code != ir.SLoad || c.mask != nil || c.stackSums < 3 || c.uniform[st.Dst] ||
		(c.stackSums == 3 && !c.crosses[st.Dst]) || c.elem(st.Array) != ir.F32 {
		return false
	}
	switch c.k.Arrays[st.Array].Role {
	case ir.RowScalarIn:
	case ir.RowIn:
		for _, o := range c.order[c.stmt+1 : c.lastUse[st.Dst]+1] {
			switch o := o.(type) {
			case *ir.Scalar:
				if o.Code == ir.SStore {
					return false
				}
			case *ir.Loop:
				if slices.ContainsFunc(o.Ops, func(op ir.VecOp) bool { return op.Code == ir.VStore }) {
					return false
				}
			}
		}
	default:
		return false
	}
	ms := make([]operand.Mem, c.blocks)
	for b := range ms {
		ms[b] = c.rowMem(st.Array, nil, b)
	}
	c.val[st.Dst] = make([]reg.Register, c.blocks)
	c.slots[st.Dst] = ms
	return true
}

// hoistSplats loads, before the first element of loop, the per-row
// scalars it splats that live in the frame, block after block, as many
// as the registers left over allow; the others are loaded at every
// element. What is left over is an estimate: the scalars held in
// registers across the loop, its sums (accs per block), its parameter
// broadcasts and temporaries (one per row array read, and one), less
// hoistCut, which compile raises when the estimate was short. Without
// this a short column (BatchNorm over a small batch) spends most of its
// loads on the frame.
func (c *columnLowering) hoistSplats(loop *ir.Loop, accs int) map[ir.S][]reg.Register {
	var frame []ir.S
	var rows []int
	used := accs*c.blocks + 1 + c.hoistCut
	bf16 := false
	for _, op := range loop.Ops {
		switch op.Code {
		case ir.VSplat:
			if c.slots[op.Scalar] != nil && !slices.Contains(frame, op.Scalar) {
				frame = append(frame, op.Scalar)
			}
		case ir.VLoad:
			if c.k.Arrays[op.Array].Role == ir.Param {
				used++
			} else if !slices.Contains(rows, op.Array) {
				rows = append(rows, op.Array)
				used++
			}
		case ir.VStore:
			bf16 = bf16 || c.elem(op.Array) == ir.BF16
		}
	}
	if len(frame) == 0 {
		return nil
	}
	if bf16 {
		used += len(c.bf16Consts)
	}
	if c.mask != nil && !c.masked() {
		used++ // the AVX2 lane mask
	}
	for s, vs := range c.val {
		if vs == nil || c.slots[s] != nil || c.lastUse[s] < c.stmt {
			continue
		}
		if c.uniform[s] {
			used++
		} else {
			used += c.blocks
		}
	}
	free := c.isa.VectorRegs - used
	hoist := map[ir.S][]reg.Register{}
	for b := range c.blocks {
		for _, s := range frame {
			if free <= 0 {
				return hoist
			}
			if hoist[s] == nil {
				hoist[s] = make([]reg.Register, c.blocks)
			}
			hoist[s][b] = c.get(s, b)
			c.hoisted = true
			free--
		}
	}
	return hoist
}

// scalar lowers one scalar statement for every lane's row, block by
// block; a scalar that is the same for every row is computed once for
// all the blocks. SDiv and SSqrt are the exact instructions, as in the
// Rows lowering.
func (c *columnLowering) scalar(st *ir.Scalar) {
	if st.Code == ir.SGuard {
		c.guard(st)
		return
	}
	blocks := c.blocks
	if st.Dst >= 0 && c.uniform[st.Dst] {
		blocks = 1
	}
	vs := make([]reg.Register, c.blocks)
	c.comment("%s", c.k.ScalarText(st, c.f.H))
	if c.loadInPlace(st) {
		return
	}
	for b := range blocks {
		got := map[ir.S]reg.Register{} // x*x loads x from the frame once
		arg := func(i int) reg.Register {
			s := st.Args[i]
			if got[s] == nil {
				got[s] = c.get(s, b)
			}
			return got[s]
		}
		var d reg.Register
		switch st.Code {
		case ir.SConst:
			d = c.broadcast(c.constant(st.Const))
		case ir.SArg:
			d = c.broadcast(c.arg(st.Arg))
		case ir.SInvLen:
			if c.f.H > 0 {
				d = c.broadcast(c.constant(1 / float32(c.f.H)))
				break
			}
			d = c.broadcast(c.invLen())
		case ir.SSum:
			if acc := c.acc[st.Acc]; acc != nil {
				d = acc[b]
			} else {
				c.fail(fmt.Errorf("sum of accumulator %d, which no loop filled", st.Acc))
				d = c.vec()
			}
		case ir.SAdd, ir.SSub, ir.SMul, ir.SDiv:
			d = c.vec()
			ins := map[ir.ScalarCode]func(...operand.Op) (*avoir.Instruction, error){
				ir.SAdd: x86.VADDPS, ir.SSub: x86.VSUBPS, ir.SMul: x86.VMULPS, ir.SDiv: x86.VDIVPS,
			}[st.Code]
			c.I(ins(arg(1), arg(0), d))
		case ir.SSqrt:
			d = c.vec()
			c.I(x86.VSQRTPS(arg(0), d))
		case ir.SLoad:
			// A per-row scalar at index r, or a row's element 0 at r:
			// both are the block's rows side by side.
			d = c.vec()
			c.load(st.Array, c.rowMem(st.Array, nil, b), d)
		case ir.SStore:
			c.store(st.Array, arg(0), c.rowMem(st.Array, nil, b))
		default:
			c.fail(fmt.Errorf("scalar statement %s has no lowering", st.Code))
		}
		vs[b] = d
	}
	if st.Dst < 0 {
		return
	}
	for b := blocks; b < c.blocks; b++ {
		vs[b] = vs[0]
	}
	c.set(st.Dst, vs)
}

// guard abandons the group or block unless Lo <= v <= Hi in every lane
// of its rows (masked-off lanes of a partial block do not count), block
// after block. Each finite bound is one compare whose predicate is true
// for the failing lanes, NaN included; with both bounds infinite, NaN
// alone fails.
func (c *columnLowering) guard(st *ir.Scalar) {
	c.comment("%s", c.k.BlockGuardText(st))
	var hi, lo reg.Register
	if !math.IsInf(float64(st.Hi), 1) {
		hi = c.broadcast(c.constant(st.Hi))
	}
	if !math.IsInf(float64(st.Lo), -1) {
		lo = c.broadcast(c.constant(st.Lo))
	}
	for b := range c.blocks {
		v := c.get(st.Args[0], b)
		var fails []reg.Register
		cmp := func(bound reg.Register, pred uint8) {
			if c.masked() {
				k := c.regs.K()
				if c.mask != nil {
					c.I(x86.VCMPPS(operand.U8(pred), bound, v, c.mask, k))
				} else {
					c.I(x86.VCMPPS(operand.U8(pred), bound, v, k))
				}
				fails = append(fails, k)
				return
			}
			y := c.vec()
			c.I(x86.VCMPPS(operand.U8(pred), bound, v, y))
			fails = append(fails, y)
		}
		if hi != nil {
			cmp(hi, cmpNLEUQ)
		}
		if lo != nil {
			cmp(lo, cmpNGEUQ)
		}
		if len(fails) == 0 {
			cmp(v, cmpUnordQ)
		}
		f := fails[0]
		if c.masked() {
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
		c.I(x86.JNE(operand.LabelRef(c.abandon)))
	}
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

// loadHalf widens one vector of a block's rows of a half array: a whole
// block at once, an AVX-512 partial block through VMOVDQU16 under the
// mask; an AVX2 partial block, which has no masked 16-bit load, element
// by element up to its row count, so that nothing past its rows is read.
func (c *columnLowering) loadHalf(e ir.Elem, m operand.Mem, d reg.Register) {
	switch {
	case c.mask == nil:
		c.widenVec(e, m, d)
	case c.masked():
		t := c.regs.YMM()
		c.I(x86.VMOVDQU16_Z(m, c.mask, t))
		c.widenVec(e, t, d)
	default:
		t, g := c.xmm(), c.gp32()
		c.I(x86.VPXOR(t, t, t))
		c.tailElems(func(j int) {
			at := m
			at.Disp += 2 * j
			c.I(x86.MOVWLZX(at, g))
			c.I(x86.VPINSRW(operand.U8(j), g, t, t))
		})
		c.widenVec(e, t, d)
	}
}

// storeHalf rounds v to a half format and stores one vector of a block's
// rows: masked like loadHalf, an AVX2 partial block element by element.
func (c *columnLowering) storeHalf(e ir.Elem, v reg.Register, m operand.Mem) {
	h := c.narrowVec(e, v)
	switch {
	case c.mask == nil && c.zmm():
		c.I(x86.VMOVDQU16(h, m)) // EVEX: the register may be Y16-Y31
	case c.mask == nil:
		c.I(x86.VMOVDQU(h, m))
	case c.masked():
		c.I(x86.VMOVDQU16(h, c.mask, m))
	default:
		c.tailElems(func(j int) {
			at := m
			at.Disp += 2 * j
			c.I(x86.VPEXTRW(operand.U8(j), h, at))
		})
	}
}

// tailElems emits elem(j) for the lanes j of an AVX2 partial block, each
// after j (from 1) is checked to be below its row count.
func (c *columnLowering) tailElems(elem func(j int)) {
	done := fmt.Sprintf("%shalf%d", c.name, c.labels)
	c.labels++
	for j := range c.lanes - 1 {
		if j > 0 {
			c.I(x86.CMPQ(c.tailRows, imm32(j)))
			c.I(x86.JBE(operand.LabelRef(done)))
		}
		elem(j)
	}
	c.label(done)
}

// columnPrefetchAhead is how many elements ahead the Columns loops
// prefetch. Measured on AMD EPYC (BatchNorm over [N, C] from DRAM), 16
// helped C = 768; no distance tried (4 to 32, less for larger strides,
// PREFETCHT1) measurably helped C = 4096 or 8192.
const columnPrefetchAhead = 16

// columnPrefetchMinBytes is the span of the rows' elements (h*stride)
// below which the loops do not prefetch: such rows may well be in L2,
// where the prefetches only take load slots (measured: BatchNorm's
// backward over 128 KiB was up to 1.4x slower with them).
const columnPrefetchMinBytes = 1 << 20

// columnPrefetchMaxStride is the stride from which the loops do not
// prefetch: measured (BatchNorm over [N, C] from DRAM, C = 4096 and
// 8192), the prefetches did not help AVX-512 and slowed AVX2 down.
const columnPrefetchMaxStride = 8 << 10

// prefetchOffset stores in the frame, once per call, the byte offset
// of the elements the loops prefetch, columnPrefetchAhead elements
// ahead, or 0 when the rows span less than columnPrefetchMinBytes or the
// stride is columnPrefetchMaxStride or more. Every step of a loop is a
// new element, stride bytes on: a new page once stride reaches 4 KiB,
// which the hardware prefetchers do not follow.
func (c *columnLowering) prefetchOffset() {
	if c.noPrefetch {
		return
	}
	c.comment("prefetch offset: %d elements ahead; 0 (none) when the rows span under %d bytes or the stride is %d bytes or more",
		columnPrefetchAhead, columnPrefetchMinBytes, columnPrefetchMaxStride)
	// With vector slots to follow, a vector's size keeps them aligned.
	if c.stackSums > 0 {
		c.pfStart = c.fn.AllocLocal(4 * c.lanes)
	} else {
		c.pfStart = c.fn.AllocLocal(8)
	}
	pf := c.gp64()
	c.I(x86.MOVQ(c.stride, pf))
	if c.f.H > 0 {
		c.I(x86.IMUL3Q(imm32(c.f.H), pf, pf))
	} else {
		c.I(x86.IMULQ(c.h, pf))
	}
	c.I(x86.CMPQ(pf, imm32(columnPrefetchMinBytes)))
	c.I(x86.JB(operand.LabelRef("nopf")))
	c.I(x86.CMPQ(c.stride, imm32(columnPrefetchMaxStride)))
	c.I(x86.JAE(operand.LabelRef("nopf")))
	c.I(x86.MOVQ(c.stride, pf))
	c.I(x86.IMUL3Q(imm32(columnPrefetchAhead), pf, pf))
	c.I(x86.JMP(operand.LabelRef("pfset")))
	c.label("nopf")
	c.I(x86.XORQ(pf, pf))
	c.label("pfset")
	c.I(x86.MOVQ(pf, c.pfStart))
}

// startPrefetch returns the row arrays loop loads and, in pf, the
// call's prefetch offset (prefetchOffset; nil: no prefetch: turned off,
// a partial block, or no row array read).
func (c *columnLowering) startPrefetch(loop *ir.Loop) ([]int, reg.GPVirtual) {
	if c.noPrefetch || c.mask != nil {
		return nil, nil
	}
	var arrays []int
	for _, op := range loop.Ops {
		if op.Code == ir.VLoad && c.k.Arrays[op.Array].Role != ir.Param && !slices.Contains(arrays, op.Array) {
			arrays = append(arrays, op.Array)
		}
	}
	if len(arrays) == 0 {
		return nil, nil
	}
	pf := c.gp64()
	c.I(x86.MOVQ(c.pfStart, pf))
	return arrays, pf
}

// prefetchRows prefetches, at the top of an iteration, every line of the
// body's blocks of arrays at offset pf, and moves pf on by the stride;
// with pf 0 it jumps to done.
func (c *columnLowering) prefetchRows(arrays []int, pf reg.GPVirtual, done string) {
	if pf == nil {
		return
	}
	c.I(x86.TESTQ(pf, pf))
	c.I(x86.JZ(operand.LabelRef(done)))
	for _, a := range arrays {
		span := c.elem(a).Bytes() * c.lanes * c.blocks
		for d := 0; d < span; d += lineBytes {
			m := c.rowMem(a, pf, 0)
			m.Disp += d
			c.I(x86.PREFETCHT0(m))
		}
	}
	c.I(x86.ADDQ(c.stride, pf))
	c.label(done)
}
