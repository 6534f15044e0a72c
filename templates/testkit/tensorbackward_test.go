package testkit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// With half storage the tensor backward's dx contract widens by one
// rounding to the format, the parameter gradients' does not; quantize
// rounds dy and x only; a stored dx may be Inf only beyond the format's
// range, with the oracle's sign; families the format cannot hold are
// left out.
func TestTensorBackwardHalf(t *testing.T) {
	arrays := []string{"dx", "dgamma", "dbeta", "dy", "x", "mean", "rstd", "gamma"}
	outs := []bool{true, true, true, false, false, false, false, false}
	k := &tbKernel{name: "GroupNormBackward", axis: "groups", groups: 2, mean: true, eps: 1e-5, scale: true, shift: true,
		storage: "f16", arrays: arrays, outs: outs}
	f32 := &tbKernel{name: "GroupNormBackward", axis: "groups", groups: 2, mean: true, eps: 1e-5, scale: true, shift: true,
		storage: "f32", arrays: arrays, outs: outs}
	base := f32.bound("dx", 3, 5)
	if base != tbTolerance*tEpsilon32*5 {
		t.Errorf("float32 dx bound %g", base)
	}
	if got, want := k.bound("dx", 3, 5), base+0x1p-11*(3+base)+0x1p-25; got != want {
		t.Errorf("f16 dx bound %g, want %g", got, want)
	}
	if k.bound("dgamma", 3, 5) != base {
		t.Error("dgamma's bound widened")
	}
	inf := float32(math.Inf(1))
	if !k.overflows("dx", inf, 65500, 10) || k.overflows("dx", -inf, 65500, 10) || k.overflows("dx", inf, 60000, 10) ||
		k.overflows("dgamma", inf, 65500, 10) || f32.overflows("dx", inf, 65500, 10) {
		t.Error("overflows accepts the wrong infinities")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	c := k.newCall(tbShape{2, 4, 3, false}, rng)
	k.fill(c, tFamilies[0], rng)
	f := halfFormats["f16"]
	for i, name := range arrays {
		if outs[i] {
			continue
		}
		exact := 0
		for _, v := range c.a[i] {
			if float64(v) == f.decode(f.encode(float64(v))) {
				exact++
			}
		}
		if quantized := name == "dy" || name == "x"; quantized != (exact == len(c.a[i])) {
			t.Errorf("%s: %d of %d values are f16 values", name, exact, len(c.a[i]))
		}
	}
	for _, fam := range tFamilies {
		want := fam.name != "huge" && fam.name != "1e30"
		if k.holds(fam) != want || !f32.holds(fam) {
			t.Errorf("family %s: f16 holds it %v, want %v", fam.name, k.holds(fam), want)
		}
	}
}
