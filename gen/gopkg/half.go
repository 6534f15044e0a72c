package gopkg

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/golang"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/templates"
)

// Elems lists the half-precision storage formats of the package's
// kernels, in ir.Elem order.
func (p *Package) Elems() []ir.Elem {
	var out []ir.Elem
	for _, k := range p.Kernels {
		if e := target.KernelElem(k.IR); e.Half() && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// hasHalfRows reports whether the package has half kernels over rows.
func (p *Package) hasHalfRows() bool {
	for _, k := range p.Kernels {
		if !k.Plan.Form.Tensor() && target.KernelElem(k.IR).Half() {
			return true
		}
	}
	return false
}

// halfOverlap checks an output against another argument when either is
// half storage: by their bytes, the types differing.
func halfOverlap(out, other ir.Array, sameOK bool) jen.Code {
	span := func(a ir.Array) []jen.Code {
		return []jen.Code{jen.Lit(a.Name),
			jen.Qual("unsafe", "Pointer").Call(jen.Qual("unsafe", "SliceData").Call(jen.Id(a.Name))),
			jen.Len(jen.Id(a.Name)).Op("*").Lit(a.Elem.Bytes())}
	}
	args := append([]jen.Code{jen.Id("name")}, span(out)...)
	args = append(args, span(other)...)
	return jen.Id("checkOverlapBytes").Call(append(args, jen.Lit(sameOK))...)
}

// HalfFile is <pkg>_half.go, in packages with half-precision kernels: the
// exported bulk conversions, the scalar conversions of the pure-Go
// kernels, and the overlap check of arrays of different types.
func HalfFile(p *Package) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(p.Header)
	fmt.Fprintf(&b, "\npackage %s\n\nimport (\n\t\"fmt\"\n\t\"math\"\n\t\"unsafe\"\n)\n", p.Name)
	b.WriteString(golang.HalfSource(p.Elems()))
	b.WriteString(`
// checkOverlapBytes panics if the n bytes at out share memory with the m
// bytes at other, unless sameOK and they are the very same bytes.
func checkOverlapBytes(name, outName string, out unsafe.Pointer, n int, otherName string, other unsafe.Pointer, m int, sameOK bool) {
	if n == 0 || m == 0 {
		return
	}
	o, q := uintptr(out), uintptr(other)
	if o >= q+uintptr(m) || q >= o+uintptr(n) {
		return
	}
	if sameOK && o == q && n == m {
		return
	}
	panic(fmt.Sprintf("%s: %s and %s overlap", name, outName, otherName))
}
`)
	return gofmt(p.Name+"_half.go", b.Bytes())
}

// halfArg is where a generated test finds an array of the kernel: in u,
// halfCall's uint16 arrays, or in a, the test's float32 ones.
func halfArg(a ir.Array) string {
	if a.Elem.Half() {
		return "u"
	}
	return "a"
}

// halfMask spells which arrays of k halfCall converts, as a Go []bool.
func halfMask(k *ir.Kernel) string {
	var parts []string
	for _, a := range k.Arrays {
		parts = append(parts, fmt.Sprint(a.Elem.Half()))
	}
	return "[]bool{" + strings.Join(parts, ", ") + "}"
}

// HalfTestFile is <pkg>_half_test.go, from templates/half_test.go.tmpl:
// the conversions' tests and halfCall (which the tests of the half rows
// and tensor backward kernels call them through), with the shared kit
// (see sharedKit), and with half kernels over rows, their own tests.
func HalfTestFile(p *Package) ([]byte, error) {
	type conv struct{ Storage, Narrow, Widen string }
	data := struct {
		Header, Package string
		Convs           []conv
		HalfRows        bool
	}{Header: p.Header, Package: p.Name, HalfRows: p.hasHalfRows()}
	for _, e := range p.Elems() {
		name := strings.ToUpper(e.String())
		data.Convs = append(data.Convs, conv{e.String(), name + "FromFloat32", "Float32From" + name})
	}
	var buf bytes.Buffer
	kits := p.sharedKit(halfTests)
	if data.HalfRows {
		kits = append(kits, templates.HalfRows)
	}
	if err := templates.HalfTests.Execute(&buf, data, kits...); err != nil {
		return nil, fmt.Errorf("gopkg: half test template: %v", err)
	}
	return gofmt(p.Name+"_half_test.go", buf.Bytes())
}
