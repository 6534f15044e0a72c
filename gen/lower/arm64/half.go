package arm64

import (
	"fmt"
	"math"

	"github.com/normgen/normgen/gen/arm64asm"
	"github.com/normgen/normgen/gen/ir"
)

// Half-precision storage (ir.BF16, ir.F16, Rows layout only): loads widen
// to float32 exactly, stores round to nearest even, NaN stays NaN.
//
// f16 is the hardware's: FCVTL and FCVTN, which round by FPCR.RMode and
// quiet a NaN keeping its payload's top bits, as ir.NarrowF16 does, under
// the FPCR Linux starts a process with (all zero: nearest even, no
// flush to zero, no default NaN, IEEE half precision), which Go's runtime
// never changes. bf16 is float32's upper half: ZIP1/ZIP2 with a zero
// register widen (SHLL does the same on one pipe only; a permute issues
// on every vector pipe of N1, N2, V1 and V2). A store adds 0x7fff plus
// the kept part's lowest bit (ties to even) and keeps the upper half with
// ADDHN, except that a NaN adds nothing and only gets its quiet bit (from
// FMAX v, v, under the same FPCR): its rounding could carry into the
// exponent and give an infinity. Every op of the store issues on all
// vector pipes too (no shifts).
//
// Vectors move in pairs: one LD1 of 8H registers, placed in the upper
// half of the loaded value's group and widened from there by FCVTL and
// FCVTL2 (ZIP1, ZIP2) into the group's registers in order; a store
// narrows each pair into one 8H register (FCVTN and FCVTN2; bf16 by
// ADDHN and ADDHN2). A single vector is a 4H register, the scalar tail
// lane 0 of one.

// halfStore is the registers a store to a half array narrows into: out,
// a group of one 8H register per pair of vectors (a 4H register for a
// single one), and for bf16 two scratch registers.
type halfStore struct {
	out       arm64asm.VReg
	n         int // registers of out
	mask, add arm64asm.VReg
}

// elem is the storage of array a.
func (l *lowering) elem(a int) ir.Elem { return l.k.Arrays[a].Elem }

// hasHalf reports whether any array of the kernel is held in a half format.
func (l *lowering) hasHalf() bool {
	for a := range l.k.Arrays {
		if l.elem(a).Half() {
			return true
		}
	}
	return false
}

// bf16Setup broadcasts the bf16 rounding constants, 0x7fff and bit 16
// (the kept part's lowest), once for the whole function when a loop
// stores bf16, and zeroes a register for the widening ZIPs when one loads
// bf16.
func (l *lowering) bf16Setup() error {
	loads, stores := false, false
	for _, st := range l.k.Body {
		if lp, ok := st.(*ir.Loop); ok {
			for _, op := range lp.Ops {
				if l.elem(op.Array) == ir.BF16 {
					loads = loads || op.Code == ir.VLoad
					stores = stores || op.Code == ir.VStore
				}
			}
		}
	}
	if loads {
		r, err := l.vreg()
		if err != nil {
			return err
		}
		l.fn.Comment("bf16 widening: zero, the lower half of every float32")
		l.fn.VEOR(r.B16(), r.B16(), r.B16())
		l.bf16Zero = r
	}
	if !stores {
		return nil
	}
	l.fn.Comment("bf16 rounding: the bias 0x7fff and bit 16, in every lane")
	for i, c := range []uint32{0x7fff, 0x00010000} {
		r, err := l.vreg()
		if err != nil {
			return err
		}
		l.constant(math.Float32frombits(c), r)
		l.fn.VDUP(r.SLane(0), r.S4())
		l.bf16[i] = r
	}
	return nil
}

// planHalfStore takes the registers of a store to half array a at the
// lowering's unroll and frees them again: they live only while the store
// is emitted, so later values may take them.
func (l *lowering) planHalfStore(a int) (halfStore, error) {
	var hs halfStore
	n := (l.u + 1) / 2
	g, err := l.group(n)
	if err != nil {
		return hs, err
	}
	hs.out, hs.n = g, n
	var scratch []arm64asm.VReg
	if l.elem(a) == ir.BF16 {
		for range 2 {
			r, err := l.vreg()
			if err != nil {
				return hs, err
			}
			scratch = append(scratch, r)
		}
		hs.mask, hs.add = scratch[0], scratch[1]
	}
	l.vFree(g, n)
	for _, r := range scratch {
		l.vFree(r, 1)
	}
	return hs, nil
}

// widen turns the 16-bit values of src (4H, or the upper 4H of an 8H)
// into float32 in d.
func (l *lowering) widen(e ir.Elem, src arm64asm.VArr, d arm64asm.VReg) {
	switch {
	case e == ir.F16:
		l.fn.VFCVTL(src, d.S4())
	case src.Arr == arm64asm.H8:
		l.fn.VZIP2(src, l.bf16Zero.H8(), d.H8())
	default:
		l.fn.VZIP1(src.Reg.H8(), l.bf16Zero.H8(), d.H8())
	}
}

// loadHalf loads width vectors of half array a into the registers from
// first (a whole group's worth, post-indexed when post), or with scalar
// one element into first's low lane. It emits the loads and returns the
// widenings, vector by vector, for the caller to emit (body interleaves
// those of adjacent loads).
func (l *lowering) loadHalf(a int, cur arm64asm.Reg, first arm64asm.VReg, width int, post, scalar bool) []func() {
	fn, e := l.fn, l.elem(a)
	widen := func(src arm64asm.VArr, d arm64asm.VReg) func() {
		return func() { l.widen(e, src, d) }
	}
	switch {
	case scalar:
		if post {
			fn.VLD1LaneP(cur, first.HLane(0))
		} else {
			fn.VLD1Lane(arm64asm.Mem{Base: cur}, first.HLane(0))
		}
		return []func(){widen(first.H4(), first)}
	case width == 1:
		list := first.List(1, arm64asm.H4)
		if post {
			fn.VLD1P(cur, list)
		} else {
			fn.VLD1(arm64asm.Mem{Base: cur}, list)
		}
		return []func(){widen(first.H4(), first)}
	case width%2 != 0:
		l.fail(fmt.Errorf("half load of %d vectors", width))
		return nil
	case !post && width > 8:
		l.fail(fmt.Errorf("half load of %d vectors without post-indexing", width))
		return nil
	}
	// LD1 takes at most 4 registers: 8 vectors of 16-bit values. A chunk's
	// staging registers are its own upper half, which no other chunk's
	// widening writes, so every LD1 may come first.
	var ws []func()
	for c := 0; c < width; c += 8 {
		w := min(8, width-c)
		g := first + arm64asm.VReg(c)
		stage := g + arm64asm.VReg(w/2)
		list := stage.List(w/2, arm64asm.H8)
		if post {
			fn.VLD1P(cur, list)
		} else {
			fn.VLD1(arm64asm.Mem{Base: cur}, list)
		}
		// Pair k's destinations, 2k and 2k+1, are never a later pair's
		// source (w/2 + k' > 2k+1 for k' > k); the last pair's high
		// half widens in place, after its low half has been read.
		for k := range w / 2 {
			src := stage + arm64asm.VReg(k)
			ws = append(ws, widen(src.H4(), g+arm64asm.VReg(2*k)), widen(src.H8(), g+arm64asm.VReg(2*k+1)))
		}
	}
	return ws
}

// bf16Round narrows v's lanes, rounded to bf16, into d (4H, or the upper
// 4H of an 8H): the upper half of v + 0x7fff + bit 16 of v, or of v with
// the quiet bit where v is NaN.
func (l *lowering) bf16Round(hs halfStore, v arm64asm.VReg, d arm64asm.VArr) {
	fn := l.fn
	fn.VFCMEQ(v.S4(), v.S4(), hs.mask.S4())
	fn.VCMTST(l.bf16[1].S4(), v.S4(), hs.add.S4())     // -(bit 16)
	fn.VSUB(hs.add.S4(), l.bf16[0].S4(), hs.add.S4())  // 0x7fff + bit 16: ties to even
	fn.VAND(hs.mask.B16(), hs.add.B16(), hs.add.B16()) // nothing for a NaN
	fn.VFMAX(v.S4(), v.S4(), hs.mask.S4())             // v, a NaN quiet
	fn.VADDHN(hs.add.S4(), hs.mask.S4(), d)
}

// narrow1 leaves v's lanes in the format of array a in the 4H of d.
func (l *lowering) narrow1(a int, hs halfStore, v, d arm64asm.VReg) {
	if l.elem(a) == ir.F16 {
		l.fn.VFCVTN(v.S4(), d.H4())
		return
	}
	l.bf16Round(hs, v, d.H4())
}

// storeHalf stores the width vectors val(0), val(1)... to half array a
// (post-indexed when post), or with scalar the low lane of val(0).
func (l *lowering) storeHalf(a int, hs halfStore, cur arm64asm.Reg, val func(c int) arm64asm.VReg, width int, post, scalar bool) {
	fn := l.fn
	if scalar || width == 1 {
		l.narrow1(a, hs, val(0), hs.out)
		switch {
		case scalar && post:
			fn.VST1LaneP(hs.out.HLane(0), cur)
		case scalar:
			fn.VST1Lane(hs.out.HLane(0), arm64asm.Mem{Base: cur})
		case post:
			fn.VST1P(hs.out.List(1, arm64asm.H4), cur)
		default:
			fn.VST1(hs.out.List(1, arm64asm.H4), arm64asm.Mem{Base: cur})
		}
		return
	}
	if width%2 != 0 || width/2 > hs.n {
		l.fail(fmt.Errorf("half store of %d vectors", width))
		return
	}
	for k := range width / 2 {
		o := hs.out + arm64asm.VReg(k)
		lo, hi := val(2*k), val(2*k+1)
		if l.elem(a) == ir.F16 {
			fn.VFCVTN(lo.S4(), o.H4())
			fn.VFCVTN(hi.S4(), o.H8())
			continue
		}
		l.bf16Round(hs, lo, o.H4())
		l.bf16Round(hs, hi, o.H8())
	}
	list := hs.out.List(width/2, arm64asm.H8)
	if post {
		fn.VST1P(list, cur)
	} else {
		fn.VST1(list, arm64asm.Mem{Base: cur})
	}
}

// fail records err as the lowering's first failure.
func (l *lowering) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}
