//go:build goexperiment.simd

package peers

import (
	"math"
	"simd/archsimd"

	"github.com/normgen/normgen/benchkit"
)

// ArchSIMD is LayerNorm and RMSNorm hand-vectorized with Go's experimental
// simd/archsimd package, 256-bit (AVX2 + FMA): the same two-pass algorithm
// as the naive loops, four independent accumulators of 8 lanes, FMA for
// the squared deviations and the affine step, a scalar loop for a tail
// shorter than 8, and VZEROUPPER (archsimd.ClearAVXUpperBits) before
// returning, as the package asks when Go code follows 256-bit code.
var ArchSIMD = benchkit.Impl{
	Name:  "archsimd",
	About: "Go 1.26 `simd/archsimd` (GOEXPERIMENT=simd), hand-vectorized with Float32x8 (AVX2+FMA): two passes for the statistics with 4 accumulators, FMA, one pass for the output, scalar tail, ClearAVXUpperBits (VZEROUPPER) before returning.",
	Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
		op, h, eps := s.Op, s.H, s.Epsilon()
		if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
			return nil, "the CPU lacks AVX2 or FMA"
		}
		if op == benchkit.BatchNorm {
			return nil, "not written for BatchNorm (a per-row peer)"
		}
		if op == benchkit.RMSNorm {
			return func(dst, x, gamma, _ []float32) { simdRMSNorm8(dst, x, gamma, h, eps) }, ""
		}
		return func(dst, x, gamma, beta []float32) { simdLayerNorm8(dst, x, gamma, beta, h, eps) }, ""
	},
}

// ArchSIMD512 is the same with Float32x16 (AVX-512F): 16 lanes.
var ArchSIMD512 = benchkit.Impl{
	Name:  "archsimd512",
	About: "the same archsimd code with Float32x16 (AVX-512F), 4 accumulators of 16 lanes; only where the CPU has AVX-512.",
	Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
		op, h, eps := s.Op, s.H, s.Epsilon()
		if !archsimd.X86.AVX512() {
			return nil, "the CPU lacks AVX-512"
		}
		if op == benchkit.BatchNorm {
			return nil, "not written for BatchNorm (a per-row peer)"
		}
		if op == benchkit.RMSNorm {
			return func(dst, x, gamma, _ []float32) { simdRMSNorm16(dst, x, gamma, h, eps) }, ""
		}
		return func(dst, x, gamma, beta []float32) { simdLayerNorm16(dst, x, gamma, beta, h, eps) }, ""
	},
}

func hsum8(v archsimd.Float32x8) float32 {
	q := v.GetLo().Add(v.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	return q.GetElem(0)
}

func hsum16(v archsimd.Float32x16) float32 { return hsum8(v.GetLo().Add(v.GetHi())) }

// The kernels are split into one small function per pass, each walking its
// slices by reslicing: the register allocator then keeps everything in
// registers (one big function spilled its indices to the stack).

// sum8 returns the sum of s (pass 1).
func sum8(s []float32) float32 {
	var a0, a1, a2, a3 archsimd.Float32x8
	for ; len(s) >= 32; s = s[32:] {
		p := (*[32]float32)(s)
		a0 = a0.Add(archsimd.LoadFloat32x8((*[8]float32)(p[0:])))
		a1 = a1.Add(archsimd.LoadFloat32x8((*[8]float32)(p[8:])))
		a2 = a2.Add(archsimd.LoadFloat32x8((*[8]float32)(p[16:])))
		a3 = a3.Add(archsimd.LoadFloat32x8((*[8]float32)(p[24:])))
	}
	for ; len(s) >= 8; s = s[8:] {
		a0 = a0.Add(archsimd.LoadFloat32x8((*[8]float32)(s)))
	}
	sum := hsum8(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for _, v := range s {
		sum += v
	}
	return sum
}

// sqdev8 returns the sum of (s[i]-m)^2 (pass 2; m = 0 for RMSNorm).
func sqdev8(s []float32, mean float32) float32 {
	m := archsimd.BroadcastFloat32x8(mean)
	var a0, a1, a2, a3 archsimd.Float32x8
	for ; len(s) >= 32; s = s[32:] {
		p := (*[32]float32)(s)
		d0 := archsimd.LoadFloat32x8((*[8]float32)(p[0:])).Sub(m)
		d1 := archsimd.LoadFloat32x8((*[8]float32)(p[8:])).Sub(m)
		d2 := archsimd.LoadFloat32x8((*[8]float32)(p[16:])).Sub(m)
		d3 := archsimd.LoadFloat32x8((*[8]float32)(p[24:])).Sub(m)
		a0 = d0.MulAdd(d0, a0)
		a1 = d1.MulAdd(d1, a1)
		a2 = d2.MulAdd(d2, a2)
		a3 = d3.MulAdd(d3, a3)
	}
	for ; len(s) >= 8; s = s[8:] {
		d := archsimd.LoadFloat32x8((*[8]float32)(s)).Sub(m)
		a0 = d.MulAdd(d, a0)
	}
	ss := hsum8(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits()
	for _, v := range s {
		ss += (v - mean) * (v - mean)
	}
	return ss
}

// affine8 writes out[i] = (x[i]-mean)*rstd*gamma[i] + beta[i] (pass 3).
// len(x) == len(out) == len(gamma) == len(beta).
func affine8(out, x, gamma, beta []float32, mean, rstd float32) {
	m, r := archsimd.BroadcastFloat32x8(mean), archsimd.BroadcastFloat32x8(rstd)
	for len(x) >= 8 && len(out) >= 8 && len(gamma) >= 8 && len(beta) >= 8 {
		v := archsimd.LoadFloat32x8((*[8]float32)(x))
		g := archsimd.LoadFloat32x8((*[8]float32)(gamma))
		b := archsimd.LoadFloat32x8((*[8]float32)(beta))
		v.Sub(m).Mul(r).MulAdd(g, b).Store((*[8]float32)(out))
		x, out, gamma, beta = x[8:], out[8:], gamma[8:], beta[8:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range x {
		out[i] = (x[i]-mean)*rstd*gamma[i] + beta[i]
	}
}

// scale8 writes out[i] = x[i]*inv*gamma[i] (RMSNorm's pass 2).
func scale8(out, x, gamma []float32, inv float32) {
	r := archsimd.BroadcastFloat32x8(inv)
	for len(x) >= 8 && len(out) >= 8 && len(gamma) >= 8 {
		v := archsimd.LoadFloat32x8((*[8]float32)(x))
		g := archsimd.LoadFloat32x8((*[8]float32)(gamma))
		v.Mul(r).Mul(g).Store((*[8]float32)(out))
		x, out, gamma = x[8:], out[8:], gamma[8:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range x {
		out[i] = x[i] * inv * gamma[i]
	}
}

func simdLayerNorm8(dst, x, gamma, beta []float32, h int, eps float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		mean := sum8(row) / float32(h)
		rstd := float32(1 / math.Sqrt(float64(sqdev8(row, mean)/float32(h)+eps)))
		affine8(out, row, gamma, beta, mean, rstd)
	}
}

func simdRMSNorm8(dst, x, gamma []float32, h int, eps float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		inv := float32(1 / math.Sqrt(float64(sqdev8(row, 0)/float32(h)+eps)))
		scale8(out, row, gamma, inv)
	}
}

// sum16 returns the sum of s (pass 1).
func sum16(s []float32) float32 {
	var a0, a1, a2, a3 archsimd.Float32x16
	for ; len(s) >= 64; s = s[64:] {
		p := (*[64]float32)(s)
		a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(p[0:])))
		a1 = a1.Add(archsimd.LoadFloat32x16((*[16]float32)(p[16:])))
		a2 = a2.Add(archsimd.LoadFloat32x16((*[16]float32)(p[32:])))
		a3 = a3.Add(archsimd.LoadFloat32x16((*[16]float32)(p[48:])))
	}
	for ; len(s) >= 16; s = s[16:] {
		a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(s)))
	}
	sum := hsum16(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits() // before scalar (SSE) code
	for _, v := range s {
		sum += v
	}
	return sum
}

// sqdev16 returns the sum of (s[i]-m)^2 (pass 2; m = 0 for RMSNorm).
func sqdev16(s []float32, mean float32) float32 {
	m := archsimd.BroadcastFloat32x16(mean)
	var a0, a1, a2, a3 archsimd.Float32x16
	for ; len(s) >= 64; s = s[64:] {
		p := (*[64]float32)(s)
		d0 := archsimd.LoadFloat32x16((*[16]float32)(p[0:])).Sub(m)
		d1 := archsimd.LoadFloat32x16((*[16]float32)(p[16:])).Sub(m)
		d2 := archsimd.LoadFloat32x16((*[16]float32)(p[32:])).Sub(m)
		d3 := archsimd.LoadFloat32x16((*[16]float32)(p[48:])).Sub(m)
		a0 = d0.MulAdd(d0, a0)
		a1 = d1.MulAdd(d1, a1)
		a2 = d2.MulAdd(d2, a2)
		a3 = d3.MulAdd(d3, a3)
	}
	for ; len(s) >= 16; s = s[16:] {
		d := archsimd.LoadFloat32x16((*[16]float32)(s)).Sub(m)
		a0 = d.MulAdd(d, a0)
	}
	ss := hsum16(a0.Add(a1).Add(a2.Add(a3)))
	archsimd.ClearAVXUpperBits()
	for _, v := range s {
		ss += (v - mean) * (v - mean)
	}
	return ss
}

// affine16 writes out[i] = (x[i]-mean)*rstd*gamma[i] + beta[i] (pass 3).
// len(x) == len(out) == len(gamma) == len(beta).
func affine16(out, x, gamma, beta []float32, mean, rstd float32) {
	m, r := archsimd.BroadcastFloat32x16(mean), archsimd.BroadcastFloat32x16(rstd)
	for len(x) >= 16 && len(out) >= 16 && len(gamma) >= 16 && len(beta) >= 16 {
		v := archsimd.LoadFloat32x16((*[16]float32)(x))
		g := archsimd.LoadFloat32x16((*[16]float32)(gamma))
		b := archsimd.LoadFloat32x16((*[16]float32)(beta))
		v.Sub(m).Mul(r).MulAdd(g, b).Store((*[16]float32)(out))
		x, out, gamma, beta = x[16:], out[16:], gamma[16:], beta[16:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range x {
		out[i] = (x[i]-mean)*rstd*gamma[i] + beta[i]
	}
}

// scale16 writes out[i] = x[i]*inv*gamma[i] (RMSNorm's pass 2).
func scale16(out, x, gamma []float32, inv float32) {
	r := archsimd.BroadcastFloat32x16(inv)
	for len(x) >= 16 && len(out) >= 16 && len(gamma) >= 16 {
		v := archsimd.LoadFloat32x16((*[16]float32)(x))
		g := archsimd.LoadFloat32x16((*[16]float32)(gamma))
		v.Mul(r).Mul(g).Store((*[16]float32)(out))
		x, out, gamma = x[16:], out[16:], gamma[16:]
	}
	archsimd.ClearAVXUpperBits()
	for i := range x {
		out[i] = x[i] * inv * gamma[i]
	}
}

func simdLayerNorm16(dst, x, gamma, beta []float32, h int, eps float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		mean := sum16(row) / float32(h)
		rstd := float32(1 / math.Sqrt(float64(sqdev16(row, mean)/float32(h)+eps)))
		affine16(out, row, gamma, beta, mean, rstd)
	}
}

func simdRMSNorm16(dst, x, gamma []float32, h int, eps float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		inv := float32(1 / math.Sqrt(float64(sqdev16(row, 0)/float32(h)+eps)))
		scale16(out, row, gamma, inv)
	}
}
