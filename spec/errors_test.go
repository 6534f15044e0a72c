package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSeveralErrors checks that independent problems are all reported, in
// file order, as one located line each.
func TestSeveralErrors(t *testing.T) {
	src := `version: 1
package: func
kernels:
  - name: A
    mean: maybe
    epsilon: -1
    hidden: [4096]
    colour: red
  - name: B
    mean: false
    hidden: [0]
  - name: C
    mean: false
    hidden: [8]
`
	_, err := Parse("s.yaml", []byte(src))
	want := []string{
		`s.yaml:2:10: package "func" is a Go keyword;`,
		`s.yaml:5:11: mean is the string "maybe";`,
		`s.yaml:6:14: epsilon -1 is negative;`,
		`s.yaml:8:5: unknown key "colour" in kernel;`,
		`s.yaml:11:14: hidden size 0 is out of range;`,
	}
	var list Errors
	if !errors.As(err, &list) {
		t.Fatalf("error %T, want spec.Errors: %v", err, err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(list) != len(want) || len(lines) != len(want) {
		t.Fatalf("got %d errors:\n%v\nwant %d", len(list), err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) || lines[i] != list[i].Error() {
			t.Errorf("error %d: got %s, want %s...", i+1, lines[i], w)
		}
	}
	var first *Error
	if !errors.As(err, &first) || first != list[0] {
		t.Errorf("errors.As gives %v, want the first error", first)
	}
}

// TestOneError checks that a spec with one problem gets the *Error alone,
// and that checks depending on a faulty value stay silent.
func TestOneError(t *testing.T) {
	for _, src := range []string{
		"version: 1\npackage: p\nkernel:\n  - {name: A, mean: false, hidden: [8]}\n", // no "no kernels" too
		head + "    mean: true\n    statistic: rsm\n    hidden: [8]\n",               // no mean/statistic clash too
		head + "    axis: rows\n    mean: false\n",                                   // no "has no hidden" too
	} {
		_, err := Parse("s.yaml", []byte(src))
		if _, ok := err.(*Error); !ok {
			t.Errorf("%q: %T %v, want one *Error", src, err, err)
		}
	}
}

// TestTooManyErrors checks the limit: MaxErrors errors, then one saying
// how many more there were.
func TestTooManyErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\npackage: p\nkernels:\n")
	const n = MaxErrors + 3
	for i := range n {
		fmt.Fprintf(&b, "  - {name: K%d, mean: false, epsilon: -1, hidden: [8]}\n", i)
	}
	_, err := Parse("s.yaml", []byte(b.String()))
	var list Errors
	if !errors.As(err, &list) || len(list) != MaxErrors+1 {
		t.Fatalf("got %v", err)
	}
	for i, e := range list[:MaxErrors] {
		if e.Line != 4+i || !strings.Contains(e.Msg, "negative") {
			t.Errorf("error %d: %v", i+1, e)
		}
	}
	if last := list[MaxErrors]; last.Line != 4+MaxErrors || last.Msg != "too many errors (3 more left out); fix these first" {
		t.Errorf("last error: %v", last)
	}
}
