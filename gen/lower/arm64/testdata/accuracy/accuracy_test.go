//go:build !purego

// This file is copied into the scratch package that accuracy_test.go builds
// for GOARCH=arm64 and runs under qemu. It runs each kernel (table_test.go)
// on one long row whose sums a long sequential float32 chain gets wrong,
// and reports the worst error against a float64 computation, in the
// accuracy contract's units: |y-y64| / (2^-24*(|y64| + |g|*(1+max|s|/sigma))),
// s the centered (or, for RMS, plain) inputs and sigma = sqrt(var64+eps);
// for a saved mean, |mean-mean64| / (2^-24*|mean64|).
package k

import (
	"math"
	"testing"
)

// limit is the most units a case may err; the contract allows 64. Chunks
// of 64 equal values still err systematically: the blocked mean of 0.1s
// is 15 units off, the sequential one 646 at 2^16.
const limit = 32

func TestAccuracy(t *testing.T) {
	for _, k := range kernels {
		for _, h := range []int{1 << 16, 1 << 20} {
			for _, first := range []float32{0, 0.1} {
				x := make([]float32, h)
				for i := range x {
					x[i] = 0.1
				}
				x[0] = first
				units, meanUnits := run(t, k, x)
				for _, c := range []struct {
					what  string
					units float64
				}{{"output", units}, {"saved mean", meanUnits}} {
					if c.units < 0 {
						continue // the kernel has none
					}
					t.Logf("%s h=%d x=[%g, 0.1, ...]: %s %.2f units", k.name, h, first, c.what, c.units)
					if c.units > limit {
						t.Errorf("%s h=%d x=[%g, 0.1, ...]: %s %.2f units, want at most %d", k.name, h, first, c.what, c.units, limit)
					}
				}
			}
		}
	}
}

// run calls k on the row x with gamma 1 and beta 0, and returns the worst
// error of its output in contract units and its saved mean's (-1 for what
// it has not).
func run(t *testing.T, k kernel, x []float32) (units, meanUnits float64) {
	h := len(x)
	y := make([]float32, h)
	ones, zeros := make([]float32, h), make([]float32, h)
	for i := range ones {
		ones[i] = 1
	}
	var savedMean, savedRstd float32
	p := make([]*float32, len(k.arrays))
	has := map[string]bool{}
	for i, name := range k.arrays {
		has[name] = true
		switch name {
		case "dst":
			p[i] = &y[0]
		case "x":
			p[i] = &x[0]
		case "gamma":
			p[i] = &ones[0]
		case "beta":
			p[i] = &zeros[0]
		case "mean":
			p[i] = &savedMean
		case "rstd":
			p[i] = &savedRstd
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
	units, meanUnits = -1, -1
	if has["mean"] {
		meanUnits = math.Abs(float64(savedMean)-mean) / (0x1p-24 * math.Abs(mean))
	}
	if has["dst"] {
		sigma := math.Sqrt(v/float64(h) + k.eps)
		for i, e := range x {
			y64 := (float64(e) - mean) / sigma
			units = max(units, math.Abs(float64(y[i])-y64)/(0x1p-24*(math.Abs(y64)+1+maxS/sigma)))
		}
	}
	return units, meanUnits
}
