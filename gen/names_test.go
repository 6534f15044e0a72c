package gen

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"rmsnorm.yaml":              "rmsnorm_normgen",
		"spec/rmsnorm.yaml":         "rmsnorm_normgen",
		`a\b\RMS-Norm.v2.yaml`:      "rms_norm_v2_normgen",
		"norm_windows.yaml":         "norm_windows_normgen",
		"x_test.yaml":               "x_test_normgen",
		"2d.yaml":                   "n2d_normgen",
		"--.yaml":                   "spec_normgen",
		"ünï.yaml":                  "n_normgen",
		"kernels_amd64_test.yaml":   "kernels_amd64_test_normgen",
		"/tmp/dir.with.dots/x.yaml": "x_normgen",
	} {
		got := Stem(in)
		if got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
		if !regexp.MustCompile(`^[a-z][a-z0-9_]*_normgen$`).MatchString(got) {
			t.Errorf("Stem(%q) = %q is not [a-z][a-z0-9_]*_normgen", in, got)
		}
	}
	for in, want := range map[string]string{"rmsnorm_normgen": "rmsnorm", "rms_norm_v2_normgen": "rmsNormV2", "norm_2d_normgen": "norm_2d", "a_1_normgen": "a_1"} {
		if got := IdentPrefix(in); got != want {
			t.Errorf("IdentPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

const docSpec = `version: 1
package: p
kernels:
  - name: K
    doc: %q
    mean: true
    hidden: [8]
`

// TestDocIsInert: a kernel's doc is written only inside // line comments,
// never at the start of a comment line, so that no text becomes a
// directive or ends a block comment.
func TestDocIsInert(t *testing.T) {
	directive := regexp.MustCompile(`(?m)^//(go:generate|go:build ignore|line |\s*\+build)`)
	for _, doc := range []string{"//go:generate touch X", "//go:build ignore", "+build ignore", "// +build ignore",
		"//line x.go:1", "line x.go:1", "a */ b", "a /* b", "*/ package x; func init() { panic(1) } /*", "go:generate touch X"} {
		src := strings.Replace(docSpec, "%q", `"`+strings.ReplaceAll(doc, `"`, `\"`)+`"`, 1)
		f, err := spec.Parse("doc.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		p, err := Generate(f, "test")
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		api := string(p.Files["doc_normgen.go"])
		if !strings.Contains(api, doc) {
			t.Errorf("%q: not in the package doc", doc)
		}
		for name, data := range p.Files {
			if m := directive.Find(data); m != nil {
				t.Errorf("doc %q: %s has the directive %q", doc, name, m)
			}
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), name, data, parser.ParseComments)
			if err != nil {
				t.Errorf("doc %q: %s: %v", doc, name, err)
				continue
			}
			for _, cg := range af.Comments {
				for _, c := range cg.List {
					if strings.HasPrefix(c.Text, "/*") {
						t.Errorf("doc %q: %s has a block comment", doc, name)
					}
				}
			}
		}
	}
}

// TestQualify: every unexported package-level identifier and Test function
// of two specs' files differs, so that they share a package.
func TestQualify(t *testing.T) {
	gen := func(path, kernel string) map[string]bool {
		src := strings.Replace(strings.Replace(docSpec, "%q", "x", 1), "name: K", "name: "+kernel, 1)
		f, err := spec.Parse(path, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Generate(f, "test")
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for name, data := range p.Files {
			if !strings.HasPrefix(name, Stem(path)) {
				t.Errorf("%s: file %s", path, name)
			}
			if !strings.HasSuffix(name, ".go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), name, data, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range af.Scope.Objects {
				names[obj.Name] = true
			}
		}
		return names
	}
	a, b := gen("a.yaml", "A"), gen("b.yaml", "B")
	for n := range a {
		if b[n] {
			t.Errorf("a.yaml and b.yaml both declare %s", n)
		}
	}
	for _, want := range []string{"aRowCount", "TestADispatch", "A8", "A8Parallel", "FuzzA8", "aImplA8"} {
		if !a[want] {
			t.Errorf("a.yaml's files do not declare %s", want)
		}
	}
}

// TestDuplicatesNet: a clash the spec's validation would miss is still
// an error at the kernel, not code that does not compile.
func TestDuplicatesNet(t *testing.T) {
	f, err := spec.Parse("n.yaml", []byte("version: 1\npackage: p\nkernels:\n  - name: A\n    mean: true\n    hidden: [1]\n  - name: C\n    axis: groups\n    groups: 2\n    mean: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.Kernels[1].Name = "A1" // past validation
	_, err = Generate(f, "test")
	if err == nil || !strings.HasPrefix(err.Error(), "n.yaml:7:5: the generated ") || !strings.Contains(err.Error(), "A1 twice (kernel A1)") {
		t.Errorf("%v", err)
	}
}

// TestLoweringsCoverTable: every architecture of the ISA table has its
// assembly lowering registered.
func TestLoweringsCoverTable(t *testing.T) {
	for _, arch := range target.Archs() {
		if lowerings[arch] == nil {
			t.Errorf("no lowering registered for %s", arch)
		}
	}
}
