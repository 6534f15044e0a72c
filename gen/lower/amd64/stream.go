package amd64

import (
	"math/bits"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// This file holds what a kernel does for rows streamed from and to memory
// rather than the caches: non-temporal stores (NT variants) and software
// prefetching of the rows ahead.

// ymmStreamMinH is the shortest fixed row from which the AVX-512 NT
// variant of a float32 row kernel of three or more passes (LayerNorm and
// its fused forms) takes the AVX2 body: 256-bit vectors, no masks.
// Measured from DRAM on Zen 5 (medians of 10-14 runs), their 512-bit
// body was 4-7% slower than the AVX2 one at LayerNorm 4096 and 8192,
// AddLayerNorm 4096 and DeepNorm 8192 (but 4% faster at AddLayerNorm
// 8192), where two-pass kernels (RMSNorm) and H = 768 gain 7-19% from
// it. Rows from the caches never take an NT variant.
const ymmStreamMinH = 4096

// streamingDesc is the descriptor that f, an NT variant, is lowered with
// when it is not f.ISA's own (see ymmStreamMinH), else nil. The function
// keeps f.ISA's name, dispatch and register guard.
func streamingDesc(f target.Func) *target.Desc {
	d := f.ISA.Desc()
	k := f.Kernel
	if !f.NT || k.Layout != ir.Rows || d.VectorBytes != 64 || f.H < ymmStreamMinH || target.KernelElem(k) != ir.F32 {
		return nil
	}
	passes := 0
	for _, st := range k.Body {
		if _, ok := st.(*ir.Loop); ok {
			passes++
		}
	}
	if passes < 3 {
		return nil
	}
	n := *d
	a := target.AVX2.Desc()
	n.Lanes, n.VectorBytes, n.VectorRegs, n.MaskRegs = a.Lanes, a.VectorBytes, a.VectorRegs, a.MaskRegs
	return &n
}

// BodyFeatures is what f's body needs beyond f.ISA's own features: AVX2
// and FMA (VEX forms) for an NT variant lowered with the AVX2 descriptor
// (streamingDesc), else nil. The dispatch checks them before calling it.
func BodyFeatures(f target.Func) []target.Feature {
	if streamingDesc(f) == nil {
		return nil
	}
	return target.AVX2.Desc().Features
}

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
// when no later loop of the row reads that output back and its loop does
// not accumulate; such a loop is laid out shifted to the outputs'
// alignment (shiftedSweep), and lowered a second time without streaming
// for calls that cannot stream.
//
// Prefetch (NT functions only: measured, it slows L2-resident rows; but
// half storage, which has no NT variants, prefetches in the plain
// function): the
// arrays the first loop reads from the row (x, f) are the streams; the
// first loop waits on memory for them, and the later loops, which find
// the row in cache, would leave memory idle. So the later loops prefetch
// the next rows' streams, spread evenly over their block iterations:
// l.pfLines lines of each stream per iteration, over up to lanes/4 loops,
// so that the lines prefetched per row are at most a row's worth (the
// block iterations cover whole blocks of the row only).
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
	// A loop that also accumulates stores plainly: its shifted layout's
	// edges overlap the body, which sums would count twice.
	l.shift = make([]bool, len(loops))
	for n, loop := range loops {
		acc := false
		for _, op := range loop.Ops {
			acc = acc || op.Code == ir.VAcc || op.Code == ir.VAccMul
		}
		for _, op := range loop.Ops {
			if op.Code == ir.VStore && l.ntFrom[op.Array] >= 0 && n >= l.ntFrom[op.Array] {
				l.shift[n] = !acc
			}
		}
	}

	prefetch := l.f.NT
	if target.KernelElem(l.k).Half() {
		prefetch = true
	}
	if !prefetch || len(loops) < 2 || l.resident != nil || (l.f.H > 0 && l.f.H/l.lanes <= 2*unroll) {
		return // prefetch only where the loops have block iterations
	}
	l.pfElem = 0
	for _, op := range loops[0].Ops {
		if op.Code == ir.VLoad && l.k.Arrays[op.Array].Role == ir.RowIn && !containsInt(l.pfStreams, op.Array) {
			if b := l.elem(op.Array).Bytes(); l.pfElem != 0 && b != l.pfElem {
				l.pfStreams = nil // streams of two element sizes: none
				return
			}
			l.pfElem = l.elem(op.Array).Bytes()
			l.pfStreams = append(l.pfStreams, op.Array)
		}
	}
	if len(l.pfStreams) == 0 {
		return
	}
	// One block iteration covers unroll vectors, pfElem*lanes bytes per
	// vector: unroll*lanes*4/64 = lanes/4 lines (unroll = 4) of each
	// float32 stream, lanes/8 of a half one. Spread over p loops, each
	// iteration prefetches perBlock/p.
	perBlock := unroll * l.lanes * l.pfElem / lineBytes
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

// ntStore reports whether loop n's stores to array a are non-temporal in
// its shifted layout.
func (l *lowering) ntStore(n, a int) bool {
	return l.shifted(n) && l.ntFrom[a] >= 0 && n >= l.ntFrom[a]
}

// anyNT reports whether some loop stores non-temporally.
func (l *lowering) anyNT() bool {
	for _, s := range l.shift {
		if s {
			return true
		}
	}
	return false
}

// shifted reports whether loop n is laid out from the outputs' alignment.
func (l *lowering) shifted(n int) bool { return l.shift != nil && l.shift[n] }

// ntPrologue sets l.head, the number of elements before the first
// aligned one of the outputs that stream, or -1 when they cannot stream:
// for a run-time h, unless every row starts at the same alignment (h a
// multiple of the lanes), and unless the streamed outputs are misaligned
// alike, by whole floats.
func (l *lowering) ntPrologue() {
	if !l.anyNT() {
		return
	}
	vb := 4 * l.lanes
	l.head = l.gp64()
	if l.f.H == 0 {
		l.I(x86.TESTQ(operand.U32(l.lanes-1), l.h))
		l.I(x86.JNZ(operand.LabelRef(plainLabel)))
	}
	var mis reg.GPVirtual // the first streamed output's address mod vb
	for a := range l.k.Arrays {
		if l.ntFrom[a] < 0 {
			continue
		}
		t := l.gp64()
		l.I(x86.MOVQ(l.ptr[a], t))
		l.I(x86.ANDQ(imm32(vb-1), t))
		if mis == nil {
			mis = t
			continue
		}
		l.I(x86.CMPQ(t, mis))
		l.I(x86.JNE(operand.LabelRef(plainLabel)))
	}
	l.I(x86.TESTQ(operand.U32(3), mis))
	l.I(x86.JNZ(operand.LabelRef(plainLabel)))
	// head = ((vb - mis) mod vb) / 4
	l.I(x86.MOVQ(mis, l.head))
	l.I(x86.NEGQ(l.head))
	l.I(x86.ANDQ(imm32(vb-1), l.head))
	l.I(x86.SHRQ(operand.U8(2), l.head))
	l.I(x86.JMP(operand.LabelRef(plainLabel + "_done")))
	l.label(plainLabel)
	l.I(x86.MOVQ(operand.I32(-1), l.head))
	l.label(plainLabel + "_done")
}

// plainLabel is where ntPrologue marks a call whose outputs cannot stream.
const plainLabel = "nostream"

// edgeMasks sets the masks of a shifted loop's two edge vectors: the
// first head lanes, and the others. AVX2 compares the lane numbers with
// head (lane masks for VMASKMOVPS); AVX-512 sets head low bits of a mask
// register.
func (l *lowering) edgeMasks() {
	if l.masked() {
		t := l.lowBits(l.head.As32())
		kh, kt := l.regs.K(), l.regs.K()
		l.I(x86.KMOVW(t, kh))
		l.I(x86.NOTL(t))
		l.I(x86.KMOVW(t, kt))
		l.edgeMask = [2]reg.Register{kh, kt}
		return
	}
	lane := l.laneIndex()
	hx := l.xmm()
	l.I(x86.VMOVQ(l.head, hx))
	hv := l.regs.YMM()
	l.I(x86.VPBROADCASTD(hx, hv))
	headMask := l.regs.YMM()
	l.I(x86.VPCMPGTD(lane, hv, headMask)) // head > lane
	m1 := l.gp64()
	l.I(x86.LEAQ(operand.Mem{Base: l.head, Disp: -1}, m1))
	m1x := l.xmm()
	l.I(x86.VMOVQ(m1, m1x))
	m1v := l.regs.YMM()
	l.I(x86.VPBROADCASTD(m1x, m1v))
	tailMask := l.regs.YMM()
	l.I(x86.VPCMPGTD(m1v, lane, tailMask)) // lane > head-1
	l.edgeMask = [2]reg.Register{headMask, tailMask}
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
		ahead = max(1, (prefetchAheadBytes+l.pfElem*l.f.H-1)/(l.pfElem*l.f.H))
	}
	ahead = max(ahead, l.block) // past the block
	l.comment("prefetch offset: %d row(s) ahead, fewer near the end", ahead)
	pf := l.gp64()
	l.I(x86.MOVQ(l.rows, pf))
	l.I(x86.DECQ(pf))
	c := l.gp64()
	l.I(x86.MOVQ(operand.U32(ahead), c))
	l.I(x86.CMPQ(pf, c))
	l.I(x86.CMOVQGT(c, pf))
	if l.f.H > 0 {
		l.I(x86.IMUL3Q(imm32(l.pfElem*l.f.H), pf, pf))
	} else {
		l.I(x86.IMULQ(l.h, pf))
		l.I(x86.SHLQ(operand.U8(bits.TrailingZeros(uint(l.pfElem))), pf))
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
