package algo

import (
	"math"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// TestLayouts checks that each axis builds its layout and that the IR's
// meaning (ir.EvalShape) matches the formulas in float64 on a small case.
func TestLayouts(t *testing.T) {
	const n, c, l = 3, 4, 5 // images, channels, positions
	x := make([]float32, n*c*l)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*1.7)*3 + float64(i%7))
	}
	t.Run("channels", func(t *testing.T) {
		k, err := Build(spec.Kernel{Name: "CF", Axis: "channels", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true})
		if err != nil || k.Layout != ir.Columns {
			t.Fatalf("%v, layout %v", err, k)
		}
		gamma, beta := []float32{1, 2, 3, 4}, []float32{-1, 0, 1, 2}
		img := x[c*l : 2*c*l] // image 1
		dst := make([]float32, c*l)
		if got := ir.EvalShape(k, ir.Shape{H: c, Stride: l}, l, [][]float32{dst, img, gamma, beta}); got != l {
			t.Fatalf("completed %d of %d", got, l)
		}
		for p := 0; p < l; p++ {
			var mu, v float64
			for ch := 0; ch < c; ch++ {
				mu += float64(img[ch*l+p]) / c
			}
			for ch := 0; ch < c; ch++ {
				d := float64(img[ch*l+p]) - mu
				v += d * d / c
			}
			for ch := 0; ch < c; ch++ {
				want := (float64(img[ch*l+p])-mu)/math.Sqrt(v+1e-5)*float64(gamma[ch]) + float64(beta[ch])
				if math.Abs(float64(dst[ch*l+p])-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("position %d channel %d: %g, want %g", p, ch, dst[ch*l+p], want)
				}
			}
		}
	})
	for _, conv := range []string{"pytorch", "onnx"} {
		t.Run("batch/"+conv, func(t *testing.T) {
			const m = 0.25
			k, err := Build(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
				AffinePerRow: true, SaveStats: true, Running: &spec.Running{Momentum: m, Convention: conv}})
			if err != nil || k.Layout != ir.Segments {
				t.Fatalf("%v", err)
			}
			dst, mean, rstd := make([]float32, n*c*l), make([]float32, c), make([]float32, c)
			gain, bias := []float32{1, 2, 3, 4}, []float32{-1, 0, 1, 2}
			rm, rv := []float32{0, 1, 2, 3}, []float32{1, 1, 2, 2}
			rm0, rv0 := append([]float32{}, rm...), append([]float32{}, rv...)
			arrays := [][]float32{dst, mean, rstd, x, gain, bias, rm, rv}
			shape := ir.Shape{Segs: n, SegLen: l, SegStride: c * l, RowStride: l}
			if got := ir.EvalShape(k, shape, c, arrays); got != c {
				t.Fatalf("completed %d of %d", got, c)
			}
			for ch := 0; ch < c; ch++ {
				var mu, v float64
				at := func(img, p int) float64 { return float64(x[img*c*l+ch*l+p]) }
				for i := 0; i < n; i++ {
					for p := 0; p < l; p++ {
						mu += at(i, p) / (n * l)
					}
				}
				for i := 0; i < n; i++ {
					for p := 0; p < l; p++ {
						v += (at(i, p) - mu) * (at(i, p) - mu) / (n * l)
					}
				}
				wantRM, wantRV := (1-m)*float64(rm0[ch])+m*mu, (1-m)*float64(rv0[ch])+m*v*n*l/(n*l-1)
				if conv == "onnx" {
					wantRM, wantRV = m*float64(rm0[ch])+(1-m)*mu, m*float64(rv0[ch])+(1-m)*v
				}
				checks := []struct {
					what      string
					got, want float64
				}{
					{"mean", float64(mean[ch]), mu}, {"rstd", float64(rstd[ch]), 1 / math.Sqrt(v+1e-5)},
					{"running mean", float64(rm[ch]), wantRM}, {"running var", float64(rv[ch]), wantRV},
					{"y[1,c,2]", float64(dst[1*c*l+ch*l+2]), (at(1, 2)-mu)/math.Sqrt(v+1e-5)*float64(gain[ch]) + float64(bias[ch])},
				}
				for _, ck := range checks {
					if math.Abs(ck.got-ck.want) > 1e-5*(1+math.Abs(ck.want)) {
						t.Errorf("channel %d %s: %g, want %g", ch, ck.what, ck.got, ck.want)
					}
				}
			}
		})
	}
	t.Run("groups", func(t *testing.T) {
		const groups = 2
		k, err := Build(spec.Kernel{Name: "GN", Axis: "groups", Groups: groups, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true})
		if err != nil || k.Layout != ir.Segments {
			t.Fatalf("%v", err)
		}
		gamma, beta := []float32{1, 2, 3, 4}, []float32{-1, 0, 1, 2}
		img := x[2*c*l : 3*c*l]
		dst := make([]float32, c*l)
		per := c / groups
		shape := ir.Shape{Segs: per, SegLen: l, SegStride: l, RowStride: per * l}
		if got := ir.EvalShape(k, shape, groups, [][]float32{dst, img, gamma, beta}); got != groups {
			t.Fatalf("completed %d", got)
		}
		for g := 0; g < groups; g++ {
			vals := img[g*per*l : (g+1)*per*l]
			var mu, v float64
			for _, e := range vals {
				mu += float64(e) / float64(len(vals))
			}
			for _, e := range vals {
				v += (float64(e) - mu) * (float64(e) - mu) / float64(len(vals))
			}
			for i, e := range vals {
				ch := g*per + i/l
				want := (float64(e)-mu)/math.Sqrt(v+1e-5)*float64(gamma[ch]) + float64(beta[ch])
				if got := float64(dst[g*per*l+i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("group %d element %d: %g, want %g", g, i, got, want)
				}
			}
		}
	})
}
