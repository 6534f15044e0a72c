// Package audit checks the generated packages as their users would call
// them: rows next to guarded or adversarial neighbours, calls in place,
// Parallel against serial, and the accuracy contract against a float64
// oracle of its own, on whichever implementation the build dispatches to
// (run with -tags purego for the pure-Go forms).
package audit

import (
	"math"
	"math/rand"
	"strings"
)

// contract is the accuracy contract in units of 2^-24 (README, docs/accuracy.md).
const contract = 64

// pureGo reports whether the kernels run the pure-Go forms, whose rows
// are computed one at a time (the assembly may pair neighbours, README).
func pureGo(impl string) bool { return strings.Contains(impl, "pure Go") }

// layerNorm64 is the float64 oracle of one LayerNorm row (eps as the
// kernel rounds it to float32) and its scale sigma, and max|s|.
func layerNorm64(s, gamma, beta []float32, eps float32) (y []float64, sigma, maxAbs float64) {
	var mean float64
	for _, v := range s {
		mean += float64(v)
		maxAbs = math.Max(maxAbs, math.Abs(float64(v)))
	}
	mean /= float64(len(s))
	var m2 float64
	for _, v := range s {
		d := float64(v) - mean
		m2 += d * d
	}
	sigma = math.Sqrt(m2/float64(len(s)) + float64(eps))
	y = make([]float64, len(s))
	for i, v := range s {
		y[i] = (float64(v)-mean)/sigma*float64(gamma[i]) + float64(beta[i])
	}
	return y, sigma, maxAbs
}

// units is the largest error of got against the oracle y64 in units of
// the contract's scale 2^-24*(|y64| + |g|*(1 + max|s|/sigma)); +Inf where
// got is not finite and y64 is (or the other way round).
func units(got []float32, y64 []float64, gamma []float32, sigma, maxAbs float64) float64 {
	worst := 0.0
	for i, g := range got {
		y := y64[i]
		if math.IsNaN(y) || math.IsInf(y, 0) || math.Abs(y) > math.MaxFloat32 {
			continue
		}
		scale := 0x1p-24 * (math.Abs(y) + math.Abs(float64(gamma[i]))*(1+maxAbs/sigma))
		e := math.Abs(float64(g)-y) / scale
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// rowKinds are rows that take each path of the pure-Go LayerNorm family:
// near 0 or far from it (blocks summed around 0, or shifted; every row
// waits for a second), a guard (the float64 form), and values that
// stress the one-pass statistics.
var rowKinds = []struct {
	name string
	fill func(rng *rand.Rand, row []float32)
}{
	{"normal", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
	}},
	{"offset2", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(2 + rng.NormFloat64())
		}
	}},
	{"offset1e4", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e4 + rng.NormFloat64())
		}
	}},
	{"nan", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		row[len(row)/2] = float32(math.NaN())
	}},
	{"inf", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		row[len(row)-1] = float32(math.Inf(-1))
	}},
	{"inf-mid", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(0.5 + rng.NormFloat64())
		}
		row[len(row)/2] = float32(math.Inf(1))
	}},
	{"huge", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(3e38 * rng.Float64())
			if i%2 == 1 {
				row[i] = -row[i]
			}
		}
	}},
	{"constant", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = 3.25
		}
	}},
	{"tiny", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e-30 * rng.NormFloat64())
		}
	}},
}

// params are a gamma and beta of h values, away from 1 and 0.
func params(rng *rand.Rand, h int) (gamma, beta []float32) {
	gamma, beta = make([]float32, h), make([]float32, h)
	for i := range h {
		gamma[i] = float32(0.5 + rng.Float64())
		beta[i] = float32(rng.NormFloat64())
	}
	return gamma, beta
}

// sameBits reports the first index where a and b differ in their bits
// (NaNs of any payload equal), or -1.
func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}
