package peers

import (
	"math/rand/v2"
	"testing"

	"github.com/normgen/normgen/benchkit"
)

// Every peer built in passes the harness's check at sizes with and without
// vector tails, or declines the kernel.
func TestPeersMatchReference(t *testing.T) {
	for _, im := range All() {
		for _, op := range benchkit.Ops {
			for _, h := range []int{1, 7, 8, 33, 100, 768, 1000, 4096} {
				rows := 5
				f, why := im.Prepare(benchkit.Shape{Op: op, H: h, Rows: rows, Level: benchkit.L2})
				if f == nil {
					t.Logf("%s %s h=%d: n/a: %s", im.Name, op, h, why)
					continue
				}
				rng := rand.New(rand.NewPCG(uint64(h), 3))
				x := make([]float32, rows*h)
				benchkit.FillInput(rng, x, h)
				g, b := make([]float32, h), make([]float32, h)
				for i := range g {
					g[i], b[i] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
				}
				if op == benchkit.RMSNorm {
					b = nil
				}
				ref := benchkit.Reference(op, x, g, b, h)
				if e, err := benchkit.Check(op, f, make([]float32, len(x)), x, g, b, ref, h); err != nil {
					t.Errorf("%s %s h=%d: %v", im.Name, op, h, err)
				} else if e > 1e-5 {
					t.Logf("%s %s h=%d: max relative error %.2g", im.Name, op, h, e)
				}
			}
		}
	}
}
