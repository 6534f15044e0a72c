package peers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/normgen/normgen/benchkit"
	"github.com/normgen/normgen/out/halfnorm"
)

// benchkit's conversions agree bit for bit with the generated package's:
// every bit pattern widened, every widened value and random float32
// (exact ties included) rounded back.
func TestHalfConversions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, st := range []string{benchkit.BF16, benchkit.F16} {
		toG, fromG := halfnorm.BF16FromFloat32, halfnorm.Float32FromBF16
		if st == benchkit.F16 {
			toG, fromG = halfnorm.F16FromFloat32, halfnorm.Float32FromF16
		}
		bits := make([]uint16, 1<<16)
		for i := range bits {
			bits[i] = uint16(i)
		}
		wide := make([]float32, len(bits))
		fromG(wide, bits)
		for i, b := range bits {
			if got := benchkit.FromHalf(st, b); math.Float32bits(got) != math.Float32bits(wide[i]) {
				t.Fatalf("%s: FromHalf(%#04x) = %#08x, generated %#08x", st, b, math.Float32bits(got), math.Float32bits(wide[i]))
			}
		}
		src := append([]float32{}, wide...)
		for range 1 << 16 {
			src = append(src, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64()*1e4))
			// a tie: the bits just below the format's last kept bit are 10...0
			f := math.Float32bits(float32(rng.NormFloat64()))
			src = append(src, math.Float32frombits(f&^0xffff|0x8000), math.Float32frombits(f&^0x1fff|0x1000))
		}
		want := make([]uint16, len(src))
		toG(want, src)
		for i, f := range src {
			got := benchkit.ToHalf(st, f)
			if f != f {
				if benchkit.FromHalf(st, got) == benchkit.FromHalf(st, got) {
					t.Fatalf("%s: ToHalf(NaN %#08x) = %#04x, not a NaN", st, math.Float32bits(f), got)
				}
				continue
			}
			if got != want[i] {
				t.Fatalf("%s: ToHalf(%g = %#08x) = %#04x, generated %#04x", st, f, math.Float32bits(f), got, want[i])
			}
		}
	}
}

// The backward oracle agrees with central finite differences of the
// forward in float64: dx of sum(dy*y) with respect to x, and dgamma, dbeta.
func TestBackwardOracleFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type cfg struct {
		s    benchkit.Shape
		c, l int // BatchNorm's channels and positions
	}
	cases := []cfg{
		{s: BackwardShape(benchkit.LayerNorm, 6, 3, benchkit.L2)},
		{s: BackwardShape(benchkit.RMSNorm, 5, 2, benchkit.L2)},
		{s: BackwardShape(benchkit.BatchNorm, 3, 4, benchkit.L2), c: 3, l: 1},
		{s: BatchNormBackwardNCL(2, 3, 4, benchkit.L2), c: 3, l: 4},
	}
	for _, tc := range cases {
		s := tc.s
		n := s.H * s.Rows
		np := s.H
		if tc.c > 0 {
			np = tc.c
		}
		x, dy, gamma, beta := make([]float64, n), make([]float32, n), make([]float64, np), make([]float64, np)
		for i := range x {
			x[i] = float64(float32(rng.NormFloat64()*2 + 1))
			dy[i] = float32(rng.NormFloat64())
		}
		for i := range gamma {
			gamma[i], beta[i] = float64(float32(0.5+rng.Float64())), float64(float32(rng.NormFloat64()))
		}
		eps := float64(s.Epsilon())
		// loss is sum(dy*y) of the forward in float64.
		loss := func(x, gamma, beta []float64) float64 {
			y := forward64(s, tc.c, tc.l, x, gamma, beta, eps)
			sum := 0.0
			for i := range y {
				sum += float64(dy[i]) * y[i]
			}
			return sum
		}
		a := &benchkit.Args{In: [][]float32{dy, f32(x)}, Gamma: f32(gamma), Beta: f32(beta)}
		for range s.StatInputs {
			a.StatIn = append(a.StatIn, make([]float32, max(s.StatInputLen, s.Rows)))
		}
		if tc.c > 0 {
			for i := range a.StatIn {
				a.StatIn[i] = a.StatIn[i][:tc.c]
			}
		}
		s.Derive(a)
		out, stats := s.Oracle(a, s.H)
		const d = 1e-6
		fd := func(v []float64, i int, f func() float64) float64 {
			old := v[i]
			v[i] = old + d
			up := f()
			v[i] = old - d
			down := f()
			v[i] = old
			return (up - down) / (2 * d)
		}
		at := func() float64 { return loss(x, gamma, beta) }
		check := func(what string, i int, got, want float64) {
			// the oracle uses the statistics rounded to float32
			if math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("%s: %s[%d] = %g, finite differences %g", s.Label(), what, i, got, want)
			}
		}
		for i := range x {
			check("dx", i, out[0][i], fd(x, i, at))
		}
		for i := range gamma {
			check("dgamma", i, stats[0][i], fd(gamma, i, at))
			if len(stats) > 1 {
				check("dbeta", i, stats[1][i], fd(beta, i, at))
			}
		}
	}
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// forward64 is the forward of a backward shape in float64: rows of H
// (LayerNorm, RMSNorm) or BatchNorm over x[N, c, l].
func forward64(s benchkit.Shape, c, l int, x, gamma, beta []float64, eps float64) []float64 {
	y := make([]float64, len(x))
	norm := func(idx []int, withMean bool, param func(i int) int) {
		mu, ss := 0.0, 0.0
		if withMean {
			for _, i := range idx {
				mu += x[i]
			}
			mu /= float64(len(idx))
		}
		for _, i := range idx {
			ss += (x[i] - mu) * (x[i] - mu)
		}
		r := 1 / math.Sqrt(ss/float64(len(idx))+eps)
		for _, i := range idx {
			y[i] = (x[i]-mu)*r*gamma[param(i)] + beta[param(i)]
		}
	}
	if c == 0 {
		for r := 0; r < s.Rows; r++ {
			var idx []int
			for j := range s.H {
				idx = append(idx, r*s.H+j)
			}
			norm(idx, s.Op == benchkit.LayerNorm, func(i int) int { return i % s.H })
		}
		if s.Op == benchkit.RMSNorm {
			for i := range y {
				y[i] -= beta[i%s.H] // RMSNorm has no shift
			}
		}
		return y
	}
	for ch := range c {
		var idx []int
		for i := range x {
			if i/l%c == ch {
				idx = append(idx, i)
			}
		}
		norm(idx, true, func(i int) int { return i / l % c })
	}
	return y
}

// The peers with backward and half-storage kernels pass the harness's
// check on them; the others decline.
func TestBackwardAndHalfPeers(t *testing.T) {
	var shapes []benchkit.Shape
	for _, h := range []int{1, 7, 33, 100} {
		shapes = append(shapes, BackwardShape(benchkit.LayerNorm, h, 5, benchkit.L2), BackwardShape(benchkit.RMSNorm, h, 5, benchkit.L2),
			BackwardShape(benchkit.BatchNorm, h, 6, benchkit.L2))
		for _, st := range []string{benchkit.BF16, benchkit.F16} {
			for _, op := range []benchkit.Op{benchkit.LayerNorm, benchkit.RMSNorm, benchkit.AddRMSNorm} {
				shapes = append(shapes, HalfShape(st, op, h, 5, benchkit.L2))
			}
		}
	}
	shapes = append(shapes, BatchNormBackwardNCL(3, 4, 5, benchkit.L2), BatchNormBackwardNCL(2, 16, 49, benchkit.L2))
	for _, im := range All() {
		for _, s := range shapes {
			_, why, err := benchkit.Verify(im, s, uint64(s.H))
			switch {
			case err != nil:
				t.Errorf("%s %s: %v", im.Name, s, err)
			case why != "" && im.Name == "naive":
				t.Errorf("naive %s: n/a: %s", s, why)
			case why != "":
				t.Logf("%s %s: n/a: %s", im.Name, s, why)
			}
		}
	}
}
