package amd64

import (
	"sync"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

const testHeader = lowertest.Header

// testKernels covers every piece rowNorm combines: centering, scale,
// shift, scale offset, residual with alpha 1 and 0.7, with and without the
// stored sum, saved statistics.
var testKernels = []spec.Kernel{
	{Name: "LayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true},
	{Name: "LayerNormPlain", Mean: true, Epsilon: 1e-5},
	{Name: "RMSNorm", Epsilon: 1e-6, Scale: true},
	{Name: "GemmaRMSNorm", Epsilon: 1e-6, Scale: true, ScaleOffset: 1},
	{Name: "AddLayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 1}},
	{Name: "AddLayerNormSum", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}},
	{Name: "DeepLayerNorm", Mean: true, Epsilon: 1e-5, Shift: true, Residual: &spec.Residual{Alpha: 0.7}},
	{Name: "DeepRMSNorm", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 0.7}},
	{Name: "DeepRMSNormSum", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 0.7, StoreSum: true}},
	{Name: "LayerNormStats", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
	{Name: "RMSNormStats", Epsilon: 1e-6, Scale: true, SaveStats: true},
	// Every array at once: the most general-purpose registers.
	{Name: "Everything", Mean: true, Epsilon: 1e-5, Scale: true, ScaleOffset: 0.5, Shift: true, Residual: &spec.Residual{Alpha: 0.7, StoreSum: true}, SaveStats: true},
}

// testSizes adds 256, the longest row AVX-512 keeps in registers, and
// 2048, swept in blocks of 2 rows (shorter rows: 4), to the sizes of the
// brief.
var testSizes = []int{1, 3, 7, 8, 9, 16, 17, 31, 33, 64, 100, 256, 768, 2048, 4096}

var testRows = []int{1, 2, 5}

// buildKernels returns testKernels, then the kernels with guards: a
// guarded copy of each test kernel that has no store before its last loop
// (lowertest.WithGuard), lowertest.GuardStats and lowertest.ReadTwice.
func buildKernels(t testing.TB) []*ir.Kernel {
	t.Helper()
	var ks, guarded []*ir.Kernel
	for _, sk := range testKernels {
		k, err := algo.Build(sk)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
		if g := lowertest.WithGuard(k); g != nil {
			guarded = append(guarded, g)
		}
	}
	return append(append(ks, guarded...), lowertest.GuardStats(t), lowertest.ReadTwice(t, "ReadTwice", ir.Rows))
}

// Long rows: run-time lengths at and across the AVX-512 chunk (64 lanes
// times ir.SumChunk: 4096) and super-total (262144) boundaries, and
// fixed lengths whose partial sums take several chunks (5000: the masked
// tail joins the last, 8192: whole chunks), for kernels with one, two
// and three accumulators per loop and the most arrays.
var (
	longSizes   = []int{4095, 4096, 4097, 70000, 300000}
	longFixed   = []int{5000, 8192}
	longRows    = []int{1, 2}
	longKernels = map[string]bool{"LayerNorm": true, "RMSNorm": true, "Everything": true, "GuardLayerNorm": true}
)

// testFuncs is every kernel at every test size and at run-time size (the
// long kernels at longFixed too), for both ISAs, each followed by its NT
// variant where there is one. The
// harness's heap placement misaligns every array (the NT variant falls
// back to its twin) and its fenced placements align them to the page (it
// streams).
func testFuncs(ks []*ir.Kernel) []target.Func {
	var fs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range ks {
			hs := append(append([]int{}, testSizes...), 0)
			if longKernels[k.Name] {
				hs = append(hs, longFixed...)
			}
			for _, h := range hs {
				fs = append(fs, target.Func{Kernel: k, H: h, ISA: isa})
				if isa.NonTemporal(k.Layout, h) {
					fs = append(fs, target.Func{Kernel: k.StreamingForm(), H: h, ISA: isa, NT: true})
				}
			}
		}
	}
	return fs
}

// executeSource is TestExecute's functions and their assembly, generated
// once per process: TestDeterministic compares a second generation with
// it rather than generating the 1250 functions twice more.
func executeSource(t testing.TB) ([]target.Func, []byte) {
	t.Helper()
	executeOnce.Do(func() {
		executeFuncs = testFuncs(buildKernels(t))
		executeSrc, executeErr = Generate(testHeader, executeFuncs)
	})
	if executeErr != nil {
		t.Fatal(executeErr)
	}
	return executeFuncs, executeSrc
}

var (
	executeOnce  sync.Once
	executeFuncs []target.Func
	executeSrc   []byte
	executeErr   error
)

// runs reports whether this CPU runs f; the others are assembled and
// vetted only.
func runs(f target.Func) bool {
	switch f.ISA {
	case target.AVX512:
		return cpu.X86.HasAVX512F
	case target.AVX512BF16:
		return cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16
	}
	return cpu.X86.HasAVX2 && cpu.X86.HasFMA
}

// TestExecute generates every test function into a scratch module, vets
// it (asmdecl checks the frames against the Go declarations) and runs the
// kit's Rows cases against ir.Eval, long rows (sums in chunks, totals and
// super-totals) included. AVX-512 functions run only where the CPU has
// AVX-512F; elsewhere they are assembled and vetted.
func TestExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	funcs, src := executeSource(t)
	suite := lowertest.RowSuite{Sizes: testSizes, Rows: testRows, LongKernels: longKernels, LongSizes: longSizes, LongRows: longRows, Runs: runs}
	cases, _ := suite.Cases(t, funcs)
	lowertest.Host("amd64").Execute(t, src, funcs, cases)
}
