package gen

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"

	"github.com/normgen/normgen/spec"
)

// Errors found while generating, after the spec validated, are located at
// the kernel concerned, FILE:LINE:COL like the spec's own errors. The
// files here are built in code: a decoded spec never reaches these
// errors.
func TestGenerateErrorsCarryPosition(t *testing.T) {
	at := spec.Pos{Line: 7, Col: 3}
	for _, c := range []struct {
		name string
		k    spec.Kernel
		want string
	}{
		{"no algorithm", spec.Kernel{Name: "Diag", Axis: "diagonal", Pos: at},
			`norms.yaml:7:3: kernel Diag: axis "diagonal" has no algorithm`},
		{"unknown target", spec.Kernel{Name: "LN", Mean: true, Epsilon: 1e-5, Targets: []string{"sse9"}, Pos: at},
			`norms.yaml:7:3: kernel LN: unknown target "sse9"`},
	} {
		f := &spec.File{Path: "norms.yaml", Package: "norms", Kernels: []spec.Kernel{
			{Name: "First", Mean: true, Epsilon: 1e-5, Pos: spec.Pos{Line: 2, Col: 3}}, c.k,
		}}
		_, err := Generate(f, "test")
		var se *spec.Error
		if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v (%T), want %s...", c.name, err, err, c.want)
		}
	}
}

func TestLocated(t *testing.T) {
	f := &spec.File{Path: "s.yaml", Kernels: []spec.Kernel{
		{Name: "Norm", Pos: spec.Pos{Line: 3, Col: 3}},
		{Name: "AddNorm", Pos: spec.Pos{Line: 9, Col: 3}},
	}}
	for _, c := range []struct{ err, want string }{
		{"generating x.s: kernel AddNorm: no registers", "s.yaml:9:3: generating x.s: kernel AddNorm: no registers"},
		{"kernel Norm: odd", "s.yaml:3:3: kernel Norm: odd"},
		{"no assembly lowering for mips", "s.yaml:1:1: no assembly lowering for mips"},
	} {
		if got := located(f, fmt.Errorf("%s", c.err)).Error(); got != c.want {
			t.Errorf("located(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestTestFilesByShape: whatever kernels a package has, its half formats'
// conversions get their tests and the per-architecture tables of their
// assembly, and the shared test helpers are declared exactly once (in
// the first of the half, rows and tensor test files), halfCall in the
// half test file of every package with half kernels (the half rows and
// the half tensor backward passes call it).
func TestTestFilesByShape(t *testing.T) {
	const (
		rows32   = "  - {name: R, mean: true, hidden: [8]}\n"
		rowsHalf = "  - {name: H, mean: true, hidden: [8], storage: f16}\n"
		tens32   = "  - {name: T, axis: groups, groups: 2, mean: true}\n"
		tensHalf = "  - {name: G, axis: groups, groups: 4, mean: true, scale: true, shift: true, storage: bf16}\n"
		bwdHalf  = "  - {name: B, axis: batch, mean: true, scale: true, backward: true, storage: f16}\n"
	)
	for _, c := range []struct {
		name, kernels string
		shared        string // the file declaring the shared helpers
		halfCall      bool
	}{
		{"f32 rows", rows32, "p_normgen_test.go", false},
		{"f32 tensors", tens32, "p_normgen_tensor_test.go", false},
		{"half rows", rowsHalf, "p_normgen_half_test.go", true},
		{"half tensors", tensHalf, "p_normgen_half_test.go", true},
		{"half tensor backward", bwdHalf, "p_normgen_half_test.go", true},
		{"half tensors, f32 rows", tensHalf + rows32, "p_normgen_half_test.go", true},
		{"both half", rowsHalf + tensHalf + tens32, "p_normgen_half_test.go", true},
	} {
		f, err := spec.Parse("p.yaml", []byte("version: 1\npackage: p\nkernels:\n"+c.kernels))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := Generate(f, "test")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		declared := map[string][]string{} // top-level name: the files declaring it
		for name, src := range p.Files {
			if !strings.HasSuffix(name, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %s: %v", c.name, name, err)
			}
			for _, id := range topLevel(file) {
				declared[id.Name] = append(declared[id.Name], name)
			}
		}
		want := map[string][]string{"pHalfFormat": {c.shared}, "pExpectPanic": {c.shared}}
		if c.shared == "p_normgen_half_test.go" {
			want["pHalfConversions"] = []string{c.shared}
			want["TestPHalfConversions"] = []string{c.shared}
			want["pAsmHalfConversions"] = []string{"p_normgen_amd64_test.go", "p_normgen_arm64_test.go", "p_normgen_purego_test.go"}
		}
		if c.halfCall {
			want["pHalfCall"] = []string{"p_normgen_half_test.go"}
		}
		for _, id := range []string{"pHalfFormat", "pExpectPanic", "pHalfConversions", "TestPHalfConversions", "pAsmHalfConversions", "pHalfCall"} {
			got := slices.Clone(declared[id])
			slices.Sort(got)
			if !slices.Equal(got, want[id]) {
				t.Errorf("%s: %s declared in %q, want %q", c.name, id, got, want[id])
			}
		}
	}
}
