package amd64

import (
	"errors"
	"fmt"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
)

// Half-precision storage (ir.BF16, ir.F16): loads widen to float32
// exactly, stores round to nearest even, NaN stays NaN.
//
// f16 is the hardware's: VCVTPH2PS, and VCVTPS2PH with immediate 0
// (round to nearest even, whatever MXCSR says). bf16 is float32's upper
// half: a load zero-extends and shifts left 16; a store adds 0x7fff plus
// the kept part's lowest bit (ties to even) and shifts right 16, except
// that a NaN is only shifted and quieted (0x40): its rounding could carry
// into the exponent and give an infinity. The rounding leaves the result
// in the lanes' high halves; stores shift it down before narrowing (or
// extract the high word). Where the CPU has AVX512_BF16
// (target.Desc.NarrowBF16), VCVTNEPS2BF16 does the same but for subnormal
// inputs, which it reads as zero (bf16Narrow).
//
// Memory partial vectors go through VMOVDQU16 under the tail mask (its
// masked-off elements never fault); AVX2 tails go element by element
// through a general register or VPEXTRW.

var errHalfSlot = errors.New("half-precision storage in a streaming (edge) slot")

// elem is the storage of array a.
func (l *lowering) elem(a int) ir.Elem { return l.k.Arrays[a].Elem }

// halfAddr is the slot's elements of half array a: 2 bytes each, the
// slot's byte displacement (counted for 4-byte elements) halved.
func (l *lowering) halfAddr(a int, s slot) operand.Mem {
	m := operand.Mem{Base: l.ptr[a], Disp: s.disp/2 + l.rowDisp(a, s.row)}
	if s.idx != nil {
		m.Index, m.Scale = s.idx, 2
	}
	return m
}

// halfReg is a register of half the vector's width: the 16-bit values
// of a vector of float32.
func (l *lowering) halfReg(s slot) reg.Register {
	if l.zmm() && s.kind != single {
		return l.regs.YMM()
	}
	return l.xmm()
}

// loadHalf widens the slot's elements of half array a into d.
func (l *lowering) loadHalf(s slot, a int, d reg.Register) {
	e := l.elem(a)
	m := l.halfAddr(a, s)
	widen := func(src operand.Op) { l.widenVec(e, src, d) }
	switch s.kind {
	case full:
		widen(m)
	case masked:
		t := l.regs.YMM()
		l.I(x86.VMOVDQU16_Z(m, l.tail, t))
		widen(t)
	case single:
		g := l.gp32()
		l.I(x86.MOVWLZX(m, g))
		if e == ir.BF16 {
			l.I(x86.SHLL(operand.U8(16), g))
			l.I(x86.VMOVD(g, d))
			return
		}
		l.I(x86.VMOVD(g, d))
		l.I(x86.VCVTPH2PS(d, d))
	default:
		l.fail(errHalfSlot)
	}
}

// storeHalf rounds v to half array a's format and stores the slot's
// elements.
func (l *lowering) storeHalf(s slot, a int, v reg.Register) {
	m := l.halfAddr(a, s)
	if s.kind == single {
		x := l.xmm()
		if l.elem(a) == ir.F16 {
			l.I(x86.VCVTPS2PH(operand.U8(0), v, x))
			l.I(x86.VPEXTRW(operand.U8(0), x, m))
			return
		}
		l.bf16Round(v, x)
		l.I(x86.VPEXTRW(operand.U8(1), x, m)) // the high half
		return
	}
	h := l.narrowVec(l.elem(a), v)
	switch s.kind {
	case full:
		if l.zmm() {
			l.I(x86.VMOVDQU16(h, m)) // EVEX: the register may be Y16-Y31
		} else {
			l.I(x86.VMOVDQU(h, m))
		}
	case masked:
		l.I(x86.VMOVDQU16(h, l.tail, m))
	default:
		l.fail(errHalfSlot)
	}
}

// narrowVec rounds the whole vector v to format e: its 16-bit values in
// a register of half v's width (YMM for a ZMM, XMM for a YMM).
func (l *lowering) narrowVec(e ir.Elem, v reg.Register) reg.Register {
	switch {
	case e == ir.F16:
		h := l.halfReg(slot{kind: full})
		l.I(x86.VCVTPS2PH(operand.U8(0), v, h))
		return h
	case l.isa.NarrowBF16:
		h := l.halfReg(slot{kind: full})
		l.bf16Narrow(v, h)
		return h
	}
	t := l.vec()
	l.bf16Round(v, t)
	l.I(x86.VPSRLD(operand.U8(16), t, t))
	if l.zmm() {
		h := l.regs.YMM()
		l.I(x86.VPMOVDW(t, h))
		return h
	}
	// Unsigned saturation keeps the 16-bit values; the pack works within
	// 128-bit lanes, so gather its quadwords 0 and 2.
	l.I(x86.VPACKUSDW(t, t, t))
	l.I(x86.VPERMQ(operand.U8(0x08), t, t))
	return t.AsX()
}

// widenVec widens the 16-bit values of format e at src (memory, or a
// register of half d's width) into the float32 lanes of d.
func (l *lowering) widenVec(e ir.Elem, src operand.Op, d reg.Register) {
	if e == ir.F16 {
		l.I(x86.VCVTPH2PS(src, d))
		return
	}
	l.I(x86.VPMOVZXWD(src, d))
	l.I(x86.VPSLLD(operand.U8(16), d, d))
}

// bf16Setup sets l.bf16Consts when the loop stores a bf16 array: once
// per sweep, before any of its code, rather than once per vector.
func (l *lowering) bf16Setup(loop *ir.Loop) {
	for _, op := range loop.Ops {
		if op.Code == ir.VStore && l.elem(op.Array) == ir.BF16 {
			for i, c := range []uint32{0x7fff, 0x40 << 16} {
				l.bf16Consts[i] = l.vec()
				l.splatInt(c, l.bf16Consts[i])
			}
			return
		}
	}
}

// bf16Narrow rounds the 16 float32 of v to the bfloat16 of h (a YMM) by
// VCVTNEPS2BF16, which reads subnormal inputs as zero: a vector with a
// subnormal lane takes the integer sequence instead, which rounds them
// (to bf16 subnormals, zero or the least normal).
func (l *lowering) bf16Narrow(v, h reg.Register) {
	sub := l.regs.K()
	l.I(x86.VFPCLASSPSZ(operand.U8(0x20), v, sub)) // 0x20: subnormal
	l.vcvtneps2bf16(v, h)
	done := fmt.Sprintf("bf16_%d", l.bf16Narrows)
	l.bf16Narrows++
	l.I(x86.KORTESTW(sub, sub))
	l.I(x86.JZ(operand.LabelRef(done)))
	t := l.vec()
	l.bf16Round(v, t)
	l.I(x86.VPSRLD(operand.U8(16), t, t))
	l.I(x86.VPMOVDW(t, h))
	l.label(done)
}

// bf16Round leaves in the high 16 bits of each 32-bit lane of d the
// bfloat16 of v's lane, rounded to nearest even, NaN quieted; the low
// bits are garbage. d has v's width (an XMM for a single element).
func (l *lowering) bf16Round(v, d reg.Register) {
	narrow := v.Size() == 16
	width := func() reg.Register {
		if narrow {
			return l.xmm()
		}
		return l.vec()
	}
	bias, quiet := reg.Register(l.bf16Consts[0]), reg.Register(l.bf16Consts[1])
	if narrow {
		bias, quiet = l.bf16Consts[0].AsX(), l.bf16Consts[1].AsX()
	}
	// The kept part's lowest bit (bit 16: ties to even) by two shifts,
	// with no constant.
	l.I(x86.VPSLLD(operand.U8(15), v, d))
	l.I(x86.VPSRLD(operand.U8(31), d, d))
	l.I(x86.VPADDD(bias, d, d))
	l.I(x86.VPADDD(v, d, d))
	// A NaN is v with the quiet bit set: the low bits are dropped anyway.
	if l.masked() {
		k := l.regs.K()
		l.I(x86.VCMPPS(operand.U8(3), v, v, k)) // unordered: NaN
		l.I(x86.VPORD(quiet, v, k, d))
		return
	}
	nan := width()
	l.I(x86.VCMPPS(operand.U8(3), v, v, nan))
	q := width()
	l.I(x86.VPOR(quiet, v, q))
	l.I(x86.VPBLENDVB(nan, q, d, d))
}

// splatInt broadcasts the 32-bit integer c into every lane of d, through
// a general register (no data section); AVX2 broadcasts from an XMM.
func (l *lowering) splatInt(c uint32, d reg.Register) {
	g := l.gp32()
	l.I(x86.MOVL(operand.U32(c), g))
	if l.masked() {
		l.I(x86.VPBROADCASTD(g, d))
		return
	}
	l.I(x86.VMOVD(g, d.(reg.VecVirtual).AsX()))
	l.I(x86.VPBROADCASTD(d.(reg.VecVirtual).AsX(), d))
}

// loadHalfScalar widens the element at m of a half array into d (an
// XMM's low lane): the pivot of a row.
func (l *lowering) loadHalfScalar(e ir.Elem, m operand.Mem, d reg.Register) {
	g := l.gp32()
	l.I(x86.MOVWLZX(m, g))
	if e == ir.BF16 {
		l.I(x86.SHLL(operand.U8(16), g))
	}
	l.I(x86.VMOVD(g, d))
	if e == ir.F16 {
		l.I(x86.VCVTPH2PS(d, d))
	}
}

// splits reports whether loop's bf16 loads split: the loop is order-free
// (ir.Kernel.OrderFree) and every array it loads is bf16 and not held in
// registers for a later loop (which would need the elements in order).
func (l *lowering) splits(loop *ir.Loop) bool {
	if !l.k.OrderFree(loop) {
		return false
	}
	n := 0
	for _, op := range loop.Ops {
		if op.Code == ir.VLoad {
			if l.elem(op.Array) != ir.BF16 || l.isResident(op.Array) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// loadSplit widens half of the bf16 elements of a pair of whole vectors
// (slot.pair) from one full-width load of their memory, with no shuffle:
// a bf16 is a float32's high half, so the even elements are the dwords
// shifted left 16 and the odd ones the dwords with the low half cleared.
// The first slot of the pair takes the evens, the second the odds; which
// lane holds which element does not matter to an order-free loop.
func (l *lowering) loadSplit(sw *sweepState, s slot, a int, d reg.Register) {
	if s.pair == 2 {
		s.disp -= 4 * l.lanes // the pair's memory starts at the first vector's
	}
	m := l.halfAddr(a, s)
	switch {
	case s.pair == 2 && l.masked():
		l.I(x86.VPANDD(m, sw.odd, d))
	case s.pair == 2:
		l.I(x86.VPAND(m, sw.odd, d))
	case l.masked():
		l.I(x86.VPSLLD(operand.U8(16), m, d))
	default:
		// VEX shifts take no memory operand.
		l.I(x86.VMOVDQU(m, d))
		l.I(x86.VPSLLD(operand.U8(16), d, d))
	}
}

// pairsStores reports whether the loop's bf16 stores go in pairs of
// vectors: one narrowing and one full-width store for two vectors.
func (l *lowering) pairsStores(loop *ir.Loop) bool {
	for _, op := range loop.Ops {
		if op.Code == ir.VStore && l.elem(op.Array) == ir.BF16 {
			return true
		}
	}
	return false
}

// storePair stores v into bf16 array a for the slot of a pair: the
// first's value is held, the second's narrowed with it into one vector of
// 16-bit values (the first's in the low half) and stored where the first
// starts. avx512bf16 converts both with one VCVTNE2PS2BF16; the integer
// rounding leaves the results in the dwords' high halves, which AVX-512
// gathers with one VPERMT2W and AVX2 shifts down and packs once.
func (l *lowering) storePair(sw *sweepState, s slot, a int, v reg.Register) {
	key := [2]int{s.row, a}
	if s.pair == 1 {
		sw.held[key] = v
		return
	}
	v0 := sw.held[key]
	delete(sw.held, key)
	s.disp -= 4 * l.lanes
	m := l.halfAddr(a, s)
	switch {
	case l.isa.NarrowBF16:
		l.I(x86.VMOVDQU16(l.bf16NarrowPair(v0, v), m))
	case l.zmm():
		t0, t1 := l.vec(), l.vec()
		l.bf16Round(v0, t0)
		l.bf16Round(v, t1)
		l.I(x86.VPERMT2W(t1, sw.highWords, t0))
		l.I(x86.VMOVDQU16(t0, m))
	default:
		t0, t1 := l.vec(), l.vec()
		l.bf16Round(v0, t0)
		l.bf16Round(v, t1)
		l.I(x86.VPSRLD(operand.U8(16), t0, t0))
		l.I(x86.VPSRLD(operand.U8(16), t1, t1))
		// The pack interleaves the 128-bit lanes: v0's, v1's, v0's, v1's.
		l.I(x86.VPACKUSDW(t1, t0, t0))
		l.I(x86.VPERMQ(operand.U8(0xd8), t0, t0))
		l.I(x86.VMOVDQU(t0, m))
	}
}

// bf16NarrowPair is bf16Narrow for two vectors: the bfloat16 of lo and
// hi in one ZMM, lo's in the low half.
func (l *lowering) bf16NarrowPair(lo, hi reg.Register) reg.Register {
	k0, k1 := l.regs.K(), l.regs.K()
	l.I(x86.VFPCLASSPSZ(operand.U8(0x20), lo, k0)) // 0x20: subnormal
	l.I(x86.VFPCLASSPSZ(operand.U8(0x20), hi, k1))
	h := l.vec()
	l.vcvtne2ps2bf16(lo, hi, h)
	done := fmt.Sprintf("bf16_%d", l.bf16Narrows)
	l.bf16Narrows++
	l.I(x86.KORTESTW(k1, k0))
	l.I(x86.JZ(operand.LabelRef(done)))
	y0, y1 := l.regs.YMM(), l.regs.YMM()
	for _, p := range [][2]reg.Register{{lo, y0}, {hi, y1}} {
		t := l.vec()
		l.bf16Round(p[0], t)
		l.I(x86.VPSRLD(operand.U8(16), t, t))
		l.I(x86.VPMOVDW(t, p[1]))
	}
	l.I(x86.VINSERTI64X4(operand.U8(1), y1, y0.(reg.VecVirtual).AsZ(), h))
	l.label(done)
	return h
}

// highWordIndex is the VPERMT2W index of words 1, 3, 5, ... 63: the high
// halves of the dwords of two ZMMs, in order. Dword d holds the indexes
// 4d+1 and 4d+3: 0x00030001 + d*0x00040004, d from bytes 0..15 widened.
func (l *lowering) highWordIndex() reg.VecVirtual {
	g := l.gp64()
	x := l.xmm()
	l.I(x86.MOVQ(operand.U64(0x0706050403020100), g))
	l.I(x86.VMOVQ(g, x))
	l.I(x86.MOVQ(operand.U64(0x0f0e0d0c0b0a0908), g))
	l.I(x86.VPINSRQ(operand.U8(1), g, x, x))
	idx := l.vec()
	l.I(x86.VPMOVZXBD(x, idx))
	c := l.vec()
	l.splatInt(0x00040004, c)
	l.I(x86.VPMULLD(c, idx, idx))
	l.splatInt(0x00030001, c)
	l.I(x86.VPADDD(c, idx, idx))
	return idx
}
