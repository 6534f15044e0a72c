//go:build !purego

// This file is copied into the scratch package that accuracy_test.go builds
// for GOARCH=arm64 and runs under qemu. It runs each kernel (table_test.go)
// on one long row whose sums a long sequential float32 chain gets wrong,
// and reports the worst error in the accuracy contract's units against a
// float64 computation: |y-y64| / (2^-24*(|y64| + |g|*(1+max|s|/sigma))),
// s the centered (or, for RMS, plain) inputs and sigma = sqrt(var64+eps).
package k

import (
	"math"
	"testing"
)

// limit is the most units a case may err; the contract allows 64.
const limit = 16

func TestAccuracy(t *testing.T) {
	for _, k := range kernels {
		for _, h := range []int{1 << 16, 1 << 20} {
			for _, first := range []float32{0, 0.1} {
				x := make([]float32, h)
				for i := range x {
					x[i] = 0.1
				}
				x[0] = first
				units := run(t, k, x)
				t.Logf("%s h=%d x=[%g, 0.1, ...]: %.2f units", k.name, h, first, units)
				if units > limit {
					t.Errorf("%s h=%d x=[%g, 0.1, ...]: %.2f units, want at most %d", k.name, h, first, units, limit)
				}
			}
		}
	}
}

// run calls k on the row x with gamma 1 and beta 0, and returns the worst
// error in contract units.
func run(t *testing.T, k kernel, x []float32) float64 {
	h := len(x)
	y := make([]float32, h)
	ones, zeros := make([]float32, h), make([]float32, h)
	for i := range ones {
		ones[i] = 1
	}
	p := make([]*float32, len(k.arrays))
	for i, name := range k.arrays {
		switch name {
		case "dst":
			p[i] = &y[0]
		case "x":
			p[i] = &x[0]
		case "gamma":
			p[i] = &ones[0]
		case "beta":
			p[i] = &zeros[0]
		default:
			t.Fatalf("%s: unexpected array %q", k.name, name)
		}
	}
	if n := k.fn(p, 1, h); n != 1 {
		t.Fatalf("%s: %d rows done, want 1", k.name, n)
	}
	var mean, v, maxS float64
	if k.mean {
		for _, e := range x {
			mean += float64(e)
		}
		mean /= float64(h)
	}
	for _, e := range x {
		d := float64(e) - mean
		v += d * d
		maxS = max(maxS, math.Abs(d))
	}
	sigma := math.Sqrt(v/float64(h) + k.eps)
	worst := 0.0
	for i, e := range x {
		y64 := (float64(e) - mean) / sigma
		u := math.Abs(float64(y[i])-y64) / (0x1p-24 * (math.Abs(y64) + 1 + maxS/sigma))
		worst = max(worst, u)
	}
	return worst
}
