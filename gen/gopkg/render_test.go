package gopkg

import (
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
)

// TestFormatErrorsAreShort: generated code that does not format is a
// generator bug, reported in one line naming the problem, never with the
// generated source (which would run to hundreds of lines).
func TestFormatErrorsAreShort(t *testing.T) {
	f := jen.NewFile("p")
	f.Func().Id("f").Params().Block(jen.Id("x").Op(":= :=").Lit(1))
	for i := 0; i < 50; i++ {
		f.Func().Id("g" + string(rune('a'+i%26))).Params().Block()
	}
	_, err := render(f)
	if err == nil || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "package p") {
		t.Errorf("render: %v", err)
	}
	_, err = gofmt("x_normgen_test.go", []byte("package p\nfunc f() { x := := 1 }\n"+strings.Repeat("func g() {}\n", 50)))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "x_normgen_test.go") {
		t.Errorf("gofmt: %v", err)
	}
}
