package arm64

import (
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
