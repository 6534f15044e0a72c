package arm64

import (
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

// TestExecuteHalf runs the half-precision loads and stores under
// qemu-user: the conversions alone bit for bit against ir's (every bit
// pattern widened, the telling float32 values narrowed) at a fixed H of
// every loop phase (a pair of vectors, a single one, a scalar tail) and
// at run time, and the half spec kernels through a few Rows cases.
func TestExecuteHalf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	var copies, kernels []target.Func
	for _, k := range lowertest.HalfCopies(t, target.NEON) {
		for _, h := range []int{23, 0} {
			copies = append(copies, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	for _, s := range halfSpecs {
		k, err := algo.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		if target.KernelElem(k) == ir.F32 {
			t.Fatalf("%s: float32 storage", s.Name)
		}
		for _, h := range []int{7, 64, 0} {
			kernels = append(kernels, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	funcs := append(copies, kernels...)
	asm, err := Generate(header, funcs)
	if err != nil {
		t.Fatal(err)
	}
	cases := append(lowertest.HalfCases(copies, 1021), lowertest.HalfRowCases(kernels, []int{5, 33, 100})...)
	tg.Execute(t, asm, funcs, cases)
}
