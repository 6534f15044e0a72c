package testkit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/normgen/normgen/gen/ir"
)

// The role constants the template's kernel table is written with are
// ir.Role's values.
func TestRolesMatchIR(t *testing.T) {
	for _, c := range []struct {
		kit  int
		role ir.Role
	}{{roleRowIn, ir.RowIn}, {roleRowOut, ir.RowOut}, {roleParam, ir.Param}, {roleRowScalarIn, ir.RowScalarIn}, {roleRowScalarOut, ir.RowScalarOut}} {
		if c.kit != int(c.role) {
			t.Errorf("role %s: kit %d, ir %d", c.role, c.kit, int(c.role))
		}
	}
}

// overlaps reports whether two non-empty slices share memory.
func overlaps(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return pa < pb+4*uintptr(len(b)) && pb < pa+4*uintptr(len(a))
}

// refKernel is a reference implementation in float64, rounded once, with
// the argument checks of the generated entry points: LayerNorm with mean,
// RMSNorm (no shift) without.
func refKernel(name string, mean bool) *kernel {
	k := &kernel{
		name: name, mean: mean, eps: 1e-5, scale: true, shift: mean,
		isas: []string{"purego"}, sizes: []int{8, 40},
		arrays: []string{"dst", "x", "gamma"}, roles: []int{roleRowOut, roleRowIn, roleParam},
	}
	if mean {
		k.arrays, k.roles = append(k.arrays, "beta"), append(k.roles, roleParam)
	}
	compute := func(a [][]float32, rows, h int) {
		dst, x, gamma := a[0], a[1], a[2]
		for r := 0; r < rows; r++ {
			row := x[r*h : (r+1)*h]
			mu, ss := 0.0, 0.0
			if mean {
				for _, v := range row {
					mu += float64(v)
				}
				mu /= float64(h)
			}
			for _, v := range row {
				ss += (float64(v) - mu) * (float64(v) - mu)
			}
			rstd := 1 / math.Sqrt(ss/float64(h)+k.eps)
			for i, v := range row {
				y := (float64(v) - mu) * rstd * float64(gamma[i])
				if mean {
					y += float64(a[3][i])
				}
				dst[r*h+i] = float32(y)
			}
		}
	}
	entry := func(a [][]float32, rows, h int) {
		for i, role := range k.roles {
			want := rows * h
			if role == roleParam {
				want = h
			}
			if len(a[i]) != want {
				panic(fmt.Sprintf("%s.%s: len(%s) = %d, want %d", packageName, name, k.arrays[i], len(a[i]), want))
			}
		}
		for i := 1; i < len(a); i++ {
			if overlaps(a[0], a[i]) && !(i == 1 && &a[0][0] == &a[1][0]) {
				panic(fmt.Sprintf("%s.%s: dst and %s overlap", packageName, name, k.arrays[i]))
			}
		}
		compute(a, rows, h)
	}
	k.fixed = func(h int) func(a [][]float32, rows int) {
		return func(a [][]float32, rows int) { entry(a, rows, h) }
	}
	k.anySize = func(a [][]float32, rows, h int) {
		if h <= 0 {
			empty := h == 0
			for _, s := range a {
				empty = empty && len(s) == 0
			}
			if empty {
				return
			}
			panic(fmt.Sprintf("%s.%sAny: h = %d, want h >= 1 (or h = 0 with every slice empty)", packageName, name, h))
		}
		entry(a, rows, h)
	}
	k.parallel = func(h int, anySize bool) func(a [][]float32, rows int) {
		if anySize {
			return func(a [][]float32, rows int) { k.anySize(a, rows, h) }
		}
		return k.fixed(h)
	}
	k.pureGo = compute
	return k
}

// TestRowsSuite runs the generated tests' own test functions on the
// reference kernels: a correct implementation passes all of them.
func TestRowsSuite(t *testing.T) {
	defer func(saved []*kernel) { kernels = saved }(kernels)
	kernels = []*kernel{refKernel("RefLayerNorm", true), refKernel("RefRMSNorm", false)}
	// A kernel with a run-time epsilon, once per value as the template
	// lists it: eps 0 makes a constant row 0/0.
	for _, eps := range []float32{1e-5, 0} {
		k := refKernel("RefRMSNormEps", false)
		k.eps, k.runtimeEps = float64(eps), true
		kernels = append(kernels, k)
	}
	defer func(saved map[string]func(float32)) { epsEntryPoints = saved }(epsEntryPoints)
	epsEntryPoints = map[string]func(float32){"RefRMSNormEps8": func(eps float32) { refCheckEps("RefRMSNormEps8", eps) }}
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"Equivalence", TestEquivalence}, {"LongRows", TestLongRows}, {"NonFinite", TestNonFinite},
		{"Concurrent", TestConcurrent}, {"WrongLengths", TestWrongLengths}, {"Overlap", TestOverlap},
		{"Dispatch", TestDispatch}, {"EpsChecks", TestEpsChecks}, {"EmptyAny", TestEmptyAny},
		{"Implementation", TestImplementation},
	} {
		t.Run(c.name, c.test)
	}
}

// refCheckEps is the generated entry points' check of a run-time eps.
func refCheckEps(entry string, eps float32) {
	if !(eps == 0 || eps >= 0x1p-126 && eps <= math.MaxFloat32) {
		panic(fmt.Sprintf("%s.%s: eps = %v, want 0 or a finite value >= 1.1754944e-38 (the smallest normal float32)", packageName, entry, eps))
	}
}

// TestLabel checks that the kernels with a run-time epsilon are named with
// the value they are tested with, and the others by their name.
func TestLabel(t *testing.T) {
	k := refKernel("R", false)
	if got := k.label(); got != "R" {
		t.Errorf("compiled eps: label %q", got)
	}
	k.eps, k.runtimeEps = float64(float32(1e-5)), true
	if got := k.label(); got != "R[eps=1e-05]" {
		t.Errorf("run-time eps 1e-5: label %q", got)
	}
	k.eps = 0
	if got := k.label(); got != "R[eps=0]" {
		t.Errorf("run-time eps 0: label %q", got)
	}
}

// TestOracle checks the float64 oracle on a row worked out by hand, for
// each statistic and for the residual input.
func TestOracle(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	f := []float32{0.5, 0, -0.5, 1}
	gamma := []float32{1, 2, 1, 1}
	beta := []float32{0, 0, 1, 0}
	for _, c := range []struct {
		name         string
		k            kernel
		s            []float64
		mu, variance float64
	}{
		{"layernorm", kernel{mean: true, scale: true, shift: true}, []float64{1, 2, 3, 4}, 2.5, 1.25},
		{"rmsnorm", kernel{scale: true}, []float64{1, 2, 3, 4}, 0, 7.5},
		{"l2", kernel{l2: true}, []float64{1, 2, 3, 4}, 0, 30},
		{"residual", kernel{residual: true, alpha: 2}, []float64{2.5, 4, 5.5, 9}, 0, (6.25 + 16 + 30.25 + 81) / 4},
	} {
		r := c.k.oracle(x, f, gamma, beta, 1, 4)
		sigma := math.Sqrt(c.variance)
		if math.Abs(r.mean[0]-c.mu) > 1e-15 || math.Abs(r.rstd[0]-1/sigma) > 1e-15 {
			t.Errorf("%s: mean %v rstd %v, want %v %v", c.name, r.mean[0], r.rstd[0], c.mu, 1/sigma)
		}
		if want := c.s[3] / sigma; math.Abs(r.scaleOfRow[0]-want) > 1e-15 {
			t.Errorf("%s: conditioning %v, want %v", c.name, r.scaleOfRow[0], want)
		}
		for i, s := range c.s {
			want := (s - c.mu) / sigma
			if c.k.scale {
				want *= float64(gamma[i])
			}
			if c.k.shift {
				want += float64(beta[i])
			}
			if math.Abs(r.y[i]-want) > 1e-15 || r.s[i] != s {
				t.Errorf("%s: y[%d] = %v (s %v), want %v (s %v)", c.name, i, r.y[i], r.s[i], want, s)
			}
		}
	}
	// One scale and shift per row: gain and bias.
	k := kernel{scale: true, shift: true, affinePerRow: true, scaleOffset: 1}
	r := k.oracle(x, nil, []float32{3}, []float32{-1}, 1, 4)
	if want := (1/math.Sqrt(7.5))*4 - 1; math.Abs(r.y[0]-want) > 1e-15 {
		t.Errorf("per-row affine: y[0] = %v, want %v", r.y[0], want)
	}
}

// rounded is a call whose dst holds the oracle's outputs rounded to
// float32: the best any implementation can do.
func rounded(k *kernel, rows, h int, rng *rand.Rand) (in, got *args, ref reference) {
	in = k.newArgs(rows, h, rng)
	k.fill(in, families[0], rows, h, rng)
	ref = k.oracle(k.get(in, "x"), k.get(in, "f"), k.scaleOf(in), k.shiftOf(in), rows, h)
	got = in.clone()
	for j, y := range ref.y {
		k.get(got, "dst")[j] = float32(y)
	}
	return in, got, ref
}

// TestVerify checks that verify accepts the correctly rounded result,
// measures its error in the contract's units, and rejects an output off
// by twice the bound, a NaN, and a constant row that is not exactly beta.
func TestVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	k := refKernel("V", true)
	const rows, h = 3, 40
	in, got, ref := rounded(k, rows, h, rng)
	delete(worst, k.name)
	if err := k.verify(got, in, ref, families[0], h); err != nil {
		t.Fatalf("correctly rounded: %v", err)
	}
	// Rounding once errs by at most half an ulp: well under one unit of
	// the contract, but not zero.
	if w := worst[k.name]; !(w > 0 && w < 1) {
		t.Errorf("correctly rounded: worst error %v units, want in (0, 1)", w)
	}
	for _, j := range []int{0, h + 7, rows*h - 1} {
		bad := got.clone()
		row, i := j/h, j%h
		b := k.bound(ref, k.scaleOf(in), row, i, h)
		k.get(bad, "dst")[j] = float32(ref.y[j] + 2*b)
		if err := k.verify(bad, in, ref, families[0], h); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("dst[%d]", j)) {
			t.Errorf("output %d off by twice the bound: %v", j, err)
		}
		k.get(bad, "dst")[j] = float32(math.NaN())
		if err := k.verify(bad, in, ref, families[0], h); err == nil {
			t.Errorf("NaN output %d accepted", j)
		}
	}
	// A constant row with a mean must come out exactly beta.
	constant := families[7]
	if !constant.constant {
		t.Fatalf("families[7] = %s, not constant", constant.name)
	}
	in = k.newArgs(1, h, rng)
	k.fill(in, constant, 1, h, rng)
	ref = k.oracle(k.get(in, "x"), nil, k.scaleOf(in), k.shiftOf(in), 1, h)
	got = in.clone()
	copy(k.get(got, "dst"), k.get(in, "beta"))
	if err := k.verify(got, in, ref, constant, h); err != nil {
		t.Fatalf("constant row, exactly beta: %v", err)
	}
	d := k.get(got, "dst")
	d[5] = math.Nextafter32(d[5], 10)
	if err := k.verify(got, in, ref, constant, h); err == nil {
		t.Errorf("constant row one ulp off beta accepted")
	}
}

// TestVerifyResidualSum checks the exactness rule for the residual's
// sum output: either rounding of alpha*x + f, nothing else.
func TestVerifyResidualSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	k := &kernel{name: "S", residual: true, alpha: 0.5, arrays: []string{"dst", "sum", "x", "f"}, roles: []int{roleRowOut, roleRowOut, roleRowIn, roleRowIn}}
	const h = 16
	in, got, ref := rounded(k, 1, h, rng)
	sum, x, f := k.get(got, "sum"), k.get(in, "x"), k.get(in, "f")
	for j := range sum {
		sum[j] = float32(float32(0.5)*x[j]) + f[j]
	}
	if err := k.verify(got, in, ref, families[0], h); err != nil {
		t.Fatalf("sum rounded twice: %v", err)
	}
	sum[3] = math.Nextafter32(sum[3], float32(math.Inf(1)))
	if err := k.verify(got, in, ref, families[0], h); err == nil || !strings.Contains(err.Error(), "sum[3]") {
		t.Errorf("sum one ulp off: %v", err)
	}
}

// TestFencedArgs checks that every array sits inside sentinels that
// checkMargins watches, at an unaligned offset, and that clone copies.
func TestFencedArgs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	k := refKernel("F", true)
	c := k.newArgs(2, 8, rng)
	for i, a := range c.a {
		if c.offsets[i] < 1 || c.offsets[i] > 7 || cap(a) != len(a) {
			t.Errorf("%s: offset %d, len %d cap %d", k.arrays[i], c.offsets[i], len(a), cap(a))
		}
	}
	if err := c.checkMargins(k.arrays); err != nil {
		t.Fatalf("fresh arrays: %v", err)
	}
	d := c.clone()
	d.a[0][0] = 42
	if c.a[0][0] == 42 {
		t.Fatal("clone shares memory")
	}
	for i := range c.buffers {
		for _, at := range []int{c.offsets[i] - 1, c.offsets[i] + len(c.a[i]), len(c.buffers[i]) - 1} {
			e := c.clone()
			e.buffers[i][at] = 0
			if err := e.checkMargins(k.arrays); err == nil || !strings.Contains(err.Error(), k.arrays[i]) {
				t.Errorf("write at buffer index %d of %s: %v", at, k.arrays[i], err)
			}
		}
	}
	if a := k.newArgs(2, 8, nil); a.offsets[0] != 0 {
		t.Errorf("rng nil: offset %d, want 0", a.offsets[0])
	}
}

// TestFamilies checks that each family of inputs is what its name and
// the tests that rely on it say.
func TestFamilies(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, fam := range families {
		for row := 0; row < 3; row++ {
			first := fam.value(rng, row)
			for i := 0; i < 100; i++ {
				v := fam.value(rng, row)
				switch {
				case fam.constant && v != first:
					t.Fatalf("%s: row %d not constant", fam.name, row)
				case fam.name == "zero" && v != 0,
					fam.name == "subnormal" && v != 0 && math.Abs(float64(v)) >= 0x1p-126,
					fam.name == "uniform+3" && !(v >= 3 && v <= 4),
					math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
					t.Fatalf("%s: value %v", fam.name, v)
				}
			}
		}
	}
	overflow := 0
	for i := 0; i < 100; i++ {
		v := families[4].value(rng, 0)
		if math.IsInf(float64(v*v), 0) {
			overflow++
		}
	}
	if families[4].name != "1e30" || overflow < 90 {
		t.Errorf("%s: %d of 100 squares overflow float32", families[4].name, overflow)
	}
	for _, fam := range longFamilies {
		if fam.name == "dominant" && fam.value(rng, 5, 5) != 1e4 {
			t.Errorf("dominant: the special position is not dominant")
		}
		if fam.name == "tenths" && (fam.value(rng, 0, 3) != 0 || fam.value(rng, 9, 3) != 0.1) {
			t.Errorf("tenths: not a zero then 0.1s")
		}
		if fam.name == "step" && (fam.value(rng, 2, 3) > -9e3 || math.Abs(float64(fam.value(rng, 3, 3))) > 10) {
			t.Errorf("step: not -1e4 before the position and N(0, 1) from it")
		}
		if fam.name == "ramp" && !(fam.value(rng, 1<<20, 0) > fam.value(rng, 0, 0)+1e3-1) {
			t.Errorf("ramp: does not rise by 1e-3 an element")
		}
	}
	for name := range shortFamilies {
		found := false
		for _, fam := range families {
			found = found || fam.name == name
		}
		if !found {
			t.Errorf("short family %s is not a family", name)
		}
	}
}

// TestCases checks that every fixed size is tested through both entry
// points, and the run-time one at tails.
func TestCases(t *testing.T) {
	k := refKernel("C", true)
	fixed, any := map[int]bool{}, map[int]bool{}
	for _, c := range k.cases() {
		if c.anySize {
			any[c.h] = true
		} else {
			fixed[c.h] = true
		}
	}
	for _, h := range k.sizes {
		if !fixed[h] || !any[h] {
			t.Errorf("size %d: fixed %v, any %v", h, fixed[h], any[h])
		}
	}
	if !any[17] || !any[33] {
		t.Errorf("tails 17 and 33 missing: %v", any)
	}
}

func TestFloatsOfAndRepresentable(t *testing.T) {
	got := floatsOf([]byte{0, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f, 1})
	if len(got) != 2 || got[0] != 1 || !math.IsNaN(float64(got[1])) {
		t.Errorf("floatsOf: %v", got)
	}
	ref := reference{s: []float64{1, 2, 6e37, 1, math.Inf(1), 0}}
	if !representable(ref, 0, 2) || representable(ref, 1, 2) || representable(ref, 2, 2) {
		t.Errorf("representable: rows (1, 2), (6e37, 1), (Inf, 0) gave %v %v %v",
			representable(ref, 0, 2), representable(ref, 1, 2), representable(ref, 2, 2))
	}
}

// checkNonFiniteStats wants NaN saved statistics for a row holding a NaN
// or an infinity, and leaves finite rows to the ordinary checks.
func TestCheckNonFiniteStats(t *testing.T) {
	k := &kernel{name: "K", mean: true, arrays: []string{"dst", "mean", "rstd", "x"}}
	inf, nan := math.Inf(1), math.NaN()
	ref := reference{mean: []float64{1, inf, nan}, rstd: []float64{2, nan, nan}}
	nan32 := float32(nan)
	for _, c := range []struct {
		mean, rstd []float32
		ok         bool
	}{
		{[]float32{1, nan32, nan32}, []float32{2, nan32, nan32}, true},
		{[]float32{5, nan32, nan32}, []float32{7, nan32, nan32}, true}, // finite rows: not this check's
		{[]float32{1, float32(inf), nan32}, []float32{2, nan32, nan32}, false},
		{[]float32{1, nan32, nan32}, []float32{2, nan32, 0}, false},
	} {
		got := &args{a: [][]float32{nil, c.mean, c.rstd, nil}}
		if err := k.checkNonFiniteStats(got, ref); (err == nil) != c.ok {
			t.Errorf("mean %v, rstd %v: %v", c.mean, c.rstd, err)
		}
	}
}
