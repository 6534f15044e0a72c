package audit

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/deepnorm"
	"github.com/normgen/normgen/out/layernorm"
)

// edgeRows are rows at the edges of the dropped mean correction (its
// bound |c| <= 2^-24*|mean|): a subnormal mean over a spread of 1, a mean
// exactly between two float32s, and means 2^23 to about 10^9 standard
// deviations from 0 (a row at one float32 value but for one element or
// half of them one unit above), the odd element first (the pivot) or last.
var edgeRows = []struct {
	name string
	fill func(rng *rand.Rand, row []float32)
}{
	{"subnormal-mean", func(rng *rand.Rand, row []float32) {
		// Pairs a, -a cancel exactly; the last element leaves a mean of
		// about 2^-140.
		for i := 0; i+1 < len(row); i += 2 {
			a := float32(rng.NormFloat64())
			row[i], row[i+1] = a, -a
		}
		row[len(row)-1] = float32(0x1p-140 * float64(len(row)))
	}},
	{"all-subnormal", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(0x1p-135 * rng.NormFloat64())
		}
	}},
	{"tie-mean", func(rng *rand.Rand, row []float32) {
		// 1023 and 1025+2^-13 alternate: the mean of a pair is 1024+2^-14,
		// halfway between two float32s.
		for i := range row {
			row[i] = 1023
			if i%2 == 1 {
				row[i] = 1025 + 0x1p-13
			}
		}
		if len(row)%2 == 1 {
			row[len(row)-1] = 1024 // near the tie for odd h
		}
	}},
	{"half-ulp-2^24", func(rng *rand.Rand, row []float32) {
		// 2^24 and 2^24+2 in random order: |mean|/sigma about 2^24.
		for i := range row {
			row[i] = 0x1p24
			if rng.Intn(2) == 1 {
				row[i] = 0x1p24 + 2
			}
		}
	}},
	{"one-ulp-first", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = 1e9
		}
		row[0] = 1e9 + 64
	}},
	{"one-ulp-last", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = -3e9
		}
		row[len(row)-1] = -3e9 + 256
	}},
	{"offset1e6-spread1", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e6 + rng.NormFloat64())
		}
	}},
	{"offset1e30", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e30 * (1 + 1e-6*rng.NormFloat64()))
		}
	}},
}

// edgeEntries run a forward entry point of the LayerNorm family on rows
// s (its normalized input: the residual sum is formed from s and zeros,
// exactly) and return y and, for LayerNormStats, the saved statistics.
var edgeEntries = []struct {
	name string
	call func(s, gamma, beta []float32, h int) (y, mean, rstd []float32)
}{
	{"LayerNormAny", func(s, gamma, beta []float32, h int) ([]float32, []float32, []float32) {
		y := make([]float32, len(s))
		layernorm.LayerNormAny(y, s, gamma, beta, h)
		return y, nil, nil
	}},
	{"LayerNormStatsAny", func(s, gamma, beta []float32, h int) ([]float32, []float32, []float32) {
		y, mean, rstd := make([]float32, len(s)), make([]float32, len(s)/h), make([]float32, len(s)/h)
		layernorm.LayerNormStatsAny(y, mean, rstd, s, gamma, beta, h)
		return y, mean, rstd
	}},
	{"AddLayerNormAny", func(s, gamma, beta []float32, h int) ([]float32, []float32, []float32) {
		y, sum := make([]float32, len(s)), make([]float32, len(s))
		layernorm.AddLayerNormAny(y, sum, s, make([]float32, len(s)), gamma, beta, h)
		return y, nil, nil
	}},
	{"DeepNormAny", func(s, gamma, beta []float32, h int) ([]float32, []float32, []float32) {
		// alpha*0 + f is f exactly.
		y := make([]float32, len(s))
		deepnorm.DeepNormAny(y, make([]float32, len(s)), s, gamma, beta, h)
		return y, nil, nil
	}},
}

// TestLayerNormFamilyEdgeMeans: the rows above, at lengths that take the
// first block's two passes alone, a lagged shift, and long rows, after a
// row near 0 (rows wait and pair), are within the contract of the oracle
// in every entry point; LayerNormStats saves a mean within the contract's
// scale 2^-24*(sigma + max|s|) and an rstd within its relative scale.
func TestLayerNormFamilyEdgeMeans(t *testing.T) {
	hs := []int{2, 3, 63, 64, 65, 200, 4097}
	if !testing.Short() {
		hs = append(hs, 1<<16)
	}
	impl := layernorm.Implementation()
	overall, where := 0.0, ""
	for _, h := range hs {
		rng := rand.New(rand.NewSource(int64(h) + 11))
		gamma, beta := params(rng, h)
		for _, k := range edgeRows {
			// Row 0 near 0, rows 1 and 2 of the kind (one paired with row 0).
			s := make([]float32, 3*h)
			rowKinds[0].fill(rng, s[:h])
			k.fill(rng, s[h:2*h])
			k.fill(rng, s[2*h:])
			for _, e := range edgeEntries {
				y, mean, rstd := e.call(s, gamma, beta, h)
				worst := 0.0
				for r := range 3 {
					row := s[r*h : (r+1)*h]
					y64, sigma, maxAbs := layerNorm64(row, gamma, beta, 1e-5)
					u := units(y[r*h:(r+1)*h], y64, gamma, sigma, maxAbs)
					worst = math.Max(worst, u)
					what := fmt.Sprintf("%s %s h=%d %s row %d", impl, e.name, h, k.name, r)
					if u > contract {
						t.Errorf("%s: error %.1f units, contract %d", what, u, contract)
					}
					if mean == nil {
						continue
					}
					var m64 float64
					for _, v := range row {
						m64 += float64(v)
					}
					m64 /= float64(h)
					// The output contract's scale: an error of the mean moves
					// xhat by |d|/sigma.
					tol := contract * 0x1p-24 * (sigma + maxAbs)
					if d := math.Abs(float64(mean[r]) - m64); !(d <= tol) {
						t.Errorf("%s: saved mean %v, float64 mean %v (off by %g, at most %g)", what, mean[r], m64, d, tol)
					}
					if d := math.Abs(float64(rstd[r])*sigma - 1); !(d <= contract*0x1p-24) {
						t.Errorf("%s: saved rstd %v, 1/sigma %v (relative %g)", what, rstd[r], 1/sigma, d)
					}
				}
				if worst > overall {
					overall, where = worst, fmt.Sprintf("%s h=%d %s", e.name, h, k.name)
				}
			}
		}
	}
	t.Logf("%s: max error %.2f units (%s)", impl, overall, where)
}
