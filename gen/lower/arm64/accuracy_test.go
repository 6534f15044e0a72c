package arm64

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// TestAccuracy runs a one-pass mean, a LayerNorm, one saving its mean, and
// an RMSNorm (h at run time) under qemu on rows of 0.1s, 65536 and 2^20
// long, where sums in long sequential float32 chains err by hundreds of
// units (ir.BlockedSum), and checks the harness's bound (testdata/accuracy)
// against float64.
func TestAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	specs := []spec.Kernel{
		{Name: "LayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true},
		{Name: "LayerNormStats", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
		{Name: "RMSNorm", Epsilon: 1e-6, Scale: true},
	}
	// A plain one-pass mean, which no second pass corrects.
	ks := []*ir.Kernel{lowertest.Mean(t)}
	means, eps := []bool{true}, []float64{0}
	for _, s := range specs {
		k, err := algo.Build(s)
		if err != nil {
			t.Fatal(err)
		}
		ks, means, eps = append(ks, k), append(means, s.Mean), append(eps, s.Epsilon)
	}
	var funcs []target.Func
	var table bytes.Buffer
	table.WriteString("//go:build !purego\n\npackage k\n\ntype kernel struct {\n\tname   string\n\tmean   bool\n\teps    float64\n\tarrays []string\n\tfn     func(p []*float32, rows, h int) int\n}\n\nvar kernels = []kernel{\n")
	for i, k := range ks {
		f := target.Func{Kernel: k, ISA: target.NEON}
		funcs = append(funcs, f)
		var names, args []string
		for i, a := range k.Arrays {
			names = append(names, fmt.Sprintf("%q", a.Name))
			args = append(args, fmt.Sprintf("p[%d]", i))
		}
		fmt.Fprintf(&table, "\t{%q, %v, %v, []string{%s}, func(p []*float32, rows, h int) int { return %s(%s, rows, h) }},\n",
			f.Name(), means[i], eps[i], strings.Join(names, ", "), f.Name(), strings.Join(args, ", "))
	}
	table.WriteString("}\n")
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	harness, err := os.ReadFile(filepath.Join("testdata", "accuracy", "accuracy_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"kernels_arm64.s":  asm,
		"kernels_arm64.go": lowertest.Stubs(funcs),
		"table_test.go":    table.Bytes(),
		"accuracy_test.go": harness,
	}
	t.Logf("%s", tg.Scratch(t, files, "^TestAccuracy$"))
}
