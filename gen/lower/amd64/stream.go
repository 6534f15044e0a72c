package amd64

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
)

// This file holds what a kernel does for rows streamed from and to memory
// rather than the caches: non-temporal stores (NT variants) and software
// prefetching of the rows ahead.

// lineBytes is the cache line size.
const lineBytes = 64

// prefetchAheadBytes is how far ahead of the current row, at least, the
// passes over it prefetch: one row, or as many rows as make this many
// bytes, so that short rows still keep enough lines in flight.
const prefetchAheadBytes = 4096

// planStreaming decides which stores are non-temporal and which loops
// prefetch which arrays of the rows ahead.
//
// Stores: in an NT function, a store of a row output is non-temporal
// when no later loop of the row reads that output back.
//
// Prefetch: the arrays the first loop reads from the row (x, f) are the
// streams; the first loop waits on memory for them, and the later loops,
// which find the row in cache, would leave memory idle. So the later loops
// prefetch the next rows' streams, spread evenly over their block
// iterations: l.pfLines lines of each stream per iteration, over up to
// lanes/4 loops, so that a row's worth of lines is covered exactly and
// never more.
func (l *lowering) planStreaming() {
	var loops []*ir.Loop
	for _, st := range l.k.Body {
		if loop, ok := st.(*ir.Loop); ok {
			loops = append(loops, loop)
		}
	}
	l.ntFrom = make([]int, len(l.k.Arrays))
	for a, arr := range l.k.Arrays {
		l.ntFrom[a] = -1
		if !l.f.NT || arr.Role != ir.RowOut {
			continue
		}
		lastLoad := -1
		for n, loop := range loops {
			for _, op := range loop.Ops {
				if op.Code == ir.VLoad && op.Array == a {
					lastLoad = n
				}
			}
		}
		l.ntFrom[a] = max(lastLoad, 0)
	}

	if !l.f.NT || len(loops) < 2 || l.resident != nil || (l.f.H > 0 && l.f.H/l.lanes <= 2*unroll) {
		return // prefetch only where the loops have block iterations
	}
	for _, op := range loops[0].Ops {
		if op.Code == ir.VLoad && l.k.Arrays[op.Array].Role == ir.RowIn && !containsInt(l.pfStreams, op.Array) {
			l.pfStreams = append(l.pfStreams, op.Array)
		}
	}
	if len(l.pfStreams) == 0 {
		return
	}
	// One block iteration covers unroll vectors, 4*lanes bytes per
	// vector: unroll*lanes*4/64 = lanes/4 lines (unroll = 4) of each
	// stream. Spread over p loops, each iteration prefetches lanes/4/p.
	perBlock := unroll * l.lanes * 4 / lineBytes
	p := 1
	for 2*p <= min(len(loops)-1, perBlock) {
		p *= 2
	}
	l.pfLoops = p
	l.pfLines = perBlock / p
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ntStore reports whether loop n's stores to array a are non-temporal.
func (l *lowering) ntStore(n, a int) bool {
	return l.ntFrom != nil && l.ntFrom[a] >= 0 && n >= l.ntFrom[a]
}

// anyNT reports whether the function makes non-temporal stores.
func (l *lowering) anyNT() bool {
	for _, n := range l.ntFrom {
		if n >= 0 {
			return true
		}
	}
	return false
}

// alignmentCheck makes an NT function hand over to its twin without NT
// stores (a tail jump: both have the same frame) unless every output it
// streams to is aligned to the vector size, and, for a run-time h, every
// row keeps that alignment: VMOVNTPS faults on a misaligned address.
func (l *lowering) alignmentCheck() {
	if !l.anyNT() {
		return
	}
	vb := 4 * l.lanes
	t := l.gp64()
	first := true
	for a := range l.k.Arrays {
		if l.ntFrom[a] < 0 {
			continue
		}
		if first {
			l.I(x86.MOVQ(l.ptr[a], t))
			first = false
		} else {
			l.I(x86.ORQ(l.ptr[a], t))
		}
	}
	if l.f.H == 0 {
		l.I(x86.TESTQ(operand.U32(l.lanes-1), l.h))
		l.I(x86.JNZ(operand.LabelRef(fallbackLabel)))
	}
	l.I(x86.TESTQ(operand.U32(vb-1), t))
	l.I(x86.JNZ(operand.LabelRef(fallbackLabel)))
}

const fallbackLabel = "unaligned"

// fallback is the tail jump of an NT function to its twin, placed after
// the return.
func (l *lowering) fallback() {
	if !l.anyNT() {
		return
	}
	twin := l.f
	twin.NT = false
	l.label(fallbackLabel)
	l.comment("outputs not aligned for streaming stores: the function without them")
	i, err := x86.JMP(operand.Mem{Symbol: operand.Symbol{Name: "·" + twin.Name()}, Base: reg.StaticBase})
	if err == nil {
		// A jump to another function ends this one: no label target here.
		i.IsBranch, i.IsTerminal = false, true
	}
	l.I(i, err)
}

// startPrefetch sets, at the start of a row, the byte offset from each
// stream's current row to the lines the row's later loops prefetch: d rows
// ahead, d being min(ahead, rows left after this one), so that the last
// row prefetches itself rather than past the end of its arrays.
func (l *lowering) startPrefetch() {
	if l.pfLines == 0 {
		return
	}
	ahead := 1
	if l.f.H > 0 {
		ahead = max(1, (prefetchAheadBytes+4*l.f.H-1)/(4*l.f.H))
	}
	l.comment("prefetch offset: %d row(s) ahead, fewer near the end", ahead)
	pf := l.gp64()
	l.I(x86.MOVQ(l.rows, pf))
	l.I(x86.DECQ(pf))
	c := l.gp64()
	l.I(x86.MOVQ(operand.U32(ahead), c))
	l.I(x86.CMPQ(pf, c))
	l.I(x86.CMOVQGT(c, pf))
	if l.f.H > 0 {
		l.I(x86.IMUL3Q(imm32(4*l.f.H), pf, pf))
	} else {
		l.I(x86.IMULQ(l.h, pf))
		l.I(x86.SHLQ(operand.U8(2), pf))
	}
	l.pf = pf
}

// prefetch emits, at the top of block iteration of loop n, the prefetches
// of the lines ahead, and moves the offset on.
func (l *lowering) prefetch(n int) {
	if l.pf == nil || n < 1 || n > l.pfLoops {
		return
	}
	for _, a := range l.pfStreams {
		for m := range l.pfLines {
			l.I(x86.PREFETCHT1(operand.Mem{Base: l.ptr[a], Index: l.pf, Scale: 1, Disp: m * lineBytes}))
		}
	}
	l.I(x86.ADDQ(imm32(l.pfLines*lineBytes), l.pf))
}

// ntEpilogue orders the streaming stores before the return: they are
// weakly ordered, and the caller may hand the output to another goroutine.
func (l *lowering) ntEpilogue() {
	if l.anyNT() {
		l.I(x86.SFENCE())
	}
}
