package gopkg

import (
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// TestTensorParallelEntries: every tensor form has a Parallel entry point
// that checks its arguments under its own name and splits by image or by
// channel; the [N, C] form splits in blocks of columnBlock channels, and
// the Columns run loop finishes a whole block in Go after a guard.
func TestTensorParallelEntries(t *testing.T) {
	for _, c := range []struct {
		sk   spec.Kernel
		want []string
	}{
		{spec.Kernel{Name: "GN", Axis: "groups", Groups: 2, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true},
			[]string{"func GNParallel(dst, x, gamma, beta []float32, channels, spatial int)", `checkGN("p.GNParallel"`,
				"parallelRows(images, channels*spatial, func(lo, hi int) {\n\t\tfor n := lo; n < hi; n++ {"}},
		{spec.Kernel{Name: "CL", Axis: "channels", Mean: true, Epsilon: 1e-5, Scale: true, Hidden: []int{8}},
			[]string{"func CL8Parallel(dst, x, gamma []float32, spatial int)", "func CLAnyParallel(dst, x, gamma []float32, channels, spatial int)",
				"parallelRows(images, 8*spatial, func(lo, hi int) {"}},
		{parseKernel(t, "name: BN\n    axis: batch\n    mean: true\n    epsilon: 1e-5\n    scale: true\n    shift: true\n    save_stats: true"),
			[]string{"func BNParallel(dst, mean, rstd, x, gain, bias []float32, channels, spatial int)",
				"blocks := (channels + columnBlock - 1) / columnBlock",
				"c0, c1 := lo*columnBlock, min(hi*columnBlock, channels)",
				"implBNColumns(dst[c0:], mean[c0:c1], rstd[c0:c1], x[c0:], gain[c0:c1], bias[c0:c1], c1-c0, images, channels)",
				"parallelRows(channels, images*spatial, func(lo, hi int) {",
				"implBN(dst[c0*spatial:], mean[c0:c1], rstd[c0:c1], x[c0*spatial:], gain[c0:c1], bias[c0:c1], c1-c0, images, spatial, channels*spatial, spatial)",
				"const columnBlock = 16"}},
	} {
		plan, err := algo.NewPlan(c.sk)
		if err != nil {
			t.Fatal(err)
		}
		isas, _ := target.Assemblies(nil)
		p := &Package{Name: "p", Header: "// h\n", Kernels: []Kernel{{Plan: plan, IR: plan.Kernel, Columns: plan.Columns, Spec: c.sk, Sizes: plan.Sizes, ISAs: isas}}}
		src := api(t, p)
		for _, w := range c.want {
			if !strings.Contains(src, w) {
				t.Errorf("%s: no %q in\n%s", c.sk.Name, w, src)
			}
		}
		if c.sk.Axis != "batch" {
			continue
		}
		b, err := ArchFile(p, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		want := "n := min(rows, done-done%columnBlock+columnBlock) - done\n\t\t\tgoBNColumnsAnyF64(dst[done:], mean[done:], rstd[done:], x[done:], gain[done:], bias[done:], n, h, stride)\n\t\t\tdone += n"
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: the Columns run loop lacks %q:\n%s", c.sk.Name, want, b)
		}
	}
}

// parseKernel parses one kernel as the spec package resolves it.
func parseKernel(t *testing.T, yaml string) spec.Kernel {
	t.Helper()
	f, err := spec.Parse("bn.yaml", []byte("version: 1\npackage: p\nkernels:\n  - "+yaml+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f.Kernels[0]
}
