package normgen

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/normgen/normgen/bench/peers"
	"github.com/normgen/normgen/benchkit"
)

// normgen's kernels built in (-tags normgen_<isa>) pass the harness's check,
// their saved BatchNorm statistics included, at sizes with and without
// vector tails.
func TestMatchReference(t *testing.T) {
	impls := Impls()
	if len(impls) == 0 {
		t.Skip("no generated package built in (scripts/bench.sh generates them; -tags normgen_<isa>)")
	}
	for _, im := range impls {
		if strings.HasSuffix(im.Name, "-unfused") {
			continue // TestUnfused
		}
		for _, op := range benchkit.Ops {
			for _, h := range []int{1, 7, 16, 33, 100, 768, 1000, 4096} {
				s := benchkit.OpShape(op, h, 5, benchkit.L2)
				if _, why, err := benchkit.Verify(im, s, uint64(h)); why != "" || err != nil {
					t.Errorf("%s %s h=%d: n/a %q, %v", im.Name, op, h, why, err)
				}
			}
		}
		for _, d := range [][3]int{{2, 3, 5}, {3, 1, 17}, {4, 16, 64}, {2, 64, 49}} {
			s := peers.BatchNormNCL(d[0], d[1], d[2], benchkit.L2)
			f, why := im.Prepare(s)
			if f == nil {
				t.Errorf("%s %s: n/a: %s", im.Name, s.Label(), why)
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(s.H), 5))
			x := make([]float32, s.Rows*s.H)
			benchkit.FillInput(rng, x, d[2])
			g, b := make([]float32, s.H), make([]float32, s.H)
			for i := range g {
				g[i], b[i] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
			}
			if _, err := benchkit.Check(s.Op, f, make([]float32, len(x)), x, g, b, s.Ref(x, g, b, s.H), s.H); err != nil {
				t.Errorf("%s %s N=%d: %v", im.Name, s.Label(), s.Rows, err)
			}
		}
	}
}

// The unfused peers compute the residual ops, at sizes with and without
// vector tails, and have nothing else.
func TestUnfused(t *testing.T) {
	n := 0
	for _, im := range Impls() {
		if !strings.HasSuffix(im.Name, "-unfused") {
			continue
		}
		n++
		for _, op := range benchkit.Ops {
			for _, h := range []int{1, 33, 768, 1000} {
				s := benchkit.OpShape(op, h, 4, benchkit.L2)
				_, why, err := benchkit.Verify(im, s, 7)
				if _, residual := op.Residual(); residual != (why == "") || err != nil {
					t.Errorf("%s %s h=%d: n/a %q, %v", im.Name, op, h, why, err)
				}
			}
		}
	}
	if n != len(packages) {
		t.Errorf("%d unfused implementations for %d packages", n, len(packages))
	}
}
