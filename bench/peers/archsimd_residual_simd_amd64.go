//go:build goexperiment.simd

package peers

import (
	"math"
	"simd/archsimd"

	"github.com/normgen/normgen/benchkit"
)

// The residual ops in archsimd, fused by hand: the first pass computes
// alpha*x + f, stores it in sum and accumulates the row's sum (LayerNorm)
// or sum of squares (RMSNorm); the remaining passes are the plain
// kernels' on the row of sum, which is still in cache.

func init() {
	ArchSIMD = withResidual(ArchSIMD, func(s benchkit.Shape, alpha float32, base benchkit.Op) (benchkit.KernelFunc, string) {
		if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
			return nil, "the CPU lacks AVX2 or FMA"
		}
		return simdResidual(s.H, s.Epsilon(), alpha, base, simdAddRMSNorm8, simdAddLayerNorm8), ""
	})
	ArchSIMD512 = withResidual(ArchSIMD512, func(s benchkit.Shape, alpha float32, base benchkit.Op) (benchkit.KernelFunc, string) {
		if !archsimd.X86.AVX512() {
			return nil, "the CPU lacks AVX-512"
		}
		return simdResidual(s.H, s.Epsilon(), alpha, base, simdAddRMSNorm16, simdAddLayerNorm16), ""
	})
	archSIMDPeers = []benchkit.Impl{ArchSIMD, ArchSIMD512}
	simdAdd = func(isa string) (func(sum, x, f []float32, alpha float32), string) {
		switch {
		case isa == "avx512" && archsimd.X86.AVX512():
			return add16, "archsimd's Float32x16 FMA loop sum = alpha*x + f"
		case isa == "avx2" && archsimd.X86.AVX2() && archsimd.X86.FMA():
			return add8, "archsimd's Float32x8 FMA loop sum = alpha*x + f"
		}
		return nil, ""
	}
}

func simdResidual(h int, eps, alpha float32, base benchkit.Op,
	rms func(dst, sum, x, f, gamma []float32, h int, eps, alpha float32),
	ln func(dst, sum, x, f, gamma, beta []float32, h int, eps, alpha float32)) benchkit.KernelFunc {
	if base == benchkit.RMSNorm {
		return func(a *benchkit.Args) { rms(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, h, eps, alpha) }
	}
	return func(a *benchkit.Args) { ln(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, a.Beta, h, eps, alpha) }
}

// add8 writes sum[i] = alpha*x[i] + f[i] (the unfused peers' add loop).
func add8(sum, x, f []float32, alpha float32) {
	al := archsimd.BroadcastFloat32x8(alpha)
	for len(sum) >= 8 && len(x) >= 8 && len(f) >= 8 {
		archsimd.LoadFloat32x8((*[8]float32)(x)).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(f))).Store((*[8]float32)(sum))
		sum, x, f = sum[8:], x[8:], f[8:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range sum {
		sum[i] = alpha*x[i] + f[i]
	}
}

// addSum8 writes sum[i] = alpha*x[i] + f[i] and returns the sum of the
// values written (LayerNorm's first pass, fused with the add), 4 accumulators.
func addSum8(sum, x, f []float32, alpha float32) float32 {
	al := archsimd.BroadcastFloat32x8(alpha)
	var a0, a1, a2, a3 archsimd.Float32x8
	for len(sum) >= 32 && len(x) >= 32 && len(f) >= 32 {
		px, pf, ps := (*[32]float32)(x), (*[32]float32)(f), (*[32]float32)(sum)
		s0 := archsimd.LoadFloat32x8((*[8]float32)(px[0:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[0:])))
		s1 := archsimd.LoadFloat32x8((*[8]float32)(px[8:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[8:])))
		s2 := archsimd.LoadFloat32x8((*[8]float32)(px[16:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[16:])))
		s3 := archsimd.LoadFloat32x8((*[8]float32)(px[24:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[24:])))
		s0.Store((*[8]float32)(ps[0:]))
		s1.Store((*[8]float32)(ps[8:]))
		s2.Store((*[8]float32)(ps[16:]))
		s3.Store((*[8]float32)(ps[24:]))
		a0, a1, a2, a3 = a0.Add(s0), a1.Add(s1), a2.Add(s2), a3.Add(s3)
		sum, x, f = sum[32:], x[32:], f[32:]
	}
	for len(sum) >= 8 && len(x) >= 8 && len(f) >= 8 {
		s := archsimd.LoadFloat32x8((*[8]float32)(x)).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(f)))
		s.Store((*[8]float32)(sum))
		a0 = a0.Add(s)
		sum, x, f = sum[8:], x[8:], f[8:]
	}
	acc := hsum8(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for i := range sum {
		v := alpha*x[i] + f[i]
		sum[i] = v
		acc += v
	}
	return acc
}

// addSq8 is addSum8 returning the sum of squares (RMSNorm's first pass).
func addSq8(sum, x, f []float32, alpha float32) float32 {
	al := archsimd.BroadcastFloat32x8(alpha)
	var a0, a1, a2, a3 archsimd.Float32x8
	for len(sum) >= 32 && len(x) >= 32 && len(f) >= 32 {
		px, pf, ps := (*[32]float32)(x), (*[32]float32)(f), (*[32]float32)(sum)
		s0 := archsimd.LoadFloat32x8((*[8]float32)(px[0:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[0:])))
		s1 := archsimd.LoadFloat32x8((*[8]float32)(px[8:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[8:])))
		s2 := archsimd.LoadFloat32x8((*[8]float32)(px[16:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[16:])))
		s3 := archsimd.LoadFloat32x8((*[8]float32)(px[24:])).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(pf[24:])))
		s0.Store((*[8]float32)(ps[0:]))
		s1.Store((*[8]float32)(ps[8:]))
		s2.Store((*[8]float32)(ps[16:]))
		s3.Store((*[8]float32)(ps[24:]))
		a0, a1, a2, a3 = s0.MulAdd(s0, a0), s1.MulAdd(s1, a1), s2.MulAdd(s2, a2), s3.MulAdd(s3, a3)
		sum, x, f = sum[32:], x[32:], f[32:]
	}
	for len(sum) >= 8 && len(x) >= 8 && len(f) >= 8 {
		s := archsimd.LoadFloat32x8((*[8]float32)(x)).MulAdd(al, archsimd.LoadFloat32x8((*[8]float32)(f)))
		s.Store((*[8]float32)(sum))
		a0 = s.MulAdd(s, a0)
		sum, x, f = sum[8:], x[8:], f[8:]
	}
	acc := hsum8(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for i := range sum {
		v := alpha*x[i] + f[i]
		sum[i] = v
		acc += v * v
	}
	return acc
}

// simdAddLayerNorm8 is LayerNorm of alpha*x + f with the add fused into
// the first pass (which writes sum); the other two passes read the row of
// sum just written, from cache.
func simdAddLayerNorm8(dst, sum, x, f, gamma, beta []float32, h int, eps, alpha float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		s, out := sum[r:r+h], dst[r:r+h]
		mean := addSum8(s, x[r:r+h], f[r:r+h], alpha) / float32(h)
		rstd := float32(1 / math.Sqrt(float64(sqdev8(s, mean)/float32(h)+eps)))
		affine8(out, s, gamma, beta, mean, rstd)
	}
}

// simdAddRMSNorm8 is RMSNorm of alpha*x + f: the first pass writes sum
// and accumulates its squares, the second scales the row of sum.
func simdAddRMSNorm8(dst, sum, x, f, gamma []float32, h int, eps, alpha float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		s, out := sum[r:r+h], dst[r:r+h]
		inv := float32(1 / math.Sqrt(float64(addSq8(s, x[r:r+h], f[r:r+h], alpha)/float32(h)+eps)))
		scale8(out, s, gamma, inv)
	}
}

// add16 writes sum[i] = alpha*x[i] + f[i] (the unfused peers' add loop).
func add16(sum, x, f []float32, alpha float32) {
	al := archsimd.BroadcastFloat32x16(alpha)
	for len(sum) >= 16 && len(x) >= 16 && len(f) >= 16 {
		archsimd.LoadFloat32x16((*[16]float32)(x)).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(f))).Store((*[16]float32)(sum))
		sum, x, f = sum[16:], x[16:], f[16:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range sum {
		sum[i] = alpha*x[i] + f[i]
	}
}

// addSum16 writes sum[i] = alpha*x[i] + f[i] and returns the sum of the
// values written (LayerNorm's first pass, fused with the add), 4 accumulators.
func addSum16(sum, x, f []float32, alpha float32) float32 {
	al := archsimd.BroadcastFloat32x16(alpha)
	var a0, a1, a2, a3 archsimd.Float32x16
	for len(sum) >= 64 && len(x) >= 64 && len(f) >= 64 {
		px, pf, ps := (*[64]float32)(x), (*[64]float32)(f), (*[64]float32)(sum)
		s0 := archsimd.LoadFloat32x16((*[16]float32)(px[0:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[0:])))
		s1 := archsimd.LoadFloat32x16((*[16]float32)(px[16:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[16:])))
		s2 := archsimd.LoadFloat32x16((*[16]float32)(px[32:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[32:])))
		s3 := archsimd.LoadFloat32x16((*[16]float32)(px[48:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[48:])))
		s0.Store((*[16]float32)(ps[0:]))
		s1.Store((*[16]float32)(ps[16:]))
		s2.Store((*[16]float32)(ps[32:]))
		s3.Store((*[16]float32)(ps[48:]))
		a0, a1, a2, a3 = a0.Add(s0), a1.Add(s1), a2.Add(s2), a3.Add(s3)
		sum, x, f = sum[64:], x[64:], f[64:]
	}
	for len(sum) >= 16 && len(x) >= 16 && len(f) >= 16 {
		s := archsimd.LoadFloat32x16((*[16]float32)(x)).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(f)))
		s.Store((*[16]float32)(sum))
		a0 = a0.Add(s)
		sum, x, f = sum[16:], x[16:], f[16:]
	}
	acc := hsum16(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for i := range sum {
		v := alpha*x[i] + f[i]
		sum[i] = v
		acc += v
	}
	return acc
}

// addSq16 is addSum16 returning the sum of squares (RMSNorm's first pass).
func addSq16(sum, x, f []float32, alpha float32) float32 {
	al := archsimd.BroadcastFloat32x16(alpha)
	var a0, a1, a2, a3 archsimd.Float32x16
	for len(sum) >= 64 && len(x) >= 64 && len(f) >= 64 {
		px, pf, ps := (*[64]float32)(x), (*[64]float32)(f), (*[64]float32)(sum)
		s0 := archsimd.LoadFloat32x16((*[16]float32)(px[0:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[0:])))
		s1 := archsimd.LoadFloat32x16((*[16]float32)(px[16:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[16:])))
		s2 := archsimd.LoadFloat32x16((*[16]float32)(px[32:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[32:])))
		s3 := archsimd.LoadFloat32x16((*[16]float32)(px[48:])).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(pf[48:])))
		s0.Store((*[16]float32)(ps[0:]))
		s1.Store((*[16]float32)(ps[16:]))
		s2.Store((*[16]float32)(ps[32:]))
		s3.Store((*[16]float32)(ps[48:]))
		a0, a1, a2, a3 = s0.MulAdd(s0, a0), s1.MulAdd(s1, a1), s2.MulAdd(s2, a2), s3.MulAdd(s3, a3)
		sum, x, f = sum[64:], x[64:], f[64:]
	}
	for len(sum) >= 16 && len(x) >= 16 && len(f) >= 16 {
		s := archsimd.LoadFloat32x16((*[16]float32)(x)).MulAdd(al, archsimd.LoadFloat32x16((*[16]float32)(f)))
		s.Store((*[16]float32)(sum))
		a0 = s.MulAdd(s, a0)
		sum, x, f = sum[16:], x[16:], f[16:]
	}
	acc := hsum16(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for i := range sum {
		v := alpha*x[i] + f[i]
		sum[i] = v
		acc += v * v
	}
	return acc
}

// simdAddLayerNorm16 is LayerNorm of alpha*x + f with the add fused into
// the first pass (which writes sum); the other two passes read the row of
// sum just written, from cache.
func simdAddLayerNorm16(dst, sum, x, f, gamma, beta []float32, h int, eps, alpha float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		s, out := sum[r:r+h], dst[r:r+h]
		mean := addSum16(s, x[r:r+h], f[r:r+h], alpha) / float32(h)
		rstd := float32(1 / math.Sqrt(float64(sqdev16(s, mean)/float32(h)+eps)))
		affine16(out, s, gamma, beta, mean, rstd)
	}
}

// simdAddRMSNorm16 is RMSNorm of alpha*x + f: the first pass writes sum
// and accumulates its squares, the second scales the row of sum.
func simdAddRMSNorm16(dst, sum, x, f, gamma []float32, h int, eps, alpha float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		s, out := sum[r:r+h], dst[r:r+h]
		inv := float32(1 / math.Sqrt(float64(addSq16(s, x[r:r+h], f[r:r+h], alpha)/float32(h)+eps)))
		scale16(out, s, gamma, inv)
	}
}
