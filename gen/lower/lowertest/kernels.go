package lowertest

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

func MustKernel(t testing.TB, b *ir.Builder) *ir.Kernel {
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Mix exercises the unusual operand combinations.
func Mix(t testing.TB) *ir.Kernel {
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
	return MustKernel(t, b)
}

// Pressure keeps eleven values live at once: 44 registers at four
// vectors per iteration, so the lowering must fall back to two.
func Pressure(t testing.TB) *ir.Kernel {
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
	return MustKernel(t, b)
}

// Impossible needs 40 registers even without unrolling.
func Impossible(t testing.TB) *ir.Kernel {
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
	return MustKernel(t, b)
}

// Guard kernels. gen/algo guards var+eps (the operand of the sqrt) before
// the last loop of every kernel; Guarded adds a second guard there with
// other bounds. The synthetic ones put their guards on per-row inputs, so
// that the tests choose exactly which rows fall outside the bounds, on
// them, next to them, at NaN, Inf, zero and subnormals.

// MinNormal is the smallest normal float32.
const MinNormal = 0x1p-126

// Guarded is k with another guard, Guard(var+eps, lo, hi), before its
// last loop.
func Guarded(t testing.TB, k *ir.Kernel, lo, hi float32) *ir.Kernel {
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
	c.Streaming = nil // the original's form: the copy's NT functions lower the copy
	c.Body = append(append(append([]ir.Stmt(nil), k.Body[:last]...),
		&ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{arg}, Lo: lo, Hi: hi}),
		k.Body[last:]...)
	if err := ir.Check(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// GuardEdges guards two per-row inputs before anything else, one
// with finite bounds on both sides and one with [smallest normal, max
// float32] (what catches underflow to subnormals or 0, and overflow to
// Inf), then uses them in a loop and a per-row output.
func GuardEdges(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardEdges", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	st := b.Array("st", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	ga := b.Array("a", ir.RowScalarIn, "")
	gb := b.Array("b", ir.RowScalarIn, "")
	a := b.LoadRow(ga)
	b.Guard(a, -1.5, 2.5)
	bb := b.LoadRow(gb)
	b.Guard(bb, MinNormal, math.MaxFloat32)
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.FMA(l.Load(x), l.Splat(a), l.Splat(bb))
		l.Store(dst, v)
		l.Acc(acc, v)
	})
	b.StoreRow(st, b.Add(b.Sum(acc), a))
	return MustKernel(t, b)
}

// GuardPoint guards a loop-computed statistic: the row's sum of
// squares scaled by a per-row input must be exactly 1 (lo == hi, one
// register for both bounds), and a second guard with infinite bounds,
// which can never fire, sits before the store loop.
func GuardPoint(t testing.TB) *ir.Kernel {
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
	return MustKernel(t, b)
}

// GuardConst's guard has a row-invariant operand out of its bounds:
// every call returns 0 and writes nothing.
func GuardConst(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardConst", "synthetic")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	c := b.Add(b.Const(2), b.InvLen())
	b.Guard(c, -1, 1)
	b.Loop(func(l *ir.LoopBuilder) {
		l.Store(dst, l.Mul(l.Load(x), l.Splat(c)))
	})
	return MustKernel(t, b)
}

// GuardTight keeps thirty-one vectors live in its loop, so that the
// guard before it cannot keep its bounds in registers.
func GuardTight(t testing.TB) *ir.Kernel {
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
	return MustKernel(t, b)
}

// GuardSpecials are the per-row inputs of the synthetic guard kernels: the
// bounds of each guard and their neighbours, zeros, subnormals, the
// extremes, infinities and NaN.
var GuardSpecials = []float32{
	1, -1.5, math.Nextafter32(-1.5, -2), 2.5, math.Nextafter32(2.5, 3),
	math.Nextafter32(1, 2), math.Nextafter32(1, 0),
	MinNormal, math.Nextafter32(MinNormal, 0), 0x1p-149, 0, float32(math.Copysign(0, -1)),
	math.MaxFloat32, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// Guard bounds of WithGuard: test rows of zeros (too small) and rows
// scaled by 1e6 (too large) trip them.
const (
	GuardLo = 1e-3
	GuardHi = 1e3
)

// WithGuard is k named Guard<name>, with Guard(var+eps, GuardLo, GuardHi)
// before its last loop, as gen/algo places it; nil when a store comes
// first, where no guard is allowed.
func WithGuard(k *ir.Kernel) *ir.Kernel {
	last, arg := -1, ir.S(-1)
	for i, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			last = i
		case *ir.Scalar:
			if st.Code == ir.SSqrt {
				arg = st.Args[0]
			}
		}
	}
	g := *k
	g.Name = "Guard" + k.Name
	g.Streaming = nil // the original's form: the copy's NT functions lower the copy
	g.Body = append(append(append([]ir.Stmt{}, k.Body[:last]...),
		&ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{arg}, Lo: GuardLo, Hi: GuardHi}), k.Body[last:]...)
	if ir.Check(&g) != nil {
		return nil
	}
	return &g
}

// GuardStats is a LayerNorm with a saved rstd and two one-sided guards:
// the mean at most 40 (a RowBig row has a mean near 3e6), and the
// variance plus eps at least GuardLo (a row of zeros).
func GuardStats(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("GuardStats", "y = (x-mean)*rstd*gamma; rstd saved")
	dst := b.Array("dst", ir.RowOut, "")
	rstdOut := b.Array("rstd", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	gamma := b.Array("gamma", ir.Param, "")
	sum := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) { l.Acc(sum, l.Load(x)) })
	inv := b.InvLen()
	mean := b.Mul(b.Sum(sum), inv)
	b.Guard(mean, float32(math.Inf(-1)), 40)
	dev := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		d := l.Sub(l.Load(x), l.Splat(mean))
		l.AccMul(dev, d, d)
	})
	v := b.Add(b.Mul(b.Sum(dev), inv), b.Const(1e-5))
	b.Guard(v, GuardLo, float32(math.Inf(1)))
	rstd := b.Div(b.Const(1), b.Sqrt(v))
	b.Loop(func(l *ir.LoopBuilder) {
		d := l.Sub(l.Load(x), l.Splat(mean))
		l.Store(dst, l.Mul(l.Mul(d, l.Splat(rstd)), l.Load(gamma)))
	})
	b.StoreRow(rstdOut, rstd)
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// SumsC is a Columns kernel with five sums in one loop: the chunk
// totals of a group do not fit in registers beside the chunks' (AVX2: 2
// blocks of 5 and 5 YMM; AVX-512: 4 blocks of 5 and 5 ZMM), so they go
// to the frame.
func SumsC(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("SumsC", "stat = sum of five means; y = x*stat")
	b.SetLayout(ir.Columns)
	dst := b.Array("dst", ir.RowOut, "")
	stat := b.Array("stat", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	gamma := b.Array("gamma", ir.Param, "")
	first := b.LoadRow(x)
	var accs []int
	for range 5 {
		accs = append(accs, b.NewAcc())
	}
	b.Loop(func(l *ir.LoopBuilder) {
		v, g := l.Load(x), l.Load(gamma)
		d := l.Sub(v, l.Splat(first))
		l.Acc(accs[0], v)
		l.AccMul(accs[1], v, v)
		l.AccMul(accs[2], v, g)
		l.Acc(accs[3], d)
		l.AccMul(accs[4], d, d)
	})
	inv := b.InvLen()
	sum := b.Mul(b.Sum(accs[0]), inv)
	for _, a := range accs[1:] {
		sum = b.Add(sum, b.Mul(b.Sum(a), inv))
	}
	b.StoreRow(stat, sum)
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Mul(l.Load(x), l.Splat(sum))) })
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// SumKernel stores each row's sum of x (square: of x*x) into stat.
func SumKernel(t testing.TB, name string, layout ir.Layout, square bool) *ir.Kernel {
	b := ir.NewBuilder(name, "stat = sum of x")
	b.SetLayout(layout)
	stat := b.Array("stat", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.Load(x)
		if square {
			l.AccMul(acc, v, v)
		} else {
			l.Acc(acc, v)
		}
	})
	b.StoreRow(stat, b.Sum(acc))
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Mean stores each row's mean, a one-pass sum no second pass corrects.
func Mean(t testing.TB) *ir.Kernel {
	b := ir.NewBuilder("Mean", "the mean of each row")
	mean := b.Array("mean", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) { l.Acc(acc, l.Load(x)) })
	b.StoreRow(mean, b.Mul(b.Sum(acc), b.InvLen()))
	return MustKernel(t, b)
}

// ReadTwice loads its row input and its two Param arrays twice each in
// one loop, each copy feeding its own product, as gen/algo's backward
// kernels may (and its row output twice in a second loop): a lowering
// that keeps one pointer or broadcast per array must not advance it per
// load. Four vector values live at once beside two sums: at four vectors
// per iteration their registers reach those of the sums' totals (NEON,
// every layout), which must stay apart.
func ReadTwice(t testing.TB, name string, layout ir.Layout) *ir.Kernel {
	b := ir.NewBuilder(name, "synthetic")
	b.SetLayout(layout)
	dst := b.Array("dst", ir.RowOut, "")
	stat := b.Array("stat", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	gamma := b.Array("gamma", ir.Param, "")
	beta := b.Array("beta", ir.Param, "")
	acc0, acc1 := b.NewAcc(), b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		x1, x2 := l.Load(x), l.Load(x)
		p := l.Mul(x1, l.Load(gamma))
		q := l.Mul(x2, l.Load(gamma))
		r := l.Sub(x1, l.Load(beta))
		l.AccMul(acc0, p, q)
		l.AccMul(acc1, r, l.Load(beta))
		l.Store(dst, l.FMA(x2, l.Load(gamma), r))
	})
	inv := b.InvLen()
	b.StoreRow(stat, b.Add(b.Mul(b.Sum(acc0), inv), b.Mul(b.Sum(acc1), inv)))
	// In place (dst is x) x holds dst's values now: read dst alone.
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.Mul(l.Load(dst), l.Load(gamma))
		l.Store(dst, l.FMA(l.Load(dst), l.Load(beta), v))
	})
	return MustKernel(t, b)
}
