package peers

import (
	"fmt"
	"math"

	"github.com/normgen/normgen/benchkit"
)

// Backward passes: the gradients of LayerNorm, RMSNorm and training-mode
// BatchNorm. Each reads dy (the gradient arriving at dst) and x, the
// statistics the forward saved (mean and rstd = 1/sqrt(var+eps), as float32)
// and gamma; it writes dx and overwrites dgamma and dbeta with the sums
// over the rows (BatchNorm: over the batch and positions, per channel).
// With xhat = (x-mean)*rstd (RMSNorm: x*rstd) and g = dy*gamma,
//
//	dx     = rstd * (g - mean(g) - xhat*mean(g*xhat))   (RMSNorm: no mean(g))
//	dgamma = sum(dy*xhat), dbeta = sum(dy)
//
// the means taken over the row (BatchNorm: over the channel's N*L values).

// Backward ops, by the names -ops takes.
const (
	LayerNormBackward = "LayerNormBackward"
	RMSNormBackward   = "RMSNormBackward"
	BatchNormBackward = "BatchNormBackward"
)

// BackwardTolerance is the backward shapes' check tolerance.
const BackwardTolerance = 1e-3

// BackwardOps lists them.
var BackwardOps = []string{LayerNormBackward, RMSNormBackward, BatchNormBackward}

// IsBackward reports whether s is a backward shape.
func IsBackward(s benchkit.Shape) bool {
	return s.Kernel == LayerNormBackward || s.Kernel == RMSNormBackward || s.Kernel == BatchNormBackward
}

// bnDims is C and L of a BatchNormBackward shape (L = 1 for [N, C]).
func bnDims(s benchkit.Shape) (c, l int) {
	if s.Channels > 0 {
		return s.Channels, s.Spatial
	}
	return s.H, 1
}

// BackwardShape is the backward of op (LayerNorm, RMSNorm: rows of h;
// BatchNorm: x[rows, h]) at the given level.
func BackwardShape(op benchkit.Op, h, rows int, level benchkit.Level) benchkit.Shape {
	// dgamma and dbeta are sums over up to 10^4 rows (N*L values):
	// float32 running sums (the naive loops, oneDNN) reach 2.5e-4 there, a
	// wrong formula errs by O(1).
	s := benchkit.Shape{Op: op, H: h, Rows: rows, Level: level,
		Inputs: []string{"dy", "x"}, Outputs: []string{"dx"}, StatLen: h, Tolerance: BackwardTolerance}
	switch op {
	case benchkit.LayerNorm:
		s.Kernel, s.Stats, s.StatInputs = LayerNormBackward, []string{"dgamma", "dbeta"}, []string{"mean", "rstd"}
	case benchkit.RMSNorm:
		s.Kernel, s.Stats, s.StatInputs = RMSNormBackward, []string{"dgamma"}, []string{"rstd"}
	case benchkit.BatchNorm:
		s.Kernel, s.Stats, s.StatInputs, s.StatInputLen = BatchNormBackward, []string{"dgamma", "dbeta"}, []string{"mean", "rstd"}, h
	default:
		panic(fmt.Sprintf("peers: no backward shape for %s", op))
	}
	s.Derive, s.Oracle = deriveStats(s), backwardOracle(s)
	return s
}

// BatchNormBackwardNCL is the backward of BatchNorm over x[n, c, l].
func BatchNormBackwardNCL(n, c, l int, level benchkit.Level) benchkit.Shape {
	s := BackwardShape(benchkit.BatchNorm, c*l, n, level)
	s.Channels, s.Spatial, s.StatLen, s.StatInputLen = c, l, c, c
	s.Derive, s.Oracle = deriveStats(s), backwardOracle(s)
	return s
}

// deriveStats computes the statistics the forward would have saved from
// x (In[1]) in float64, rounded to float32: per row, or per channel.
func deriveStats(s benchkit.Shape) func(a *benchkit.Args) {
	eps := float64(s.Epsilon())
	return func(a *benchkit.Args) {
		x := a.In[1]
		var mean, variance []float64
		if s.Kernel == BatchNormBackward {
			c, l := bnDims(s)
			mean, variance = batchStats64(x, c, l)
		} else {
			mean, variance = rowStats64(x, s.H, s.Op == benchkit.LayerNorm)
		}
		rstd := a.StatIn[len(a.StatIn)-1]
		for i := range rstd {
			rstd[i] = float32(1 / math.Sqrt(variance[i]+eps))
		}
		if len(a.StatIn) == 2 {
			for i := range mean {
				a.StatIn[0][i] = float32(mean[i])
			}
		}
	}
}

// rowStats64 is each row's mean (0 without mean) and mean square deviation.
func rowStats64(x []float32, h int, withMean bool) (mean, variance []float64) {
	rows := len(x) / h
	mean, variance = make([]float64, rows), make([]float64, rows)
	for r := range rows {
		row := x[r*h : r*h+h]
		if withMean {
			for _, v := range row {
				mean[r] += float64(v)
			}
			mean[r] /= float64(h)
		}
		for _, v := range row {
			d := float64(v) - mean[r]
			variance[r] += d * d
		}
		variance[r] /= float64(h)
	}
	return mean, variance
}

// backwardOracle is the float64 gradient from the float32 saved
// statistics the kernels are given.
func backwardOracle(s benchkit.Shape) func(a *benchkit.Args, h int) (out, stats [][]float64) {
	return func(a *benchkit.Args, h int) (out, stats [][]float64) {
		dy, x, gamma := a.In[0], a.In[1], a.Gamma
		dx := make([]float64, len(x))
		// groups: each normalized set (a row, or a channel's N*L values)
		// as index lists through at(k, j): element j of set k.
		var sets, per, params int
		var at func(k, j int) int
		var param func(i int) int // the parameter of element i
		if s.Kernel == BatchNormBackward {
			c, l := bnDims(s)
			n := len(x) / (c * l)
			sets, per, params = c, n*l, c
			at = func(k, j int) int { return (j/l*c+k)*l + j%l }
			param = func(i int) int { return i / l % c }
		} else {
			sets, per, params = len(x)/h, h, h
			at = func(k, j int) int { return k*h + j }
			param = func(i int) int { return i % h }
		}
		dgamma, dbeta := make([]float64, params), make([]float64, params)
		rstd := a.StatIn[len(a.StatIn)-1]
		for k := range sets {
			mu := 0.0
			if len(a.StatIn) == 2 {
				mu = float64(a.StatIn[0][k])
			}
			r := float64(rstd[k])
			var sg, sgx float64
			for j := range per {
				i := at(k, j)
				xh := (float64(x[i]) - mu) * r
				g := float64(dy[i]) * float64(gamma[param(i)])
				sg += g
				sgx += g * xh
				dgamma[param(i)] += float64(dy[i]) * xh
				dbeta[param(i)] += float64(dy[i])
			}
			if s.Op == benchkit.RMSNorm {
				sg = 0
			}
			for j := range per {
				i := at(k, j)
				xh := (float64(x[i]) - mu) * r
				g := float64(dy[i]) * float64(gamma[param(i)])
				dx[i] = r * (g - sg/float64(per) - xh*sgx/float64(per))
			}
		}
		stats = [][]float64{dgamma}
		if len(s.Stats) == 2 {
			stats = append(stats, dbeta)
		}
		return [][]float64{dx}, stats
	}
}

// naiveBackward is the backward as a user writes it: float32 loops, per
// row (or channel) the two sums, then dx; dgamma and dbeta accumulated
// across rows.
func naiveBackward(s benchkit.Shape) (benchkit.KernelFunc, string) {
	h := s.H
	switch s.Kernel {
	case LayerNormBackward:
		return func(a *benchkit.Args) {
			naiveLayerNormBackward(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.StatIn[0], a.StatIn[1], a.Gamma, h)
		}, ""
	case RMSNormBackward:
		return func(a *benchkit.Args) {
			naiveRMSNormBackward(a.Out[0], a.Stats[0], a.In[0], a.In[1], a.StatIn[0], a.Gamma, h)
		}, ""
	case BatchNormBackward:
		c, l := bnDims(s)
		return func(a *benchkit.Args) {
			naiveBatchNormBackward(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.StatIn[0], a.StatIn[1], a.Gamma, c, l)
		}, ""
	}
	return nil, "not a backward op"
}

func naiveLayerNormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32, h int) {
	clear(dgamma)
	clear(dbeta)
	for r := 0; r+h <= len(x); r += h {
		mu, rs := mean[r/h], rstd[r/h]
		var sg, sgx float32
		for i := 0; i < h; i++ {
			xh := (x[r+i] - mu) * rs
			g := dy[r+i] * gamma[i]
			sg += g
			sgx += g * xh
			dgamma[i] += dy[r+i] * xh
			dbeta[i] += dy[r+i]
		}
		sg /= float32(h)
		sgx /= float32(h)
		for i := 0; i < h; i++ {
			xh := (x[r+i] - mu) * rs
			dx[r+i] = rs * (dy[r+i]*gamma[i] - sg - xh*sgx)
		}
	}
}

func naiveRMSNormBackward(dx, dgamma, dy, x, rstd, gamma []float32, h int) {
	clear(dgamma)
	for r := 0; r+h <= len(x); r += h {
		rs := rstd[r/h]
		var sgx float32
		for i := 0; i < h; i++ {
			xh := x[r+i] * rs
			sgx += dy[r+i] * gamma[i] * xh
			dgamma[i] += dy[r+i] * xh
		}
		sgx /= float32(h)
		for i := 0; i < h; i++ {
			dx[r+i] = rs * (dy[r+i]*gamma[i] - x[r+i]*rs*sgx)
		}
	}
}

// naiveBatchNormBackward is over x[N, c, l]: a first sweep over the data
// accumulates each channel's sums (as the forward's naive loops do, row by
// row), a second writes dx.
func naiveBatchNormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32, c, l int) {
	n := len(x) / (c * l)
	clear(dgamma)
	clear(dbeta)
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			o := (i*c + ch) * l
			mu, rs := mean[ch], rstd[ch]
			for j := o; j < o+l; j++ {
				dgamma[ch] += dy[j] * (x[j] - mu) * rs
				dbeta[ch] += dy[j]
			}
		}
	}
	cnt := float32(n * l)
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			o := (i*c + ch) * l
			mu, rs, g := mean[ch], rstd[ch], gamma[ch]
			a, b := dbeta[ch]/cnt, dgamma[ch]/cnt
			for j := o; j < o+l; j++ {
				xh := (x[j] - mu) * rs
				dx[j] = g * rs * (dy[j] - a - xh*b)
			}
		}
	}
}
