package gen

import (
	"errors"
	"fmt"
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
