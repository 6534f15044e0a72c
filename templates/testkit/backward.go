package testkit

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The helpers of the tests of the backward entry points live in normgen's
// templates/testkit/backward.go; the generator appends them to each
// <stem>_backward_test.go. Backward passes exist only beside kernels over
// rows, so they share that file's helpers (args, families, expectPanic,
// floatsOf, parallelMinBytes).

// Extents of a backward entry point's arrays.
const (
	extElement = iota // rows*h
	extColumn         // h
	extRow            // rows
)

type bwdKernel struct {
	name         string // the entry points' prefix, e.g. LayerNormBackward
	mean         bool
	l2           bool // the statistic is the sum of squares
	noStat       bool
	scale, shift bool
	affinePerRow bool
	residual     bool
	storeSum     bool // s comes in as the forward's sum output, with its gradient dsum
	eps          float64
	scaleOffset  float64
	alpha        float64 // as the kernel rounds it: float32
	storage      string  // the row arrays' format: "f32", or "bf16" or "f16" (dy, x, dx... are uint16 bits)
	sizes        []int
	arrays       []string
	extents      []int
	outs         []bool
	fixed        func(h int) func(a [][]float32)
	anySize      func(a [][]float32, h int)
	parallel     func(h int, anySize bool) func(a [][]float32)
	pureGo       func(a [][]float32, rows, h int)
	// blockRows is the rows of the blocked backward's blocks at size h
	// (nil: the entry points run no blocks), wholeRows the most rows of a
	// call without blocks; blocks, the generator's choice at each of sizes.
	blockRows func(h int) int
	wholeRows func(h int) int
	blocks    []int
}

func (k *bwdKernel) index(name string) int {
	for i, n := range k.arrays {
		if n == name {
			return i
		}
	}
	return -1
}

func (k *bwdKernel) get(c *args, name string) []float32 {
	if i := k.index(name); i >= 0 {
		return c.a[i]
	}
	return nil
}

// newArgs allocates the arrays of a call at random unaligned offsets
// (aligned with rng nil, for benchmarks), fenced by sentinels (which the
// outputs also start as).
func (k *bwdKernel) newArgs(rows, h int, rng *rand.Rand) *args {
	c := &args{}
	for _, e := range k.extents {
		n := rows * h
		switch e {
		case extColumn:
			n = h
		case extRow:
			n = rows
		}
		off := 0
		if rng != nil {
			off = 1 + rng.IntN(7)
		}
		buf := make([]float32, off+n+margin)
		for i := range buf {
			buf[i] = sentinel
		}
		c.buffers = append(c.buffers, buf)
		c.offsets = append(c.offsets, off)
		c.a = append(c.a, buf[off:off+n:off+n])
	}
	return c
}

// fill sets the inputs: the normalized input from the family (x, or the
// forward's sum), f and the gradients normal, the parameters around 1,
// and mean and rstd as the forward saves them: computed in float64 from s
// as the kernel forms it, rounded to float32.
func (k *bwdKernel) fill(c *args, fam family, rows, h int, rng *rand.Rand) {
	for i, name := range k.arrays {
		if k.outs[i] {
			continue
		}
		a := c.a[i]
		for j := range a {
			switch name {
			case "x", "sum":
				a[j] = fam.value(rng, j/h)
			case "f":
				a[j] = float32(rng.NormFloat64())
				if fam.constant {
					a[j] = 0
				}
			case "gamma", "gain":
				a[j] = float32(1 + 0.5*rng.NormFloat64())
			default: // dy, dsum
				a[j] = float32(rng.NormFloat64())
			}
		}
	}
	k.quantize(c)
	k.setStats(c, rows, h)
}

// quantize rounds the row inputs (dy, x, f, sum, dsum) to the storage
// format: the float32 record then holds exactly what the kernels read,
// and the oracle and the saved statistics see the decoded values.
func (k *bwdKernel) quantize(c *args) {
	f, ok := halfFormats[k.storage]
	if !ok {
		return
	}
	for i, e := range k.extents {
		if e == extElement && !k.outs[i] {
			for j, v := range c.a[i] {
				c.a[i][j] = float32(f.decode(f.encode(float64(v))))
			}
		}
	}
}

// sOf is row r's normalized input as the kernel forms it in float32.
func (k *bwdKernel) sOf(c *args, r, h int) []float64 {
	s := make([]float64, h)
	x, f := k.get(c, "x"), k.get(c, "f")
	if k.storeSum {
		x, f = k.get(c, "sum"), nil
	}
	for i := range s {
		v := x[r*h+i]
		if f != nil {
			if k.alpha != 1 {
				v = float32(k.alpha) * v
			}
			v += f[r*h+i]
		}
		s[i] = float64(v)
	}
	return s
}

// setStats writes mean and rstd of every row, as the forward saves them.
func (k *bwdKernel) setStats(c *args, rows, h int) {
	mean, rstd := k.get(c, "mean"), k.get(c, "rstd")
	for r := 0; r < rows; r++ {
		mu, variance := statsOf(k.sOf(c, r, h), k.mean, k.l2)
		if mean != nil {
			mean[r] = float32(mu)
		}
		if rstd != nil {
			rstd[r] = float32(1 / math.Sqrt(variance+k.eps))
		}
	}
}

// statsOf is the forward's mean (0 without) and statistic of s, in float64.
func statsOf(s []float64, withMean, l2 bool) (mu, variance float64) {
	if withMean {
		for _, v := range s {
			mu += v
		}
		mu /= float64(len(s))
	}
	for _, v := range s {
		variance += (v - mu) * (v - mu)
	}
	if !l2 {
		variance /= float64(len(s))
	}
	return mu, variance
}

// bwdInputs are a call's inputs in float64, by name, and its shape.
type bwdInputs struct {
	rows, h int
	a       map[string][]float64
}

func (k *bwdKernel) inputs64(c *args, rows, h int) bwdInputs {
	in := bwdInputs{rows: rows, h: h, a: map[string][]float64{}}
	for i, name := range k.arrays {
		if k.outs[i] {
			continue
		}
		v := make([]float64, len(c.a[i]))
		for j, x := range c.a[i] {
			v[j] = float64(x)
		}
		in.a[name] = v
	}
	return in
}

// bwdReference is the oracle's gradients and, for each value, the
// magnitude the contract scales its error by: the sum of the absolute
// values of the terms that make it up. nonFinite marks the values that may
// be NaN or an infinity either way: an infinite dy times an xhat whose
// float64 value lies within the rounding of the float32 residual sum of
// zero (a row of one, s - mean = 0 exactly in float32), so that 0*Inf
// (NaN) and tiny*Inf (an infinity) are both right.
type bwdReference struct {
	want, mag map[string][]float64
	nonFinite map[string][]bool
}

// nanAgrees reports whether v's NaN-ness matches the oracle's value j of
// name, where the oracle's value is not finite.
func (ref bwdReference) nanAgrees(name string, j int, v float32) bool {
	if f := ref.nonFinite[name]; f != nil && f[j] && (math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)) {
		return true
	}
	return math.IsNaN(ref.want[name][j]) == math.IsNaN(float64(v))
}

// oracle evaluates the backward formulas (docs/math.md) in float64 from
// the call's inputs, mean and rstd as given:
//
//	xhat = (s - mean)*rstd;  u = g*dy
//	ds = rstd*(u - mean(u) - xhat*c*sum(u*xhat)) + dsum   (c = 1/h, l2: 1)
//	dx = alpha*ds;  df = ds;  dgamma = sum_rows dy*xhat;  dbeta = sum_rows dy
func (k *bwdKernel) oracle(in bwdInputs) bwdReference {
	rows, h := in.rows, in.h
	ref := bwdReference{want: map[string][]float64{}, mag: map[string][]float64{}, nonFinite: map[string][]bool{}}
	out := func(name string, n int) ([]float64, []float64) {
		if k.index(name) < 0 {
			return nil, nil
		}
		ref.want[name], ref.mag[name], ref.nonFinite[name] = make([]float64, n), make([]float64, n), make([]bool, n)
		return ref.want[name], ref.mag[name]
	}
	dx, dxM := out("dx", rows*h)
	df, dfM := out("df", rows*h)
	dgamma, dgammaM := out("dgamma", h)
	dbeta, dbetaM := out("dbeta", h)
	dgain, dgainM := out("dgain", rows)
	dbias, dbiasM := out("dbias", rows)
	dy, dsum := in.a["dy"], in.a["dsum"]
	c := 1 / float64(h)
	if k.l2 {
		c = 1
	}
	for r := 0; r < rows; r++ {
		mu, rs := 0.0, 1.0
		if k.mean {
			mu = in.a["mean"][r]
		}
		if !k.noStat {
			rs = in.a["rstd"][r]
		}
		xhat, xm, u, um := make([]float64, h), make([]float64, h), make([]float64, h), make([]float64, h)
		var sumU, sumUM, sumUX, sumUXM float64
		ambiguous := make([]bool, h) // see bwdReference.nonFinite
		rowAmbiguous := false
		for i := 0; i < h; i++ {
			var s, resid float64
			switch {
			case k.storeSum:
				s = in.a["sum"][r*h+i]
			case k.residual:
				x, f := in.a["x"][r*h+i], in.a["f"][r*h+i]
				s, resid = k.alpha*x+f, math.Abs(k.alpha*x)+math.Abs(f)
			default:
				s = in.a["x"][r*h+i]
			}
			xhat[i] = (s - mu) * rs
			if resid > 0 && math.IsInf(dy[r*h+i], 0) && math.Abs(s-mu) <= (math.Abs(s)+resid)*0x1p-22 {
				ambiguous[i], rowAmbiguous = true, true
			}
			// The float32 s - mean errs by up to its own magnitude's
			// rounding; subnormal differences by an absolute 2^-149.
			xm[i] = (math.Abs(s-mu) + resid + 0x1p-126) * rs
			g := 1.0
			switch {
			case k.scale && k.affinePerRow:
				g = in.a["gain"][r] + k.scaleOffset
			case k.scale:
				g = in.a["gamma"][i] + k.scaleOffset
			}
			// Subnormal products err by an absolute 2^-149: the floor.
			u[i], um[i] = g*dy[r*h+i], math.Abs(g*dy[r*h+i])+0x1p-126
			sumU += u[i]
			sumUM += um[i]
			sumUX += u[i] * xhat[i]
			sumUXM += um[i] * xm[i]
		}
		for i := 0; i < h; i++ {
			j := r*h + i
			var ds, m float64
			switch {
			case k.noStat:
				ds, m = u[i], um[i]
			case k.mean:
				ds = rs * (u[i] - sumU/float64(h) - xhat[i]*c*sumUX)
				m = rs * (um[i] + sumUM/float64(h) + xm[i]*c*sumUXM)
			default:
				ds = rs * (u[i] - xhat[i]*c*sumUX)
				m = rs * (um[i] + xm[i]*c*sumUXM)
			}
			if dsum != nil {
				ds, m = ds+dsum[j], m+math.Abs(dsum[j])
			}
			if df != nil {
				df[j], dfM[j] = ds, m
				ref.nonFinite["df"][j] = rowAmbiguous // through sum(u*xhat)
			}
			dx[j], dxM[j] = k.alpha*ds, math.Abs(k.alpha)*m
			ref.nonFinite["dx"][j] = rowAmbiguous
			if dgamma != nil {
				dgamma[i] += dy[j] * xhat[i]
				dgammaM[i] += math.Abs(dy[j])*xm[i] + 0x1p-126
				ref.nonFinite["dgamma"][i] = ref.nonFinite["dgamma"][i] || ambiguous[i]
			}
			if dbeta != nil {
				dbeta[i] += dy[j]
				dbetaM[i] += math.Abs(dy[j])
			}
			if dgain != nil {
				dgain[r] += dy[j] * xhat[i]
				dgainM[r] += math.Abs(dy[j])*xm[i] + 0x1p-126
				ref.nonFinite["dgain"][r] = ref.nonFinite["dgain"][r] || ambiguous[i]
			}
			if dbias != nil {
				dbias[r] += dy[j]
				dbiasM[r] += math.Abs(dy[j])
			}
		}
	}
	return ref
}

// bwdWorst records per kernel the largest error seen, in units of
// 2^-24 times the value's magnitude: the measured accuracy; with half
// storage, bwdWorstHalf the largest error of dx and df as a fraction of
// their widened bound (ulps of the format would read large where the
// gradient cancels to near zero).
var bwdWorst, bwdWorstHalf = map[string]float64{}, map[string]float64{}

// verify compares every output of got with the oracle: within the
// contract where the oracle is finite, the same kind of value elsewhere.
//
// With half storage dx and df are stored in the format: their bound is
// widened by exactly one rounding of the output, u*(|v64| + the float32
// bound) plus half the least subnormal (u the format's unit roundoff),
// and beyond the format's range they may be the infinity of their sign.
// The parameter gradients stay float32 sums of the decoded values.
func (k *bwdKernel) verify(got *args, ref bwdReference) error {
	hf, half := halfFormats[k.storage]
	for name, want := range ref.want {
		out := k.get(got, name)
		stored := half && k.extents[k.index(name)] == extElement
		for j, v := range out {
			w, m := want[j], ref.mag[name][j]
			if math.IsNaN(w) || math.IsInf(w, 0) || math.IsInf(m, 0) {
				if !ref.nanAgrees(name, j, v) {
					return fmt.Errorf("%s[%d] = %v, oracle %v", name, j, v, w)
				}
				continue
			}
			d := math.Abs(float64(v) - w)
			b := k.bound(name, w, m)
			if stored {
				if math.IsInf(float64(v), 0) && math.Abs(w)+b >= hf.largest() && (v > 0) == (w > 0) {
					continue // beyond the format's range: rounds to Inf
				}
				bwdWorstHalf[k.name] = max(bwdWorstHalf[k.name], d/b)
			} else if m > 0 {
				bwdWorst[k.name] = max(bwdWorst[k.name], d/(epsilon32*m))
			}
			if !(d <= b) {
				return fmt.Errorf("%s[%d] = %v, oracle %v: error %.3g > bound %.3g", name, j, v, w, d, b)
			}
		}
	}
	return nil
}

// bound is the contract's allowed error of output name at oracle value w
// of magnitude m (see verify).
func (k *bwdKernel) bound(name string, w, m float64) float64 {
	b := bwdTolerance * epsilon32 * m
	if hf, ok := halfFormats[k.storage]; ok && k.extents[k.index(name)] == extElement {
		b += hf.unit()*(math.Abs(w)+b) + hf.leastSubnormal()/2
	}
	return b
}

// sameBits reports the first output that differs between two runs.
func (k *bwdKernel) sameBits(a, b *args) error {
	for i, name := range k.arrays {
		if !k.outs[i] {
			continue
		}
		for j := range a.a[i] {
			if math.Float32bits(a.a[i][j]) != math.Float32bits(b.a[i][j]) {
				return fmt.Errorf("%s[%d] = %v and %v", name, j, a.a[i][j], b.a[i][j])
			}
		}
	}
	return nil
}

type bwdCase struct {
	h       int
	anySize bool
	label   string
}

func (k *bwdKernel) cases() []bwdCase {
	var out []bwdCase
	for _, h := range k.sizes {
		out = append(out, bwdCase{h, false, fmt.Sprintf("%s%d", k.name, h)})
	}
	tails := []int{1, 2, 3, 5, 17, 33, 100, 200}
	if testing.Short() {
		tails = []int{3, 17, 100}
	}
	for _, h := range append(tails, k.sizes...) {
		out = append(out, bwdCase{h, true, fmt.Sprintf("%sAny(h=%d)", k.name, h)})
	}
	return out
}

func (k *bwdKernel) entry(tc bwdCase) func(a [][]float32) {
	if tc.anySize {
		return func(a [][]float32) { k.anySize(a, tc.h) }
	}
	return k.fixed(tc.h)
}

// TestBackwardEquivalence runs each backward entry point, its Parallel
// form and the pure-Go kernels on every input family, at several row
// counts (0 included: the parameter gradients must come out 0), from
// unaligned starts, in place (dx = dy) on the first family, against the
// float64 oracle; it checks the margins for stray writes, that a second
// call gives the same bits, and that Parallel gives the same bits.
func TestBackwardEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	defer func(saved int) { parallelMinBytes = saved }(parallelMinBytes)
	parallelMinBytes = 1 << 10
	defer func() {
		for _, k := range bwdKernels {
			what := "gradients"
			if k.storage != "f32" {
				what = "float32 gradients"
				t.Logf("%s: max error of the %s gradients %.3f of their bound (one rounding to %s beyond the float32 contract)", k.name, k.storage, bwdWorstHalf[k.name], k.storage)
			}
			t.Logf("%s: max error of the %s %.2f units of 2^-24 times the magnitude (contract: %d)", k.name, what, bwdWorst[k.name], bwdTolerance)
		}
	}()
	for _, k := range bwdKernels {
		for _, tc := range k.cases() {
			rowCounts := []int{0, 1, 3, 7}
			if tc.h <= 200 {
				rowCounts = append(rowCounts, 130)
			}
			if testing.Short() {
				rowCounts = []int{0, 5}
			}
			// Past the most rows a call sums at once, ending in a partial
			// block: the sums added across blocks, on the first family
			// (which also runs in place).
			blocked := 0
			if k.blockRows != nil {
				b, w := k.blockRows(tc.h), k.wholeRows(tc.h)
				blocked = w - w%b + b + 3
			}
			for fi, fam := range families {
				if testing.Short() && !shortFamilies[fam.name] {
					continue
				}
				counts := rowCounts
				if blocked > 0 && fi == 0 {
					counts = append(counts[:len(counts):len(counts)], blocked)
				}
				for _, rows := range counts {
					in := k.newArgs(rows, tc.h, rng)
					k.fill(in, fam, rows, tc.h, rng)
					ref := k.oracle(k.inputs64(in, rows, tc.h))
					entry := in.clone()
					k.entry(tc)(entry.a)
					runs := []struct {
						name string
						run  func(a [][]float32)
					}{
						{"entry again", k.entry(tc)},
						{"parallel", k.parallel(tc.h, tc.anySize)},
						{"purego", func(a [][]float32) { k.pureGo(a, rows, tc.h) }},
					}
					if os.Getenv("NORMGEN_ONLY_ISA") != "" {
						// Under an emulator: pure Go ran natively.
						runs = runs[:2]
					}
					if fi == 0 {
						runs = append(runs, struct {
							name string
							run  func(a [][]float32)
						}{"in place", func(a [][]float32) {
							dy := k.index("dy")
							copy(a[0], a[dy])
							a[dy] = a[0]
							k.entry(tc)(a)
						}})
					}
					name := fmt.Sprintf("%s rows=%d family=%s", tc.label, rows, fam.name)
					if err := entry.checkMargins(k.arrays); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if err := k.verify(entry, ref); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					for _, r := range runs {
						got := in.clone()
						r.run(got.a)
						if err := got.checkMargins(k.arrays); err != nil {
							t.Fatalf("%s %s: %v", name, r.name, err)
						}
						if err := k.verify(got, ref); err != nil {
							t.Fatalf("%s %s: %v", name, r.name, err)
						}
						if r.name != "purego" {
							if err := k.sameBits(entry, got); err != nil {
								t.Fatalf("%s: %s differs from the first call: %v", name, r.name, err)
							}
						}
					}
				}
			}
		}
	}
}

// TestBackwardBlockRows checks that the run-time block rows of the
// blocked backward (the Any entry points') are the generator's at the
// fixed sizes, so that both forms run the same blocks.
func TestBackwardBlockRows(t *testing.T) {
	for _, k := range bwdKernels {
		if k.blockRows == nil {
			continue
		}
		for i, h := range k.sizes {
			if got := k.blockRows(h); got != k.blocks[i] {
				t.Errorf("%s: %d rows per block at h=%d at run time, %d in %s%d", k.name, got, h, k.blocks[i], k.name, h)
			}
		}
	}
}

// TestBackwardLongSets checks the sums over long rows and over many rows
// (the parameter gradients) against the oracle: the blocked summation.
// With NORMGEN_LONG_ASM_ONLY set (under an emulator) it skips the half
// kernels, as TestLongRows does: their sums are the float32 kernels'.
func TestBackwardLongSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	shapes := [][2]int{{1, 1 << 16}, {1 << 14, 3}}
	if !testing.Short() {
		shapes = append(shapes, [2]int{2, 1<<18 + 3}, [2]int{1 << 16, 5})
	}
	for _, k := range bwdKernels {
		if k.storage != "f32" && os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
			continue
		}
		for _, sh := range shapes {
			rows, h := sh[0], sh[1]
			in := k.newArgs(rows, h, rng)
			k.fill(in, families[0], rows, h, rng)
			// Nearly equal terms: the rounding of a sequential sum would be systematic.
			for j, v := range k.get(in, "dy") {
				k.get(in, "dy")[j] = 0.1 + 1e-3*v
			}
			k.quantize(in)
			ref := k.oracle(k.inputs64(in, rows, h))
			got := in.clone()
			k.anySize(got.a, h)
			if err := k.verify(got, ref); err != nil {
				t.Errorf("%sAny rows=%d h=%d: %v", k.name, rows, h, err)
			}
		}
	}
}

// forward64 is the forward pass in float64, for the finite differences:
// y of every row (and s, which the storeSum loss also reads).
func (k *bwdKernel) forward64(x, f, gamma, beta []float64, rows, h int) (y, s []float64) {
	y, s = make([]float64, rows*h), make([]float64, rows*h)
	for r := 0; r < rows; r++ {
		row := s[r*h : (r+1)*h]
		for i := range row {
			row[i] = x[r*h+i]
			if k.residual {
				row[i] = k.alpha*row[i] + f[r*h+i]
			}
		}
		mu, variance := statsOf(row, k.mean, k.l2)
		rs := 1 / math.Sqrt(variance+k.eps)
		if k.noStat {
			mu, rs = 0, 1
		}
		for i, v := range row {
			g, b := 1.0, 0.0
			switch {
			case k.scale && k.affinePerRow:
				g = gamma[r] + k.scaleOffset
			case k.scale:
				g = gamma[i] + k.scaleOffset
			}
			switch {
			case k.shift && k.affinePerRow:
				b = beta[r]
			case k.shift:
				b = beta[i]
			}
			y[r*h+i] = (v-mu)*rs*g + b
		}
	}
	return y, s
}

// checkFiniteDifferences compares the oracle's gradients with central
// differences of the loss sum(dy*y) (+ sum(dsum*s) when s is an output)
// in float64, at rows of h random values.
func (k *bwdKernel) checkFiniteDifferences(rows, h int, rng *rand.Rand) error {
	return k.finiteDifferences(k, rows, h, rng)
}

// finiteDifferences compares the gradients of oracle's formulas with the
// finite differences of k's forward pass.
func (k *bwdKernel) finiteDifferences(oracle *bwdKernel, rows, h int, rng *rand.Rand) error {
	n := rows * h
	vec := func(n int, mean float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = mean + rng.NormFloat64()
		}
		return v
	}
	x, f, dy, dsum := vec(n, 0.5), vec(n, 0), vec(n, 0), vec(n, 0)
	pn := h
	if k.affinePerRow {
		pn = rows
	}
	gamma, beta := vec(pn, 1), vec(pn, 0)
	loss := func() float64 {
		y, s := k.forward64(x, f, gamma, beta, rows, h)
		l := 0.0
		for i := range y {
			l += dy[i] * y[i]
			if k.storeSum {
				l += dsum[i] * s[i]
			}
		}
		return l
	}
	// The oracle's inputs, with the statistics exact.
	in := bwdInputs{rows: rows, h: h, a: map[string][]float64{"dy": dy}}
	_, s := k.forward64(x, f, gamma, beta, rows, h)
	switch {
	case k.storeSum:
		in.a["sum"], in.a["dsum"] = s, dsum
	case k.residual:
		in.a["x"], in.a["f"] = x, f
	default:
		in.a["x"] = x
	}
	in.a["gamma"], in.a["gain"] = gamma, gamma
	in.a["mean"], in.a["rstd"] = make([]float64, rows), make([]float64, rows)
	for r := 0; r < rows; r++ {
		mu, variance := statsOf(s[r*h:(r+1)*h], k.mean, k.l2)
		in.a["mean"][r], in.a["rstd"][r] = mu, 1/math.Sqrt(variance+k.eps)
	}
	ref := oracle.oracle(in)
	type param struct {
		name string
		v    []float64
	}
	params := []param{{"dx", x}}
	if k.residual {
		params = append(params, param{"df", f})
	}
	if k.scale {
		params = append(params, param{map[bool]string{false: "dgamma", true: "dgain"}[k.affinePerRow], gamma})
	}
	if k.shift {
		params = append(params, param{map[bool]string{false: "dbeta", true: "dbias"}[k.affinePerRow], beta})
	}
	for _, p := range params {
		for i := range p.v {
			saved := p.v[i]
			step := 1e-6 * max(1, math.Abs(saved))
			p.v[i] = saved + step
			up := loss()
			p.v[i] = saved - step
			down := loss()
			p.v[i] = saved
			fd, an := (up-down)/(2*step), ref.want[p.name][i]
			if math.Abs(fd-an) > 1e-5*(1+math.Abs(an)) {
				return fmt.Errorf("%s[%d]: analytic %.9g, finite differences %.9g", p.name, i, an, fd)
			}
		}
	}
	return nil
}

// TestBackwardOracle checks the oracle itself against central finite
// differences of the float64 forward pass, at small sizes.
func TestBackwardOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, k := range bwdKernels {
		for _, h := range []int{2, 3, 8} {
			if err := k.checkFiniteDifferences(3, h, rng); err != nil {
				t.Errorf("%s h=%d: %v", k.name, h, err)
			}
		}
	}
}

// TestBackwardNonFinite puts a NaN or an Inf into one row's dy or x: that
// row's gradients and the parameter gradients it enters follow the oracle
// (NaN where it is NaN), and every other row's input gradients stay finite.
func TestBackwardNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	for _, k := range bwdKernels {
		for _, tc := range k.cases() {
			h, rows := tc.h, 3
			for _, bad := range []float64{math.NaN(), math.Inf(1)} {
				for _, where := range []string{"dy", "x", "sum"} {
					if k.index(where) < 0 {
						continue
					}
					in := k.newArgs(rows, h, rng)
					k.fill(in, families[0], rows, h, rng)
					pos := rng.IntN(h)
					k.get(in, where)[h+pos] = float32(bad)
					k.setStats(in, rows, h)
					ref := k.oracle(k.inputs64(in, rows, h))
					for _, run := range []func(a [][]float32){k.entry(tc), k.parallel(h, tc.anySize)} {
						got := in.clone()
						run(got.a)
						for _, name := range []string{"dx", "df"} {
							for j, v := range k.get(got, name) {
								if j/h != 1 && (math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)) {
									t.Fatalf("%s: %v in %s row 1: %s[%d] = %v", tc.label, bad, where, name, j, v)
								}
							}
						}
						for name, want := range ref.want {
							for j, v := range k.get(got, name) {
								if !ref.nanAgrees(name, j, v) {
									t.Fatalf("%s: %v in %s[%d]: %s[%d] = %v, oracle %v", tc.label, bad, where, h+pos, name, j, v, want[j])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestBackwardWrongLengths checks that a wrong length of any array panics
// with the entry point's name and the length, before touching memory.
func TestBackwardWrongLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	for _, k := range bwdKernels {
		for _, tc := range k.cases() {
			h, rows := tc.h, 2
			for i, name := range k.arrays {
				for _, delta := range []int{-1, 1, -1 << 30} {
					c := k.newArgs(rows, h, rng)
					k.fill(c, families[0], rows, h, rng)
					if delta == -1<<30 {
						c.a[i] = nil
					} else {
						c.a[i] = c.buffers[i][c.offsets[i] : c.offsets[i]+len(c.a[i])+delta]
					}
					before := c.clone()
					what := fmt.Sprintf("%s with len(%s) = %d", tc.label, name, len(c.a[i]))
					msg := expectPanic(t, what, func() { k.entry(tc)(c.a) })
					if !strings.HasPrefix(msg, packageName+"."+k.name) || !strings.Contains(msg, "len(") {
						t.Fatalf("%s: panic message %q does not name the entry point and a length", what, msg)
					}
					if name != "dy" && !strings.Contains(msg, "len("+name+")") && !strings.Contains(msg, "len(dy)") {
						t.Fatalf("%s: panic message %q does not name %s", what, msg, name)
					}
					if err := k.sameBits(before, c); err != nil || !sameBuffers(before, c) {
						t.Fatalf("%s: memory changed before the panic", what)
					}
				}
			}
		}
	}
}

func sameBuffers(a, b *args) bool {
	for i := range a.buffers {
		for j := range a.buffers[i] {
			if math.Float32bits(a.buffers[i][j]) != math.Float32bits(b.buffers[i][j]) {
				return false
			}
		}
	}
	return true
}

// TestBackwardOverlap checks that every overlap but an output being the
// very same slice as dy panics: an output that is x (or sum), dx shifted
// over dy, a parameter gradient inside dy, gamma inside dx.
func TestBackwardOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, k := range bwdKernels {
		h, rows := k.sizes[0], 2
		entry := k.fixed(h)
		dx, dy := k.index("dx"), k.index("dy")
		s := k.index("x")
		if s < 0 {
			s = k.index("sum")
		}
		type alias struct {
			what string
			set  func(c *args)
		}
		aliases := []alias{
			{"dx = " + k.arrays[s], func(c *args) { c.a[dx] = c.a[s] }},
			{"dx = dy shifted by 1", func(c *args) {
				buf := make([]float32, rows*h+1)
				copy(buf, c.a[dy])
				c.a[dy], c.a[dx] = buf[:rows*h], buf[1:]
			}},
		}
		for i, name := range k.arrays {
			switch {
			case k.storage != "f32" && k.extents[i] != extElement:
				// A float32 array inside a half one: the test's float32
				// record cannot alias them (halfCall converts the half ones).
			case k.outs[i] && k.extents[i] != extElement:
				aliases = append(aliases, alias{name + " inside dy", func(c *args) { c.a[i] = c.a[dy][:len(c.a[i])] }})
			case !k.outs[i] && k.extents[i] != extElement:
				aliases = append(aliases, alias{name + " inside dx", func(c *args) { c.a[i] = c.a[dx][:len(c.a[i])] }})
			}
		}
		for _, a := range aliases {
			c := k.newArgs(rows, h, rng)
			k.fill(c, families[0], rows, h, rng)
			a.set(c)
			msg := expectPanic(t, fmt.Sprintf("%s%d with %s", k.name, h, a.what), func() { entry(c.a) })
			if !strings.Contains(msg, "overlap") {
				t.Fatalf("%s%d with %s: panic message %q does not say overlap", k.name, h, a.what, msg)
			}
		}
	}
}

func bwdKernelNamed(name string) *bwdKernel {
	for _, k := range bwdKernels {
		if k.name == name {
			return k
		}
	}
	panic("no backward kernel " + name)
}

// fuzzBackward checks the entry point against the pure-Go kernels on rows
// made from the fuzzer's bytes (dy and the normalized input): the same
// NaN positions, no stray writes, and within twice the contract of each
// other where the oracle's magnitudes are finite (with half storage each
// rounds dx once: twice the widened contract).
func fuzzBackward(f *testing.F, name string, h int) {
	k := bwdKernelNamed(name)
	seed := func(vals ...float32) []byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	f.Add(seed(1, 2, 3, 4, 5))
	f.Add(seed(float32(math.NaN()), 1, 2))
	f.Add(seed(float32(math.Inf(-1)), -1, 0.5))
	f.Add(seed(1e-40, -1e-41, 3e-39))
	f.Add(seed(1e4, 1e4+1, 1e4-1, 1e4))
	f.Add(seed(7, 7, 7, 7))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals := floatsOf(data)
		if len(vals) == 0 {
			return
		}
		rows := 1 + int(data[0]%3)
		rng := rand.New(rand.NewPCG(uint64(len(data)), 9))
		in := k.newArgs(rows, h, rng)
		k.fill(in, families[0], rows, h, rng)
		for i, name := range k.arrays {
			if name == "dy" || name == "x" || name == "sum" {
				for j := range in.a[i] {
					in.a[i][j] = vals[(j+3*i)%len(vals)]
				}
			}
		}
		k.quantize(in)
		k.setStats(in, rows, h)
		ref := k.oracle(k.inputs64(in, rows, h))
		got, want := in.clone(), in.clone()
		k.fixed(h)(got.a)
		k.pureGo(want.a, rows, h)
		if err := got.checkMargins(k.arrays); err != nil {
			t.Fatal(err)
		}
		for name, w := range ref.want {
			g, p := k.get(got, name), k.get(want, name)
			for j := range g {
				if math.IsNaN(float64(g[j])) != math.IsNaN(float64(p[j])) {
					t.Fatalf("%s[%d] = %v, pure Go %v: NaN positions differ", name, j, g[j], p[j])
				}
				m := ref.mag[name][j]
				if math.IsNaN(w[j]) || math.IsInf(m, 0) || m > 1e30 || math.IsNaN(float64(g[j])) || g[j] == p[j] {
					continue
				}
				if d := math.Abs(float64(g[j]) - float64(p[j])); !(d <= 2*k.bound(name, w[j], m)) {
					t.Fatalf("%s[%d] = %v, pure Go %v, oracle %v", name, j, g[j], p[j], w[j])
				}
			}
		}
	})
}

// benchBackward times the backward entry point at row length h on rows
// whose inputs fill about 128 KiB (cache-resident) and 32 MiB (memory),
// each next to a copy of the bytes the kernel must read: its row inputs
// (dy, and x or the forward's sum, f, dsum where it takes them), copied
// into as many other arrays. With half storage those are uint16 arrays,
// encoded once (timeHalf).
func benchBackward(b *testing.B, name string, h int) {
	k := bwdKernelNamed(name)
	rng := rand.New(rand.NewPCG(8, 9))
	elem := 4
	if _, ok := halfFormats[k.storage]; ok {
		elem = 2
	}
	var reads []int
	for i, e := range k.extents {
		if e == extElement && !k.outs[i] {
			reads = append(reads, i)
		}
	}
	run := k.fixed(h)
	for _, size := range []struct {
		name  string
		bytes int
	}{{"128KiB", 128 << 10}, {"32MiB", 32 << 20}} {
		rows := max(1, size.bytes/(elem*len(reads)*h))
		c := k.newArgs(rows, h, nil) // aligned, as large slices are in practice
		k.fill(c, families[0], rows, h, rng)
		bytes := int64(elem * len(reads) * rows * h)
		b.Run(size.name+"/copy", func(b *testing.B) {
			src, dst := make([][]byte, len(reads)), make([][]byte, len(reads))
			for i := range reads {
				src[i], dst[i] = copyBuffers(elem * rows * h)
			}
			b.SetBytes(bytes)
			b.ResetTimer()
			for range b.N {
				for i := range src {
					copy(dst[i], src[i])
				}
			}
		})
		b.Run(size.name+"/entry", func(b *testing.B) {
			b.SetBytes(bytes)
			if elem == 2 {
				timeHalf(b, func() { run(c.a) })
				return
			}
			for range b.N {
				run(c.a)
			}
		})
	}
}
