package algo

import (
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// The backward of a half kernel over rows takes the forward's storage for
// its row arrays (dy, x, dx, and with a residual f, sum, dsum, df) in both
// kernels and the entry point; parameters, saved statistics and
// parameter gradients stay float32. Over tensors the same holds for each
// of the axis's kernels: the Columns form of axis batch too, and axis
// channels' Sums (the per-image parameter gradients) stays float32.
func TestBackwardStorage(t *testing.T) {
	for _, k := range []spec.Kernel{
		{Name: "L", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Backward: true, Storage: "bf16"},
		{Name: "R", Epsilon: 1e-6, Scale: true, Backward: true, Storage: "f16", Residual: &spec.Residual{Alpha: 1, StoreSum: true}},
		{Name: "A", Epsilon: 1e-6, Scale: true, Backward: true, Storage: "f16", Residual: &spec.Residual{Alpha: 0.5}},
		{Name: "B", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Backward: true, Storage: "bf16"},
		{Name: "G", Axis: "groups", Groups: 2, Epsilon: 1e-5, Scale: true, Backward: true, Storage: "f16"},
		{Name: "C", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true, Backward: true, Storage: "bf16"},
	} {
		want, _ := ir.ParseElem(k.Storage)
		bw, err := NewBackward(k)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		half := map[string]bool{"dx": true, "df": true, "dy": true, "x": true, "f": true, "sum": true, "dsum": true}
		for _, a := range bw.Args {
			if (a.Elem == want) != half[a.Name] || (a.Elem != want && a.Elem != ir.F32) {
				t.Errorf("%s: entry point array %s has storage %v", k.Name, a.Name, a.Elem)
			}
		}
		for _, ik := range []*ir.Kernel{bw.Rows, bw.GoRows, bw.Params, bw.Columns, bw.Sums} {
			if ik == nil {
				continue
			}
			for _, a := range ik.Arrays {
				if (a.Elem == want) != half[a.Name] {
					t.Errorf("%s: %s array %s has storage %v", k.Name, ik.Name, a.Name, a.Elem)
				}
			}
		}
	}
}

// Only a backward over rows with a per-element gamma (no offset), in
// float32 and without a residual, fuses its column sums into the Rows
// kernel; the fused values are the Rows kernel's dy*xhat, a product of
// the loaded dy and x (less the row's mean) times the row's rstd, the
// operands Params multiplies, and (with beta) the loaded dy.
func TestBackwardFused(t *testing.T) {
	rms := spec.Kernel{Name: "R", Axis: "last", Epsilon: 1e-6, Scale: true, Backward: true}
	for _, c := range []struct {
		edit  func(*spec.Kernel)
		fused bool
	}{
		{func(*spec.Kernel) {}, true},
		{func(k *spec.Kernel) { k.Storage = "f32" }, true},
		{func(k *spec.Kernel) { k.Mean = true }, true},
		{func(k *spec.Kernel) { k.Shift = true }, true},
		{func(k *spec.Kernel) { k.Mean = true; k.Shift = true }, true},
		{func(k *spec.Kernel) { k.ScaleOffset = 1 }, false},
		{func(k *spec.Kernel) { k.Storage = "bf16" }, false},
		{func(k *spec.Kernel) { k.Residual = &spec.Residual{Alpha: 1} }, false},
		{func(k *spec.Kernel) { k.Axis = "groups"; k.Groups = 2 }, false},
	} {
		k := rms
		c.edit(&k)
		bw, err := NewBackward(k)
		if err != nil {
			t.Fatalf("%+v: %v", k, err)
		}
		if (bw.Fused != nil) != c.fused {
			t.Errorf("%+v: fused %v, want %v", k, bw.Fused != nil, c.fused)
			continue
		}
		if bw.Fused == nil {
			continue
		}
		rows := bw.GoRowsKernel()
		if (bw.GoRows != nil) != k.Mean {
			t.Errorf("%+v: a pure-Go Rows kernel of its own %v, want %v (with a mean)", k, bw.GoRows != nil, k.Mean)
		}
		// The entry points call either form with Rows' arguments.
		if len(rows.Arrays) != len(bw.Rows.Arrays) || rows.Name != bw.Rows.Name {
			t.Fatalf("%+v: pure-Go Rows kernel %s with %d arrays, Rows %s with %d", k, rows.Name, len(rows.Arrays), bw.Rows.Name, len(bw.Rows.Arrays))
		}
		for i, a := range rows.Arrays {
			if b := bw.Rows.Arrays[i]; a.Name != b.Name || a.Role != b.Role || a.Elem != b.Elem {
				t.Errorf("%+v: pure-Go Rows array %d is %+v, Rows' %+v", k, i, a, b)
			}
		}
		lp, ok := rows.Body[bw.Fused.Loop].(*ir.Loop)
		want := 1
		if k.Shift {
			want = 2
		}
		if !ok || len(bw.Fused.Cols) != want || bw.Fused.Cols[0].Out != "dgamma" || bw.Params.ArrayIndex("dgamma") < 0 {
			t.Fatalf("%+v: fused sums %+v are not a loop's dgamma (and dbeta)", k, bw.Fused)
		}
		if k.Shift {
			d := lp.Ops[bw.Fused.Cols[1].V]
			if bw.Fused.Cols[1].Out != "dbeta" || bw.Params.ArrayIndex("dbeta") < 0 || d.Code != ir.VLoad || rows.Arrays[d.Array].Name != "dy" {
				t.Errorf("%+v: second fused sum %+v is not dbeta of the loaded dy", k, bw.Fused.Cols[1])
			}
		}
		p := lp.Ops[bw.Fused.Cols[0].V]
		if p.Code != ir.VMul {
			t.Fatalf("%+v: fused value is %v, want a product", k, p.Code)
		}
		d, xh := lp.Ops[p.Args[0]], lp.Ops[p.Args[1]]
		c := xh
		if xh.Code == ir.VMul {
			c = lp.Ops[xh.Args[0]]
		}
		if k.Mean && c.Code == ir.VSub && lp.Ops[c.Args[1]].Code == ir.VSplat {
			c = lp.Ops[c.Args[0]] // x - mean
		}
		if d.Code != ir.VLoad || rows.Arrays[d.Array].Name != "dy" || xh.Code != ir.VMul ||
			c.Code != ir.VLoad || rows.Arrays[c.Array].Name != "x" ||
			lp.Ops[xh.Args[1]].Code != ir.VSplat {
			t.Errorf("%+v: fused value is not dy*((x - mean)*rstd)", k)
		}
	}
}
