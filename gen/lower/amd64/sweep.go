package amd64

import (
	"fmt"
	"slices"

	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
)

// slotKind says how much of the row one copy of a loop body covers.
type slotKind int

const (
	full     slotKind = iota // one whole vector
	masked                   // the row's last, partial vector under the tail mask (AVX-512)
	single                   // one element, in the low lane of an XMM register (AVX2 tails)
	edgeHead                 // a whole vector, stored under the head mask (stream.go)
	edgeTail                 // a whole vector, stored under the complementary mask
)

// slot is one copy of a loop body: where its elements are and which
// partial sum it adds to.
type slot struct {
	kind slotKind
	idx  reg.Register // element index register, or nil
	disp int          // byte offset from base + idx*4
	vec  int          // vector number within the row when known at generation time, else -1
	acc  int          // which partial sum of each accumulator
	row  int          // which row of a block
	// pair marks two whole vectors lowered together (sweepState.paired):
	// 1, the first, 2, the second; 0, a vector on its own.
	pair int
}

// sweepState is what every slot of one loop shares.
type sweepState struct {
	n     int    // the loop's index among the kernel's loops
	name  string // the start of its labels
	nt    bool   // shifted, with streaming stores
	first int    // the first row of the block it sweeps
	rows  int    // rows swept together
	loop  *ir.Loop
	// levels of its sums (sums.go): 1, chunks only (no chain can pass
	// ir.SumChunk terms); 2, chunks and totals; 3, and super-totals.
	levels int
	splat  []map[ir.S]reg.VecVirtual // each row's scalars broadcast before the loop
	last   []int                     // last op that reads each value
	keep   []bool                    // values that must survive their last use in the slot
	// paired: the unrolled blocks' vectors go in pairs, for split loads
	// or paired bf16 stores (half.go).
	paired bool
	// odd is 0xffff0000 in every lane when the loop's bf16 loads split
	// (splits), else nil.
	odd reg.VecVirtual
	// held is the value a pair's first vector stores into each bf16
	// array, by row and array, until the second's (storePair).
	held map[[2]int]reg.Register
	// highWords is the word index of VPERMT2W that gathers the high
	// halves of two vectors of dwords (AVX-512 without AVX512_BF16).
	highWords reg.VecVirtual
}

// pairOf is the pair mark of the j-th vector of an unrolled block.
func (sw *sweepState) pairOf(j int) int {
	if !sw.paired {
		return 0
	}
	return 1 + j%2
}

// shared reports whether value v is the same for every row of a block:
// a load of a parameter, made once for all of them.
func (sw *sweepState) shared(k *ir.Kernel, v ir.V) bool {
	op := sw.loop.Ops[v]
	return sw.rows > 1 && op.Code == ir.VLoad && k.Arrays[op.Array].Role == ir.Param
}

// sweep lowers one Loop over the whole row. A loop that stores
// non-temporally is lowered twice: shifted to the outputs' alignment with
// streaming stores, and plainly, for calls whose outputs cannot stream
// (l.head < 0).
func (l *lowering) sweep(loop *ir.Loop, rows int) {
	n := l.loopIdx
	l.loopIdx++
	name := fmt.Sprintf("loop%d", n)
	if l.k.Layout == ir.Segments {
		l.comment("pass %d over the row, segment by segment: %s", l.k.Pass(loop), l.k.LoopText(loop))
		l.segmentSweep(l.newSweep(loop, n, name, false, 0, 1))
		return
	}
	if rows > 1 {
		// A block sweeps the rows together in the loops that only read
		// (the statistics: more independent sums in flight, the rows'
		// scalar code interleaved), and one by one in those that store
		// (measured: streaming several rows' outputs at once is slower).
		if l.stores(loop) {
			for r := range rows {
				l.comment("pass %d over row %d of %d: %s", l.k.Pass(loop), r+1, rows, l.k.LoopText(loop))
				l.sweepAs(loop, n, fmt.Sprintf("b%d", r)+name, false, r, 1)
			}
			return
		}
		l.comment("pass %d over %d rows: %s", l.k.Pass(loop), rows, l.k.LoopText(loop))
		l.sweepAs(loop, n, "b"+name, false, 0, rows)
		return
	}
	l.comment("pass %d over the row: %s", l.k.Pass(loop), l.k.LoopText(loop))
	if !l.shifted(n) {
		l.sweepAs(loop, n, name, false, 0, 1)
		return
	}
	// Either version may run: later statements read the scalars where
	// they were before both.
	scal := append([]reg.Register(nil), l.rowScal[0]...)
	l.I(x86.TESTQ(l.head, l.head))
	l.I(x86.JS(operand.LabelRef(name + "_plain")))
	l.sweepAs(loop, n, name, true, 0, 1)
	l.I(x86.JMP(operand.LabelRef(name + "_end")))
	l.label(name + "_plain")
	l.comment("pass %d over the row without streaming stores", l.k.Pass(loop))
	copy(l.rowScal[0], scal)
	l.sweepAs(loop, n, name+"p", false, 0, 1)
	l.label(name + "_end")
	copy(l.rowScal[0], scal)
}

// sweepAs lowers loop n for rows rows with labels starting with name,
// shifted with streaming stores when nt is set.
func (l *lowering) sweepAs(loop *ir.Loop, n int, name string, nt bool, first, rows int) {
	sw := l.newSweep(loop, n, name, nt, first, rows)
	switch {
	case nt:
		l.shiftedSweep(sw)
	case l.f.H > 0:
		l.fixedSweep(sw)
	default:
		l.runtimeSweep(sw)
	}
}

// newSweep sets up the state of loop n and broadcasts the scalars it
// splats, before any of its code.
func (l *lowering) newSweep(loop *ir.Loop, n int, name string, nt bool, first, rows int) *sweepState {
	sw := &sweepState{
		n:     n,
		name:  name,
		nt:    nt,
		first: first,
		rows:  rows,
		loop:  loop,
		splat: make([]map[ir.S]reg.VecVirtual, rows),
		last:  make([]int, len(loop.Ops)),
		keep:  make([]bool, len(loop.Ops)),
	}
	for r := range rows {
		sw.splat[r] = map[ir.S]reg.VecVirtual{}
	}
	l.bf16Setup(loop)
	if l.splits(loop) {
		sw.paired = true
		sw.odd = l.vec()
		l.splatInt(0xffff0000, sw.odd)
	}
	if l.pairsStores(loop) {
		sw.paired = true
		sw.held = map[[2]int]reg.Register{}
		if l.zmm() && !l.isa.NarrowBF16 {
			sw.highWords = l.highWordIndex()
		}
	}
	for oi, op := range loop.Ops {
		for _, a := range op.Args {
			sw.last[a] = oi
		}
		switch op.Code {
		case ir.VSplat:
			sw.keep[oi] = true
			for r := range rows {
				if _, ok := sw.splat[r][op.Scalar]; !ok {
					v := l.vec()
					l.I(x86.VBROADCASTSS(l.rowScal[first+r][op.Scalar], v))
					sw.splat[r][op.Scalar] = v
					// The broadcast's low lane is the scalar: later
					// statements read it there, so that the scalar's
					// own register is free from here on.
					l.rowScal[first+r][op.Scalar] = v.AsX()
				}
			}
		case ir.VLoad:
			sw.keep[oi] = l.isResident(op.Array)
		case ir.VStore:
			// A paired bf16 store reads its value after the pair's second
			// vector: no FMA may overwrite it in place.
			if l.isResident(op.Array) || sw.held != nil && l.elem(op.Array) == ir.BF16 {
				sw.keep[op.Args[0]] = true
			}
		}
	}
	return sw
}

// fixedSweep lays out a loop for a row length known at generation time:
// a counted loop of unroll-vector blocks (or straight-line code when the
// row is short or resident), the leftover whole vectors, then the tail.
func (l *lowering) fixedSweep(sw *sweepState) {
	vb := 4 * l.lanes
	nfull, rem := l.f.H/l.lanes, l.f.H%l.lanes
	nvec := nfull
	if rem > 0 && l.masked() {
		nvec++
	}
	// Partial sums: unroll in all, shared out among the rows of a block.
	nacc := max(1, min(unroll, nvec)/sw.rows)
	l.startAccs(sw, nacc, rem > 0 && !l.masked())
	sw.levels = 1
	start := 0
	if l.resident == nil && nfull > 2*unroll {
		blocks := nfull / unroll
		l.fixedBlocks(sw, blocks, nacc, nvec)
		start = blocks * unroll
	}
	for j := start; j < nfull; j++ {
		pair := sw.pairOf(j - start)
		if pair == 1 && j+1 == nfull {
			pair = 0 // the last whole vector has no partner
		}
		l.slot(sw, slot{kind: full, disp: j * vb, vec: j, acc: j % nacc, pair: pair})
	}
	switch {
	case rem == 0:
	case l.masked():
		l.slot(sw, slot{kind: masked, disp: nfull * vb, vec: nfull, acc: nfull % nacc})
	default:
		for t := range rem {
			l.slot(sw, slot{kind: single, disp: 4 * (nfull*l.lanes + t), vec: -1})
		}
	}
	if sw.levels > 1 {
		l.finishSums(sw)
	}
}

// fixedBlocks lays out the counted loop of a fixed sweep: blocks
// iterations of unroll vectors, the j-th vector of each into partial sum
// j%nacc, nvec vectors in the row (the loop's, the leftovers and the
// masked tail). Where a partial sum would add more than ir.SumChunk
// terms, its chunks end every ir.SumChunk terms (and after the loop when
// the leftovers would make the last one too long); every ir.SumTotal
// chunks the totals go into the super-totals. Rows whose partial sums
// add at most ir.SumChunk terms keep the plain loop.
func (l *lowering) fixedBlocks(sw *sweepState, blocks, nacc, nvec int) {
	per := (unroll + nacc - 1) / nacc // terms per partial sum and iteration, at most
	ipc := max(1, ir.SumChunk/per)    // iterations per chunk
	ul := unroll * l.lanes            // elements per iteration
	chunk := ipc * ul                 // elements per chunk
	nchunks := (blocks + ipc - 1) / ipc
	left := make([]int, nacc)
	for j := blocks * unroll; j < nvec; j++ {
		left[j%nacc]++
	}
	exitFold := (blocks-(nchunks-1)*ipc)*per+slices.Max(left) > ir.SumChunk
	if l.accumulates(sw.loop) {
		sw.levels = pass.FoldLevels(nchunks - 1 + b2i(exitFold))
	}
	l.startLevels(sw)
	chunked := sw.levels > 1 && nchunks > 1

	end := blocks * ul
	i := l.gp64()
	l.I(x86.XORQ(i, i))
	var ce reg.GPVirtual // the end of the current chunk
	if chunked {
		ce = l.gp64()
		l.I(x86.MOVQ(imm32(chunk), ce))
	}
	top := sw.name
	l.label(top)
	l.prefetch(sw.n)
	for j := range unroll {
		l.slot(sw, slot{kind: full, idx: i, disp: j * 4 * l.lanes, vec: -1, acc: j % nacc, pair: sw.pairOf(j)})
	}
	l.I(x86.ADDQ(imm32(ul), i))
	if chunked {
		l.I(x86.CMPQ(i, ce))
	} else {
		l.I(x86.CMPQ(i, imm32(end)))
	}
	l.I(x86.JB(operand.LabelRef(top)))
	if chunked {
		l.I(x86.CMPQ(i, imm32(end)))
		l.I(x86.JAE(operand.LabelRef(top + "_blocks")))
		l.comment("a chunk of %d terms per lane done: the sums into the totals", ir.SumChunk)
		l.chunkDone(sw, false)
		if sw.levels == 3 {
			l.promoteAt(sw, i, chunk*ir.SumTotal)
		}
		l.I(x86.ADDQ(imm32(chunk), ce))
		if end%chunk != 0 {
			t := l.gp64()
			l.I(x86.MOVQ(imm32(end), t))
			l.I(x86.CMPQ(ce, t))
			l.I(x86.CMOVQGT(t, ce))
		}
		l.I(x86.JMP(operand.LabelRef(top)))
		l.label(top + "_blocks")
	}
	if exitFold && sw.levels > 1 {
		l.comment("the leftovers would make the last chunk too long: its sums into the totals")
		l.chunkDone(sw, false)
	}
}

// promoteAt adds the totals into the super-totals when the element
// index i is a multiple of period (a power of two): every ir.SumTotal
// chunks of a row whose chunks end at multiples of period/ir.SumTotal.
func (l *lowering) promoteAt(sw *sweepState, i reg.GPVirtual, period int) {
	if period&(period-1) != 0 {
		l.fail(fmt.Errorf("chunks of %d elements: not a power of two", period/ir.SumTotal))
	}
	l.I(x86.TESTQ(imm32(period-1), i))
	l.I(x86.JNZ(operand.LabelRef(sw.name + "_chunk")))
	l.comment("%d chunks done: the totals into the super-totals", ir.SumTotal)
	l.promote(sw)
	l.label(sw.name + "_chunk")
}

// accumulates reports whether a loop adds to an accumulator.
func (l *lowering) accumulates(loop *ir.Loop) bool {
	for _, op := range loop.Ops {
		if op.Code == ir.VAcc || op.Code == ir.VAccMul {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runtimeSweep lays out a loop for a row length in a register: blocks of
// unroll vectors, then single vectors, then the tail (masked on AVX-512,
// element by element on AVX2), each guarded by the count left. A loop
// that accumulates sums in chunks of ir.SumChunk block iterations (its
// leftover vectors and masked tail go one into each partial sum, so the
// last chunk stays within ir.SumChunk terms too); in a Segments sweep
// (segments.go) the partial sums and their levels run on across the
// segments, each segment starting with its element index at 0.
func (l *lowering) runtimeSweep(sw *sweepState) {
	if l.k.Layout != ir.Segments {
		l.startAccs(sw, unroll, !l.masked())
		sw.levels = 1
		if l.accumulates(sw.loop) {
			l.shortOrLong(sw)
			return
		}
	}
	l.runtimeLoop(sw)
}

// shortOrLong lays out an accumulating Rows loop twice: plainly for rows
// too short for any partial sum to add more than ir.SumChunk terms (the
// leftover vectors and the masked tail all go into the first), where the
// chunks' bookkeeping would cost as much as the sums, and in chunks for
// the others. Both leave each accumulator's partial sums folded into its
// first.
func (l *lowering) shortOrLong(sw *sweepState) {
	ul := unroll * l.lanes
	extra := unroll - 1 // leftover vectors; the AVX2 element tail has its own sum
	if l.masked() {
		extra++ // the masked tail
	}
	limit := (ir.SumChunk-extra+1)*ul - 1 // the longest short row
	var vecs [][]reg.Register
	sw.eachAcc(l, func(st *accState) { vecs = append(vecs, st.vec) })
	scal := append([]reg.Register(nil), l.rowScal[sw.first]...)
	l.I(x86.CMPQ(l.h, imm32(limit)))
	l.I(x86.JA(operand.LabelRef(sw.name + "_long")))
	short := *sw
	short.name += "s"
	l.runtimeLoop(&short)
	sw.eachAcc(l, func(st *accState) {
		l.foldPartials(st.vec)
		st.vec = st.vec[:1]
	})
	l.I(x86.JMP(operand.LabelRef(sw.name + "_summed")))

	l.label(sw.name + "_long")
	l.comment("pass %d for rows of more than %d elements: sums in chunks", l.k.Pass(sw.loop), limit)
	copy(l.rowScal[sw.first], scal)
	i := 0
	sw.eachAcc(l, func(st *accState) { st.vec = vecs[i]; i++ })
	sw.levels = 3
	l.startLevels(sw)
	l.runtimeLoop(sw)
	l.finishSums(sw)
	l.label(sw.name + "_summed")
	copy(l.rowScal[sw.first], scal)
}

// runtimeLoop is the code of runtimeSweep, its partial sums and their
// levels started.
func (l *lowering) runtimeLoop(sw *sweepState) {
	seg := l.k.Layout == ir.Segments
	chunked := sw.levels > 1
	lbl := func(s string) string { return sw.name + s }
	jump := func(j func(operand.Op) (*avoir.Instruction, error), s string) {
		l.I(j(operand.LabelRef(lbl(s))))
	}
	i := l.gp64()
	l.I(x86.XORQ(i, i))

	ul := unroll * l.lanes
	chunk := ir.SumChunk * ul // elements per chunk
	end := l.gp64()
	l.I(x86.MOVQ(l.h, end))
	l.I(x86.ANDQ(imm32(-ul), end))
	jump(x86.JZ, "_vectors")
	ce := end // the end of the current chunk, or of the blocks
	if chunked {
		ce = l.gp64()
		l.I(x86.MOVQ(imm32(chunk), ce))
		l.I(x86.CMPQ(ce, end))
		l.I(x86.CMOVQGT(end, ce))
	}
	l.label(lbl(""))
	l.prefetch(sw.n)
	for j := range unroll {
		l.slot(sw, slot{kind: full, idx: i, disp: j * 4 * l.lanes, vec: -1, acc: j, pair: sw.pairOf(j)})
	}
	l.I(x86.ADDQ(imm32(ul), i))
	l.I(x86.CMPQ(i, ce))
	jump(x86.JB, "")
	if chunked {
		// A chunk ends at each multiple of chunk elements; the blocks
		// may end short of one, and the leftovers then join that chunk.
		l.I(x86.TESTQ(imm32(chunk-1), i))
		jump(x86.JNZ, "_vectors")
		l.comment("a chunk of %d terms per lane done: the sums into the totals", ir.SumChunk)
		l.chunkDone(sw, seg)
		if seg {
			l.segmentChunkCount(sw, "_chunk")
		} else {
			l.promoteAt(sw, i, chunk*ir.SumTotal)
		}
		end := l.gp64()
		l.I(x86.MOVQ(l.h, end))
		l.I(x86.ANDQ(imm32(-ul), end))
		l.I(x86.CMPQ(i, end))
		jump(x86.JAE, "_vectors")
		l.I(x86.ADDQ(imm32(chunk), ce))
		l.I(x86.CMPQ(ce, end))
		l.I(x86.CMOVQGT(end, ce))
		jump(x86.JMP, "")
	}

	l.label(lbl("_vectors"))
	end1 := l.gp64()
	l.I(x86.MOVQ(l.h, end1))
	l.I(x86.ANDQ(imm32(-l.lanes), end1))
	tailAcc := 0
	if chunked {
		// At most unroll-1 vectors: one into each partial sum, the
		// masked tail into the last.
		for j := range unroll - 1 {
			l.I(x86.CMPQ(i, end1))
			jump(x86.JAE, "_tail")
			l.slot(sw, slot{kind: full, idx: i, vec: -1, acc: j})
			l.I(x86.ADDQ(imm32(l.lanes), i))
		}
		tailAcc = unroll - 1
	} else {
		l.I(x86.CMPQ(i, end1))
		jump(x86.JAE, "_tail")
		l.label(lbl("_vector"))
		l.slot(sw, slot{kind: full, idx: i, vec: -1})
		l.I(x86.ADDQ(imm32(l.lanes), i))
		l.I(x86.CMPQ(i, end1))
		jump(x86.JB, "_vector")
	}

	l.label(lbl("_tail"))
	if l.masked() {
		// Skip an empty mask (h % 16 == 0): it would touch nothing, but
		// its address is past the row's end.
		l.I(x86.TESTQ(operand.U32(l.lanes-1), l.h))
		jump(x86.JZ, "_done")
		l.slot(sw, slot{kind: masked, idx: i, vec: -1, acc: tailAcc})
		l.label(lbl("_done"))
	} else {
		l.I(x86.CMPQ(i, l.h))
		jump(x86.JAE, "_done")
		l.label(lbl("_element"))
		l.slot(sw, slot{kind: single, idx: i, vec: -1})
		l.I(x86.INCQ(i))
		l.I(x86.CMPQ(i, l.h))
		jump(x86.JB, "_element")
		l.label(lbl("_done"))
	}
}

// startAccs zeroes the partial sums of every accumulator the loop fills:
// nacc vectors, plus a scalar for an element-by-element tail.
func (l *lowering) startAccs(sw *sweepState, nacc int, scalarTail bool) {
	for r := range sw.rows {
		accs := l.rowAccs[sw.first+r]
		for _, op := range sw.loop.Ops {
			if op.Code != ir.VAcc && op.Code != ir.VAccMul {
				continue
			}
			if st, ok := accs[op.Acc]; ok && st.owner == sw {
				continue
			}
			st := &accState{owner: sw}
			for range nacc {
				v := l.vec()
				l.zero(v)
				st.vec = append(st.vec, v)
			}
			if scalarTail {
				x := l.xmm()
				l.I(x86.VXORPS(x, x, x))
				st.sc = x
			}
			accs[op.Acc] = st
		}
	}
}

// slot emits one copy of the loop body for the elements s covers. Values
// are virtual registers; the allocator reuses those of dead values.
func (l *lowering) slot(sw *sweepState, s slot) {
	ops := sw.loop.Ops
	vals := make([][]reg.Register, sw.rows)
	for r := range vals {
		vals[r] = make([]reg.Register, len(ops))
	}
	// Op by op, each op for every row of the block in turn: a parameter
	// is loaded once for all of them.
	for oi, op := range ops {
		for r := range sw.rows {
			s.row = sw.first + r
			if r > 0 && sw.shared(l.k, ir.V(oi)) {
				vals[r][oi] = vals[0][oi]
				continue
			}
			l.slotOp(sw, s, oi, op, vals[r])
		}
	}
}

// slotOp emits op oi of the loop body for the slot's row.
func (l *lowering) slotOp(sw *sweepState, s slot, oi int, op ir.VecOp, val []reg.Register) {
	arg := func(j int) reg.Register { return val[op.Args[j]] }
	switch op.Code {
	case ir.VLoad:
		if r := l.rowReg(op.Array, s); r != nil {
			val[oi] = r
			return
		}
		d := l.value(s)
		if s.pair != 0 && sw.odd != nil {
			l.loadSplit(sw, s, op.Array, d)
		} else {
			l.load(s, op.Array, d)
		}
		l.remember(op.Array, s, d)
		val[oi] = d
	case ir.VSplat:
		r := sw.splat[s.row-sw.first][op.Scalar]
		if s.kind == single {
			val[oi] = r.AsX()
		} else {
			val[oi] = r
		}
	case ir.VAdd, ir.VSub, ir.VMul:
		d := l.value(s)
		l.I(arith(op.Code, s.kind == single)(arg(1), arg(0), d))
		val[oi] = d
	case ir.VFMA:
		val[oi] = l.fma(sw, s, oi, val)
	case ir.VStore:
		if s.pair != 0 && sw.held != nil && l.elem(op.Array) == ir.BF16 {
			l.storePair(sw, s, op.Array, arg(0))
			return
		}
		l.store(s, op.Array, arg(0), sw.nt && l.ntStore(sw.n, op.Array))
		if !l.elem(op.Array).Half() { // a half store rounds: a reload must see that
			l.remember(op.Array, s, arg(0))
		}
	case ir.VAcc:
		st := l.rowAccs[s.row][op.Acc]
		switch s.kind {
		case full:
			l.I(x86.VADDPS(arg(0), st.vec[s.acc], st.vec[s.acc]))
		case masked:
			// Merge masking: lanes past the row end keep the sum.
			l.I(x86.VADDPS(arg(0), st.vec[s.acc], l.tail, st.vec[s.acc]))
		case single:
			l.I(x86.VADDSS(arg(0), st.sc, st.sc))
		}
	case ir.VAccMul:
		st := l.rowAccs[s.row][op.Acc]
		switch s.kind {
		case full:
			l.I(x86.VFMADD231PS(arg(1), arg(0), st.vec[s.acc]))
		case masked:
			l.I(x86.VFMADD231PS(arg(1), arg(0), l.tail, st.vec[s.acc]))
		case single:
			l.I(x86.VFMADD231SS(arg(1), arg(0), st.sc))
		}
	}
}

// fma lowers x*y + z. The FMA instructions overwrite an operand, so one
// whose value dies here is overwritten; otherwise z is copied first.
func (l *lowering) fma(sw *sweepState, s slot, oi int, val []reg.Register) reg.Register {
	op := sw.loop.Ops[oi]
	dead := func(j int) bool {
		v := op.Args[j]
		if sw.shared(l.k, v) && s.row < sw.first+sw.rows-1 {
			return false // the block's later rows use it too
		}
		return !sw.keep[v] && sw.last[v] == oi
	}
	x, y, z := val[op.Args[0]], val[op.Args[1]], val[op.Args[2]]
	fma231, fma213 := x86.VFMADD231PS, x86.VFMADD213PS
	if s.kind == single {
		fma231, fma213 = x86.VFMADD231SS, x86.VFMADD213SS
	}
	switch {
	case dead(2): // z += x*y
		l.I(fma231(y, x, z))
		return z
	case dead(0): // x = x*y + z
		l.I(fma213(z, y, x))
		return x
	case dead(1): // y = y*x + z
		l.I(fma213(z, x, y))
		return y
	}
	t := l.value(s)
	l.I(x86.VMOVAPS(z, t))
	l.I(fma231(y, x, t))
	return t
}

// value allocates a register for a new value of the slot's width.
func (l *lowering) value(s slot) reg.Register {
	if s.kind == single {
		return l.xmm()
	}
	return l.vec()
}

func (l *lowering) addr(array int, s slot) operand.Mem {
	return mem(l.ptr[array], s.idx, s.disp+l.rowDisp(array, s.row))
}

// load reads the slot's elements of an array. The masked form zeroes the
// lanes past the row end and, like every masked-off lane, never faults.
func (l *lowering) load(s slot, array int, d reg.Register) {
	if l.k.Layout == ir.Segments && l.k.Arrays[array].Role == ir.Param {
		// One value per segment, where the pointer stands: broadcast.
		m := mem(l.ptr[array], nil, 0)
		if s.kind == single {
			l.I(x86.VMOVSS(m, d))
		} else {
			l.I(x86.VBROADCASTSS(m, d))
		}
		return
	}
	if l.elem(array).Half() {
		l.loadHalf(s, array, d)
		return
	}
	m := l.addr(array, s)
	switch s.kind {
	case full:
		l.I(x86.VMOVUPS(m, d))
	case masked:
		l.I(x86.VMOVUPS_Z(m, l.tail, d))
	case single:
		l.I(x86.VMOVSS(m, d))
	case edgeHead, edgeTail:
		l.I(x86.VMOVUPS(m, d))
	}
}

// store writes the slot's elements of an array. It is the one place that
// writes row outputs. Whole vectors of an nt store are non-temporal
// (aligned: the NT function checked); partial vectors never run in an NT
// function (it requires whole-vector rows) and stay ordinary stores.
func (l *lowering) store(s slot, array int, v reg.Register, nt bool) {
	if l.elem(array).Half() {
		l.storeHalf(s, array, v)
		return
	}
	m := l.addr(array, s)
	switch s.kind {
	case full:
		if nt {
			l.I(x86.VMOVNTPS(v, m))
			return
		}
		l.I(x86.VMOVUPS(v, m))
	case masked:
		l.I(x86.VMOVUPS(v, l.tail, m))
	case single:
		l.I(x86.VMOVSS(v, m))
	case edgeHead, edgeTail:
		mask := l.edgeMask[s.kind-edgeHead]
		if l.masked() {
			l.I(x86.VMOVUPS(v, mask, m))
		} else {
			l.I(x86.VMASKMOVPS(v, mask, m))
		}
	}
}

func (l *lowering) isResident(array int) bool {
	return l.resident != nil && l.resident[array]
}

// rowReg returns the register already holding these elements of a
// resident array in this row, or nil.
func (l *lowering) rowReg(array int, s slot) reg.Register {
	if !l.isResident(array) || s.vec < 0 {
		return nil
	}
	if rs := l.rowRegs[array]; s.vec < len(rs) {
		return rs[s.vec]
	}
	return nil
}

// remember records that r holds these elements of a resident array.
func (l *lowering) remember(array int, s slot, r reg.Register) {
	if !l.isResident(array) || s.vec < 0 {
		return
	}
	rs := l.rowRegs[array]
	for len(rs) <= s.vec {
		rs = append(rs, nil)
	}
	rs[s.vec] = r
	l.rowRegs[array] = rs
}

// arith picks the packed or scalar instruction of a binary op; Go
// assembly's operand order is (b, a, dst) for dst = a op b.
func arith(c ir.VecCode, scalar bool) func(...operand.Op) (*avoir.Instruction, error) {
	switch c {
	case ir.VAdd:
		if scalar {
			return x86.VADDSS
		}
		return x86.VADDPS
	case ir.VSub:
		if scalar {
			return x86.VSUBSS
		}
		return x86.VSUBPS
	}
	if scalar {
		return x86.VMULSS
	}
	return x86.VMULPS
}

// shiftedSweep lays out a loop that stores non-temporally (and has no
// accumulators) from the outputs' first aligned element, l.head elements
// into the row: the row's first vector, stored under the head mask; whole
// vectors from element head on, all but one vector's worth, stored
// aligned and non-temporally; the row's last vector, stored under the
// other mask. Every element is stored once. The edges overlap the body
// only in lanes they do not store, and each lane reads only its own
// elements, so in-place calls stay correct whatever the order.
func (l *lowering) shiftedSweep(sw *sweepState) {
	l.edgeMasks()
	vb := 4 * l.lanes
	lbl := func(s string) string { return sw.name + s }
	jump := func(j func(operand.Op) (*avoir.Instruction, error), s string) {
		l.I(j(operand.LabelRef(lbl(s))))
	}
	l.slot(sw, slot{kind: edgeHead, vec: -1})
	i := l.gp64()
	l.I(x86.MOVQ(l.head, i))
	if l.f.H > 0 {
		nb := l.f.H/l.lanes - 1 // body vectors
		start := 0
		if nb > 2*unroll {
			blocks := nb / unroll
			end := l.gp64()
			l.I(x86.LEAQ(operand.Mem{Base: l.head, Disp: blocks * unroll * l.lanes}, end))
			l.label(lbl(""))
			l.prefetch(sw.n)
			for j := range unroll {
				l.slot(sw, slot{kind: full, idx: i, disp: j * vb, vec: -1})
			}
			l.I(x86.ADDQ(imm32(unroll*l.lanes), i))
			l.I(x86.CMPQ(i, end))
			jump(x86.JB, "")
			start = blocks * unroll
		}
		for j := start; j < nb; j++ {
			l.slot(sw, slot{kind: full, idx: l.head, disp: j * vb, vec: -1})
		}
		l.slot(sw, slot{kind: edgeTail, disp: nb * vb, vec: -1})
		return
	}
	last := l.gp64() // the last vector's first element, h - lanes
	l.I(x86.MOVQ(l.h, last))
	l.I(x86.SUBQ(imm32(l.lanes), last))
	end := l.gp64()
	l.I(x86.MOVQ(last, end))
	l.I(x86.ANDQ(imm32(-unroll*l.lanes), end))
	l.I(x86.ADDQ(l.head, end))
	l.I(x86.CMPQ(i, end))
	jump(x86.JAE, "_vectors")
	l.label(lbl(""))
	l.prefetch(sw.n)
	for j := range unroll {
		l.slot(sw, slot{kind: full, idx: i, disp: j * vb, vec: -1})
	}
	l.I(x86.ADDQ(imm32(unroll*l.lanes), i))
	l.I(x86.CMPQ(i, end))
	jump(x86.JB, "")

	l.label(lbl("_vectors"))
	end1 := l.gp64()
	l.I(x86.LEAQ(operand.Mem{Base: l.head, Index: last, Scale: 1}, end1))
	l.I(x86.CMPQ(i, end1))
	jump(x86.JAE, "_tail")
	l.label(lbl("_vector"))
	l.slot(sw, slot{kind: full, idx: i, vec: -1})
	l.I(x86.ADDQ(imm32(l.lanes), i))
	l.I(x86.CMPQ(i, end1))
	jump(x86.JB, "_vector")
	l.label(lbl("_tail"))
	l.slot(sw, slot{kind: edgeTail, idx: last, vec: -1})
}

// stores reports whether the loop writes an array.
func (l *lowering) stores(loop *ir.Loop) bool {
	for _, op := range loop.Ops {
		if op.Code == ir.VStore {
			return true
		}
	}
	return false
}
