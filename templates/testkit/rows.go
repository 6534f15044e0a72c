package testkit

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// The helpers of the tests of the kernels over rows live in normgen's
// templates/testkit/rows.go, where they compile and have tests of their
// own; the generator appends them verbatim to each <stem>_test.go, after
// the template's part (tolerance, packageName, the kernels table, the
// entry points taking eps, the ISA tables, implementationFunc).

const (
	roleRowIn = iota
	roleRowOut
	roleParam
	roleRowScalarIn
	roleRowScalarOut
)

type kernel struct {
	name         string
	mean         bool
	eps          float64
	scale        bool
	scaleOffset  float64
	shift        bool
	l2           bool // the statistic is the sum of squares (WeightNorm), not their mean
	affinePerRow bool // scale and shift are one value per row (gain, bias), not per element (gamma, beta)
	noStat       bool // no normalization: the affine alone
	residual     bool
	alpha        float64
	storage      string   // the row arrays' format: "f32", or "bf16" or "f16" (the entry points take uint16 bits)
	isas         []string // instruction sets generated for it
	arrays       []string
	roles        []int
	sizes        []int
	runtimeEps   bool                                                    // eps is an argument of the entry points (epsilon: runtime), eps above
	fixed        func(h int) func(a [][]float32, rows int)               // the entry point for a fixed size
	anySize      func(a [][]float32, rows, h int)                        // the run-time-size entry point
	parallel     func(h int, anySize bool) func(a [][]float32, rows int) // the Parallel entry points
	pureGo       func(a [][]float32, rows, h int)
}

// label names the kernel in messages: with a run-time epsilon, the value
// it is tested with.
func (k *kernel) label() string {
	if k.runtimeEps {
		return fmt.Sprintf("%s[eps=%g]", k.name, float32(k.eps))
	}
	return k.name
}

func (k *kernel) index(name string) int {
	for i, n := range k.arrays {
		if n == name {
			return i
		}
	}
	return -1
}

// impl is one implementation of a kernel at one row length.
type impl struct {
	name string
	run  func(a [][]float32, rows int)
	asm  bool // assembly: never called with zero rows (the entry points return first)
}

// impls lists the implementations of the kernel at row length h: the
// entry point for the fixed size h, or (anySize) the run-time-size one,
// the pure-Go kernel and every assembly kernel this CPU can run.
func (k *kernel) impls(h int, anySize bool) []impl {
	entry := impl{name: "entry(" + isaOf(k.name) + ")"}
	if anySize {
		entry.run = func(a [][]float32, rows int) { k.anySize(a, rows, h) }
	} else {
		entry.run = k.fixed(h)
	}
	out := []impl{
		entry,
		{name: "parallel(" + isaOf(k.name) + ")", run: k.parallel(h, anySize)},
		{name: "purego", run: func(a [][]float32, rows int) { k.pureGo(a, rows, h) }},
	}
	out = append(out, asmImpls(k.name, h, anySize, float32(k.eps))...)
	only := os.Getenv("NORMGEN_ONLY_ISA")
	if only == "" {
		return out
	}
	// Under an emulator (NORMGEN_ONLY_ISA=avx512 under Bochs) the other
	// implementations ran natively already: check only that instruction
	// set's functions, and the entry points, which dispatch to it.
	kept := out[:2]
	if underEmulator {
		kept = out[:1] // the Parallel entry points run the same functions
	}
	for _, im := range out[2:] {
		if im.name == only || strings.HasPrefix(im.name, only+"-") {
			kept = append(kept, im)
		}
	}
	return kept
}

// reference is the float64 oracle's result for some rows.
type reference struct {
	y, s       []float64 // rows*h
	mean, rstd []float64 // rows
	scaleOfRow []float64 // rows: max|s|/sigma, the conditioning term
}

// oracle evaluates the kernel's formula in float64:
//
//	s = alpha*x + f (residual) or x;  mu = mean(s) (or 0 without mean)
//	var = mean((s-mu)^2);  rstd = 1/sqrt(var + eps);  y = (s-mu)*rstd*(gamma+offset) + beta
func (k *kernel) oracle(x, f, gamma, beta []float32, rows, h int) reference {
	r := reference{
		y: make([]float64, rows*h), s: make([]float64, rows*h),
		mean: make([]float64, rows), rstd: make([]float64, rows), scaleOfRow: make([]float64, rows),
	}
	for row := 0; row < rows; row++ {
		s := r.s[row*h : (row+1)*h]
		maxAbs := 0.0
		for i := range s {
			v := float64(x[row*h+i])
			if k.residual {
				v = k.alpha*v + float64(f[row*h+i])
			}
			s[i] = v
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
		mu := 0.0
		if k.mean {
			for _, v := range s {
				mu += v
			}
			mu /= float64(h)
		}
		variance := 0.0
		for _, v := range s {
			variance += (v - mu) * (v - mu)
		}
		if !k.l2 {
			variance /= float64(h) // l2 (WeightNorm) divides by the plain norm
		}
		sigma := math.Sqrt(variance + k.eps)
		if k.noStat {
			sigma = 1
		}
		r.mean[row], r.rstd[row], r.scaleOfRow[row] = mu, 1/sigma, maxAbs/sigma
		for i, v := range s {
			y := (v - mu) / sigma
			if k.scale {
				y *= k.scaleAt(gamma, row, i)
			}
			if k.shift {
				y += k.shiftAt(beta, row, i)
			}
			r.y[row*h+i] = y
		}
	}
	return r
}

// scaleAt is the effective scale of element i of a row: gamma_i + offset,
// or gain_row + offset when the scale is one value per row.
func (k *kernel) scaleAt(gamma []float32, row, i int) float64 {
	if k.affinePerRow {
		return float64(gamma[row]) + k.scaleOffset
	}
	return float64(gamma[i]) + k.scaleOffset
}

// shiftAt is the shift of element i of a row: beta_i, or bias_row.
func (k *kernel) shiftAt(beta []float32, row, i int) float64 {
	if k.affinePerRow {
		return float64(beta[row])
	}
	return float64(beta[i])
}

// shiftOf returns the shift array of a call: beta, or bias per row.
func (k *kernel) shiftOf(c *args) []float32 {
	if k.affinePerRow {
		return k.get(c, "bias")
	}
	return k.get(c, "beta")
}

// scaleOf returns the scale array of a call: gamma, or gain per row.
func (k *kernel) scaleOf(c *args) []float32 {
	if k.affinePerRow {
		return k.get(c, "gain")
	}
	return k.get(c, "gamma")
}

// gain is |the effective scale|, or 1 without a scale.
func (k *kernel) gain(gamma []float32, row, i int) float64 {
	if !k.scale {
		return 1
	}
	return math.Abs(k.scaleAt(gamma, row, i))
}

const epsilon32 = 1.0 / (1 << 24)

// bound is the contract's allowed error for output element i of a row.
// With half storage it is widened by exactly one rounding of the output
// to the format: u*(|y64| + the float32 bound), u its unit roundoff, plus
// half its least subnormal.
func (k *kernel) bound(ref reference, gamma []float32, row, i, h int) float64 {
	b := tolerance * epsilon32 * (math.Abs(ref.y[row*h+i]) + k.gain(gamma, row, i%h)*(1+ref.scaleOfRow[row]))
	if f, ok := halfFormats[k.storage]; ok {
		b += f.unit()*(math.Abs(ref.y[row*h+i])+b) + f.leastSubnormal()/2
	}
	return b
}

// worstUlps records, per half-storage kernel, the largest error seen in
// ulps of its format at the oracle's value.
var worstUlps = map[string]float64{}

// toStorage is v as the kernel stores it: rounded once to its format.
func (k *kernel) toStorage(v float32) float32 {
	if k.storage == "f32" {
		return v // no map look-up per element for float32 kernels
	}
	if f, ok := halfFormats[k.storage]; ok {
		return float32(f.decode(f.encode(float64(v))))
	}
	return v
}

// quantize rounds the row inputs to the storage format, so that the
// oracle sees the values the kernels read.
func (k *kernel) quantize(c *args) {
	if _, ok := halfFormats[k.storage]; !ok {
		return
	}
	for i, role := range k.roles {
		if role == roleRowIn {
			for j, v := range c.a[i] {
				c.a[i][j] = k.toStorage(v)
			}
		}
	}
}

// args holds one call's arrays, each placed at an offset inside a larger
// buffer whose margins must survive the call untouched.
type args struct {
	a       [][]float32
	buffers [][]float32
	offsets []int
}

const margin = 16

var sentinel = math.Float32frombits(0x7fc0dead) // a NaN no kernel computes

// newArgs allocates every array of a call at a random unaligned offset, or
// with rng nil at offset 0.
func (k *kernel) newArgs(rows, h int, rng *rand.Rand) *args {
	c := &args{}
	for _, role := range k.roles {
		n := rows * h
		switch role {
		case roleParam:
			n = h
		case roleRowScalarIn, roleRowScalarOut:
			n = rows
		}
		off := 0 // the allocation's own alignment (large ones are page-aligned), for benchmarks
		if rng != nil {
			off = 1 + rng.IntN(7) // unaligned starts
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

// clone copies the arrays into fresh buffers with the same offsets.
func (c *args) clone() *args {
	d := &args{offsets: c.offsets}
	for i, buf := range c.buffers {
		nb := append([]float32(nil), buf...)
		d.buffers = append(d.buffers, nb)
		d.a = append(d.a, nb[c.offsets[i]:c.offsets[i]+len(c.a[i]):c.offsets[i]+len(c.a[i])])
	}
	return d
}

// checkMargins reports the first element written outside the arrays.
func (c *args) checkMargins(names []string) error {
	for i, buf := range c.buffers {
		for j, v := range buf {
			inside := j >= c.offsets[i] && j < c.offsets[i]+len(c.a[i])
			if !inside && math.Float32bits(v) != math.Float32bits(sentinel) {
				return fmt.Errorf("wrote outside %s: buffer index %d (array starts at %d, len %d) = %v", names[i], j, c.offsets[i], len(c.a[i]), v)
			}
		}
	}
	return nil
}

// family fills the inputs of one test case.
type family struct {
	name     string
	constant bool // every row constant: LayerNorm must output exactly beta
	residual bool // the residual f drawn from the family too, not N(0, 1)
	value    func(rng *rand.Rand, row int) float32
}

var families = []family{
	{name: "normal", value: func(rng *rand.Rand, _ int) float32 { return float32(rng.NormFloat64()) }},
	{name: "offset1e4", value: func(rng *rand.Rand, _ int) float32 { return float32(1e4 + rng.NormFloat64()) }},
	{name: "tiny", value: func(rng *rand.Rand, _ int) float32 { return float32(1e-15 * rng.NormFloat64()) }},
	{name: "huge", value: func(rng *rand.Rand, _ int) float32 { return float32(1e15 * rng.NormFloat64()) }},
	// Squares overflow float32: the assembly hands these rows to the float64 path.
	{name: "1e30", value: func(rng *rand.Rand, _ int) float32 { return float32(1e30 * rng.NormFloat64()) }},
	{name: "subnormal", value: func(rng *rand.Rand, _ int) float32 { return float32(1e-40 * rng.NormFloat64()) }},
	{name: "uniform+3", value: func(rng *rand.Rand, _ int) float32 { return float32(3 + rng.Float64()) }},
	{name: "constant", constant: true, value: func(_ *rand.Rand, row int) float32 { return float32(row)*0.37 - 1.1 }},
	// All zero: exactly the shift with a mean, zero times the scale without,
	// and 0/0 = NaN when epsilon is 0 (a zero row of WeightNorm).
	{name: "zero", constant: true, value: func(*rand.Rand, int) float32 { return 0 }},
	// A mean two standard deviations from 0: the pure-Go LayerNorm sums
	// blocks unshifted while its budget lasts and drops the correction.
	{name: "offset2", value: func(rng *rand.Rand, _ int) float32 { return float32(2 + rng.NormFloat64()) }},
}

// halfFamilies are the adversarial inputs of half storage: magnitudes
// around f16's largest finite value (65504; from 65520 on they are Inf),
// f16's subnormals (below 2^-14) and bf16's (below 2^-126), and rows
// sprinkled with NaN and infinities.
var halfFamilies = []family{
	{name: "beyond65504", value: func(rng *rand.Rand, _ int) float32 {
		return float32((6e4 + 1e4*rng.Float64()) * float64(1-2*rng.IntN(2)))
	}},
	{name: "f16subnormal", value: func(rng *rand.Rand, _ int) float32 { return float32(3e-6 * rng.NormFloat64()) }},
	{name: "bf16subnormal", value: func(rng *rand.Rand, _ int) float32 { return float32(3e-39 * rng.NormFloat64()) }},
	{name: "nan-inf", value: func(rng *rand.Rand, _ int) float32 {
		switch rng.IntN(64) {
		case 0:
			return float32(math.NaN())
		case 1:
			return float32(math.Inf(1))
		case 2:
			return float32(math.Inf(-1))
		}
		return float32(rng.NormFloat64())
	}},
}

// families lists the input families of the kernel: every kernel's, and
// with half storage the halfFamilies.
func (k *kernel) families() []family {
	if k.storage == "f32" || k.storage == "" {
		return families
	}
	return append(append([]family(nil), families...), halfFamilies...)
}

// fill sets the inputs: x from the family, f (residual) from the family
// scaled down for rows that are not constant, parameters around 1 and 0.
func (k *kernel) fill(c *args, fam family, rows, h int, rng *rand.Rand) {
	for i, role := range k.roles {
		a := c.a[i]
		switch {
		case role == roleRowIn:
			for j := range a {
				v := fam.value(rng, j/h)
				if k.arrays[i] != "x" && !fam.constant && !fam.residual {
					v = float32(rng.NormFloat64())
				}
				a[j] = v
			}
		case role == roleParam:
			for j := range a {
				a[j] = float32(1 + 0.5*rng.NormFloat64())
				if k.arrays[i] == "beta" {
					a[j] = float32(rng.NormFloat64())
				}
			}
		case role == roleRowScalarIn:
			for j := range a {
				a[j] = float32(rng.NormFloat64())
			}
		}
	}
	k.quantize(c)
}

func (k *kernel) get(c *args, name string) []float32 {
	if i := k.index(name); i >= 0 {
		return c.a[i]
	}
	return nil
}

// worst records, per kernel, the largest error seen in units of the
// contract's scale (the bound divided by tolerance): the measured accuracy.
var worst = map[string]float64{}

// verify compares one implementation's outputs (got) with the oracle's,
// for the inputs in.
func (k *kernel) verify(got, in *args, ref reference, fam family, h int) error {
	gamma, beta := k.scaleOf(in), k.shiftOf(in)
	y := k.get(got, "dst")
	for j, v := range y {
		row, i := j/h, j%h
		if fam.constant && k.mean {
			// A constant row has no deviation: exactly beta (or 0), except
			// that with eps = 0 it is 0/0, NaN, as in PyTorch.
			want := float32(0)
			if k.shift {
				want = k.toStorage(float32(k.shiftAt(beta, row, i)))
			}
			if k.eps == 0 {
				want = float32(math.NaN())
			}
			if v != want && !(k.eps == 0 && v != v) {
				return fmt.Errorf("constant row %d: dst[%d] = %v, want exactly %v", row, j, v, want)
			}
			continue
		}
		if math.IsNaN(ref.y[j]) { // 0/0: a constant row of length 1 or with eps = 0
			if !math.IsNaN(float64(v)) {
				return fmt.Errorf("dst[%d] (row %d) = %v, oracle NaN", j, row, v)
			}
			continue
		}
		if f, ok := halfFormats[k.storage]; ok && math.IsInf(float64(v), 0) &&
			math.Abs(ref.y[j])+k.bound(ref, gamma, row, i, h) >= f.largest() && (v > 0) == (ref.y[j] > 0) {
			continue // beyond the format's range: rounds to Inf
		}
		d := math.Abs(float64(v) - ref.y[j])
		if f, ok := halfFormats[k.storage]; ok && d/f.ulp(ref.y[j]) > worstUlps[k.name] {
			worstUlps[k.name] = d / f.ulp(ref.y[j])
		}
		if units := d / k.bound(ref, gamma, row, i, h) * tolerance; units > worst[k.name] {
			worst[k.name] = units
		}
		if !(d <= k.bound(ref, gamma, row, i, h)) && d != 0 { // d = 0: exact, even where an Inf leaves no bound

			return fmt.Errorf("dst[%d] (row %d) = %v, oracle %v: error %.3g > bound %.3g", j, row, v, ref.y[j], d, k.bound(ref, gamma, row, i, h))
		}
	}
	if s := k.get(got, "sum"); s != nil {
		x, f := k.get(in, "x"), k.get(in, "f")
		for j, v := range s {
			// alpha*x + f rounded to float32 once (float64 arithmetic) or
			// twice (float32 arithmetic, as the formula reads): both are exact
			// evaluations of it.
			twice := x[j]
			if k.alpha != 1 {
				twice = float32(float32(k.alpha) * x[j])
			}
			twice += f[j]
			once := float32(float64(float32(k.alpha))*float64(x[j]) + float64(f[j]))
			raw := twice
			twice, once = k.toStorage(twice), k.toStorage(once)
			if hf := halfFormats[k.storage]; emulatedF16TiesAway && k.storage == "f16" && v == float32(hf.decode(hf.tieAway(float64(raw), hf.encode(float64(raw))))) {
				continue // the emulator's rounding of a tie (see emulatedF16TiesAway)
			}
			if math.Float32bits(v) != math.Float32bits(twice) && math.Float32bits(v) != math.Float32bits(once) {
				return fmt.Errorf("sum[%d] = %v, want exactly %v (or %v)", j, v, twice, once)
			}
		}
	}
	if err := k.checkNonFiniteStats(got, ref); err != nil {
		return err
	}
	if m := k.get(got, "mean"); m != nil {
		for row, v := range m {
			if math.IsNaN(ref.mean[row]) || math.IsInf(ref.mean[row], 0) {
				continue // checkNonFiniteStats
			}
			sigma := 1 / ref.rstd[row]
			if d := math.Abs(float64(v) - ref.mean[row]); !(d <= tolerance*epsilon32*(math.Abs(ref.mean[row])+sigma*(1+ref.scaleOfRow[row]))) && d != 0 {
				return fmt.Errorf("mean[%d] = %v, oracle %v", row, v, ref.mean[row])
			}
		}
	}
	if r := k.get(got, "rstd"); r != nil {
		for row, v := range r {
			if math.IsNaN(ref.rstd[row]) {
				continue // checkNonFiniteStats
			}
			if d := math.Abs(float64(v) - ref.rstd[row]); !(d <= tolerance*epsilon32*ref.rstd[row]*(1+ref.scaleOfRow[row])) && v != float32(ref.rstd[row]) {
				return fmt.Errorf("rstd[%d] = %v, oracle %v", row, v, ref.rstd[row])
			}
		}
	}
	return nil
}

// checkNonFiniteStats checks the saved statistics of the rows holding a
// NaN or an infinity, whose output is NaN (with a mean): their saved mean
// is NaN too, also where the oracle's plain sum makes it an infinity (the
// kernels' pivoted sums meet Inf-Inf, on every implementation), and their
// rstd is NaN where the oracle's is (an infinite mean square without a
// mean gives 0, which the ordinary check compares).
func (k *kernel) checkNonFiniteStats(got *args, ref reference) error {
	if m := k.get(got, "mean"); m != nil {
		for row, v := range m {
			if (math.IsNaN(ref.mean[row]) || math.IsInf(ref.mean[row], 0)) && v == v {
				return fmt.Errorf("mean[%d] = %v, want NaN: the row holds a NaN or an infinity (oracle %v)", row, v, ref.mean[row])
			}
		}
	}
	if r := k.get(got, "rstd"); r != nil {
		for row, v := range r {
			if math.IsNaN(ref.rstd[row]) && v == v {
				return fmt.Errorf("rstd[%d] = %v, oracle NaN", row, v)
			}
		}
	}
	return nil
}

// sizeCase is one entry point of a kernel under test: a fixed size, or
// the run-time-size entry point at row length h.
type sizeCase struct {
	h       int
	anySize bool
	label   string
}

// cases lists each fixed size, and the run-time-size entry point at sizes
// with tails of every length and at the fixed sizes.
func (k *kernel) cases() []sizeCase {
	var out []sizeCase
	for _, h := range k.sizes {
		out = append(out, sizeCase{h, false, fmt.Sprintf("%s%d", k.label(), h)})
	}
	tails := []int{1, 2, 3, 5, 8, 15, 16, 17, 33, 100, 1000}
	if testing.Short() {
		tails = []int{3, 17, 33} // a tail, a vector and a tail, several vectors and a tail
	}
	for _, h := range append(tails, k.sizes...) {
		out = append(out, sizeCase{h, true, fmt.Sprintf("%sAny(h=%d)", k.label(), h)})
	}
	return out
}

// shortFamilies is the subset of families -short runs (under emulators):
// ordinary data, a large offset, the float64 path, and exact constant rows.
var shortFamilies = map[string]bool{"normal": true, "offset1e4": true, "1e30": true, "constant": true}

// equivalenceRun is one call of TestEquivalence: the inputs' family, and
// the output that is x's very slice ("": none).
type equivalenceRun struct {
	fam     family
	inPlace string
}

// alternateGuarded is a family whose odd rows take the float64 path
// (their squares overflow float32) between ordinary ones; f is as large
// as x, so that x + f is not x.
var alternateGuarded = family{name: "1e30oddrows", residual: true, value: func(rng *rand.Rand, row int) float32 {
	if row%2 == 1 {
		return float32(1e30 * rng.NormFloat64())
	}
	return float32(rng.NormFloat64())
}}

// equivalenceRuns lists the calls on the inputs of family fam, the fi-th:
// not in place, and on the first family in place, dst = x and with a
// stored sum also sum = x (the residual stream updated in place) on
// alternateGuarded, whose odd rows the float64 path takes after x became
// the sum, and whose even rows the kernel resumes with.
func (k *kernel) equivalenceRuns(fi int, fam family) []equivalenceRun {
	runs := []equivalenceRun{{fam, ""}}
	if fi > 0 {
		return runs // in-place runs once per size, on the first family
	}
	runs = append(runs, equivalenceRun{fam, "dst"})
	if k.index("sum") >= 0 {
		runs = append(runs, equivalenceRun{alternateGuarded, "sum"})
	}
	return runs
}

// TestEquivalence runs every implementation on every family of inputs, at
// row counts 0, 1, 2, 7 (and 300 for short rows), from unaligned starts, in
// place (on the first family) and not, and checks the outputs against the
// float64 oracle, and the margins around every array against stray writes.
// -short (for emulators) keeps every entry point and implementation but
// fewer sizes, families and row counts.
func TestEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Let the Parallel entry points split even the small inputs here.
	defer func(saved int) { parallelMinBytes = saved }(parallelMinBytes)
	parallelMinBytes = 1 << 10
	defer func() {
		for _, k := range kernels {
			if !k.runtimeEps || k == kernelNamed(k.name) {
				t.Logf("%s: max error %.2f %s", k.name, worst[k.name], errorUnit(k.storage, tolerance))
			}
			if u, ok := worstUlps[k.name]; ok {
				t.Logf("%s: max error %.3f ulps of %s", k.name, u, k.storage)
			}
		}
	}()
	for _, k := range kernels {
		if testing.Short() && underBochs && k.storage != "f32" {
			// The half kernels' arithmetic is the float32 kernels' code,
			// checked here on those; their loads and stores are checked
			// bit for bit by TestHalfThroughKernels and TestHalfConversions.
			continue
		}
		for _, tc := range k.cases() {
			h := tc.h
			rowCounts := []int{0, 1, 2, 7}
			if h <= 128 {
				rowCounts = append(rowCounts, 300)
			}
			if testing.Short() {
				rowCounts = []int{0, 3}
			}
			if testing.Short() && underBochs {
				rowCounts = []int{3}
			}
			for fi, fam := range k.families() {
				if testing.Short() && !shortFamilies[fam.name] && fi < len(families) {
					continue
				}
				if testing.Short() && underBochs && fam.name != "normal" && fam.name != "1e30" && fi < len(families) {
					continue // ordinary data and the float64 path
				}
				for _, rows := range rowCounts {
					for _, r := range k.equivalenceRuns(fi, fam) {
						fam := r.fam
						in := k.newArgs(rows, h, rng)
						k.fill(in, fam, rows, h, rng)
						ref := k.oracle(k.get(in, "x"), k.get(in, "f"), k.scaleOf(in), k.shiftOf(in), rows, h)
						for _, im := range k.impls(h, tc.anySize) {
							if im.asm && rows == 0 {
								continue
							}
							got := in.clone()
							if r.inPlace != "" {
								got.a[k.index(r.inPlace)] = got.a[k.index("x")]
							}
							im.run(got.a, rows)
							name := fmt.Sprintf("%s %s rows=%d family=%s in-place=%q", tc.label, im.name, rows, fam.name, r.inPlace)
							if err := got.checkMargins(k.arrays); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							if err := k.verify(got, in, ref, fam, h); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
						}
					}
				}
			}
		}
	}
}

// TestStoreFormsSameBits runs each NEON kernel that has an STP form in
// both forms (neon, neon-stp), which differ in their stores only, on the
// same inputs and requires the same bits in every array. (The NT forms
// need not: they sweep rows one by one, the plain ones in blocks.)
func TestStoreFormsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pairs := 0
	for _, k := range kernels {
		for _, tc := range k.cases() {
			h := tc.h
			ims := asmImpls(k.name, h, tc.anySize, float32(k.eps))
			for _, second := range ims {
				isa, form, ok := strings.Cut(second.name, "-")
				if !ok || form != "stp" {
					continue
				}
				for _, first := range ims {
					if first.name != isa {
						continue
					}
					pairs++
					for fi, fam := range k.families() {
						if testing.Short() && !shortFamilies[fam.name] && fi < len(families) {
							continue
						}
						for _, rows := range []int{1, 3} {
							in := k.newArgs(rows, h, rng)
							k.fill(in, fam, rows, h, rng)
							a, b := in.clone(), in.clone()
							first.run(a.a, rows)
							second.run(b.a, rows)
							for ai, arr := range a.a {
								for i, v := range arr {
									if w := b.a[ai][i]; math.Float32bits(v) != math.Float32bits(w) {
										t.Fatalf("%s %s and its %s form, rows=%d family=%s: %s[%d] = %v and %v", tc.label, isa, form, rows, fam.name, k.arrays[ai], i, v, w)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if pairs == 0 {
		t.Skip("no kernel in an STP form on this CPU")
	}
	t.Logf("%d kernels in both store forms", pairs)
}

// longFamily fills the rows of a long-row test: value(rng, i, pos) is
// element i of a row whose one special position is pos (drawn per row).
type longFamily struct {
	name  string
	value func(rng *rand.Rand, i, pos int) float32
	// shifts: aimed at sums shifted by a running mean, which only the
	// pure Go of kernels with a mean has: not run on the others, nor
	// under an emulator (NORMGEN_LONG_ASM_ONLY), where only assembly runs,
	// nor past 2^17 values (a thousand blocks show the drift already).
	shifts bool
}

// longFamilies are the rows whose float32 sums go wrong in long sequential
// chains or around a badly placed pivot: one full-mantissa value repeated
// after a zero (nearly equal terms make the rounding of a sequential sum
// systematic, so it grows with the chain), a first value far from the rest
// (the mean's pivot), one dominant element anywhere, and natural data
// (ReLU activations: non-negative and skewed).
var longFamilies = []longFamily{
	{name: "tenths", value: func(_ *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return 0
		}
		return 0.1
	}},
	{name: "first1e7", value: func(rng *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return 1e7
		}
		return float32(rng.NormFloat64())
	}},
	{name: "first1e18", value: func(rng *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return -1e18
		}
		return float32(rng.NormFloat64())
	}},
	{name: "dominant", value: func(rng *rand.Rand, i, pos int) float32 {
		if i == pos {
			return 1e4
		}
		return float32(rng.NormFloat64())
	}},
	{name: "relu", value: func(rng *rand.Rand, _, _ int) float32 { return float32(max(0, rng.NormFloat64())) }},
	// Blocks whose mean is far from the mean of the blocks before them
	// (sums shifted by a running mean cancel there): a first block of
	// outliers, a step at a random place, and a slow ramp on an offset,
	// whose blocks are nearly constant and each above the ones before.
	{name: "head1e4", shifts: true, value: func(rng *rand.Rand, i, _ int) float32 {
		if i < 64 {
			return float32(1e4 + rng.NormFloat64())
		}
		return float32(rng.NormFloat64())
	}},
	{name: "step", shifts: true, value: func(rng *rand.Rand, i, pos int) float32 {
		if i < pos {
			return float32(-1e4 + rng.NormFloat64())
		}
		return float32(rng.NormFloat64())
	}},
	{name: "ramp", shifts: true, value: func(_ *rand.Rand, i, _ int) float32 { return float32(1e4 + 1e-3*float64(i)) }},
}

// longLengths are the run-time row lengths of TestLongRows, beside every
// fixed size: past every level of the blocked sums (chunks, totals,
// super-totals) on every instruction set, up to 2^20; -short (emulators)
// stops at 65536 (chunks and totals on every instruction set), which the
// sequential sums of earlier versions failed. With NORMGEN_LONG_ASM_ONLY
// (qemu-user) 262147 is the longest: it already passes the largest
// super-total (AVX-512's 262144; NEON's is 65536) with a tail, and 2^20
// ran natively, while the emulated oracle would cost minutes.
func longLengths() []int {
	if testing.Short() {
		return []int{1 << 16}
	}
	if os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
		return []int{1<<16 + 5, 262147}
	}
	return []int{1<<16 + 5, 262147, 1 << 20}
}

// TestLongRows runs every implementation on the long-row families, at
// every fixed size and at the longLengths through the run-time entry
// point, against the float64 oracle, and logs the largest error per
// implementation and family in units of the contract's scale. With
// NORMGEN_LONG_ASM_ONLY set (the runs under an emulator) it runs the
// assembly implementations alone.
func TestLongRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	worstOf, storageOf := map[string]float64{}, map[string]string{}
	var keys []string
	defer func() {
		for _, key := range keys {
			t.Logf("%s: max error %.2f %s", key, worstOf[key], errorUnit(storageOf[key], tolerance))
		}
	}()
	for _, k := range kernels {
		if k.runtimeEps && k != kernelNamed(k.name) {
			continue // the long sets test the sums, which eps does not enter: one eps value is enough
		}
		if k.storage != "f32" && os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
			// Under an emulator, the float32 kernels' long sets test the
			// same sums; the half kernels' loads and stores are checked
			// bit for bit by TestHalfThroughKernels.
			continue
		}
		var cases []sizeCase
		for _, h := range k.sizes {
			cases = append(cases, sizeCase{h, false, fmt.Sprintf("%s%d", k.label(), h)})
		}
		for _, h := range longLengths() {
			cases = append(cases, sizeCase{h, true, fmt.Sprintf("%sAny(h=%d)", k.label(), h)})
		}
		for _, fam := range longFamilies {
			if fam.shifts && (!k.mean || os.Getenv("NORMGEN_LONG_ASM_ONLY") != "") {
				continue
			}
			for _, tc := range cases {
				if fam.shifts && tc.h > 1<<17 {
					continue
				}
				impls := k.impls(tc.h, tc.anySize)
				if os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
					// Under an emulator: the Go code's long sets ran on
					// the native run, only the assembly is new here.
					impls = slices.DeleteFunc(impls, func(im impl) bool { return !im.asm })
				}
				if len(impls) == 0 {
					continue
				}
				h, rows := tc.h, 1
				if !tc.anySize && !testing.Short() {
					rows = 3
				}
				in := k.newArgs(rows, h, rng)
				k.fill(in, families[0], rows, h, rng)
				for i, role := range k.roles {
					if role != roleRowIn {
						continue
					}
					a := in.a[i]
					for row := 0; row < rows; row++ {
						pos := rng.IntN(h)
						for j := 0; j < h; j++ {
							a[row*h+j] = fam.value(rng, j, pos)
						}
					}
				}
				k.quantize(in)
				ref := k.oracle(k.get(in, "x"), k.get(in, "f"), k.scaleOf(in), k.shiftOf(in), rows, h)
				for _, im := range impls {
					got := in.clone()
					im.run(got.a, rows)
					name := fmt.Sprintf("%s %s family=%s", tc.label, im.name, fam.name)
					if err := got.checkMargins(k.arrays); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					saved := worst[k.name]
					worst[k.name] = 0
					err := k.verify(got, in, ref, family{name: fam.name}, h)
					key := fmt.Sprintf("%s %s family=%s", k.label(), im.name, fam.name)
					if _, ok := worstOf[key]; !ok {
						keys = append(keys, key)
						storageOf[key] = k.storage
					}
					worstOf[key] = max(worstOf[key], worst[k.name])
					worst[k.name] = max(saved, worst[k.name])
					if err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}
			}
		}
	}
}

// TestNonFinite checks the documented outcome of a NaN or an Inf in a row,
// identical on every implementation: NaN anywhere in the row makes the whole
// row NaN, and so does an Inf with a mean; without a mean, an Inf gives NaN
// at its own position and zero times the scale elsewhere. Without a
// statistic, only that element is affected. Saved statistics: see
// checkNonFiniteStats.
func TestNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for _, k := range kernels {
		for _, tc := range k.cases() {
			h, rows := tc.h, 3
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				for _, where := range []string{"x", "f"} {
					if k.index(where) < 0 {
						continue
					}
					pos := rng.IntN(h)
					in := k.newArgs(rows, h, rng)
					k.fill(in, families[0], rows, h, rng)
					k.get(in, where)[h+pos] = float32(bad) // row 1 only
					ref := k.oracle(k.get(in, "x"), k.get(in, "f"), k.scaleOf(in), k.shiftOf(in), rows, h)
					for _, im := range k.impls(h, tc.anySize) {
						got := in.clone()
						im.run(got.a, rows)
						if err := k.checkNonFiniteStats(got, ref); err != nil {
							t.Fatalf("%s %s: %v in %s[%d]: %v", tc.label, im.name, bad, where, h+pos, err)
						}
						y := k.get(got, "dst")
						for j := range y {
							row, i := j/h, j%h
							v := float64(y[j])
							switch {
							case k.noStat:
								nonFinite := math.IsNaN(v) || math.IsInf(v, 0)
								if nonFinite != (row == 1 && i == pos) {
									t.Fatalf("%s %s: %v in %s[%d]: dst[%d] = %v: without a statistic exactly that element is not finite", tc.label, im.name, bad, where, h+pos, j, v)
								}
							case row != 1:
								if math.IsNaN(v) != math.IsNaN(ref.y[j]) || math.IsInf(v, 0) {
									t.Fatalf("%s %s: %v in row 1 leaked into dst[%d] = %v (oracle %v)", tc.label, im.name, bad, j, v, ref.y[j])
								}
							case math.IsNaN(bad) || k.mean || i == pos:
								if !math.IsNaN(v) {
									t.Fatalf("%s %s: %v in %s[%d]: dst[%d] = %v, want NaN", tc.label, im.name, bad, where, h+pos, j, v)
								}
							default:
								if v != 0 && !(k.shift && y[j] == k.toStorage(float32(k.shiftAt(k.shiftOf(in), row, i)))) {
									t.Fatalf("%s %s: %v in %s[%d]: dst[%d] = %v, want zero (times the scale, plus any shift)", tc.label, im.name, bad, where, h+pos, j, v)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestConcurrent calls every entry point from many goroutines at once,
// sharing the parameters (read-only), each with its own rows, and checks
// each result against a sequential call. Run it under -race.
func TestConcurrent(t *testing.T) {
	const workers = 8
	rng := rand.New(rand.NewPCG(12, 13))
	for _, k := range kernels {
		h, rows := k.sizes[0], 3
		shared := k.newArgs(rows, h, rng)
		k.fill(shared, families[0], rows, h, rng)
		var ins, wants []*args
		for w := 0; w < workers; w++ {
			in := shared.clone()
			for i, role := range k.roles {
				if role == roleRowIn {
					for j := range in.a[i] {
						in.a[i][j] = float32(rng.NormFloat64())
					}
				} else if role == roleParam {
					in.a[i] = shared.a[i] // the same parameters for every goroutine
				}
			}
			want := in.clone()
			k.fixed(h)(want.a, rows)
			ins, wants = append(ins, in), append(wants, want)
		}
		done := make(chan int, workers)
		for w := 0; w < workers; w++ {
			go func() {
				for range 20 {
					k.fixed(h)(ins[w].a, rows)
				}
				done <- w
			}()
		}
		for range workers {
			w := <-done
			got, want := k.get(ins[w], "dst"), k.get(wants[w], "dst")
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%s%d goroutine %d: dst[%d] = %v, sequential call gave %v", k.label(), h, w, j, got[j], want[j])
				}
			}
		}
	}
}

// TestWrongLengths checks that every entry point rejects a wrong length of
// each argument with a message naming the kernel and the argument, before
// touching any memory.
func TestWrongLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range kernels {
		for _, tc := range k.cases() {
			h, rows := tc.h, 2
			entry := k.impls(h, tc.anySize)[0]
			qualified := packageName + "." + k.name
			for i, name := range k.arrays {
				for _, delta := range []int{-1, 1, -1 << 30} {
					c := k.newArgs(rows, h, rng)
					k.fill(c, families[0], rows, h, rng)
					switch {
					case delta == -1<<30:
						c.a[i] = nil
					default:
						c.a[i] = c.buffers[i][c.offsets[i] : c.offsets[i]+len(c.a[i])+delta]
					}
					before := c.clone()
					what := fmt.Sprintf("%s with len(%s) = %d", tc.label, name, len(c.a[i]))
					msg := expectPanic(t, what, func() { entry.run(c.a, rows) })
					if !strings.HasPrefix(msg, qualified) || !strings.Contains(msg, "len(") {
						t.Fatalf("%s: panic message %q does not name the kernel and a length", what, msg)
					}
					if delta != -1<<30 && i != k.index("x") && !strings.Contains(msg, "len("+name+")") {
						t.Fatalf("%s: panic message %q does not name %s", what, msg, name)
					}
					for j := range c.buffers {
						for e := range c.buffers[j] {
							if math.Float32bits(c.buffers[j][e]) != math.Float32bits(before.buffers[j][e]) {
								t.Fatalf("%s: memory of %s changed before the panic", what, k.arrays[j])
							}
						}
					}
				}
			}
			if tc.anySize {
				for _, bad := range []int{0, -1} {
					c := k.newArgs(rows, h, rng)
					msg := expectPanic(t, fmt.Sprintf("%sAny with h = %d", k.name, bad), func() { k.anySize(c.a, rows, bad) })
					if !strings.Contains(msg, fmt.Sprintf("h = %d", bad)) {
						t.Fatalf("%sAny with h = %d: panic message %q", k.name, bad, msg)
					}
				}
			}
		}
	}
}

// TestOverlap checks that outputs may be the very same slice as a row
// input (TestEquivalence covers that) and that any other overlap panics.
func TestOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range kernels {
		h, rows := k.sizes[0], 2
		entry := k.fixed(h)
		dst, x := k.index("dst"), k.index("x")
		for _, shift := range []int{1, -1, h} {
			c := k.newArgs(rows, h, rng)
			k.fill(c, families[0], rows, h, rng)
			buf := make([]float32, rows*h+2*h)
			copy(buf[h:], c.a[x])
			c.a[x] = buf[h : h+rows*h]
			c.a[dst] = buf[h+shift : h+shift+rows*h]
			msg := expectPanic(t, fmt.Sprintf("%s%d with dst = x shifted by %d", k.name, h, shift), func() { entry(c.a, rows) })
			if !strings.Contains(msg, "overlap") {
				t.Fatalf("%s%d: panic message %q does not say overlap", k.name, h, msg)
			}
		}
		for i, role := range k.roles {
			if role != roleParam || k.storage != "f32" {
				continue // a float32 parameter cannot lie inside uint16 rows without unsafe
			}
			c := k.newArgs(rows, h, rng)
			k.fill(c, families[0], rows, h, rng)
			c.a[i] = c.a[dst][:h]
			msg := expectPanic(t, fmt.Sprintf("%s%d with %s inside dst", k.name, h, k.arrays[i]), func() { entry(c.a, rows) })
			if !strings.Contains(msg, "overlap") {
				t.Fatalf("%s%d: panic message %q does not say overlap", k.name, h, msg)
			}
		}
	}
}

// TestDispatch logs the implementation each kernel uses on this CPU. With
// NORMGEN_REQUIRE_ISA set (avx512, avx2, neon, purego), it fails unless every
// kernel generated for that instruction set uses it or a form of it, named
// after it (avx512bf16 for avx512): the proof that an emulated or remote
// run exercised the kernels it was meant to.
func TestDispatch(t *testing.T) {
	want := os.Getenv("NORMGEN_REQUIRE_ISA")
	checked := 0
	for _, k := range kernels {
		got := isaOf(k.name)
		t.Logf("normgen dispatch: %s (kernel %s)", got, k.name)
		for _, isa := range k.isas {
			if want != "" && isa == want {
				checked++
				if !strings.HasPrefix(got, want) {
					t.Errorf("kernel %s dispatches to %s, want %s", k.name, got, want)
				}
			}
		}
	}
	if want != "" && checked == 0 {
		t.Fatalf("NORMGEN_REQUIRE_ISA=%s, but no kernel is generated for it", want)
	}
}

// floatsOf turns fuzzer bytes into float32 values, little-endian: NaN, Inf
// and subnormals included.
func floatsOf(data []byte) []float32 {
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

// fuzzKernel checks every assembly implementation against the pure-Go one
// on rows made from the fuzzer's bytes: the same NaN positions, outputs
// within twice the accuracy contract of each other, no stray writes.
// Rows outside the contract's range (see representable) are only checked
// for NaN positions and stray writes.
func fuzzKernel(f *testing.F, name string, h int) {
	k := kernelNamed(name)
	seed := func(vals ...float32) []byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	f.Add(seed(1, 2, 3, 4, 5))
	f.Add(seed(float32(math.NaN()), 1, 2))
	f.Add(seed(float32(math.Inf(1)), -1, 0.5))
	f.Add(seed(1e-40, -1e-41, 3e-39))
	f.Add(seed(1e4, 1e4+1, 1e4-1, 1e4))
	f.Add(seed(7, 7, 7, 7))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals := floatsOf(data)
		if len(vals) == 0 {
			return
		}
		rows := 1 + int(data[0]%2)
		rng := rand.New(rand.NewPCG(uint64(len(data)), 7))
		in := k.newArgs(rows, h, rng)
		k.fill(in, families[0], rows, h, rng)
		for i, role := range k.roles {
			if role == roleRowIn {
				for j := range in.a[i] {
					in.a[i][j] = vals[(j+i)%len(vals)]
				}
			}
		}
		k.quantize(in)
		ref := k.oracle(k.get(in, "x"), k.get(in, "f"), k.scaleOf(in), k.shiftOf(in), rows, h)
		want := in.clone()
		k.pureGo(want.a, rows, h)
		for _, im := range asmImpls(k.name, h, false, float32(k.eps)) {
			got := in.clone()
			im.run(got.a, rows)
			if err := got.checkMargins(k.arrays); err != nil {
				t.Fatalf("%s: %v", im.name, err)
			}
			y, w := k.get(got, "dst"), k.get(want, "dst")
			inRange := make([]bool, rows)
			for row := range inRange {
				inRange[row] = representable(ref, row, h)
			}
			for j := range y {
				row := j / h
				if math.IsNaN(float64(y[j])) != math.IsNaN(float64(w[j])) {
					t.Fatalf("%s: dst[%d] = %v, pure Go %v: NaN positions differ", im.name, j, y[j], w[j])
				}
				if !inRange[row] || math.IsNaN(float64(y[j])) || y[j] == w[j] {
					continue
				}
				if d := math.Abs(float64(y[j]) - float64(w[j])); !(d <= 2*k.bound(ref, k.scaleOf(in), row, j%h, h)) {
					t.Fatalf("%s: dst[%d] = %v, pure Go %v, oracle %v", im.name, j, y[j], w[j], ref.y[j])
				}
			}
		}
	})
}

// representable reports whether a row is inside the range where the
// accuracy contract applies: finite, with max|s| * H < 1e38, so that even
// float32 sums of |s - pivot| cannot overflow.
func representable(ref reference, row, h int) bool {
	maxAbs := 0.0
	for _, v := range ref.s[row*h : (row+1)*h] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	return maxAbs*float64(h) < 1e38
}

func kernelNamed(name string) *kernel {
	for _, k := range kernels {
		if k.name == name {
			return k
		}
	}
	panic("no kernel " + name)
}

// benchKernel times every implementation of a kernel at size h on inputs of
// about 128 KiB (cache-resident) and 32 MiB (memory), each next to a copy of
// the same bytes, so that every figure has its bound from the same run.
// A half kernel's x is that many bytes of uint16, which its implementations
// read from arrays encoded once (timeHalf), and the copy copies uint16s.
func benchKernel(b *testing.B, name string, h int) {
	k := kernelNamed(name)
	rng := rand.New(rand.NewPCG(8, 9))
	elem := 4
	if _, ok := halfFormats[k.storage]; ok {
		elem = 2
	}
	for _, size := range []struct {
		name  string
		bytes int
	}{{"128KiB", 128 << 10}, {"32MiB", 32 << 20}} {
		rows := max(1, size.bytes/(elem*h))
		c := k.newArgs(rows, h, nil) // aligned, as large slices are in practice
		k.fill(c, families[0], rows, h, rng)
		x, dst := k.get(c, "x"), k.get(c, "dst")
		b.Run(size.name+"/copy", func(b *testing.B) {
			b.SetBytes(int64(elem * len(x)))
			if elem == 2 {
				src, dst := copyBuffers(2 * len(x))
				b.ResetTimer()
				for range b.N {
					copy(dst, src)
				}
				return
			}
			for range b.N {
				copy(dst, x)
			}
		})
		for _, im := range k.impls(h, false) {
			b.Run(size.name+"/"+im.name, func(b *testing.B) {
				b.SetBytes(int64(elem * len(x)))
				if elem == 2 {
					timeHalf(b, func() { im.run(c.a, rows) })
					return
				}
				for range b.N {
					im.run(c.a, rows)
				}
			})
		}
	}
}

// TestEpsChecks checks that every entry point taking eps panics, naming
// itself and the value, on NaN, an infinity, a negative or a subnormal eps
// (even with no rows), and takes 0, the smallest normal float32 and the
// largest float32.
func TestEpsChecks(t *testing.T) {
	if len(epsEntryPoints) == 0 {
		t.Skip("no kernel takes eps at run time")
	}
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-5, -math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32, 1e-39}
	good := []float32{0, float32(math.Copysign(0, -1)), 0x1p-126, 1e-5, 1000, math.MaxFloat32}
	for name, call := range epsEntryPoints {
		for _, eps := range bad {
			msg := expectPanic(t, fmt.Sprintf("%s with eps = %v", name, eps), func() { call(eps) })
			if !strings.HasPrefix(msg, packageName+"."+name+":") || !strings.Contains(msg, fmt.Sprintf("eps = %v", eps)) {
				t.Fatalf("%s with eps = %v: panic message %q does not name the entry point and the value", name, eps, msg)
			}
		}
		for _, eps := range good {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s with eps = %v: %v", name, eps, r)
					}
				}()
				call(eps)
			}()
		}
	}
}

// TestEmptyAny checks that an Any entry point with h = 0 and every slice
// empty (nil or not) does nothing, and that h = 0 with any slice not empty
// panics.
func TestEmptyAny(t *testing.T) {
	for _, k := range kernels {
		for _, parallel := range []bool{false, true} {
			run := func(a [][]float32) {
				if parallel {
					k.parallel(0, true)(a, 0)
				} else {
					k.anySize(a, 0, 0)
				}
			}
			what := fmt.Sprintf("%sAny (parallel %v) with h = 0", k.label(), parallel)
			run(make([][]float32, len(k.arrays)))
			empty := make([][]float32, len(k.arrays))
			for i := range empty {
				empty[i] = []float32{}
			}
			run(empty)
			for i, name := range k.arrays {
				a := make([][]float32, len(k.arrays))
				a[i] = make([]float32, 1)
				msg := expectPanic(t, fmt.Sprintf("%s and len(%s) = 1", what, name), func() { run(a) })
				if !strings.Contains(msg, "h = 0") {
					t.Fatalf("%s and len(%s) = 1: panic message %q", what, name, msg)
				}
			}
		}
	}
}

// TestImplementation checks that the package's Implementation names the best
// instruction set any kernel dispatches to on this CPU, and with
// NORMGEN_REQUIRE_ISA set (avx512, avx2, neon, purego) that one or a form
// of it.
func TestImplementation(t *testing.T) {
	got := implementationFunc()
	t.Logf("%s() = %q", implementationName, got)
	used := map[string]bool{}
	for _, k := range kernels {
		used[isaOf(k.name)] = true
	}
	want := ""
	for _, isa := range isaOrder {
		if used[isa] {
			want = isaTitles[isa]
			break
		}
	}
	if got != want {
		t.Errorf("%s() = %q, want %q (the kernels dispatch to %v)", implementationName, got, want, used)
	}
	if req := os.Getenv("NORMGEN_REQUIRE_ISA"); req != "" && !strings.HasPrefix(titleISA(got, isaTitles), req) {
		generated := false
		for _, k := range kernels {
			for _, isa := range k.isas {
				generated = generated || isa == req
			}
		}
		if generated {
			t.Errorf("NORMGEN_REQUIRE_ISA=%s: %s() = %q, want %q", req, implementationName, got, isaTitles[req])
		}
	}
}

// titleISA is the name of the instruction set whose title is title.
func titleISA(title string, titles map[string]string) string {
	for name, t := range titles {
		if t == title {
			return name
		}
	}
	return ""
}
