package algo

import (
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// TestScaleGuarded: a per-row gain folded into rstd (BatchNorm's scale,
// WeightNorm's) is guarded, since rstd*gain can leave float32's range
// where the outputs do not (a huge gain over a narrow channel: Inf, or
// NaN for a constant one); and the running statistics are stored after
// every guard, since a rejected row's float64 path updates them again.
func TestScaleGuarded(t *testing.T) {
	bn := spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true,
		Running: &spec.Running{Convention: "pytorch", Momentum: 0.1}}
	rows, err := Build(bn)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := BatchColumns(bn)
	if err != nil {
		t.Fatal(err)
	}
	wn, err := Build(spec.Kernel{Name: "WN", Statistic: "l2", Scale: true, AffinePerRow: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*ir.Kernel{rows, cols, wn} {
		scaleGuarded, lastGuard, firstStore := false, -1, -1
		for i, st := range k.Body {
			s, ok := st.(*ir.Scalar)
			if !ok {
				continue
			}
			switch {
			case s.Code == ir.SGuard:
				lastGuard = i
				scaleGuarded = scaleGuarded || k.ScalarName(s.Args[0]) == "scale"
			case s.Code == ir.SStore && k.Arrays[s.Array].Role == ir.RowScalarInOut && firstStore < 0:
				firstStore = i
			}
		}
		if !scaleGuarded {
			t.Errorf("%s: rstd*gain not guarded", k.Name)
		}
		if firstStore >= 0 && firstStore < lastGuard {
			t.Errorf("%s: a running statistic stored at statement %d, before the guard at %d", k.Name, firstStore, lastGuard)
		}
	}
}
