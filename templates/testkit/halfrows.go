package testkit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The helpers of the half-precision kernels over rows live in normgen's
// templates/testkit/halfrows.go; the generator appends them to
// <stem>_half_test.go in packages with bf16 or f16 kernels over rows.

// TestHalfThroughKernels checks the conversions inside every
// implementation of each half kernel with a residual sum (alpha 1), bit
// for bit: sum = x + f is exact in float32 for the inputs below, so the
// stored sum is the format's rounding of it, widened loads and rounding
// stores included. With f = 0, every finite bit pattern of the format
// goes through a load and a store unchanged; with f a quarter, half and
// three quarters of x's ulp, every positive value meets a store that
// rounds down, ties (to even) and rounds up. NaN and Inf rows go through
// the float64 path (the guard), which TestNonFinite covers.
func TestHalfThroughKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, k := range kernels {
		f, ok := halfFormats[k.storage]
		if !ok || k.index("sum") < 0 || k.alpha != 1 {
			continue
		}
		var xs, fs []float64
		ties := map[int]bool{} // entries whose sum lies halfway between two values
		for b := 0; b < 1<<16; b++ {
			if v := f.decode(uint16(b)); !math.IsNaN(v) && !math.IsInf(v, 0) {
				xs, fs = append(xs, v), append(fs, 0)
			}
		}
		for b := 1; b < 1<<15; b++ {
			v, next := f.decode(uint16(b)), f.decode(uint16(b+1))
			if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(next) {
				continue
			}
			ulp := next - v
			for _, q := range []float64{ulp / 4, ulp / 2, 3 * ulp / 4} {
				if f.decode(f.encode(q)) == q { // f holds it, and x + f is exact in float32
					ties[len(xs)] = q == ulp/2
					xs, fs = append(xs, v), append(fs, q)
				}
			}
		}
		h := k.sizes[0]
		rows := (len(xs) + h - 1) / h
		in := k.newArgs(rows, h, nil)
		k.fill(in, families[0], rows, h, rng)
		x, fa := k.get(in, "x"), k.get(in, "f")
		for j := range x {
			x[j], fa[j] = 0, 0
			if j < len(xs) {
				x[j], fa[j] = float32(xs[j]), float32(fs[j])
			}
		}
		for _, im := range k.impls(h, false) {
			got := in.clone()
			im.run(got.a, rows)
			sum := k.get(got, "sum")
			tiesAway := 0
			for j := range xs {
				want := float32(f.decode(f.encode(xs[j] + fs[j])))
				if math.Float32bits(sum[j]) == math.Float32bits(want) {
					continue
				}
				if emulatedF16TiesAway && k.storage == "f16" && im.name != "purego" && ties[j] && sum[j] == float32(xs[j]+2*fs[j]) {
					tiesAway++
					continue
				}
				t.Fatalf("%s%d %s: sum of %v and %v = %v, want %v", k.name, h, im.name, xs[j], fs[j], sum[j], want)
			}
			if tiesAway > 0 {
				t.Logf("%s%d %s: %d float16 ties rounded away from zero: the emulator's VCVTPS2PH", k.name, h, im.name, tiesAway)
			}
		}
		t.Logf("%s: %d sums through %d implementations", k.name, len(xs), len(k.impls(h, false)))
	}
}
