package ir

import "testing"

func TestOrderFree(t *testing.T) {
	arrays := []Array{{Name: "dst", Role: RowOut, Elem: BF16}, {Name: "x", Role: RowIn, Elem: BF16}, {Name: "gamma", Role: Param}}
	load := func(a int) VecOp { return VecOp{Code: VLoad, Array: a} }
	cases := []struct {
		name   string
		layout Layout
		ops    []VecOp
		want   bool
	}{
		{"sum of squares", Rows, []VecOp{load(1), {Code: VAccMul, Args: []V{0, 0}}}, true},
		{"sum of two rows", Segments, []VecOp{load(1), load(0), {Code: VAdd, Args: []V{0, 1}}, {Code: VAcc, Args: []V{2}}}, true},
		{"a store", Rows, []VecOp{load(1), {Code: VStore, Array: 0, Args: []V{0}}}, false},
		{"a parameter", Rows, []VecOp{load(1), load(2), {Code: VAccMul, Args: []V{0, 1}}}, false},
		{"lanes are rows", Columns, []VecOp{load(1), {Code: VAcc, Args: []V{0}}}, false},
	}
	for _, c := range cases {
		k := &Kernel{Layout: c.layout, Arrays: arrays}
		if got := k.OrderFree(&Loop{Ops: c.ops}); got != c.want {
			t.Errorf("%s: OrderFree %v, want %v", c.name, got, c.want)
		}
	}
}
