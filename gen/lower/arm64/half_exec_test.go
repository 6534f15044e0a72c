package arm64

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
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	cases := append(lowertest.HalfCases(copies, 1021), lowertest.HalfRowCases(kernels, []int{5, 33, 100})...)
	tg.Execute(t, asm, funcs, cases)
}

// TestExecuteHalfLayouts runs half-precision Columns and Segments kernels
// under qemu-user against ir.EvalShape: ConvNeXt's LayerNorm (bf16) and
// BatchNorm's [N, C] form (f16), one lane per row, at a fixed H and at
// run time (every h%4 phase); GroupNorm (bf16) and BatchNorm (f16) over
// segments of every sweep phase, on clean data and a NaN row.
func TestExecuteHalfLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	bn := spec.Kernel{Name: "F16BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true,
		SaveStats: true, Running: &spec.Running{Momentum: 0.1, Convention: "pytorch"}, Storage: "f16"}
	build := func(k *ir.Kernel, err error) *ir.Kernel {
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	var funcs []target.Func
	for _, k := range []*ir.Kernel{
		build(algo.Build(spec.Kernel{Name: "BF16CLN", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true, SaveStats: true, Storage: "bf16"})),
		build(algo.BatchColumns(bn)),
	} {
		for _, h := range []int{17, 0} {
			funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	for _, k := range []*ir.Kernel{
		build(algo.Build(spec.Kernel{Name: "BF16GN", Axis: "groups", Groups: 2, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Storage: "bf16"})),
		build(algo.Build(bn)),
	} {
		funcs = append(funcs, target.Func{Kernel: k, ISA: target.NEON})
	}
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var cases []lowertest.Case
	add := func(f target.Func, s ir.Shape, rows int) {
		for _, plans := range [][]lowertest.RowPlan{lowertest.Plain(rows), lowertest.With(rows, rows/2, lowertest.RowNaN)} {
			c, _ := lowertest.NewCase(rng, f, s, plans, false, lowertest.WholeBlocks(4))
			cases = append(cases, c)
		}
	}
	for _, f := range funcs {
		if f.Kernel.Layout == ir.Columns {
			hs := []int{f.H}
			if f.H == 0 {
				hs = []int{1, 2, 3, 5, 17, 100}
			}
			for _, h := range hs {
				for _, rows := range []int{4, 9} {
					add(f, ir.Shape{H: h, Stride: rows + 3}, rows)
				}
			}
			continue
		}
		for _, seglen := range segLens {
			add(f, ir.Shape{Segs: 3, SegLen: seglen, SegStride: 5 * seglen, RowStride: seglen}, 5)
			add(f, ir.Shape{Segs: 2, SegLen: seglen, SegStride: seglen + 2, RowStride: 2*(seglen+2) + 1}, 3)
		}
	}
	t.Logf("%d cases", len(cases))
	tg.Execute(t, asm, funcs, cases)
}
