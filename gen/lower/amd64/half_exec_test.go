package amd64

import (
	"math/rand/v2"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// halfSpecs are spec kernels in each half format: a pivot load, a stored
// sum beside the output.
var halfSpecs = []spec.Kernel{
	{Name: "BF16LayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Storage: "bf16"},
	{Name: "F16AddLayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}, Storage: "f16"},
	{Name: "BF16AddRMSNorm", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}, Storage: "bf16"},
}

// TestExecuteHalf runs the half-precision loads and stores of each ISA,
// for the formats each converts: the conversions alone bit for bit
// against ir's (every bit pattern widened, the telling float32 values
// narrowed) at a fixed H of full vectors and a tail and at run time, and
// the half spec kernels through a few Rows cases. Functions this CPU
// cannot run are assembled and vetted only.
func TestExecuteHalf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	var copies, kernels []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512, target.AVX512BF16} {
		for _, k := range lowertest.HalfCopies(t, isa) {
			for _, h := range []int{37, 0} {
				copies = append(copies, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
		for _, s := range halfSpecs {
			k, err := algo.Build(s)
			if err != nil {
				t.Fatal(err)
			}
			if !isa.Lowers(k) {
				continue
			}
			if target.KernelElem(k) == ir.F32 {
				t.Fatalf("%s: float32 storage", s.Name)
			}
			for _, h := range []int{7, 64, 0} {
				kernels = append(kernels, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
	}
	funcs := append(copies, kernels...)
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	var run []target.Func
	for _, f := range copies {
		if runs(f) {
			run = append(run, f)
		}
	}
	cases := lowertest.HalfCases(run, 1021)
	run = run[:0]
	for _, f := range kernels {
		if runs(f) {
			run = append(run, f)
		}
	}
	cases = append(cases, lowertest.HalfRowCases(run, []int{5, 33, 100})...)
	lowertest.Host("amd64").Execute(t, src, funcs, cases)
}

// halfLayoutSpecs are tensor spec kernels in each half format: ConvNeXt's
// LayerNorm and BatchNorm's [N, C] form (Columns: an AVX2 partial block
// goes element by element), GroupNorm and BatchNorm over segments.
var halfLayoutSpecs = []spec.Kernel{
	{Name: "BF16CLN", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true, SaveStats: true, Storage: "bf16"},
	{Name: "F16BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true,
		Running: &spec.Running{Momentum: 0.1, Convention: "pytorch"}, Storage: "f16"},
	{Name: "BF16GN", Axis: "groups", Groups: 2, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Storage: "bf16"},
}

// TestExecuteHalfLayouts runs the half-precision Columns and Segments
// kernels of both ISAs against ir.EvalShape at the layout tests' short
// shapes (rows in whole blocks, groups and partial blocks; segments of
// every sweep length), on clean data, a NaN row and in place.
func TestExecuteHalfLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	var kernels []*ir.Kernel
	for _, s := range halfLayoutSpecs {
		k, err := algo.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, k)
		if s.Axis == "batch" {
			if k, err = algo.BatchColumns(s); err != nil {
				t.Fatal(err)
			}
			kernels = append(kernels, k)
		}
	}
	var funcs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range kernels {
			if !isa.Lowers(k) {
				continue
			}
			hs := []int{0}
			if k.Layout == ir.Columns {
				hs = []int{0, 17}
			}
			for _, h := range hs {
				funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
	}
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var cases []lowertest.Case
	for _, f := range funcs {
		if !runs(f) {
			continue
		}
		rule := lowertest.MaskedTail(map[target.ISA]int{target.AVX2: 8, target.AVX512: 16}[f.ISA])
		for _, s := range layoutShapes(f.Kernel.Layout) {
			if f.H > 0 && s.shape.H != f.H || len(layoutVariants(s)) < len(dataVariants) {
				continue // another fixed H, or a long shape
			}
			for _, v := range []string{"", "nan", "inplace"} {
				c, _ := lowertest.NewCase(rng, f, s.shape, layoutPlans(v, s.rows), v == "inplace", rule)
				cases = append(cases, c)
			}
		}
	}
	t.Logf("%d cases", len(cases))
	lowertest.Host("amd64").Execute(t, src, funcs, cases)
}
