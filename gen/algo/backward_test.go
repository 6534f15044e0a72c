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
		for _, ik := range []*ir.Kernel{bw.Rows, bw.Params, bw.Columns, bw.Sums} {
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
