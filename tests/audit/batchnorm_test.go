package audit

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/convnorm"
)

// bnColumn is the float64 oracle of one BatchNorm channel of n values
// (PyTorch's running statistics, momentum 0.1).
type bnColumn struct {
	y                      []float64
	mean, v, sigma, maxAbs float64
	runMean, runVar        float64
}

func batchNorm64(col []float32, gain, bias, rm, rv float32) bnColumn {
	n := float64(len(col))
	var c bnColumn
	for _, v := range col {
		c.mean += float64(v)
		c.maxAbs = math.Max(c.maxAbs, math.Abs(float64(v)))
	}
	c.mean /= n
	for _, v := range col {
		d := float64(v) - c.mean
		c.v += d * d
	}
	c.v /= n
	c.sigma = math.Sqrt(c.v + float64(float32(1e-5)))
	c.y = make([]float64, len(col))
	for i, v := range col {
		c.y[i] = (float64(v)-c.mean)/c.sigma*float64(gain) + float64(bias)
	}
	c.runMean = 0.9*float64(rm) + 0.1*c.mean
	c.runVar = 0.9*float64(rv) + 0.1*c.v*n/(n-1)
	return c
}

// bnColumnKinds fill column c of an [n, channels] tensor.
var bnColumnKinds = []struct {
	name string
	fill func(rng *rand.Rand, x []float32, n, channels, c int)
}{
	{"normal", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(0.5 + rng.NormFloat64())
		}
	}},
	{"offset1e3", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(1e3 + rng.NormFloat64())
		}
	}},
	{"constant", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = -7.5
		}
	}},
	{"outlier-first", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(rng.NormFloat64())
		}
		x[c] = 1e30
	}},
	{"tiny", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(1e-30 * rng.NormFloat64())
		}
	}},
	{"mean2^10sigma", func(rng *rand.Rand, x []float32, n, channels, c int) {
		// 1023 and 1025 alternate: |mean|/sigma = 2^10 exactly for even n,
		// the one-pass statistics' bound.
		for i := range n {
			x[i*channels+c] = float32(1023 + 2*(i%2))
		}
	}},
	{"mean1e4sigma", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(1e4 + rng.NormFloat64())
		}
	}},
	{"near-max", func(rng *rand.Rand, x []float32, n, channels, c int) {
		// Finite values whose squares and variance leave float32's range.
		for i := range n {
			x[i*channels+c] = float32(3e38 * (rng.Float64()*2 - 1))
		}
	}},
	{"subnormal", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = float32(0x1p-140 * rng.NormFloat64())
		}
	}},
	{"zeros-outlier-last", func(rng *rand.Rand, x []float32, n, channels, c int) {
		for i := range n {
			x[i*channels+c] = 0
		}
		x[(n-1)*channels+c] = -1e30
	}},
}

// TestBatchNormColumns: BatchNorm over [N, C] (spatial 1) at N and C
// around the 64-line chunks and the 1024-column tiles, with columns of
// each kind side by side and gains whose per-column coefficient leaves
// float32's range: in place gives the bits of the call out of place,
// Parallel the serial call's (running statistics included), every output
// and running statistic is within the contract of the oracle, a constant
// column gives bias exactly, and the running statistics are updated once.
func TestBatchNormColumns(t *testing.T) {
	type shape struct{ n, c int }
	var shapes []shape
	for _, n := range []int{2, 3, 63, 64, 65, 70} {
		for _, c := range []int{1, 2, 7, 16, 33} {
			shapes = append(shapes, shape{n, c})
		}
	}
	// Every N the one-pass statistics take and a few beyond, all kinds.
	for n := 4; n <= 69; n++ {
		if n != 63 && n != 64 && n != 65 {
			shapes = append(shapes, shape{n, len(bnColumnKinds)})
		}
	}
	shapes = append(shapes, shape{5, 1025}, shape{66, 1025})
	if !testing.Short() {
		shapes = append(shapes, shape{2, 4097}, shape{67, 4097})
	}
	impl := convnorm.Implementation()
	for _, s := range shapes {
		rng := rand.New(rand.NewSource(int64(s.n*100000 + s.c)))
		x := make([]float32, s.n*s.c)
		gain, bias := make([]float32, s.c), make([]float32, s.c)
		rm, rv := make([]float32, s.c), make([]float32, s.c)
		for c := range s.c {
			bnColumnKinds[c%len(bnColumnKinds)].fill(rng, x, s.n, s.c, c)
			gain[c], bias[c] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
			rm[c], rv[c] = float32(rng.NormFloat64()), float32(1+rng.Float64())
			if c%3 == 2 {
				gain[c] = 1e38 // rstd*gain out of float32's range for most kinds
			}
		}
		run := func(parallel, inPlace bool) []float32 {
			dst := make([]float32, len(x))
			xs := append([]float32(nil), x...)
			if inPlace {
				dst = xs
			}
			mean, rstd := make([]float32, s.c), make([]float32, s.c)
			m, v := append([]float32(nil), rm...), append([]float32(nil), rv...)
			if parallel {
				convnorm.BatchNormTrainParallel(dst, mean, rstd, xs, gain, bias, m, v, s.c, 1)
			} else {
				convnorm.BatchNormTrain(dst, mean, rstd, xs, gain, bias, m, v, s.c, 1)
			}
			return append(append(append(append(dst, mean...), rstd...), m...), v...)
		}
		ref := run(false, false)
		what := fmt.Sprintf("%s BatchNormTrain N=%d C=%d", impl, s.n, s.c)
		for _, v := range []struct {
			name              string
			parallel, inPlace bool
		}{{"in place", false, true}, {"Parallel", true, false}, {"Parallel in place", true, true}} {
			if i := sameBits(run(v.parallel, v.inPlace), ref); i >= 0 {
				t.Errorf("%s: %s differs from the serial call at %d", what, v.name, i)
			}
		}
		nc := s.n * s.c
		worst := 0.0
		for c := range s.c {
			col := make([]float32, s.n)
			y := make([]float32, s.n)
			for i := range s.n {
				col[i], y[i] = x[i*s.c+c], ref[i*s.c+c]
			}
			o := batchNorm64(col, gain[c], bias[c], rm[c], rv[c])
			g := make([]float32, s.n)
			for i := range g {
				g[i] = gain[c]
			}
			u := units(y, o.y, g, o.sigma, o.maxAbs)
			if u > contract {
				t.Errorf("%s column %d (%s, gain %g): error %.1f units, contract %d", what, c, bnColumnKinds[c%len(bnColumnKinds)].name, gain[c], u, contract)
			}
			worst = math.Max(worst, u)
			if bnColumnKinds[c%len(bnColumnKinds)].name == "constant" {
				for i, v := range y {
					if v != bias[c] {
						t.Errorf("%s column %d: constant, y[%d] = %v, want bias %v", what, c, i, v, bias[c])
						break
					}
				}
			}
			// The running statistics: one update, within a few float32
			// roundings of the oracle's (their own scale).
			gotM, gotV := float64(ref[nc+2*s.c+c]), float64(ref[nc+3*s.c+c])
			// NaN fails; Inf only where the oracle's variance leaves float32.
			if d := math.Abs(gotM - o.runMean); !(d <= 64*0x1p-24*(math.Abs(0.9*float64(rm[c]))+math.Abs(0.1*o.mean)+0.1*o.maxAbs)) {
				t.Errorf("%s column %d: runMean %v, want %v", what, c, gotM, o.runMean)
			}
			if d := math.Abs(gotV - o.runVar); !(d <= 64*0x1p-24*(o.runVar+0.1*o.maxAbs*o.maxAbs)) && !(math.IsInf(gotV, 1) && o.runVar > math.MaxFloat32) {
				t.Errorf("%s column %d: runVar %v, want %v", what, c, gotV, o.runVar)
			}
		}
		if worst > 8 {
			t.Logf("%s: max error %.2f units", what, worst)
		}
	}
}

// TestBatchNormBackwardColumnsInPlace: the backward over [N, C] in place
// (dx the very same slice as dy) and Parallel give the serial call's bits,
// at N around the two lines a step of its output loop.
func TestBatchNormBackwardColumnsInPlace(t *testing.T) {
	for _, n := range []int{2, 3, 5, 64, 65, 67} {
		for _, c := range []int{1, 3, 17, 1025} {
			rng := rand.New(rand.NewSource(int64(n*10000 + c)))
			dy, x := make([]float32, n*c), make([]float32, n*c)
			for i := range dy {
				dy[i], x[i] = float32(rng.NormFloat64()), float32(2+rng.NormFloat64())
			}
			mean, rstd, gain := make([]float32, c), make([]float32, c), make([]float32, c)
			for j := range c {
				mean[j], rstd[j], gain[j] = 2, float32(0.5+rng.Float64()), float32(0.5+rng.Float64())
			}
			run := func(parallel, inPlace bool) []float32 {
				d := append([]float32(nil), dy...)
				dx := make([]float32, len(d))
				if inPlace {
					dx = d
				}
				dgain, dbias := make([]float32, c), make([]float32, c)
				if parallel {
					convnorm.BatchNormTrainBackwardParallel(dx, dgain, dbias, d, x, mean, rstd, gain, c, 1)
				} else {
					convnorm.BatchNormTrainBackward(dx, dgain, dbias, d, x, mean, rstd, gain, c, 1)
				}
				return append(append(dx, dgain...), dbias...)
			}
			ref := run(false, false)
			for _, v := range [][2]bool{{false, true}, {true, false}, {true, true}} {
				if i := sameBits(run(v[0], v[1]), ref); i >= 0 {
					t.Errorf("BatchNormTrainBackward N=%d C=%d parallel %v in place %v: differs from the serial call at %d", n, c, v[0], v[1], i)
				}
			}
		}
	}
}

// TestConvNeXtInPlace: the channels-first LayerNorm (the Columns form over
// spatial positions, its pivot read from x) in place gives the bits of
// the call out of place, across the 1024-position tiles, within the
// contract of the oracle.
func TestConvNeXtInPlace(t *testing.T) {
	impl := convnorm.Implementation()
	for _, ch := range []int{1, 2, 63, 64, 65, 96} {
		for _, sp := range []int{1, 7, 1025} {
			const n = 2
			rng := rand.New(rand.NewSource(int64(ch*10000 + sp)))
			x := make([]float32, n*ch*sp)
			for i := range x {
				x[i] = float32(3 + rng.NormFloat64())
				if i%5 == 0 {
					x[i] += 1e4 // an outlier now and then, some of them pivots
				}
			}
			gamma, beta := params(rng, ch)
			dst := make([]float32, len(x))
			convnorm.ConvNeXtLayerNormAny(dst, x, gamma, beta, ch, sp)
			in := append([]float32(nil), x...)
			convnorm.ConvNeXtLayerNormAny(in, in, gamma, beta, ch, sp)
			if i := sameBits(in, dst); i >= 0 {
				t.Errorf("%s ConvNeXtLayerNormAny C=%d spatial=%d: in place differs at %d: %v, want %v", impl, ch, sp, i, in[i], dst[i])
			}
			s, y := make([]float32, ch), make([]float32, ch)
			for img := range n {
				for p := range sp {
					for c := range ch {
						s[c], y[c] = x[(img*ch+c)*sp+p], dst[(img*ch+c)*sp+p]
					}
					y64, sigma, maxAbs := layerNorm64(s, gamma, beta, 1e-6)
					if u := units(y, y64, gamma, sigma, maxAbs); u > contract {
						t.Errorf("%s ConvNeXtLayerNormAny C=%d spatial=%d image %d position %d: error %.1f units", impl, ch, sp, img, p, u)
					}
				}
			}
		}
	}
}

// TestBatchNormONNXColumns: BatchNorm with ONNX's running statistics
// (biased variance) over [N, C], one column of each kind, at N in and
// beyond the one-pass statistics: Parallel and in place give the serial
// bits, the output and the running statistics meet the contract.
func TestBatchNormONNXColumns(t *testing.T) {
	ch := len(bnColumnKinds)
	for _, n := range []int{2, 3, 5, 33, 64, 65, 130} {
		rng := rand.New(rand.NewSource(int64(n) + 99))
		x := make([]float32, n*ch)
		gain, bias := make([]float32, ch), make([]float32, ch)
		rm, rv := make([]float32, ch), make([]float32, ch)
		for c := range ch {
			bnColumnKinds[c].fill(rng, x, n, ch, c)
			gain[c], bias[c] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
			rm[c], rv[c] = float32(rng.NormFloat64()), float32(1+rng.Float64())
		}
		run := func(parallel, inPlace bool) []float32 {
			dst, xs := make([]float32, len(x)), append([]float32(nil), x...)
			if inPlace {
				dst = xs
			}
			m, v := append([]float32(nil), rm...), append([]float32(nil), rv...)
			if parallel {
				convnorm.BatchNormTrainONNXParallel(dst, xs, gain, bias, m, v, ch, 1)
			} else {
				convnorm.BatchNormTrainONNX(dst, xs, gain, bias, m, v, ch, 1)
			}
			return append(append(dst, m...), v...)
		}
		ref := run(false, false)
		what := fmt.Sprintf("%s BatchNormTrainONNX N=%d", convnorm.Implementation(), n)
		for _, v := range [][2]bool{{true, false}, {false, true}, {true, true}} {
			if i := sameBits(run(v[0], v[1]), ref); i >= 0 {
				t.Errorf("%s: Parallel %v in place %v differs from the serial call at %d", what, v[0], v[1], i)
			}
		}
		for c := range ch {
			col, y, g := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range n {
				col[i], y[i], g[i] = x[i*ch+c], ref[i*ch+c], gain[c]
			}
			o := batchNorm64(col, gain[c], bias[c], rm[c], rv[c])
			if u := units(y, o.y, g, o.sigma, o.maxAbs); u > contract {
				t.Errorf("%s column %d (%s): error %.1f units", what, c, bnColumnKinds[c].name, u)
			}
			runVar := 0.9*float64(rv[c]) + 0.1*o.v
			gotM, gotV := float64(ref[n*ch+c]), float64(ref[n*ch+ch+c])
			if d := math.Abs(gotM - o.runMean); !(d <= 64*0x1p-24*(math.Abs(0.9*float64(rm[c]))+math.Abs(0.1*o.mean)+0.1*o.maxAbs)) {
				t.Errorf("%s column %d (%s): runMean %v, want %v", what, c, bnColumnKinds[c].name, gotM, o.runMean)
			}
			if d := math.Abs(gotV - runVar); !(d <= 64*0x1p-24*(runVar+0.1*o.maxAbs*o.maxAbs)) && !(math.IsInf(gotV, 1) && runVar > math.MaxFloat32) {
				t.Errorf("%s column %d (%s): runVar %v, want %v", what, c, bnColumnKinds[c].name, gotV, runVar)
			}
		}
	}
}
