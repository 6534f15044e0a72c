package peers

import (
	"fmt"
	"math"

	"github.com/normgen/normgen/benchkit"
)

// Channels-first BatchNorm shapes, x[N, C, L] (N images, C channels, L
// spatial positions, as PyTorch lays out [N, C, H, W]): benchkit's shapes
// have rows and a row length only, so such a shape is a BatchNorm shape of
// N rows of H = C*L values, named by its Kernel label and recognized by NCL.
// Its gamma and beta are H values long; the kernels read the first C.

type nclDims struct{ c, l int }

var nclShapes = map[string]nclDims{}

// BatchNormNCL returns the shape of training-mode batch normalization of
// x[n, c, l] at the given level, checked against a float64 reference.
func BatchNormNCL(n, c, l int, level benchkit.Level) benchkit.Shape {
	label := fmt.Sprintf("BatchNorm [N,C,L] C=%d L=%d", c, l)
	nclShapes[label] = nclDims{c, l}
	eps := benchkit.BatchNorm.Eps()
	return benchkit.Shape{
		Op: benchkit.BatchNorm, H: c * l, Rows: n, Level: level, Kernel: label,
		Ref: func(x, gamma, beta []float32, h int) []float64 {
			return referenceNCL(x, gamma, beta, c, l, float64(eps))
		},
	}
}

// NCL reports whether s is a BatchNormNCL shape, and its C and L.
func NCL(s benchkit.Shape) (c, l int, ok bool) {
	d, ok := nclShapes[s.Kernel]
	if !ok || s.Op != benchkit.BatchNorm || s.H != d.c*d.l {
		return 0, 0, false
	}
	return d.c, d.l, true
}

// batchStats64 is each channel's mean and biased variance of x[N, c, l],
// in float64, two passes.
func batchStats64(x []float32, c, l int) (mean, variance []float64) {
	n := len(x) / (c * l)
	mean, variance = make([]float64, c), make([]float64, c)
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for _, v := range x[(i*c+ch)*l : (i*c+ch+1)*l] {
				mean[ch] += float64(v)
			}
		}
	}
	for ch := range mean {
		mean[ch] /= float64(n * l)
	}
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for _, v := range x[(i*c+ch)*l : (i*c+ch+1)*l] {
				d := float64(v) - mean[ch]
				variance[ch] += d * d
			}
		}
	}
	for ch := range variance {
		variance[ch] /= float64(n * l)
	}
	return mean, variance
}

func referenceNCL(x, gamma, beta []float32, c, l int, eps float64) []float64 {
	mean, variance := batchStats64(x, c, l)
	out := make([]float64, len(x))
	for i := range x {
		ch := i / l % c
		out[i] = (float64(x[i])-mean[ch])/math.Sqrt(variance[ch]+eps)*float64(gamma[ch]) + float64(beta[ch])
	}
	return out
}

// CheckBatchStats compares the per-channel statistics a BatchNorm kernel
// saved (mean, and rstd = 1/sqrt(var+eps) or, when rstd is nil, the biased
// variance variance) for x[N, c, l] with the float64 reference, within
// benchkit.Tolerance: the harness checks dst only, and its per-row outputs
// (Shape.Stats) have one value per row, not per channel.
func CheckBatchStats(x []float32, c, l int, eps float32, mean, rstd, variance []float32) error {
	m64, v64 := batchStats64(x, c, l)
	check := func(name string, got []float32, want func(ch int) float64) error {
		for ch := 0; ch < c; ch++ {
			w := want(ch)
			if e := math.Abs(float64(got[ch])-w) / (1 + math.Abs(w)); !(e <= benchkit.Tolerance) {
				return fmt.Errorf("saved %s of channel %d: got %g, want %g (relative error %.3g > %g)", name, ch, got[ch], w, e, benchkit.Tolerance)
			}
		}
		return nil
	}
	if err := check("mean", mean, func(ch int) float64 { return m64[ch] }); err != nil {
		return err
	}
	if rstd != nil {
		return check("rstd", rstd, func(ch int) float64 { return 1 / math.Sqrt(v64[ch]+float64(eps)) })
	}
	return check("variance", variance, func(ch int) float64 { return v64[ch] })
}

// StatsCheckedOnce wraps a BatchNorm kernel of x[N, c, l] so that its first
// call (the harness's check, before any timing) also checks the statistics
// it saved (see CheckBatchStats; stats returns them after a call), and
// panics when they are wrong: the harness reports a panic in its check as
// WRONG. Later calls only pay for a branch.
func StatsCheckedOnce(f benchkit.Func, c, l int, eps float32, stats func() (mean, rstd, variance []float32)) benchkit.Func {
	checked := false
	return func(dst, x, gamma, beta []float32) {
		f(dst, x, gamma, beta)
		if !checked {
			checked = true
			mean, rstd, variance := stats()
			if err := CheckBatchStats(x, c, l, eps, mean, rstd, variance); err != nil {
				panic(err.Error())
			}
		}
	}
}

// naiveBatchNormNCL is naiveBatchNorm for x[N, c, l]: per channel, float32
// sums over the images and positions, then the output.
func naiveBatchNormNCL(dst, x, gamma, beta, mean, rstd []float32, c, l int, eps float32) {
	n := len(x) / (c * l)
	cnt := float32(n * l)
	for ch := 0; ch < c; ch++ {
		var sum float32
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*l : (i*c+ch+1)*l] {
				sum += v
			}
		}
		mu := sum / cnt
		var ss float32
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*l : (i*c+ch+1)*l] {
				d := v - mu
				ss += d * d
			}
		}
		r := float32(1 / math.Sqrt(float64(ss/cnt+eps)))
		mean[ch], rstd[ch] = mu, r
		g, b := gamma[ch], beta[ch]
		for i := 0; i < n; i++ {
			o := (i*c + ch) * l
			out := dst[o : o+l]
			for j, v := range x[o : o+l] {
				out[j] = (v-mu)*r*g + b
			}
		}
	}
}
