// Package peers holds the implementations normgen is measured against.
//
// Every peer normalizes rows of float32 in place of its own dst, with the
// epsilon the harness gives (benchkit.Op.Eps), and is checked against the
// harness's float64 reference before it is timed.
package peers

import (
	"math"

	"github.com/normgen/normgen/benchkit"
)

// Naive is the code a Go user writes first: straight float32 loops, two
// passes for the statistics (sum, then squared deviations), one for the
// output, math.Sqrt through float64.
var Naive = withResidual(naivePlain, AddThen(naiveAdd, naivePlain.Prepare))

var naivePlain = benchkit.Impl{
	Name:  "naive",
	About: "pure Go as a user writes it first: float32 loops over each row, two passes for mean and variance, one for the output (BatchNorm: the same over columns, row by row, with per-channel float32 sums, mean and rstd kept in per-channel arrays; over [N, C, L], channel by channel; no running statistics; the residual ops: a loop sum = alpha*x + f, then the plain loops on sum).",
	Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
		op, h, eps := s.Op, s.H, s.Epsilon()
		if c, l, ok := NCL(s); ok {
			mean, rstd := make([]float32, c), make([]float32, c)
			f := func(dst, x, gamma, beta []float32) { naiveBatchNormNCL(dst, x, gamma, beta, mean, rstd, c, l, eps) }
			return StatsCheckedOnce(f, c, l, eps, func() ([]float32, []float32, []float32) { return mean, rstd, nil }), ""
		}
		if op == benchkit.BatchNorm {
			mean, rstd := make([]float32, h), make([]float32, h)
			f := func(dst, x, gamma, beta []float32) { naiveBatchNorm(dst, x, gamma, beta, mean, rstd, h, eps) }
			return StatsCheckedOnce(f, h, 1, eps, func() ([]float32, []float32, []float32) { return mean, rstd, nil }), ""
		}
		if op == benchkit.RMSNorm {
			return func(dst, x, gamma, _ []float32) { naiveRMSNorm(dst, x, gamma, h, eps) }, ""
		}
		return func(dst, x, gamma, beta []float32) { naiveLayerNorm(dst, x, gamma, beta, h, eps) }, ""
	},
}

func naiveLayerNorm(dst, x, gamma, beta []float32, h int, eps float32) {
	for r := 0; r+h <= len(x); r += h {
		row := x[r : r+h]
		out := dst[r : r+h]
		var sum float32
		for _, v := range row {
			sum += v
		}
		mean := sum / float32(h)
		var ss float32
		for _, v := range row {
			d := v - mean
			ss += d * d
		}
		rstd := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		for i, v := range row {
			out[i] = (v-mean)*rstd*gamma[i] + beta[i]
		}
	}
}

func naiveRMSNorm(dst, x, gamma []float32, h int, eps float32) {
	for r := 0; r+h <= len(x); r += h {
		row := x[r : r+h]
		out := dst[r : r+h]
		var ss float32
		for _, v := range row {
			ss += v * v
		}
		inv := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		for i, v := range row {
			out[i] = v * inv * gamma[i]
		}
	}
}

// naiveBatchNorm normalizes each of the h columns of x over its rows: mean
// and rstd are scratch of h values.
func naiveBatchNorm(dst, x, gamma, beta, mean, rstd []float32, h int, eps float32) {
	rows := len(x) / h
	clear(mean)
	clear(rstd)
	for r := 0; r < rows; r++ {
		for c, v := range x[r*h : r*h+h] {
			mean[c] += v
		}
	}
	for c := range mean {
		mean[c] /= float32(rows)
	}
	for r := 0; r < rows; r++ {
		for c, v := range x[r*h : r*h+h] {
			d := v - mean[c]
			rstd[c] += d * d
		}
	}
	for c := range rstd {
		rstd[c] = float32(1 / math.Sqrt(float64(rstd[c]/float32(rows)+eps)))
	}
	for r := 0; r < rows; r++ {
		out := dst[r*h : r*h+h]
		for c, v := range x[r*h : r*h+h] {
			out[c] = (v-mean[c])*rstd[c]*gamma[c] + beta[c]
		}
	}
}
