package peers

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/normgen/normgen/benchkit"
)

// Gonum is the float32 kernels of gonum, where they fit: gonum's `floats`
// package is float64-only, so its float32 counterpart, blas32 (backed by
// gonum's own assembly for Dot and Axpy on amd64), computes the sums and
// the centering; BLAS has no elementwise product, so the affine step is a
// Go loop.
var Gonum = benchkit.Impl{
	Name:  "gonum",
	About: "gonum v0.17 float32 BLAS (`blas32`; `floats` is float64-only): Dot against a ones vector for the sum, Copy + Axpy(-mean) to center, Dot for the squared deviations (RMSNorm: one Dot), then a Go loop for gamma and beta.",
	Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
		op, h, eps := s.Op, s.H, s.Epsilon()
		if op == benchkit.BatchNorm {
			return nil, "gonum has no batch normalization"
		}
		ones := make([]float32, h)
		for i := range ones {
			ones[i] = 1
		}
		one := blas32.Vector{N: h, Inc: 1, Data: ones}
		vec := func(s []float32) blas32.Vector { return blas32.Vector{N: h, Inc: 1, Data: s} }
		if op == benchkit.RMSNorm {
			return func(dst, x, gamma, _ []float32) {
				for r := 0; r+h <= len(x); r += h {
					row, out := x[r:r+h], dst[r:r+h]
					ss := blas32.Dot(vec(row), vec(row))
					inv := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
					for i, v := range row {
						out[i] = v * inv * gamma[i]
					}
				}
			}, ""
		}
		return func(dst, x, gamma, beta []float32) {
			for r := 0; r+h <= len(x); r += h {
				row, out := x[r:r+h], dst[r:r+h]
				mean := blas32.Dot(vec(row), one) / float32(h)
				blas32.Copy(vec(row), vec(out))
				blas32.Axpy(-mean, one, vec(out))
				ss := blas32.Dot(vec(out), vec(out))
				rstd := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
				for i, v := range out {
					out[i] = v*rstd*gamma[i] + beta[i]
				}
			}
		}, ""
	},
}
