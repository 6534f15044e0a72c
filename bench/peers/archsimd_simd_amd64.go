//go:build goexperiment.simd

package peers

import (
	"math"
	"simd/archsimd"

	"github.com/normgen/normgen/bench/harness"
)

// ArchSIMD is LayerNorm and RMSNorm hand-vectorized with Go's experimental
// simd/archsimd package, 256-bit (AVX2 + FMA): the same two-pass algorithm
// as the naive loops, four independent accumulators of 8 lanes, FMA for
// the squared deviations and the affine step, a scalar loop for a tail
// shorter than 8, and VZEROUPPER (archsimd.ClearAVXUpperBits) before
// returning, as the package asks when Go code follows 256-bit code.
var ArchSIMD = harness.Impl{
	Name:  "archsimd",
	About: "Go 1.26 `simd/archsimd` (GOEXPERIMENT=simd), hand-vectorized with Float32x8 (AVX2+FMA): two passes for the statistics with 4 accumulators, FMA, one pass for the output, scalar tail, ClearAVXUpperBits (VZEROUPPER) before returning.",
	Prepare: func(op harness.Op, h, rows int) (harness.Func, string) {
		if !archsimd.X86.AVX2() || !archsimd.X86.FMA() {
			return nil, "the CPU lacks AVX2 or FMA"
		}
		eps := op.Eps()
		if op == harness.RMSNorm {
			return func(dst, x, gamma, _ []float32) { simdRMSNorm8(dst, x, gamma, h, eps) }, ""
		}
		return func(dst, x, gamma, beta []float32) { simdLayerNorm8(dst, x, gamma, beta, h, eps) }, ""
	},
}

// ArchSIMD512 is the same with Float32x16 (AVX-512F): 16 lanes.
var ArchSIMD512 = harness.Impl{
	Name:  "archsimd512",
	About: "the same archsimd code with Float32x16 (AVX-512F), 4 accumulators of 16 lanes; only where the CPU has AVX-512.",
	Prepare: func(op harness.Op, h, rows int) (harness.Func, string) {
		if !archsimd.X86.AVX512() {
			return nil, "the CPU lacks AVX-512"
		}
		eps := op.Eps()
		if op == harness.RMSNorm {
			return func(dst, x, gamma, _ []float32) { simdRMSNorm16(dst, x, gamma, h, eps) }, ""
		}
		return func(dst, x, gamma, beta []float32) { simdLayerNorm16(dst, x, gamma, beta, h, eps) }, ""
	},
}

func init() { archSIMDPeers = []harness.Impl{ArchSIMD, ArchSIMD512} }

func hsum8(v archsimd.Float32x8) float32 {
	q := v.GetLo().Add(v.GetHi())
	q = q.AddPairs(q)
	q = q.AddPairs(q)
	return q.GetElem(0)
}

func hsum16(v archsimd.Float32x16) float32 { return hsum8(v.GetLo().Add(v.GetHi())) }

func simdLayerNorm8(dst, x, gamma, beta []float32, h int, eps float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		// Pass 1: the sum.
		var a0, a1, a2, a3 archsimd.Float32x8
		i := 0
		for ; i+32 <= h; i += 32 {
			p := (*[32]float32)(row[i:])
			a0 = a0.Add(archsimd.LoadFloat32x8((*[8]float32)(p[0:])))
			a1 = a1.Add(archsimd.LoadFloat32x8((*[8]float32)(p[8:])))
			a2 = a2.Add(archsimd.LoadFloat32x8((*[8]float32)(p[16:])))
			a3 = a3.Add(archsimd.LoadFloat32x8((*[8]float32)(p[24:])))
		}
		for ; i+8 <= h; i += 8 {
			a0 = a0.Add(archsimd.LoadFloat32x8((*[8]float32)(row[i:])))
		}
		sum := hsum8(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			sum += row[i]
		}
		mean := sum / float32(h)
		m := archsimd.BroadcastFloat32x8(mean)
		// Pass 2: the squared deviations.
		a0, a1, a2, a3 = archsimd.Float32x8{}, archsimd.Float32x8{}, archsimd.Float32x8{}, archsimd.Float32x8{}
		i = 0
		for ; i+32 <= h; i += 32 {
			p := (*[32]float32)(row[i:])
			d0 := archsimd.LoadFloat32x8((*[8]float32)(p[0:])).Sub(m)
			d1 := archsimd.LoadFloat32x8((*[8]float32)(p[8:])).Sub(m)
			d2 := archsimd.LoadFloat32x8((*[8]float32)(p[16:])).Sub(m)
			d3 := archsimd.LoadFloat32x8((*[8]float32)(p[24:])).Sub(m)
			a0 = d0.MulAdd(d0, a0)
			a1 = d1.MulAdd(d1, a1)
			a2 = d2.MulAdd(d2, a2)
			a3 = d3.MulAdd(d3, a3)
		}
		for ; i+8 <= h; i += 8 {
			d := archsimd.LoadFloat32x8((*[8]float32)(row[i:])).Sub(m)
			a0 = d.MulAdd(d, a0)
		}
		ss := hsum8(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			d := row[i] - mean
			ss += d * d
		}
		rstd := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		s := archsimd.BroadcastFloat32x8(rstd)
		// Pass 3: y = (x - mean) * rstd * gamma + beta.
		i = 0
		for ; i+32 <= h; i += 32 {
			xv, gv, bv, ov := (*[32]float32)(row[i:]), (*[32]float32)(gamma[i:]), (*[32]float32)(beta[i:]), (*[32]float32)(out[i:])
			for j := 0; j < 32; j += 8 {
				v := archsimd.LoadFloat32x8((*[8]float32)(xv[j:]))
				g := archsimd.LoadFloat32x8((*[8]float32)(gv[j:]))
				b := archsimd.LoadFloat32x8((*[8]float32)(bv[j:]))
				v.Sub(m).Mul(s).MulAdd(g, b).Store((*[8]float32)(ov[j:]))
			}
		}
		for ; i+8 <= h; i += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(row[i:]))
			g := archsimd.LoadFloat32x8((*[8]float32)(gamma[i:]))
			b := archsimd.LoadFloat32x8((*[8]float32)(beta[i:]))
			v.Sub(m).Mul(s).MulAdd(g, b).Store((*[8]float32)(out[i:]))
		}
		for ; i < h; i++ {
			out[i] = (row[i]-mean)*rstd*gamma[i] + beta[i]
		}
	}
	archsimd.ClearAVXUpperBits()
}

func simdRMSNorm8(dst, x, gamma []float32, h int, eps float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		var a0, a1, a2, a3 archsimd.Float32x8
		i := 0
		for ; i+32 <= h; i += 32 {
			p := (*[32]float32)(row[i:])
			v0 := archsimd.LoadFloat32x8((*[8]float32)(p[0:]))
			v1 := archsimd.LoadFloat32x8((*[8]float32)(p[8:]))
			v2 := archsimd.LoadFloat32x8((*[8]float32)(p[16:]))
			v3 := archsimd.LoadFloat32x8((*[8]float32)(p[24:]))
			a0 = v0.MulAdd(v0, a0)
			a1 = v1.MulAdd(v1, a1)
			a2 = v2.MulAdd(v2, a2)
			a3 = v3.MulAdd(v3, a3)
		}
		for ; i+8 <= h; i += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(row[i:]))
			a0 = v.MulAdd(v, a0)
		}
		ss := hsum8(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			ss += row[i] * row[i]
		}
		inv := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		s := archsimd.BroadcastFloat32x8(inv)
		i = 0
		for ; i+32 <= h; i += 32 {
			xv, gv, ov := (*[32]float32)(row[i:]), (*[32]float32)(gamma[i:]), (*[32]float32)(out[i:])
			for j := 0; j < 32; j += 8 {
				v := archsimd.LoadFloat32x8((*[8]float32)(xv[j:]))
				g := archsimd.LoadFloat32x8((*[8]float32)(gv[j:]))
				v.Mul(s).Mul(g).Store((*[8]float32)(ov[j:]))
			}
		}
		for ; i+8 <= h; i += 8 {
			v := archsimd.LoadFloat32x8((*[8]float32)(row[i:]))
			g := archsimd.LoadFloat32x8((*[8]float32)(gamma[i:]))
			v.Mul(s).Mul(g).Store((*[8]float32)(out[i:]))
		}
		for ; i < h; i++ {
			out[i] = row[i] * inv * gamma[i]
		}
	}
	archsimd.ClearAVXUpperBits()
}

func simdLayerNorm16(dst, x, gamma, beta []float32, h int, eps float32) {
	gamma, beta = gamma[:h], beta[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		var a0, a1, a2, a3 archsimd.Float32x16
		i := 0
		for ; i+64 <= h; i += 64 {
			p := (*[64]float32)(row[i:])
			a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(p[0:])))
			a1 = a1.Add(archsimd.LoadFloat32x16((*[16]float32)(p[16:])))
			a2 = a2.Add(archsimd.LoadFloat32x16((*[16]float32)(p[32:])))
			a3 = a3.Add(archsimd.LoadFloat32x16((*[16]float32)(p[48:])))
		}
		for ; i+16 <= h; i += 16 {
			a0 = a0.Add(archsimd.LoadFloat32x16((*[16]float32)(row[i:])))
		}
		sum := hsum16(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			sum += row[i]
		}
		mean := sum / float32(h)
		m := archsimd.BroadcastFloat32x16(mean)
		a0, a1, a2, a3 = archsimd.Float32x16{}, archsimd.Float32x16{}, archsimd.Float32x16{}, archsimd.Float32x16{}
		i = 0
		for ; i+64 <= h; i += 64 {
			p := (*[64]float32)(row[i:])
			d0 := archsimd.LoadFloat32x16((*[16]float32)(p[0:])).Sub(m)
			d1 := archsimd.LoadFloat32x16((*[16]float32)(p[16:])).Sub(m)
			d2 := archsimd.LoadFloat32x16((*[16]float32)(p[32:])).Sub(m)
			d3 := archsimd.LoadFloat32x16((*[16]float32)(p[48:])).Sub(m)
			a0 = d0.MulAdd(d0, a0)
			a1 = d1.MulAdd(d1, a1)
			a2 = d2.MulAdd(d2, a2)
			a3 = d3.MulAdd(d3, a3)
		}
		for ; i+16 <= h; i += 16 {
			d := archsimd.LoadFloat32x16((*[16]float32)(row[i:])).Sub(m)
			a0 = d.MulAdd(d, a0)
		}
		ss := hsum16(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			d := row[i] - mean
			ss += d * d
		}
		rstd := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		s := archsimd.BroadcastFloat32x16(rstd)
		i = 0
		for ; i+64 <= h; i += 64 {
			xv, gv, bv, ov := (*[64]float32)(row[i:]), (*[64]float32)(gamma[i:]), (*[64]float32)(beta[i:]), (*[64]float32)(out[i:])
			for j := 0; j < 64; j += 16 {
				v := archsimd.LoadFloat32x16((*[16]float32)(xv[j:]))
				g := archsimd.LoadFloat32x16((*[16]float32)(gv[j:]))
				b := archsimd.LoadFloat32x16((*[16]float32)(bv[j:]))
				v.Sub(m).Mul(s).MulAdd(g, b).Store((*[16]float32)(ov[j:]))
			}
		}
		for ; i+16 <= h; i += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(row[i:]))
			g := archsimd.LoadFloat32x16((*[16]float32)(gamma[i:]))
			b := archsimd.LoadFloat32x16((*[16]float32)(beta[i:]))
			v.Sub(m).Mul(s).MulAdd(g, b).Store((*[16]float32)(out[i:]))
		}
		for ; i < h; i++ {
			out[i] = (row[i]-mean)*rstd*gamma[i] + beta[i]
		}
	}
	archsimd.ClearAVXUpperBits()
}

func simdRMSNorm16(dst, x, gamma []float32, h int, eps float32) {
	gamma = gamma[:h]
	for r := 0; r+h <= len(x); r += h {
		row, out := x[r:r+h], dst[r:r+h]
		var a0, a1, a2, a3 archsimd.Float32x16
		i := 0
		for ; i+64 <= h; i += 64 {
			p := (*[64]float32)(row[i:])
			v0 := archsimd.LoadFloat32x16((*[16]float32)(p[0:]))
			v1 := archsimd.LoadFloat32x16((*[16]float32)(p[16:]))
			v2 := archsimd.LoadFloat32x16((*[16]float32)(p[32:]))
			v3 := archsimd.LoadFloat32x16((*[16]float32)(p[48:]))
			a0 = v0.MulAdd(v0, a0)
			a1 = v1.MulAdd(v1, a1)
			a2 = v2.MulAdd(v2, a2)
			a3 = v3.MulAdd(v3, a3)
		}
		for ; i+16 <= h; i += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(row[i:]))
			a0 = v.MulAdd(v, a0)
		}
		ss := hsum16(a0.Add(a1).Add(a2.Add(a3)))
		for ; i < h; i++ {
			ss += row[i] * row[i]
		}
		inv := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
		s := archsimd.BroadcastFloat32x16(inv)
		i = 0
		for ; i+64 <= h; i += 64 {
			xv, gv, ov := (*[64]float32)(row[i:]), (*[64]float32)(gamma[i:]), (*[64]float32)(out[i:])
			for j := 0; j < 64; j += 16 {
				v := archsimd.LoadFloat32x16((*[16]float32)(xv[j:]))
				g := archsimd.LoadFloat32x16((*[16]float32)(gv[j:]))
				v.Mul(s).Mul(g).Store((*[16]float32)(ov[j:]))
			}
		}
		for ; i+16 <= h; i += 16 {
			v := archsimd.LoadFloat32x16((*[16]float32)(row[i:]))
			g := archsimd.LoadFloat32x16((*[16]float32)(gamma[i:]))
			v.Mul(s).Mul(g).Store((*[16]float32)(out[i:]))
		}
		for ; i < h; i++ {
			out[i] = row[i] * inv * gamma[i]
		}
	}
	archsimd.ClearAVXUpperBits()
}
