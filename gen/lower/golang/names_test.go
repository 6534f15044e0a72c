package golang

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// render returns the Go source of k's pure-Go functions, type-checked.
func render(t *testing.T, k *ir.Kernel) string {
	t.Helper()
	return renderCode(t, k, Func(k))
}

// renderCode returns the Go source of code, kernel k's, type-checked.
func renderCode(t *testing.T, k *ir.Kernel, code jen.Code) string {
	t.Helper()
	f := jen.NewFile("p")
	f.Add(code)
	helpers := halfHelpers(k)
	if helpers != "" {
		// The imports the helpers need.
		f.Var().Id("_").Op("=").Qual("fmt", "Sprint")
		f.Var().Id("_").Op("=").Qual("math", "Sqrt")
	}
	src := fmt.Sprintf("%#v", f) + helpers
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatalf("%s: %v\n%s", k.Name, err, src)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("p", fset, []*ast.File{file}, nil); err != nil {
		t.Fatalf("%s: %v\n%s", k.Name, err, src)
	}
	return src
}

// halfHelpers is the conversions a kernel of half storage calls, and
// the imports they need, for the file to type-check: HalfSource's, with
// its SIMD bulk conversions converting nothing.
func halfHelpers(k *ir.Kernel) string {
	var elems []ir.Elem
	for _, a := range k.Arrays {
		if a.Elem.Half() && !slices.Contains(elems, a.Elem) {
			elems = append(elems, a.Elem)
		}
	}
	if len(elems) == 0 {
		return ""
	}
	src := HalfSource(elems)
	for _, f := range []string{"BF16FromFloat32(dst []uint16, src []float32)", "Float32FromBF16(dst []float32, src []uint16)",
		"F16FromFloat32(dst []uint16, src []float32)", "Float32FromF16(dst []float32, src []uint16)"} {
		src += "func simd" + f + " int { return 0 }\n"
	}
	return src
}

// TestNamedLocals: the kernels of every variant declare their values
// under the IR's names, with no sN, vN or accN left, and compile; an
// array sharing a value's name becomes a plural.
func TestNamedLocals(t *testing.T) {
	running := &spec.Running{Momentum: 0.1, Convention: "pytorch"}
	for _, sk := range []spec.Kernel{
		{Name: "LN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
		{Name: "Deep", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 2.449, StoreSum: true}},
		{Name: "Gemma", Epsilon: 1e-6, Scale: true, ScaleOffset: 1, SaveStats: true},
		{Name: "WN", Statistic: "l2", Scale: true, AffinePerRow: true},
		{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true, Running: running},
	} {
		k, err := algo.Build(sk)
		if err != nil {
			t.Fatal(err)
		}
		src := render(t, k)
		if m := unnamed(src); m != "" {
			t.Errorf("%s: unnamed local %s:\n%s", sk.Name, m, src)
		}
		for _, want := range []string{"rstd := 1 / std", "std := math.Sqrt("} {
			if !strings.Contains(src, want) {
				t.Errorf("%s: no %q:\n%s", sk.Name, want, src)
			}
		}
		if sk.SaveStats && !strings.Contains(src, "rstds[r] = float32(rstd)") {
			t.Errorf("%s: the rstd array is not renamed rstds:\n%s", sk.Name, src)
		}
	}
}

// unnamed returns the first sN, vN or accN identifier of src, or "".
func unnamed(src string) string {
	for _, f := range strings.FieldsFunc(src, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		for _, p := range []string{"s", "v", "acc"} {
			if rest, ok := strings.CutPrefix(f, p); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
				return f
			}
		}
	}
	return ""
}

// TestConstants: an unnamed constant whose literal is exact is inlined;
// one that is not keeps float64(float32(...)) (float32(...) in the
// float32 form); a named one is a local; and an operation on constants
// alone keeps them in variables, since Go would fold a constant
// expression exactly rather than in float64 or float32.
func TestConstants(t *testing.T) {
	b := ir.NewBuilder("C", "doc")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	half := b.Const(0.5)
	tenth := b.Const(0.1)
	two := b.Name(b.Const(2), "two")
	three, four := b.Const(3), b.Const(4)
	folded := b.Name(b.Mul(three, four), "twelve")
	b.Loop(func(l *ir.LoopBuilder) {
		v := l.Mul(l.Load(x), l.Splat(half))
		v = l.Add(v, l.Splat(tenth))
		v = l.Mul(v, l.Splat(two))
		l.Store(dst, l.Add(v, l.Splat(folded)))
	})
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	src := renderCode(t, k, float64Func(k, "goCAny"))
	f32 := render(t, k)
	for _, want := range []string{"s1 := float32(0.1)", "two := float32(2)", "twelve := float32(s3 * s4)", "float32((float32(xRow[i]*0.5)+s1)*two) + twelve"} {
		if !strings.Contains(f32, want) {
			t.Errorf("float32 form: no %q:\n%s", want, f32)
		}
	}
	for _, want := range []string{
		"s1 := float64(float32(0.1))",
		"two := 2.0",
		"s3 := 3.0",
		"s4 := 4.0",
		"twelve := float64(s3 * s4)",
		"float64((float64(float64(xRow[i])*0.5)+s1)*two) + twelve",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("no %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "s0") {
		t.Errorf("the exact 0.5 has a variable:\n%s", src)
	}
}
