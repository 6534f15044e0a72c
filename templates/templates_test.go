package templates

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	src := "// header\npackage p\n\n// doc\n\nimport \"testing\"\n\nconst a = 1\n"
	kit := "package testkit\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n\tr \"math/rand/v2\"\n)\n\n// helper doc\nfunc helper() { fmt.Println(r.Int(), testing.Short()) }\n"
	out, err := splice([]byte(src), []byte(kit), "kit.go")
	if err != nil {
		t.Fatal(err)
	}
	want := "// header\npackage p\n\n// doc\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n\tr \"math/rand/v2\"\n)\n\nconst a = 1\n\n// helper doc\nfunc helper() { fmt.Println(r.Int(), testing.Short()) }\n"
	if string(out) != want {
		t.Errorf("splice:\n%s\nwant:\n%s", out, want)
	}
	if _, err := splice([]byte("package p\nimport \"a\"\nimport \"b\"\n"), []byte(kit), "kit.go"); err == nil {
		t.Error("two import declarations accepted")
	}
	if _, err := splice([]byte(src), []byte("package testkit\nimport (\n\t\"fmt\"\n"), "kit.go"); err == nil || !strings.Contains(err.Error(), "kit.go") {
		t.Errorf("a kit that does not parse: %v", err)
	}
}

// The kits are copied into every generated package, which may import only
// the standard library (and x/sys/cpu, which tests do not need).
func TestKitsImportOnlyStd(t *testing.T) {
	for name, kit := range map[string][]byte{"rows.go": rowsKit, "tensor.go": tensorKit, "half.go": halfKit, "halfrows.go": halfRowsKit, "shared.go": sharedKit, "backward.go": backwardKit, "tensorbackward.go": tensorBackwardKit} {
		f, err := parser.ParseFile(token.NewFileSet(), name, kit, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
