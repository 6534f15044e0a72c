package audit

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/convnorm"
)

// grad64 is the float64 backward of one set of n values (a row, or a
// column at stride): u = g*dy, xhat = (x-mean)*rstd (x*rstd without a
// mean), dx = rstd*(u - mean(u) - xhat*mean(u*xhat)) (no mean(u) without
// a mean), with the contract's scale of each dx (README, "Gradients"),
// and each element's terms of dgamma (dy*xhat) and dbeta (dy).
type grad64 struct {
	dx, scale, dg, db []float64
}

func backward64(dy, x []float32, at func(i int) int, n int, mean, rstd float64, withMean bool, g func(i int) float64) grad64 {
	var r grad64
	// The magnitudes have the generated tests' subnormal floor, 2^-126.
	xhat, xm := make([]float64, n), make([]float64, n)
	var mu, mux, muAbs, muxAbs float64
	for i := range n {
		xhat[i] = float64(x[at(i)]) * rstd
		xm[i] = (math.Abs(float64(x[at(i)])) + 0x1p-126) * math.Abs(rstd)
		if withMean {
			xhat[i] = (float64(x[at(i)]) - mean) * rstd
			xm[i] = (math.Abs(float64(x[at(i)])-mean) + 0x1p-126) * math.Abs(rstd)
		}
		u := g(i) * float64(dy[at(i)])
		mu += u
		mux += u * xhat[i]
		muAbs += math.Abs(u) + 0x1p-126
		muxAbs += (math.Abs(u) + 0x1p-126) * xm[i]
		r.dg = append(r.dg, float64(dy[at(i)])*xhat[i])
		r.db = append(r.db, float64(dy[at(i)]))
	}
	mu, mux, muAbs, muxAbs = mu/float64(n), mux/float64(n), muAbs/float64(n), muxAbs/float64(n)
	if !withMean {
		mu, muAbs = 0, 0
	}
	for i := range n {
		u := g(i) * float64(dy[at(i)])
		r.dx = append(r.dx, rstd*(u-mu-xhat[i]*mux))
		r.scale = append(r.scale, math.Abs(rstd)*(math.Abs(u)+0x1p-126+muAbs+xm[i]*muxAbs)+0x1p-126)
	}
	return r
}

// gradOK reports whether got meets the contract for the float64 value v
// of scale m: a NaN where v is NaN, v's infinity where v is infinite,
// anything where v or m is beyond float32's range (a float32 partial
// result may overflow), and within 64 units of m otherwise.
func gradOK(got float32, v, m float64) bool {
	switch {
	case math.IsNaN(v):
		return got != got
	case math.IsInf(v, 0):
		return float64(got) == v
	case math.Abs(v) > math.MaxFloat32 || m > math.MaxFloat32:
		return true
	}
	return math.Abs(float64(got)-v) <= contract*0x1p-24*m
}

// sumOK checks a parameter gradient, the sum of terms, against the
// float64 sum within 64 units of the sum of their magnitudes.
func sumOK(got float32, terms []float64) (bool, float64) {
	var v, m float64
	for _, t := range terms {
		v += t
		m += math.Abs(t)
	}
	return gradOK(got, v, m), v
}

// hostileStats are saved statistics a caller may pass (the backward takes
// them as given): rstd 0, infinite, NaN, negative, subnormal or so large
// that the per-row coefficient leaves float32's range; a mean far from x
// or NaN; an infinite x. Each sets row r's mean and rstd (x and dy as
// drawn, around mean 1 and rstd in [0.5, 1.5)).
var hostileStats = []struct {
	name string
	set  func(x, dy []float32, mean, rstd *float32)
}{
	{"plain", func(_, _ []float32, _, _ *float32) {}},
	{"dy2^125", func(_, dy []float32, _, _ *float32) {
		for i := range dy {
			dy[i] *= 0x1p125
		}
	}},
	{"rstd0", func(_, _ []float32, _, rstd *float32) { *rstd = 0 }},
	{"rstd+Inf", func(_, _ []float32, _, rstd *float32) { *rstd = float32(math.Inf(1)) }},
	{"rstdNaN", func(_, _ []float32, _, rstd *float32) { *rstd = float32(math.NaN()) }},
	{"rstd-0.75", func(_, _ []float32, _, rstd *float32) { *rstd = -0.75 }},
	{"rstd1e-40", func(_, _ []float32, _, rstd *float32) { *rstd = 1e-40 }},
	{"rstd1e30", func(_, _ []float32, _, rstd *float32) { *rstd = 1e30 }},
	{"mean1e30", func(_, _ []float32, mean, _ *float32) { *mean = 1e30 }},
	{"mean1e20-rstd1e-20", func(_, _ []float32, mean, rstd *float32) { *mean, *rstd = 1e20, 1e-20 }},
	{"meanNaN", func(_, _ []float32, mean, _ *float32) { *mean = float32(math.NaN()) }},
	{"x+Inf", func(x, _ []float32, _, _ *float32) { x[len(x)/3] = float32(math.Inf(1)) }},
}

// TestBackwardHostileStats: LayerNorm's and RMSNorm's row backward with
// rows of each kind above side by side (row r of kind r mod kinds), at
// row counts around the 64-row chunks: Parallel and in place give the
// serial call's bits (the serial call adds the parameter gradients in
// the Rows kernel, Parallel in the Params kernel), and dx, dgamma and
// dbeta meet the contract against the float64 oracle, NaN and infinity
// included.
func TestBackwardHostileStats(t *testing.T) {
	type shape struct{ rows, h int }
	shapes := []shape{{1, 1}, {2, 1}, {11, 1}, {12, 3}, {63, 5}, {64, 64}, {65, 65}, {130, 127}, {22, 4097}}
	if testing.Short() {
		shapes = []shape{{1, 1}, {12, 3}, {65, 65}, {130, 127}}
	}
	for _, e := range bwdEntries {
		for _, s := range shapes {
			rng := rand.New(rand.NewSource(int64(s.rows*1000 + s.h)))
			c := newBwdCase(rng, s.rows, s.h, e.withMean, -1, -1)
			mean := make([]float32, s.rows)
			for r := range s.rows {
				k := hostileStats[r%len(hostileStats)]
				m := float32(1)
				k.set(c.x[r*s.h:(r+1)*s.h], c.dy[r*s.h:(r+1)*s.h], &m, &c.rstd[r])
				mean[r] = m
				if e.withMean {
					c.mean[r] = m
				}
			}
			what := fmt.Sprintf("%s rows=%d h=%d", e.name, s.rows, s.h)
			ref := e.call(c, s.h, false, false)
			for _, v := range [][2]bool{{true, false}, {false, true}, {true, true}} {
				if i := sameBits(e.call(c, s.h, v[0], v[1]), ref); i >= 0 {
					t.Errorf("%s: Parallel %v in place %v differs from the serial call at %d", what, v[0], v[1], i)
				}
			}
			dg, db := make([][]float64, s.h), make([][]float64, s.h)
			for r := range s.rows {
				o := backward64(c.dy, c.x, func(i int) int { return r*s.h + i }, s.h, float64(mean[r]), float64(c.rstd[r]), e.withMean,
					func(i int) float64 { return float64(c.gamma[i]) })
				for i := range s.h {
					if got := ref[r*s.h+i]; !gradOK(got, o.dx[i], o.scale[i]) {
						t.Errorf("%s row %d (%s) dx[%d] = %v, float64 %v (scale %g)", what, r, hostileStats[r%len(hostileStats)].name, i, got, o.dx[i], o.scale[i])
						break
					}
				}
				for i := range s.h {
					dg[i] = append(dg[i], o.dg[i])
					db[i] = append(db[i], o.db[i])
				}
			}
			n := s.rows * s.h
			for i := range s.h {
				if ok, v := sumOK(ref[n+i], dg[i]); !ok {
					t.Errorf("%s: dgamma[%d] = %v, float64 %v", what, i, ref[n+i], v)
				}
				if !e.withMean {
					continue
				}
				if ok, v := sumOK(ref[n+s.h+i], db[i]); !ok {
					t.Errorf("%s: dbeta[%d] = %v, float64 %v", what, i, ref[n+s.h+i], v)
				}
			}
		}
	}
}

// TestBatchNormBackwardGuardSums: BatchNorm's backward over [N, C] with
// columns whose per-column coefficients are each finite but sum past
// float32's range (the Columns form's merged guard sends them to float64),
// next to columns whose coefficients are Inf or NaN and plain ones, at N
// around the 64-line chunks: Parallel and in place give the serial bits,
// and dx, dgain and dbias meet the contract against the float64 oracle.
func TestBatchNormBackwardGuardSums(t *testing.T) {
	kinds := []string{"plain", "sum-overflows", "coef-Inf", "rstd-NaN", "dy-2^125"}
	ns, chs := []int{1, 2, 3, 63, 64, 65, 70}, []int{1, 5, 33, 1025}
	if testing.Short() {
		ns, chs = []int{1, 3, 64, 65}, []int{5, 1025}
	}
	for _, n := range ns {
		for _, ch := range chs {
			rng := rand.New(rand.NewSource(int64(n*10000 + ch)))
			dy, x := make([]float32, n*ch), make([]float32, n*ch)
			mean, rstd, gain := make([]float32, ch), make([]float32, ch), make([]float32, ch)
			for c := range ch {
				mean[c], rstd[c], gain[c] = 2, float32(0.5+rng.Float64()), float32(0.5+rng.Float64())
				for i := range n {
					dy[i*ch+c], x[i*ch+c] = float32(rng.NormFloat64()), float32(2+rng.NormFloat64())
				}
				switch kinds[c%len(kinds)] {
				case "sum-overflows":
					// xhat = -1, rstd 1/4: gain*mean(dy) = 3e38 and
					// -gain*mean(dy*xhat)*rstd = 7.5e37 sum past float32's
					// range, the contract's scale of dx (2.25e38) does not.
					mean[c], rstd[c], gain[c] = 0, 0.25, 1
					for i := range n {
						dy[i*ch+c], x[i*ch+c] = 3e38, -4
					}
				case "coef-Inf":
					rstd[c] = 1e30
				case "rstd-NaN":
					rstd[c] = float32(math.NaN())
				case "dy-2^125":
					for i := range n {
						dy[i*ch+c] = float32(0x1p125 * rng.NormFloat64())
					}
				}
			}
			run := func(parallel, inPlace bool) []float32 {
				d := append([]float32(nil), dy...)
				dx := make([]float32, len(d))
				if inPlace {
					dx = d
				}
				dgain, dbias := make([]float32, ch), make([]float32, ch)
				if parallel {
					convnorm.BatchNormTrainBackwardParallel(dx, dgain, dbias, d, x, mean, rstd, gain, ch, 1)
				} else {
					convnorm.BatchNormTrainBackward(dx, dgain, dbias, d, x, mean, rstd, gain, ch, 1)
				}
				return append(append(dx, dgain...), dbias...)
			}
			ref := run(false, false)
			what := fmt.Sprintf("%s BatchNormTrainBackward N=%d C=%d", convnorm.Implementation(), n, ch)
			for _, v := range [][2]bool{{true, false}, {false, true}, {true, true}} {
				if i := sameBits(run(v[0], v[1]), ref); i >= 0 {
					t.Errorf("%s: Parallel %v in place %v differs from the serial call at %d", what, v[0], v[1], i)
				}
			}
			for c := range ch {
				o := backward64(dy, x, func(i int) int { return i*ch + c }, n, float64(mean[c]), float64(rstd[c]), true,
					func(int) float64 { return float64(gain[c]) })
				kind := kinds[c%len(kinds)]
				for i := range n {
					if got := ref[i*ch+c]; !gradOK(got, o.dx[i], o.scale[i]) {
						t.Errorf("%s column %d (%s) dx[%d] = %v, float64 %v (scale %g)", what, c, kind, i, got, o.dx[i], o.scale[i])
						break
					}
				}
				if ok, v := sumOK(ref[n*ch+c], o.dg); !ok {
					t.Errorf("%s column %d (%s): dgain = %v, float64 %v", what, c, kind, ref[n*ch+c], v)
				}
				if ok, v := sumOK(ref[n*ch+ch+c], o.db); !ok {
					t.Errorf("%s column %d (%s): dbias = %v, float64 %v", what, c, kind, ref[n*ch+ch+c], v)
				}
			}
		}
	}
}
