package arm64

import (
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

const header = lowertest.Header

// testSpecs covers every piece rowNorm composes: centering, both
// statistics, affine scale and shift alone and together, Gemma's offset,
// residuals with alpha 1 and 0.7 with and without the stored sum, and
// saved statistics.
var testSpecs = []spec.Kernel{
	{Name: "LayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true},
	{Name: "LayerNormPlain", Mean: true, Epsilon: 1e-5},
	{Name: "RMSNorm", Epsilon: 1e-6, Scale: true},
	{Name: "RMSNormShift", Epsilon: 1e-6, Shift: true},
	{Name: "GemmaRMSNorm", Epsilon: 1e-6, Scale: true, ScaleOffset: 1},
	{Name: "AddLayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}},
	{Name: "AddLayerNormNoSum", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 1}},
	{Name: "AddRMSNorm", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 1}},
	{Name: "DeepLayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 0.7}},
	{Name: "DeepRMSNorm", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 0.7, StoreSum: true}},
	{Name: "LayerNormStats", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
	{Name: "RMSNormStats", Epsilon: 1e-6, Scale: true, SaveStats: true},
	{Name: "AddGemmaStats", Mean: true, Epsilon: 1e-6, Scale: true, ScaleOffset: 1, Residual: &spec.Residual{Alpha: 0.7, StoreSum: true}, SaveStats: true},
}

var testSizes = []int{1, 3, 4, 5, 7, 8, 16, 17, 33, 64, 100, 768, 4096}

var testRows = []int{1, 2, 5}

// Long rows cross the summation's chunk (ir.SumChunk iterations of 4*u
// elements), total and super-total boundaries (ir.SumTotal chunks: 65536
// elements at unroll 4, 32768 at 2): run-time h on both sides of 4096 and
// past one super-chunk, with each leftover vector and tail length, and
// fixed H of several chunks. A few kernels cover every accumulator shape:
// one and two accumulators, Mix's sum read across loops, Pressure's unroll 2.
var (
	longKernels = map[string]bool{"LayerNorm": true, "RMSNorm": true, "AddGemmaStats": true, "Mix": true, "Pressure": true}
	longSizes   = []int{4095, 4097, 32769, 65537, 70000}
	longFixed   = []int{5000, 8192}
	longCounts  = []int{1, 2}
)

// testKernels is every spec kernel (each with gen/algo's guard on
// var+eps), the synthetic ones, and a few spec kernels with a second guard
// on var+eps whose bounds, 4*eps and 1e20, the test rows reach from both
// sides (rows of tiny spread and constant rows; huge rows), where
// gen/algo's bounds only catch what float32 lost.
func testKernels(t testing.TB) []*ir.Kernel {
	var ks, gs []*ir.Kernel
	for _, s := range testSpecs {
		k, err := algo.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
		switch s.Name {
		case "LayerNorm", "RMSNormShift", "AddLayerNorm", "AddGemmaStats":
			gs = append(gs, lowertest.Guarded(t, k, float32(4*s.Epsilon), 1e20))
		}
	}
	ks = append(ks, lowertest.Mix(t), lowertest.Pressure(t), lowertest.ReadTwice(t, "ReadTwice", ir.Rows))
	ks = append(ks, gs...)
	return append(ks, lowertest.GuardEdges(t), lowertest.GuardPoint(t), lowertest.GuardConst(t), lowertest.GuardTight(t))
}

// testFuncs is every kernel at every fixed size, then with H at run time.
func testFuncs(ks []*ir.Kernel) []target.Func {
	var fs []target.Func
	for _, k := range ks {
		hs := append(testSizes, 0)
		if longKernels[k.Name] {
			hs = append(hs, longFixed...)
		}
		for _, h := range hs {
			fs = append(fs, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	return fs
}

// neon is where the NEON functions run: under qemu-user.
func neon(t *testing.T) lowertest.Target {
	return lowertest.Emulated(t, "arm64", "qemu-aarch64-static", "qemu-user-static")
}

// TestExecute builds every test kernel into one scratch arm64 package,
// vets it (asmdecl against the declarations built from Func.Name and
// Func.AsmSignature) and runs the kit's Rows cases under qemu-user
// against ir.Eval.
func TestExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	funcs := testFuncs(testKernels(t))
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	suite := lowertest.RowSuite{Sizes: testSizes, Rows: testRows, LongKernels: longKernels, LongSizes: longSizes, LongRows: longCounts,
		// In place once per size: the emulator's time goes to the cases.
		InPlaceRows: []int{2},
		// The fixed sizes cover every loop shape; at run time one element,
		// a vector and a tail, several vectors and a tail.
		KindSizes: []int{1, 17, 100}, KindFixed: true}
	cases, nanKept := suite.Cases(t, funcs)
	if nanKept == 0 {
		t.Fatal("no guard lets a row with a NaN input through")
	}
	tg.Execute(t, asm, funcs, cases)
}
