package audit

import (
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/layernorm"
)

// adversarial are rows aimed at the pure-Go one-pass statistics: blocks
// summed around 0 while the row's budget lasts (a mean that grows along
// the row, blocks far from the running mean), the dropped correction
// (means of a few sigma and more), and long rows far from 0. Each is filled for a
// row of h values.
var adversarial = []struct {
	name string
	fill func(rng *rand.Rand, row []float32)
}{
	{"half0-half1e4", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
			if i >= len(row)/2 {
				row[i] += 1e4
			}
		}
	}},
	{"half0-half3", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
			if i >= len(row)/2 {
				row[i] += 3
			}
		}
	}},
	{"ramp-by-block", func(rng *rand.Rand, row []float32) {
		// Block b's mean grows as b: the running mean trails every block.
		for i := range row {
			row[i] = float32(float64(i/64)*0.05 + rng.NormFloat64())
		}
	}},
	{"blocks+-1e3", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
			if i/64%2 == 0 {
				row[i] += 1e3
			} else {
				row[i] -= 1e3
			}
		}
	}},
	{"alternate+-1e4", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(0.01 * rng.NormFloat64())
			if i%2 == 0 {
				row[i] += 1e4
			} else {
				row[i] -= 1e4
			}
		}
	}},
	{"mean2sigma", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(2 + rng.NormFloat64())
		}
	}},
	{"mean3sigma", func(rng *rand.Rand, row []float32) {
		// Near the largest |mean|/std whose blocks may be summed around 0.
		for i := range row {
			row[i] = float32(3.05 + rng.NormFloat64())
		}
	}},
	{"mean4sigma", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(4.01 + rng.NormFloat64())
		}
	}},
	{"offset1e3", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e3 + rng.NormFloat64())
		}
	}},
	{"offset1e4", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e4 + rng.NormFloat64())
		}
	}},
	{"offset1e6", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(1e6 + 64*rng.NormFloat64())
		}
	}},
	{"offset2^24", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(0x1p24 + 4*rng.NormFloat64())
		}
	}},
	{"outlier-late", func(rng *rand.Rand, row []float32) {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		row[len(row)-70] = 1e6
	}},
}

// TestLayerNormAdversarialAccuracy: the rows above, short and long (h =
// 128 to 8192, and 2^20 outside -short), within the contract on this implementation; the
// largest errors are logged.
func TestLayerNormAdversarialAccuracy(t *testing.T) {
	hs := []int{128, 768, 4096, 4097, 8192}
	if !testing.Short() {
		hs = append(hs, 1<<20)
	}
	impl := layernorm.Implementation()
	for _, h := range hs {
		rng := rand.New(rand.NewSource(int64(h) + 7))
		gamma, beta := params(rng, h)
		for _, a := range adversarial {
			// Two rows: the second may be paired with the first.
			x := make([]float32, 2*h)
			a.fill(rng, x[:h])
			a.fill(rng, x[h:])
			y := make([]float32, 2*h)
			layernorm.LayerNormAny(y, x, gamma, beta, h)
			worst := 0.0
			for r := range 2 {
				y64, sigma, maxAbs := layerNorm64(x[r*h:(r+1)*h], gamma, beta, 1e-5)
				worst = math.Max(worst, units(y[r*h:(r+1)*h], y64, gamma, sigma, maxAbs))
			}
			t.Logf("%s h=%d %s: max error %.2f units", impl, h, a.name, worst)
			if worst > contract {
				t.Errorf("%s h=%d %s: error %.1f units, contract %d", impl, h, a.name, worst, contract)
			}
		}
	}
}
