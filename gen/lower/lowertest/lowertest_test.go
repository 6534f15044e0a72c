package lowertest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

func TestColumnRules(t *testing.T) {
	for _, c := range []struct {
		rule             ColumnRule
		done, rows, want int
	}{
		{MaskedTail(8), 21, 21, 21}, {MaskedTail(8), 20, 21, 16}, {MaskedTail(16), 5, 21, 0},
		{WholeBlocks(4), 21, 21, 20}, {WholeBlocks(4), 7, 21, 4}, {WholeBlocks(4), 3, 3, 0},
	} {
		if got := c.rule(c.done, c.rows); got != c.want {
			t.Errorf("rule(%d, %d) = %d, want %d", c.done, c.rows, got, c.want)
		}
	}
}

// TestNewCase: a guard that trips on one row leaves that row and those
// after it for the caller; owners say whose each element is; in place,
// dst shares x's memory and x carries the result.
func TestNewCase(t *testing.T) {
	k := WithGuard(MustKernel(t, func() *ir.Builder {
		b := ir.NewBuilder("Scale", "y = x*rstd")
		dst := b.Array("dst", ir.RowOut, "")
		x := b.Array("x", ir.RowIn, "")
		acc := b.NewAcc()
		b.Loop(func(l *ir.LoopBuilder) { v := l.Load(x); l.AccMul(acc, v, v) })
		r := b.Div(b.Const(1), b.Sqrt(b.Add(b.Mul(b.Sum(acc), b.InvLen()), b.Const(1e-5))))
		b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Mul(l.Load(x), l.Splat(r))) })
		return b
	}()))
	if k == nil {
		t.Fatal("WithGuard refused a kernel that stores only in its last loop")
	}
	f := target.Func{Kernel: k, ISA: target.NEON}
	rng := rand.New(rand.NewPCG(1, 2))
	c, nan := NewCase(rng, f, ir.Shape{H: 5}, With(4, 2, RowZero), false, nil)
	if c.Done != 2 || c.Want != 2 || nan != 0 {
		t.Fatalf("done %d want %d nanKept %d, want 2, 2, 0", c.Done, c.Want, nan)
	}
	if len(c.Shape) != 1 || c.Shape[0] != 5 {
		t.Errorf("shape arguments %v, want [5]", c.Shape)
	}
	dst := c.Arrays[k.ArrayIndex("dst")]
	if !dst.Written || len(dst.In) != 20 || dst.Owner[7] != 1 || dst.Want[12] != 12345 {
		t.Errorf("dst: written %v, %d values, owner of 7 %d, abandoned row's value %v", dst.Written, len(dst.In), dst.Owner[7], dst.Want[12])
	}
	c, _ = NewCase(rng, f, ir.Shape{H: 5}, Plain(3), true, nil)
	x := c.Arrays[k.ArrayIndex("x")]
	if d := c.Arrays[k.ArrayIndex("dst")]; d.Alias != k.ArrayIndex("x") || !x.Written || c.Done != 3 {
		t.Errorf("in place: dst alias %d, x written %v, done %d", d.Alias, x.Written, c.Done)
	}
	b := Encode([]Case{c})
	if n := binary.LittleEndian.Uint32(b); n != 1 {
		t.Errorf("encoded count %d", n)
	}
}
