package audit

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/out/layernorm"
	"github.com/normgen/normgen/out/rmsnorm"
)

// bwdCase are the inputs of a row backward: dy, x, the forward's saved
// statistics (mean nil without one) and gamma; bad marks a row given a
// NaN in dy (-1: none) and big a row whose rstd is so large that the
// float32 form's guard hands it to the float64 form (-1: none).
type bwdCase struct {
	dy, x, mean, rstd, gamma []float32
}

func newBwdCase(rng *rand.Rand, rows, h int, withMean bool, bad, big int) bwdCase {
	c := bwdCase{dy: make([]float32, rows*h), x: make([]float32, rows*h), rstd: make([]float32, rows), gamma: make([]float32, h)}
	for i := range c.dy {
		c.dy[i] = float32(rng.NormFloat64())
		c.x[i] = float32(1 + rng.NormFloat64())
	}
	for i := range c.gamma {
		c.gamma[i] = float32(0.5 + rng.Float64())
	}
	if withMean {
		c.mean = make([]float32, rows)
	}
	for r := range rows {
		c.rstd[r] = float32(0.5 + rng.Float64())
		if withMean {
			c.mean[r] = 1
		}
	}
	if bad >= 0 && bad < rows {
		c.dy[bad*h+h/2] = float32(math.NaN())
	}
	if big >= 0 && big < rows {
		c.rstd[big] = 1e30 // its k = -mean(u*xhat)*rstd leaves float32's range
	}
	return c
}

// bwdEntry runs a backward entry point: serial or Parallel, in place (dx
// the very same slice as dy) or not; it returns dx and the parameter
// gradients, appended.
type bwdEntry struct {
	name     string
	withMean bool
	call     func(c bwdCase, h int, parallel, inPlace bool) []float32
}

var bwdEntries = []bwdEntry{
	{"RMSNormStatsBackwardAny", false, func(c bwdCase, h int, parallel, inPlace bool) []float32 {
		dy := append([]float32(nil), c.dy...)
		dx := make([]float32, len(dy))
		if inPlace {
			dx = dy
		}
		dgamma := make([]float32, h)
		for i := range dgamma {
			dgamma[i] = 7 // overwritten
		}
		if parallel {
			rmsnorm.RMSNormStatsBackwardAnyParallel(dx, dgamma, dy, c.x, c.rstd, c.gamma, h)
		} else {
			rmsnorm.RMSNormStatsBackwardAny(dx, dgamma, dy, c.x, c.rstd, c.gamma, h)
		}
		return append(dx, dgamma...)
	}},
	{"LayerNormStatsBackwardAny", true, func(c bwdCase, h int, parallel, inPlace bool) []float32 {
		dy := append([]float32(nil), c.dy...)
		dx := make([]float32, len(dy))
		if inPlace {
			dx = dy
		}
		dgamma, dbeta := make([]float32, h), make([]float32, h)
		if parallel {
			layernorm.LayerNormStatsBackwardAnyParallel(dx, dgamma, dbeta, dy, c.x, c.mean, c.rstd, c.gamma, h)
		} else {
			layernorm.LayerNormStatsBackwardAny(dx, dgamma, dbeta, dy, c.x, c.mean, c.rstd, c.gamma, h)
		}
		return append(append(dx, dgamma...), dbeta...)
	}},
}

// TestBackwardSerialParallelInPlace: serial and Parallel, in place and
// not, give the same bits (the doc comments' promise), for row counts
// around the sums' chunks (64 rows, the blocks) and a NaN row or a row
// the guard rejects anywhere; a NaN row makes dgamma NaN and nothing
// else of the other rows.
func TestBackwardSerialParallelInPlace(t *testing.T) {
	type shape struct{ rows, h int }
	shapes := []shape{{1, 1}, {2, 1}, {3, 63}, {63, 64}, {64, 65}, {65, 65}, {130, 127}, {17, 4096}, {33, 4097}, {200, 64}}
	if testing.Short() {
		shapes = []shape{{1, 1}, {3, 63}, {65, 65}, {130, 127}, {17, 4096}}
	}
	for _, e := range bwdEntries {
		for _, s := range shapes {
			for _, special := range [][2]int{{-1, -1}, {0, -1}, {s.rows - 1, -1}, {-1, s.rows / 2}, {s.rows / 2, s.rows - 1}} {
				rng := rand.New(rand.NewSource(int64(s.rows*10000 + s.h)))
				c := newBwdCase(rng, s.rows, s.h, e.withMean, special[0], special[1])
				what := fmt.Sprintf("%s rows=%d h=%d nan row %d big row %d", e.name, s.rows, s.h, special[0], special[1])
				ref := e.call(c, s.h, false, false)
				for _, v := range []struct {
					name              string
					parallel, inPlace bool
				}{{"Parallel", true, false}, {"in place", false, true}, {"Parallel in place", true, true}} {
					got := e.call(c, s.h, v.parallel, v.inPlace)
					if i := sameBits(got, ref); i >= 0 {
						t.Errorf("%s: %s differs from the serial call at %d (of %d dx): %v, want %v", what, v.name, i, s.rows*s.h, got[i], ref[i])
					}
				}
				checkBwdNaN(t, what, ref, s.rows, s.h, special[0])
			}
		}
	}
}

// checkBwdNaN: dx is NaN in the NaN row only; the parameter gradients
// (after dx) are NaN everywhere where a row has a NaN (the NaN enters
// every column's dy*xhat only at its own column: at least that column).
func checkBwdNaN(t *testing.T, what string, out []float32, rows, h, bad int) {
	t.Helper()
	for r := range rows {
		nan := 0
		for _, v := range out[r*h : (r+1)*h] {
			if v != v {
				nan++
			}
		}
		switch {
		case r == bad && nan != h:
			t.Errorf("%s: row %d has a NaN, its dx has %d NaNs of %d", what, r, nan, h)
		case r != bad && nan != 0:
			t.Errorf("%s: row %d has no NaN, its dx has %d", what, r, nan)
		}
	}
	if bad >= 0 && bad < rows {
		if v := out[rows*h+h/2]; v == v {
			t.Errorf("%s: dgamma[%d] = %v, want NaN (row %d's NaN enters it)", what, h/2, v, bad)
		}
	}
}
