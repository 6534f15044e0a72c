package audit

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/layernorm"
)

// lnEntry is a forward entry point of the LayerNorm family as a function
// of its input rows; inPlace makes the output the very same slice as a row
// input, as the API allows. It returns the output rows (and the stored sum
// where the kernel has one, the oracle's input).
type lnEntry struct {
	name string
	call func(x, gamma, beta []float32, h int, inPlace bool) (y, s []float32)
}

var lnEntries = []lnEntry{
	{"LayerNormAny", func(x, gamma, beta []float32, h int, inPlace bool) ([]float32, []float32) {
		s := append([]float32(nil), x...)
		dst := make([]float32, len(x))
		if inPlace {
			dst = append([]float32(nil), x...)
			layernorm.LayerNormAny(dst, dst, gamma, beta, h)
			return dst, s
		}
		layernorm.LayerNormAny(dst, s, gamma, beta, h)
		return dst, s
	}},
	{"LayerNormStatsAny", func(x, gamma, beta []float32, h int, inPlace bool) ([]float32, []float32) {
		rows := len(x) / max(h, 1)
		mean, rstd := make([]float32, rows), make([]float32, rows)
		s := append([]float32(nil), x...)
		dst := make([]float32, len(x))
		if inPlace {
			dst = append([]float32(nil), x...)
			layernorm.LayerNormStatsAny(dst, mean, rstd, dst, gamma, beta, h)
		} else {
			layernorm.LayerNormStatsAny(dst, mean, rstd, s, gamma, beta, h)
		}
		// The saved statistics are outputs too: appended, compared as bits.
		return append(append(dst, mean...), rstd...), s
	}},
	{"AddLayerNormAny", func(x, gamma, beta []float32, h int, inPlace bool) ([]float32, []float32) {
		// f: a residual of its own; the kernel normalizes x + f.
		f := make([]float32, len(x))
		for i := range f {
			f[i] = float32(i%7) * 0.125
		}
		xs := append([]float32(nil), x...)
		sum, dst := make([]float32, len(x)), make([]float32, len(x))
		if inPlace {
			// dst may be x and sum may be f (README).
			layernorm.AddLayerNormAny(xs, f, xs, f, gamma, beta, h)
			return xs, f
		}
		layernorm.AddLayerNormAny(dst, sum, xs, f, gamma, beta, h)
		return dst, sum
	}},
}

// TestLayerNormRowsIndependent: every sequence of three rows of the kinds
// above (near 0, far from 0, a guarded row; ...), at row lengths around the 64-value blocks, gives each
// row the bits it gets in a call of its own under pure Go, and the bits of
// the out-of-place call in place; every finite row obeys the contract.
func TestLayerNormRowsIndependent(t *testing.T) {
	impl := layernorm.Implementation()
	hs := []int{1, 2, 63, 64, 65, 127, 4097}
	if testing.Short() {
		hs = []int{1, 2, 63, 65, 129}
	}
	for _, e := range lnEntries {
		for _, h := range hs {
			rng := rand.New(rand.NewSource(int64(h)))
			gamma, beta := params(rng, h)
			rows := make([][]float32, len(rowKinds))
			alone := make([][]float32, len(rowKinds))
			for k, kind := range rowKinds {
				rows[k] = make([]float32, h)
				kind.fill(rng, rows[k])
				alone[k], _ = e.call(rows[k], gamma, beta, h, false)
				y, s := e.call(rows[k], gamma, beta, h, false)
				if i := sameBits(y, alone[k]); i >= 0 {
					t.Fatalf("%s h=%d %s: two calls differ at %d", e.name, h, kind.name, i)
				}
				checkLNRow(t, fmt.Sprintf("%s h=%d %s (%s)", e.name, h, kind.name, impl), y[:h], s, gamma, beta)
			}
			n := len(rowKinds)
			for c := 0; c < n*n*n; c++ {
				seq := []int{c % n, c / n % n, c / (n * n)}
				for _, nrows := range []int{2, 3} {
					x := make([]float32, 0, nrows*h)
					for _, k := range seq[:nrows] {
						x = append(x, rows[k]...)
					}
					out, _ := e.call(x, gamma, beta, h, false)
					in, _ := e.call(x, gamma, beta, h, true)
					if i := sameBits(in, out); i >= 0 {
						t.Fatalf("%s h=%d rows %v: in place differs from out of place at %d: %v, want %v", e.name, h, seq[:nrows], i, in[i], out[i])
					}
					// AddLayerNorm's residual depends on the row's place: its
					// rows alone were checked against the oracle above.
					if !pureGo(impl) || e.name == "AddLayerNormAny" && h > 1 {
						continue
					}
					for r, k := range seq[:nrows] {
						if i := sameBits(out[r*h:(r+1)*h], alone[k][:h]); i >= 0 {
							t.Fatalf("%s h=%d rows %v: row %d (%s) differs from its call alone at %d: %v, want %v",
								e.name, h, seq[:nrows], r, rowKinds[k].name, i, out[r*h+i], alone[k][i])
						}
					}
				}
			}
		}
	}
}

// checkLNRow checks one output row against the oracle: NaN where the row
// holds a NaN or an infinity (README), else within the contract.
func checkLNRow(t *testing.T, what string, y, s, gamma, beta []float32) {
	t.Helper()
	nonFinite := false
	for _, v := range s {
		nonFinite = nonFinite || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)
	}
	if nonFinite {
		for i, v := range y {
			if !math.IsNaN(float64(v)) {
				t.Errorf("%s: y[%d] = %v in a row with a NaN or Inf, want NaN", what, i, v)
				return
			}
		}
		return
	}
	y64, sigma, maxAbs := layerNorm64(s, gamma, beta, 1e-5)
	if u := units(y, y64, gamma, sigma, maxAbs); u > contract {
		t.Errorf("%s: error %.1f units, contract %d", what, u, contract)
	}
}
