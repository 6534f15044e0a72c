package ir

import (
	"math"
	"strings"
	"testing"
)

// Half storage is for row arrays only (of any layout), and a store to
// such an array rounds to its format in Eval.
func TestElem(t *testing.T) {
	for _, s := range []string{"f32", "bf16", "f16"} {
		e, ok := ParseElem(s)
		if !ok || e.String() != s || e.Half() != (s != "f32") || e.Bytes() != map[bool]int{true: 2, false: 4}[e.Half()] {
			t.Errorf("%s: %v %v", s, e, ok)
		}
	}
	if _, ok := ParseElem("fp16"); ok {
		t.Error("fp16 parsed")
	}
	build := func(gammaElem Elem, layout Layout) *Kernel {
		b := NewBuilder("K", "y = x*gamma")
		b.SetLayout(layout)
		dst := b.Array("dst", RowOut, "out")
		x := b.Array("x", RowIn, "in")
		g := b.Array("gamma", Param, "scale")
		b.SetElem(dst, BF16)
		b.SetElem(x, BF16)
		b.SetElem(g, gammaElem)
		b.Loop(func(l *LoopBuilder) { l.Store(dst, l.Mul(l.Load(x), l.Load(g))) })
		k, err := b.Kernel()
		if err != nil {
			return nil
		}
		return k
	}
	if build(BF16, Rows) != nil || build(BF16, Segments) != nil {
		t.Error("half storage of a parameter passed Check")
	}
	if build(F32, Columns) == nil || build(F32, Segments) == nil {
		t.Error("half row arrays of the columns or segments layout failed Check")
	}
	k := build(F32, Rows)
	if k == nil {
		t.Fatal("a bf16 row kernel failed Check")
	}
	x := []float32{1, WidenBF16(0x3f81), 3}
	dst := make([]float32, 3)
	Eval(k, 3, 1, [][]float32{dst, x, {1 + 0x1p-9, 1, float32(math.Inf(1))}})
	// 1*(1+2^-9) rounds to 1 (below the tie), 0x3f81 stays, 3*Inf is Inf.
	if dst[0] != 1 || dst[1] != x[1] || !math.IsInf(float64(dst[2]), 1) {
		t.Errorf("Eval stores %v", dst)
	}
	if err := Check(&Kernel{Name: "K", Arrays: []Array{{Name: "x", Role: RowIn, Elem: 7}}}); err == nil || !strings.Contains(err.Error(), "storage") {
		t.Errorf("unknown storage: %v", err)
	}
}
