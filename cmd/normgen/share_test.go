package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	specA = "version: 1\npackage: two\nkernels:\n  - name: RMSNorm\n    mean: false\n    hidden: [64]\n"
	specB = "version: 1\npackage: two\nkernels:\n  - name: LayerNorm\n    mean: true\n    hidden: [64]\n"
	// specC's second kernel is specA's.
	specC = "version: 1\npackage: two\nkernels:\n  - name: LN\n    mean: true\n    hidden: [32]\n  - name: RMSNorm\n    mean: false\n    hidden: [32]\n"
)

// TestSpecsShareADirectory: two specs generate into one directory beside
// hand-written files named after the package, each keeps its own files,
// and a third spec whose kernel would redeclare an entry point is refused
// with both specs' positions, nothing written.
func TestSpecsShareADirectory(t *testing.T) {
	workdir(t)
	for name, data := range map[string]string{"a.yaml": specA, "b.yaml": specB, "c.yaml": specC,
		"two.go": "package two\n", "two_test.go": "package two\n"} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"GOPACKAGE": "two"}
	for _, s := range []string{"a.yaml", "b.yaml"} {
		if r := normgen(t, env, "-spec", s); r.status != 0 {
			t.Fatalf("%s: %+v", s, r)
		}
	}
	before := files(t, ".")
	for _, want := range []string{"two.go", "two_test.go", "a_normgen.go", "a_normgen_test.go", "a_normgen_amd64.s", "b_normgen.go", "b_normgen_test.go", "b_normgen_arm64.s"} {
		if !slices.Contains(before, want) {
			t.Errorf("no %s in %v", want, before)
		}
	}
	for _, s := range []string{"a.yaml", "b.yaml"} {
		if r := normgen(t, env, "check", "-spec", s); r.status != 0 {
			t.Errorf("check %s: %+v", s, r)
		}
	}
	r := normgen(t, env, "-spec", "c.yaml")
	want := "c.yaml:7:5: kernel RMSNorm would declare RMSNormAny, which a.yaml:4:5 (kernel RMSNorm) already declares in the package in .; "
	if r.status != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("c.yaml: %+v\nwant %s", r, want)
	}
	if r := normgen(t, env, "check", "-spec", "c.yaml"); r.status != 1 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("check c.yaml: %+v", r)
	}
	// Without the other spec at hand, its generated file is named.
	os.Rename("a.yaml", "a.yaml.away")
	r = normgen(t, env, "-spec", "c.yaml")
	if r.status != 1 || !strings.Contains(r.stderr, "which a.yaml's generated a_normgen.go already declares") {
		t.Errorf("c.yaml without a.yaml: %+v", r)
	}
	os.Rename("a.yaml.away", "a.yaml")
	if got := files(t, "."); !slices.Equal(got, before) {
		t.Errorf("the refused runs changed the directory:\n%v\n%v", got, before)
	}
}

// TestFileNameClash: two spec files whose stems agree (rms-norm.yaml and
// rms_norm.yaml) would write the same files: refused.
func TestFileNameClash(t *testing.T) {
	workdir(t)
	os.WriteFile("rms-norm.yaml", []byte(specA), 0o644)
	os.WriteFile("rms_norm.yaml", []byte(specB), 0o644)
	if r := normgen(t, nil, "-spec", "rms-norm.yaml", "-out", "p"); r.status != 0 {
		t.Fatalf("%+v", r)
	}
	r := normgen(t, nil, "-spec", "rms_norm.yaml", "-out", "p")
	if r.status != 1 || !strings.HasPrefix(r.stderr, "rms_norm.yaml:1:1: the generated file rms_norm_normgen.go would replace rms-norm.yaml's file") {
		t.Errorf("%+v", r)
	}
}
