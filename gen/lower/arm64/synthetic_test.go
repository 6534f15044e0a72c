package arm64

import (
	"math"
	"testing"

	"github.com/normgen/normgen/gen/ir"
)

// IR kernels no algorithm builds today, for the lowering's corners: a
// splat as an FMA addend and as a stored value, a dead value, an
// accumulator summed twice and then refilled, a row output read back in
// the same loop and by a later one, per-row scalar inputs and outputs, a
// parameter used as an FMA operand, and register pressure that forces a
// smaller unroll.

func mustKernel(t testing.TB, b *ir.Builder) *ir.Kernel {
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mixKernel exercises the unusual operand combinations.
func mixKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("Mix", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	out2 := b.Array("out2", ir.RowOut, "")
	st := b.Array("st", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	g := b.Array("gs", ir.RowScalarIn, "")
	gamma := b.Array("gamma", ir.Param, "")
	acc0, acc1 := b.NewAcc(), b.NewAcc()
	s0 := b.LoadRow(g)
	half := b.Const(0.5)
	b.Loop(func(l *ir.LoopBuilder) {
		a := l.Load(x)
		sp := l.Splat(s0)
		c := l.FMA(a, l.Load(gamma), sp)
		l.Store(out2, sp)
		l.Mul(a, a) // never read
		l.Acc(acc0, c)
		l.AccMul(acc1, a, l.Splat(half))
	})
	s1 := b.Sum(acc0)
	s2 := b.Sum(acc0)
	s3 := b.Sum(acc1)
	b.Loop(func(l *ir.LoopBuilder) {
		w := l.Sub(l.Load(x), l.Load(out2))
		l.Store(dst, w)
		u := l.Load(dst)
		l.Store(out2, l.FMA(u, l.Splat(half), l.Splat(s1)))
		l.Acc(acc0, u)
	})
	s4 := b.Sum(acc0)
	b.StoreRow(st, b.Add(b.Div(s4, b.Add(s3, b.Const(1))), s2))
	return mustKernel(t, b)
}

// pressureKernel keeps eleven values live at once: 44 registers at four
// vectors per iteration, so the lowering must fall back to two.
func pressureKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("Pressure", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	gamma := b.Array("gamma", ir.Param, "")
	beta := b.Array("beta", ir.Param, "")
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		a1, a2, a3 := l.Load(x), l.Load(gamma), l.Load(beta)
		ms := []ir.V{
			l.Mul(a1, a2), l.Mul(a2, a3), l.Mul(a1, a3), l.Add(a1, a2),
			l.Add(a2, a3), l.Add(a1, a3), l.Sub(a1, a2), l.Sub(a2, a3),
		}
		t := ms[0]
		for _, m := range append(ms[1:], a1, a2, a3) {
			t = l.Add(t, m)
		}
		l.Store(dst, t)
		l.Acc(acc, t)
	})
	s := b.Mul(b.Sum(acc), b.InvLen())
	b.Loop(func(l *ir.LoopBuilder) {
		l.Store(dst, l.Mul(l.Load(dst), l.Splat(s)))
	})
	return mustKernel(t, b)
}

// impossibleKernel needs 40 registers even without unrolling.
func impossibleKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("Impossible", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	b.Loop(func(l *ir.LoopBuilder) {
		vs := make([]ir.V, 40)
		for i := range vs {
			vs[i] = l.Load(x)
		}
		t := vs[0]
		for _, v := range vs[1:] {
			t = l.Add(t, v)
		}
		l.Store(dst, t)
	})
	return mustKernel(t, b)
}

// Guard kernels. gen/algo guards var+eps (the operand of the sqrt) before
// the last loop of every kernel; guarded adds a second guard there with
// other bounds. The synthetic ones put their guards on per-row inputs, so
// that the tests choose exactly which rows fall outside the bounds, on
// them, next to them, at NaN, Inf, zero and subnormals.

// minNormal is the smallest normal float32.
const minNormal = 0x1p-126

// guarded is k with another guard, Guard(var+eps, lo, hi), before its
// last loop.
func guarded(t testing.TB, k *ir.Kernel, lo, hi float32) *ir.Kernel {
	last, arg := -1, ir.S(-1)
	for si, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			last = si
		case *ir.Scalar:
			if st.Code == ir.SSqrt {
				arg = st.Args[0]
			}
		}
	}
	if arg < 0 {
		t.Fatalf("%s: no sqrt to guard", k.Name)
	}
	c := *k
	c.Name = k.Name + "Guarded"
	c.Body = append(append(append([]ir.Stmt(nil), k.Body[:last]...),
		&ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{arg}, Lo: lo, Hi: hi}),
		k.Body[last:]...)
	if err := ir.Check(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// guardEdgesKernel guards two per-row inputs before anything else, one
// with finite bounds on both sides and one with [smallest normal, max
// float32] (what catches underflow to subnormals or 0, and overflow to
// Inf), then uses them in a loop and a per-row output.
func guardEdgesKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardEdges", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	st := b.Array("st", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	ga := b.Array("a", ir.RowScalarIn, "")
	gb := b.Array("b", ir.RowScalarIn, "")
	a := b.LoadRow(ga)
	b.Guard(a, -1.5, 2.5)
	bb := b.LoadRow(gb)
	b.Guard(bb, minNormal, math.MaxFloat32)
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.FMA(l.Load(x), l.Splat(a), l.Splat(bb))
		l.Store(dst, v)
		l.Acc(acc, v)
	})
	b.StoreRow(st, b.Add(b.Sum(acc), a))
	return mustKernel(t, b)
}

// guardPointKernel guards a loop-computed statistic: the row's sum of
// squares scaled by a per-row input must be exactly 1 (lo == hi, one
// register for both bounds), and a second guard with infinite bounds,
// which can never fire, sits before the store loop.
func guardPointKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardPoint", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	gs := b.Array("s", ir.RowScalarIn, "")
	s := b.LoadRow(gs)
	b.Guard(s, 1, 1)
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.Load(x)
		l.AccMul(acc, v, v)
	})
	ms := b.Mul(b.Sum(acc), b.InvLen())
	b.Guard(ms, float32(math.Inf(-1)), float32(math.Inf(1)))
	b.Guard(b.Mul(ms, s), 0, 1e30)
	b.Loop(func(l *ir.LoopBuilder) {
		l.Store(dst, l.Mul(l.Load(x), l.Splat(ms)))
	})
	return mustKernel(t, b)
}

// guardConstKernel's guard has a row-invariant operand out of its bounds:
// every call returns 0 and writes nothing.
func guardConstKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardConst", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	c := b.Add(b.Const(2), b.InvLen())
	b.Guard(c, -1, 1)
	b.Loop(func(l *ir.LoopBuilder) {
		l.Store(dst, l.Mul(l.Load(x), l.Splat(c)))
	})
	return mustKernel(t, b)
}

// guardTightKernel keeps thirty-one vectors live in its loop, so that the
// guard before it cannot keep its bounds in registers.
func guardTightKernel(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardTight", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	gs := b.Array("gs", ir.RowScalarIn, "")
	b.Guard(b.LoadRow(gs), -1, 1)
	b.Loop(func(l *ir.LoopBuilder) {
		vs := make([]ir.V, 31)
		for i := range vs {
			vs[i] = l.Load(x)
		}
		sum := vs[0]
		for _, v := range vs[1:] {
			sum = l.Add(sum, v)
		}
		l.Store(dst, sum)
	})
	return mustKernel(t, b)
}

// guardSpecials are the per-row inputs of the synthetic guard kernels: the
// bounds of each guard and their neighbours, zeros, subnormals, the
// extremes, infinities and NaN.
var guardSpecials = []float32{
	1, -1.5, math.Nextafter32(-1.5, -2), 2.5, math.Nextafter32(2.5, 3),
	math.Nextafter32(1, 2), math.Nextafter32(1, 0),
	minNormal, math.Nextafter32(minNormal, 0), 0x1p-149, 0, float32(math.Copysign(0, -1)),
	math.MaxFloat32, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}
