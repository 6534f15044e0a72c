package testkit

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bwdConfigs are the variants the backward oracle serves.
var bwdConfigs = []*bwdKernel{
	{name: "LayerNorm", mean: true, eps: 1e-5, scale: true, shift: true, alpha: 1},
	{name: "RMSNorm", eps: 1e-6, scale: true, alpha: 1},
	{name: "Gemma", eps: 1e-6, scale: true, scaleOffset: 1, alpha: 1},
	{name: "NoAffine", mean: true, eps: 1e-5, alpha: 1},
	{name: "WeightNorm", l2: true, scale: true, affinePerRow: true, alpha: 1},
	{name: "PerRow", mean: true, eps: 1e-5, scale: true, shift: true, affinePerRow: true, alpha: 1},
	{name: "DeepNorm", mean: true, eps: 1e-5, scale: true, shift: true, residual: true, alpha: 2.0598673},
	{name: "AddRMSNorm", eps: 1e-6, scale: true, residual: true, storeSum: true, alpha: 1},
	{name: "AddAlphaStore", mean: true, eps: 1e-5, scale: true, shift: true, residual: true, storeSum: true, alpha: 0.5},
	{name: "ScaleShift", noStat: true, scale: true, shift: true, alpha: 1},
}

// withArrays gives k the arrays its backward entry points take, in the
// generator's order.
func withArrays(k *bwdKernel) *bwdKernel {
	k.arrays, k.extents, k.outs = nil, nil, nil
	add := func(name string, ext int, out bool) {
		k.arrays, k.extents, k.outs = append(k.arrays, name), append(k.extents, ext), append(k.outs, out)
	}
	perParam := extColumn
	if k.affinePerRow {
		perParam = extRow
	}
	add("dx", extElement, true)
	if k.residual {
		add("df", extElement, true)
	}
	if k.scale {
		add(map[bool]string{false: "dgamma", true: "dgain"}[k.affinePerRow], perParam, true)
	}
	if k.shift {
		add(map[bool]string{false: "dbeta", true: "dbias"}[k.affinePerRow], perParam, true)
	}
	add("dy", extElement, false)
	switch {
	case k.storeSum:
		add("dsum", extElement, false)
		add("sum", extElement, false)
	case k.residual:
		add("x", extElement, false)
		add("f", extElement, false)
	default:
		add("x", extElement, false)
	}
	if k.mean {
		add("mean", extRow, false)
	}
	if !k.noStat {
		add("rstd", extRow, false)
	}
	if k.scale {
		add(map[bool]string{false: "gamma", true: "gain"}[k.affinePerRow], perParam, false)
	}
	return k
}

// TestOracleFiniteDifferences checks the backward oracle of every variant
// against central finite differences of the float64 forward pass.
func TestOracleFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, k := range bwdConfigs {
		withArrays(k)
		for _, h := range []int{1, 2, 5, 16} {
			if h == 1 && (k.mean || k.l2) {
				continue // a row of one value has no spread: its gradient is 0/0-prone
			}
			if err := k.checkFiniteDifferences(3, h, rng); err != nil {
				t.Errorf("%s h=%d: %v", k.name, h, err)
			}
		}
	}
}

// TestFiniteDifferencesCatchWrongOracle makes sure the check can fail: a
// forward pass with another epsilon no longer matches the oracle.
func TestFiniteDifferencesCatchWrongOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, pair := range [][2]*bwdKernel{
		{bwdConfigs[1], bwdConfigs[4]}, // mean square against l2
		{bwdConfigs[1], bwdConfigs[2]}, // without and with the scale offset
		{bwdConfigs[6], bwdConfigs[0]}, // a residual's alpha ignored
	} {
		k, wrong := *withArrays(pair[0]), *withArrays(pair[1])
		wrong.arrays, wrong.extents, wrong.outs = k.arrays, k.extents, k.outs
		wrong.affinePerRow = k.affinePerRow
		if err := k.finiteDifferences(&k, 2, 4, rng); err != nil {
			t.Fatalf("%s: the right oracle fails: %v", k.name, err)
		}
		if err := k.finiteDifferences(&wrong, 2, 4, rng); err == nil {
			t.Fatalf("finite differences of %s did not reject the oracle of %s", k.name, wrong.name)
		}
	}
}

// TestBackwardVerify checks that the contract rejects a gradient off by a
// few units more than it allows and accepts the oracle's own values.
func TestBackwardVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	k := *withArrays(bwdConfigs[0])
	rows, h := 3, 8
	c := k.newArgs(rows, h, rng)
	k.fill(c, families[0], rows, h, rng)
	ref := k.oracle(k.inputs64(c, rows, h))
	for name, want := range ref.want {
		for j, v := range want {
			k.get(c, name)[j] = float32(v)
		}
	}
	if err := k.verify(c, ref); err != nil {
		t.Fatalf("the oracle's values, rounded, fail: %v", err)
	}
	dx := k.get(c, "dx")
	dx[5] = float32(ref.want["dx"][5] + 2*bwdTolerance*epsilon32*ref.mag["dx"][5])
	if err := k.verify(c, ref); err == nil || !strings.Contains(err.Error(), "dx[5]") {
		t.Fatalf("an error of twice the contract passed: %v", err)
	}
}

// With half storage the contract of dx widens by one rounding to the
// format and that of dgamma does not; quantize rounds the row inputs only.
func TestBackwardHalfBound(t *testing.T) {
	k := withArrays(&bwdKernel{name: "LayerNorm", mean: true, eps: 1e-5, scale: true, shift: true, alpha: 1, storage: "bf16"})
	f32 := withArrays(&bwdKernel{name: "LayerNorm", mean: true, eps: 1e-5, scale: true, shift: true, alpha: 1, storage: "f32"})
	base := f32.bound("dx", 3, 5)
	if got, want := k.bound("dx", 3, 5), base+0x1p-8*(3+base)+0x1p-134; got != want {
		t.Errorf("bf16 dx bound %g, want %g", got, want)
	}
	if k.bound("dgamma", 3, 5) != base || f32.bound("dx", 3, 5) != bwdTolerance*epsilon32*5 {
		t.Error("dgamma's or a float32 kernel's bound widened")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := k.newArgs(2, 3, rng)
	k.fill(c, families[0], 2, 3, rng)
	for i, name := range k.arrays {
		for _, v := range c.a[i] {
			bf := math.Float32frombits(math.Float32bits(v) &^ 0xffff)
			if (name == "dy" || name == "x") && v != bf {
				t.Fatalf("%s holds %v, not a bf16 value", name, v)
			}
		}
	}
	if g := k.get(c, "gamma"); g[0] == math.Float32frombits(math.Float32bits(g[0])&^0xffff) && g[1] == math.Float32frombits(math.Float32bits(g[1])&^0xffff) {
		t.Error("gamma quantized")
	}
}

// TestBackwardZeroTimesInf: with a residual sum (computed in float32 by
// the kernels, in float64 by the oracle), an infinite dy against an xhat
// that is zero within the sum's rounding may give NaN or an infinity, and
// only there: a row of one (s - mean = 0) is marked, an ordinary row is
// not, and a NaN where the oracle has an unmarked infinity still fails.
func TestBackwardZeroTimesInf(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	k := *withArrays(&bwdKernel{name: "AddAlpha", mean: true, eps: 1e-5, scale: true, shift: true, residual: true, alpha: 0.5})
	for _, h := range []int{1, 8} {
		rows := 3
		c := k.newArgs(rows, h, rng)
		k.fill(c, families[0], rows, h, rng)
		k.get(c, "dy")[h] = float32(math.Inf(1))
		k.setStats(c, rows, h)
		ref := k.oracle(k.inputs64(c, rows, h))
		marked := ref.nonFinite["dgamma"][0]
		if marked != (h == 1) {
			t.Fatalf("h=%d: dgamma[0] marked NaN-or-Inf: %v (oracle %v)", h, marked, ref.want["dgamma"][0])
		}
		if h == 1 && !ref.nanAgrees("dgamma", 0, float32(math.NaN())) {
			t.Fatalf("h=1: NaN rejected for 0*Inf (oracle %v)", ref.want["dgamma"][0])
		}
		if h == 8 && !math.IsNaN(ref.want["dgamma"][0]) && ref.nanAgrees("dgamma", 0, float32(math.NaN())) {
			t.Fatalf("h=8: NaN accepted where the oracle has %v", ref.want["dgamma"][0])
		}
	}
}
