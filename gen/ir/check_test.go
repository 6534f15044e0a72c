package ir

import (
	"strings"
	"testing"
)

// kernel is a small valid kernel with every role, for the table to break:
// arrays dst (0), x (1), gamma (2), g (3, per-row in), rstd (4, per-row
// out), run (5, per-row in and out); s0 = const, s1 = sum(acc 0), s2 =
// load g, s3 = s1*s2, then a loop that stores and a row store.
func kernel() *Kernel {
	return &Kernel{
		Name: "K",
		Arrays: []Array{
			{Name: "dst", Role: RowOut}, {Name: "x", Role: RowIn}, {Name: "gamma", Role: Param},
			{Name: "g", Role: RowScalarIn}, {Name: "rstd", Role: RowScalarOut}, {Name: "run", Role: RowScalarInOut},
		},
		NumScalars: 5,
		NumAccs:    1,
		Body: []Stmt{
			&Scalar{Code: SConst, Dst: 0, Const: 1},
			&Loop{Ops: []VecOp{{Code: VLoad, Array: 1}, {Code: VAccMul, Acc: 0, Args: []V{0, 0}}}},
			&Scalar{Code: SSum, Dst: 1, Acc: 0},
			&Scalar{Code: SLoad, Dst: 2, Array: 3},
			&Scalar{Code: SMul, Dst: 3, Args: []S{1, 2}},
			&Scalar{Code: SGuard, Dst: -1, Args: []S{3}, Lo: 0, Hi: 1e30},
			&Loop{Ops: []VecOp{
				{Code: VLoad, Array: 1}, {Code: VLoad, Array: 2}, {Code: VSplat, Scalar: 3},
				{Code: VFMA, Args: []V{0, 2, 1}}, {Code: VStore, Array: 0, Args: []V{3}},
			}},
			&Scalar{Code: SStore, Dst: -1, Args: []S{3}, Array: 4},
			&Scalar{Code: SLoad, Dst: 4, Array: 5},
			&Scalar{Code: SStore, Dst: -1, Args: []S{4}, Array: 5},
		},
	}
}

func TestCheck(t *testing.T) {
	loop := func(k *Kernel, i int) *Loop { return k.Body[i].(*Loop) }
	scalar := func(k *Kernel, i int) *Scalar { return k.Body[i].(*Scalar) }
	for _, c := range []struct {
		name   string
		change func(k *Kernel)
		want   string // "" for a valid kernel
	}{
		{"valid", func(*Kernel) {}, ""},
		{"valid: load from a row output after its store", func(k *Kernel) {
			l := loop(k, 6)
			l.Ops = append(l.Ops, VecOp{Code: VLoad, Array: 0})
		}, ""},
		{"empty loop", func(k *Kernel) { loop(k, 1).Ops = nil }, "statement 1: empty loop"},
		{"operand after its use", func(k *Kernel) { loop(k, 6).Ops[3].Args[0] = 3 }, "statement 6 op 3 (fma): operand v3 undefined"},
		{"negative operand", func(k *Kernel) { loop(k, 6).Ops[3].Args[1] = -1 }, "operand v-1 undefined"},
		{"operand that makes no value", func(k *Kernel) {
			l := loop(k, 1)
			l.Ops = append(l.Ops, VecOp{Code: VAdd, Args: []V{0, 1}})
		}, "statement 1 op 2 (add): operand v1 undefined"},
		{"operand count", func(k *Kernel) { loop(k, 6).Ops[3].Args = []V{0, 1} }, "statement 6 op 3 (fma): 2 operands, want 3"},
		{"load from a per-row array", func(k *Kernel) { loop(k, 1).Ops[0].Array = 3 }, "statement 1 op 0: load from array 3"},
		{"load from no array", func(k *Kernel) { loop(k, 1).Ops[0].Array = 6 }, "load from array 6"},
		{"store to an input", func(k *Kernel) { loop(k, 6).Ops[4].Array = 1 }, "statement 6 op 4: store to array 1, which is not a row output"},
		{"store to a parameter", func(k *Kernel) { loop(k, 6).Ops[4].Array = 2 }, "store to array 2"},
		{"splat of a later scalar", func(k *Kernel) { loop(k, 6).Ops[2].Scalar = 4 }, "statement 6 op 2: splat of undefined scalar s4"},
		{"splat of no scalar", func(k *Kernel) { loop(k, 6).Ops[2].Scalar = 9 }, "splat of undefined scalar s9"},
		{"unknown accumulator", func(k *Kernel) { loop(k, 1).Ops[1].Acc = 1 }, "statement 1 op 1: unknown accumulator 1"},
		{"scalar operand undefined", func(k *Kernel) { scalar(k, 4).Args[1] = 4 }, "statement 4 (mul): operand s4 undefined"},
		{"scalar operand out of range", func(k *Kernel) { scalar(k, 4).Args[0] = -2 }, "operand s-2 undefined"},
		{"sum before the loop", func(k *Kernel) { k.Body[1], k.Body[2] = k.Body[2], k.Body[1] }, "statement 1: sum of accumulator 0 before any loop filled it"},
		{"sum of no accumulator", func(k *Kernel) { scalar(k, 2).Acc = 2 }, "sum of accumulator 2"},
		{"row load from a parameter", func(k *Kernel) { scalar(k, 3).Array = 2 }, "statement 3: row load from array 2"},
		{"row load from an output", func(k *Kernel) { scalar(k, 3).Array = 4 }, "row load from array 4"},
		{"row store to an input", func(k *Kernel) { scalar(k, 7).Array = 3 }, "statement 7: row store to array 3, which is not a per-row scalar output"},
		{"row store to a row", func(k *Kernel) { scalar(k, 7).Array = 0 }, "row store to array 0"},
		{"guard after a vector store", func(k *Kernel) {
			k.Body = append(k.Body[:8:8], &Scalar{Code: SGuard, Dst: -1, Args: []S{0}, Lo: 0, Hi: 1})
		}, "statement 8: guard after a store"},
		{"guard after a row store", func(k *Kernel) {
			k.Body = []Stmt{k.Body[0], &Scalar{Code: SStore, Dst: -1, Args: []S{0}, Array: 4}, &Scalar{Code: SGuard, Dst: -1, Args: []S{0}, Lo: 0, Hi: 1}}
		}, "statement 2: guard after a store"},
		{"guard with lo > hi", func(k *Kernel) { scalar(k, 5).Lo = 2e30 }, "statement 5: guard needs one operand and lo <= hi"},
		{"guard with no operand", func(k *Kernel) { scalar(k, 5).Args = nil }, "guard needs one operand"},
		{"scalar assigned twice", func(k *Kernel) { scalar(k, 4).Dst = 1 }, "statement 4 (mul): destination s1 invalid or assigned twice"},
		{"scalar out of range", func(k *Kernel) { scalar(k, 4).Dst = 5 }, "destination s5 invalid"},
		{"no destination", func(k *Kernel) { scalar(k, 0).Dst = -1 }, "statement 0 (const): destination s-1 invalid"},
		{"unknown statement", func(k *Kernel) { k.Body = append(k.Body, nil) }, "statement 10: unknown statement <nil>"},
	} {
		k := kernel()
		c.change(k)
		err := Check(k)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ir: kernel K: ")):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
