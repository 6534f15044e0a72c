package audit

import (
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/deepnorm"
	"github.com/normgen/normgen/out/halfnorm"
)

// bf16 is v rounded to bfloat16 (to nearest even; NaN kept a NaN).
func bf16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// TestPairedRowsOtherKernels: the other kernels whose pure-Go output pass
// pairs rows (BF16 LayerNorm, DeepNorm) give each row of every sequence
// of three row kinds the bits of its call alone under pure Go, and in
// place the bits of the call out of place.
func TestPairedRowsOtherKernels(t *testing.T) {
	type entry struct {
		name string
		call func(x []float32, gamma, beta []float32, h int, inPlace bool) []float32
	}
	entries := []entry{
		{"BF16LayerNormAny", func(x []float32, gamma, beta []float32, h int, inPlace bool) []float32 {
			xs := make([]uint16, len(x))
			for i, v := range x {
				xs[i] = bf16(v)
			}
			dst := make([]uint16, len(x))
			if inPlace {
				dst = xs
			}
			halfnorm.BF16LayerNormAny(dst, xs, gamma, beta, h)
			out := make([]float32, len(dst))
			for i, v := range dst {
				out[i] = math.Float32frombits(uint32(v) << 16)
			}
			return out
		}},
		{"DeepNormAny", func(x []float32, gamma, beta []float32, h int, inPlace bool) []float32 {
			xs := append([]float32(nil), x...)
			f := make([]float32, len(x))
			for i := range f {
				f[i] = float32(i%h%5) * 0.25 // the same residual in every row
			}
			dst := make([]float32, len(x))
			if inPlace {
				dst = xs
			}
			deepnorm.DeepNormAny(dst, xs, f, gamma, beta, h)
			return dst
		}},
	}
	impl := halfnorm.Implementation()
	hs := []int{1, 2, 63, 65, 4097}
	if testing.Short() {
		hs = []int{2, 65, 129}
	}
	for _, e := range entries {
		for _, h := range hs {
			rng := rand.New(rand.NewSource(int64(h)))
			gamma, beta := params(rng, h)
			rows := make([][]float32, len(rowKinds))
			alone := make([][]float32, len(rowKinds))
			for k, kind := range rowKinds {
				rows[k] = make([]float32, h)
				kind.fill(rng, rows[k])
				alone[k] = e.call(rows[k], gamma, beta, h, false)
			}
			n := len(rowKinds)
			for c := 0; c < n*n*n; c++ {
				seq := []int{c % n, c / n % n, c / (n * n)}
				x := make([]float32, 0, 3*h)
				for _, k := range seq {
					x = append(x, rows[k]...)
				}
				out := e.call(x, gamma, beta, h, false)
				if i := sameBits(e.call(x, gamma, beta, h, true), out); i >= 0 {
					t.Fatalf("%s h=%d rows %v: in place differs at %d", e.name, h, seq, i)
				}
				if !pureGo(impl) {
					continue
				}
				for r, k := range seq {
					if i := sameBits(out[r*h:(r+1)*h], alone[k]); i >= 0 {
						t.Fatalf("%s h=%d rows %v: row %d (%s) differs from its call alone at %d: %v, want %v",
							e.name, h, seq, r, rowKinds[k].name, i, out[r*h+i], alone[k][i])
					}
				}
			}
		}
	}
}
