package peers

import (
	"math/rand/v2"
	"testing"

	"github.com/normgen/normgen/benchkit"
)

// Every peer built in passes the harness's check (benchkit.Verify, the
// check Run makes before timing) at sizes with and without vector tails,
// for every op, the fused residual ones included, or declines the kernel.
func TestPeersMatchReference(t *testing.T) {
	for _, im := range All() {
		for _, op := range benchkit.Ops {
			for _, h := range []int{1, 7, 8, 33, 100, 768, 1000, 4096} {
				s := benchkit.OpShape(op, h, 5, benchkit.L2)
				e, why, err := benchkit.Verify(im, s, uint64(h))
				switch {
				case why != "":
					t.Logf("%s %s h=%d: n/a: %s", im.Name, op, h, why)
				case err != nil:
					t.Errorf("%s %s h=%d: %v", im.Name, op, h, err)
				case e > 1e-5:
					t.Logf("%s %s h=%d: max relative error %.2g", im.Name, op, h, e)
				}
			}
		}
	}
}

// The naive peer and the add loops of the unfused peers compute the
// residual ops (not n/a), at every length.
func TestResidualPeers(t *testing.T) {
	for _, op := range []benchkit.Op{benchkit.AddRMSNorm, benchkit.AddLayerNorm, benchkit.DeepNorm} {
		for _, h := range []int{1, 31, 64, 100} {
			s := benchkit.OpShape(op, h, 3, benchkit.L2)
			if _, why, err := benchkit.Verify(Naive, s, 2); why != "" || err != nil {
				t.Errorf("naive %s h=%d: %s %v", op, h, why, err)
			}
		}
	}
	for _, isa := range []string{"avx512", "avx2", "neon", "purego"} {
		add, about := Add(isa)
		if about == "" {
			t.Errorf("%s: the add loop is not described", isa)
		}
		for _, n := range []int{0, 1, 15, 16, 17, 100} {
			x, f, sum := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], f[i] = float32(i)+0.5, float32(3*i)-2
			}
			add(sum, x, f, 2.5)
			for i := range sum {
				if want := 2.5*x[i] + f[i]; sum[i] != want {
					t.Fatalf("%s n=%d: sum[%d] = %g, want %g", isa, n, i, sum[i], want)
				}
			}
		}
	}
}

// Every peer built in passes the harness's check on channels-first
// BatchNorm shapes, or declines them.
func TestPeersMatchReferenceNCL(t *testing.T) {
	testNCL(t, All())
}

// testNCL checks impls on BatchNormNCL shapes with and without vector tails.
func testNCL(t *testing.T, impls []benchkit.Impl) {
	for _, d := range [][3]int{{2, 3, 5}, {3, 1, 17}, {4, 16, 64}, {2, 64, 49}, {5, 7, 1}} {
		s := BatchNormNCL(d[0], d[1], d[2], benchkit.L2)
		for _, im := range impls {
			f, why := im.Prepare(s)
			if f == nil {
				t.Logf("%s %s: n/a: %s", im.Name, s.Label(), why)
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(s.H), 5))
			x := make([]float32, s.Rows*s.H)
			benchkit.FillInput(rng, x, d[2])
			g, b := make([]float32, s.H), make([]float32, s.H)
			for i := range g {
				g[i], b[i] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
			}
			ref := s.Ref(x, g, b, s.H)
			if _, err := benchkit.Check(s.Op, f, make([]float32, len(x)), x, g, b, ref, s.H); err != nil {
				t.Errorf("%s %s N=%d: %v", im.Name, s.Label(), s.Rows, err)
			}
		}
	}
}

// A BatchNorm whose saved statistics are wrong fails the check.
func TestStatsCheckedOnce(t *testing.T) {
	mean, rstd := make([]float32, 3), make([]float32, 3)
	f := StatsCheckedOnce(func(dst, x, gamma, beta []float32) {
		naiveBatchNormNCL(dst, x, gamma, beta, mean, rstd, 3, 2, 1e-5)
		rstd[1] *= 1.01
	}, 3, 2, 1e-5, func() ([]float32, []float32, []float32) { return mean, rstd, nil })
	s := BatchNormNCL(4, 3, 2, benchkit.L2)
	x := make([]float32, 24)
	benchkit.FillInput(rand.New(rand.NewPCG(1, 2)), x, 2)
	g, b := []float32{1, 1, 1, 1, 1, 1}, make([]float32, 6)
	if _, err := benchkit.Check(s.Op, f, make([]float32, 24), x, g, b, s.Ref(x, g, b, s.H), s.H); err == nil {
		t.Fatal("a wrong saved rstd passed the check")
	} else {
		t.Log(err)
	}
}
