package lowertest

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// HalfCopy is dst = x with x held in format in and dst in format out: a
// half-precision storage's loads or stores alone, which HalfCases checks
// bit for bit.
func HalfCopy(t testing.TB, in, out ir.Elem) *ir.Kernel {
	name := "Copy" + strings.ToUpper(in.String()) + "To" + strings.ToUpper(out.String())
	b := ir.NewBuilder(name, "synthetic: dst = x")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	b.SetElem(dst, out)
	b.SetElem(x, in)
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Load(x)) })
	return MustKernel(t, b)
}

// HalfCopies are the HalfCopy kernels of the half formats isa converts:
// each format widened to float32 and float32 narrowed to it.
func HalfCopies(t testing.TB, isa target.ISA) []*ir.Kernel {
	var ks []*ir.Kernel
	for _, e := range []ir.Elem{ir.BF16, ir.F16} {
		if _, ok := isa.Storage(e); ok {
			ks = append(ks, HalfCopy(t, e, ir.F32), HalfCopy(t, ir.F32, e))
		}
	}
	return ks
}

// HalfCases is one case per function of a HalfCopy kernel, with h the
// run-time length of those that take it: every bit pattern of the format
// widened, or float32 values narrowed (HalfNarrowInputs), their results
// bit for bit those of ir's conversions, NaN payloads included. The last
// row is padded with zeros.
func HalfCases(funcs []target.Func, h int) []Case {
	var cases []Case
	for _, f := range funcs {
		k := f.Kernel
		x, dst := k.ArrayIndex("x"), k.ArrayIndex("dst")
		in, out := k.Arrays[x].Elem, k.Arrays[dst].Elem
		var vals []float32
		var bits []uint16
		if in.Half() {
			for b := range 1 << 16 {
				bits = append(bits, uint16(b))
				vals = append(vals, widen(in, uint16(b)))
			}
		} else {
			vals = HalfNarrowInputs(out)
		}
		n := h
		if f.H > 0 {
			n = f.H
		}
		rows := (len(vals) + n - 1) / n
		xs := make([]float32, rows*n)
		copy(xs, vals)
		if bits != nil {
			bits = append(bits, make([]uint16, rows*n-len(bits))...)
		}
		owner, placeholder := make([]int32, rows*n), make([]float32, rows*n)
		for i := range owner {
			owner[i] = int32(i / n)
			placeholder[i] = 7 // a value of every format, overwritten
		}
		arrays := make([][]float32, 2)
		arrays[x], arrays[dst] = append([]float32(nil), xs...), append([]float32(nil), placeholder...)
		done := ir.EvalShape(k, ir.Shape{H: n}, rows, arrays)
		c := Case{Func: f, Rows: rows, Shape: Shape(f, ir.Shape{H: n}), Want: done, Done: done, Arrays: make([]Array, 2)}
		c.Arrays[x] = Array{Alias: -1, In: xs, Owner: owner, Elem: in, Bits: bits}
		c.Arrays[dst] = Array{Alias: -1, Written: true, In: placeholder, Owner: owner, Want: arrays[dst], Elem: out, Exact: true}
		cases = append(cases, c)
	}
	return cases
}

// widen is the float32 value of half bits b of format e.
func widen(e ir.Elem, b uint16) float32 {
	if e == ir.F16 {
		return ir.WidenF16(b)
	}
	return ir.WidenBF16(b)
}

// HalfNarrowInputs are the float32 values whose rounding to format e
// tells a conversion apart: every value of the format and the float32s
// either side of it, every midpoint between neighbours (ties) and the
// float32s either side of it, NaNs with payload bits the format keeps and
// drops (a bf16 rounding carry would turn them into infinities or zero),
// and random bit patterns (float32 subnormals, values beyond the range).
func HalfNarrowInputs(e ir.Elem) []float32 {
	var out []float32
	near := func(u uint32) {
		for _, v := range []uint32{u - 1, u, u + 1} {
			out = append(out, math.Float32frombits(v))
		}
	}
	maxFinite := uint16(0x7f7f)
	if e == ir.F16 {
		maxFinite = 0x7bff
	}
	for b := range 1 << 16 {
		w := widen(e, uint16(b))
		u := math.Float32bits(w)
		if w != w {
			out = append(out, w, math.Float32frombits(u|0xffff), math.Float32frombits(u&^0x00400000|1))
			continue
		}
		near(u)
		if mag := uint16(b) & 0x7fff; mag <= maxFinite {
			// The midpoint with the next value away from zero: exact in
			// float32 (the format's significand is shorter by 8 bits or more).
			step := float64(widen(e, mag+1)) - float64(widen(e, mag))
			if mag == maxFinite {
				step = float64(widen(e, mag)) - float64(widen(e, mag-1)) // the next would be the next binade's first
			}
			mid := math.Abs(float64(w)) + step/2
			near(math.Float32bits(float32(math.Copysign(mid, float64(w)))))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 4096 {
		out = append(out, math.Float32frombits(rng.Uint32()))
	}
	return out
}

// HalfRowCases are a few Rows cases of each function of a half-storage
// kernel, at the run-time lengths sizes (a fixed H at its own): plain
// rows, in place, and a row of each special kind among normal ones. The
// inputs are values of the format (NewCase rounds them), the outputs
// within one unit of it (the harness's rule for half arrays).
func HalfRowCases(funcs []target.Func, sizes []int) []Case {
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []Case
	for _, f := range funcs {
		k := f.Kernel
		hs := sizes
		if f.H > 0 {
			hs = []int{f.H}
		}
		for _, h := range hs {
			add := func(plans []RowPlan, inPlace bool) {
				c, _ := NewCase(rng, f, ir.Shape{H: h}, plans, inPlace, nil)
				cases = append(cases, c)
			}
			add(Plain(3), false)
			if k.ArrayIndex("x") >= 0 && k.ArrayIndex("dst") >= 0 {
				add(Plain(2), true)
			}
			for _, kind := range []RowKind{RowSubnormal, RowOverflow, RowConst, RowNaN, RowInf} {
				add(With(3, 1, kind), false)
			}
		}
	}
	return cases
}
