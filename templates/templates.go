// Package templates holds the text templates of normgen's generated files
// that are more prose than structure: the generated tests. Their static
// helpers are Go in package testkit, compiled and tested there, and
// appended to the templates' output verbatim.
package templates

import (
	"bytes"
	"embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"sort"
	"strings"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

//go:embed testkit/rows.go
var rowsKit []byte

//go:embed testkit/tensor.go
var tensorKit []byte

//go:embed testkit/backward.go
var backwardKit []byte

//go:embed testkit/tensorbackward.go
var tensorBackwardKit []byte

//go:embed testkit/half.go
var halfKit []byte

//go:embed testkit/halfrows.go
var halfRowsKit []byte

//go:embed testkit/shared.go
var sharedKit []byte

// Shared is the kit every generated package's tests need once (the half
// formats, expectPanic): the generator passes it to the Execute of the
// first test file it writes of <stem>_half_test.go, <stem>_test.go and
// <stem>_tensor_test.go.
var Shared = Kit{path: "templates/testkit/shared.go", src: sharedKit}

// HalfRows is the kit of the half-precision kernels over rows (the loads
// and stores through the kernels), for <stem>_half_test.go in packages
// that have such kernels.
var HalfRows = Kit{path: "templates/testkit/halfrows.go", src: halfRowsKit}

// Kit is a file of package testkit that a generated test file ends with.
type Kit struct {
	path string // the kit's path in normgen's repository, for errors
	src  []byte
}

// Tests is the template of <pkg>_test.go: the kernels over rows.
var Tests = &Template{
	tmpl: template.Must(template.ParseFS(files, "test.go.tmpl")),
	kit:  Kit{path: "templates/testkit/rows.go", src: rowsKit},
}

// TensorTests is the template of <pkg>_tensor_test.go: the kernels over
// [N, C, L] tensors.
var TensorTests = &Template{
	tmpl: template.Must(template.ParseFS(files, "tensor_test.go.tmpl")),
	kit:  Kit{path: "templates/testkit/tensor.go", src: tensorKit},
}

// BackwardTests is the template of <pkg>_backward_test.go: the backward
// entry points, beside <pkg>_test.go, whose helpers they share.
var BackwardTests = &Template{
	tmpl: template.Must(template.ParseFS(files, "backward_test.go.tmpl")),
	kit:  Kit{path: "templates/testkit/backward.go", src: backwardKit},
}

// TensorBackwardTests is the template of <pkg>_tensor_backward_test.go:
// the backward entry points of the kernels over tensors, beside
// <pkg>_tensor_test.go, whose helpers they share.
var TensorBackwardTests = &Template{
	tmpl: template.Must(template.ParseFS(files, "tensor_backward_test.go.tmpl")),
	kit:  Kit{path: "templates/testkit/tensorbackward.go", src: tensorBackwardKit},
}

// HalfTests is the template of <pkg>_half_test.go, in packages with
// half-precision kernels: the conversions' tests and the helper that
// calls a kernel on float32 test data.
var HalfTests = &Template{
	tmpl: template.Must(template.ParseFS(files, "half_test.go.tmpl")),
	kit:  Kit{path: "templates/testkit/half.go", src: halfKit},
}

// Template is a generated test file: a text template for what depends on
// the spec, followed by a file of package testkit.
type Template struct {
	tmpl *template.Template
	kit  Kit
}

// Execute writes the template's output for data, its import declaration
// merged with the kits', then the template's kit and the extra ones, in
// order, each from its imports on.
func (t *Template) Execute(w io.Writer, data any, extra ...Kit) error {
	var buf bytes.Buffer
	if err := t.tmpl.Execute(&buf, data); err != nil {
		return err
	}
	out := buf.Bytes()
	for _, k := range append([]Kit{t.kit}, extra...) {
		var err error
		if out, err = splice(out, k.src, k.path); err != nil {
			return err
		}
	}
	_, err := w.Write(out)
	return err
}

// splice appends to the Go source src the declarations of the Go file kit
// (named kitPath in comments and errors), the imports of both merged into
// src's one import declaration.
func splice(src, kit []byte, kitPath string) ([]byte, error) {
	kitImports, kitEnd, err := imports(kit, kitPath)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "template output", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("template output does not parse: %v", firstLine(err.Error()))
	}
	var decls []*ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			decls = append(decls, g)
		}
	}
	if len(decls) != 1 {
		return nil, fmt.Errorf("template output has %d import declarations, want 1", len(decls))
	}
	own, _, _ := imports(src, "template output")
	seen := map[string]bool{}
	var specs []string
	for _, s := range append(own, kitImports...) {
		if !seen[s] {
			seen[s] = true
			specs = append(specs, s)
		}
	}
	sort.Strings(specs)
	tf := fset.File(f.Pos())
	start, end := tf.Offset(decls[0].Pos()), tf.Offset(decls[0].End())
	var b bytes.Buffer
	b.Write(src[:start])
	b.WriteString("import (\n")
	for _, s := range specs {
		b.WriteString("\t" + s + "\n")
	}
	b.WriteString(")")
	b.Write(bytes.TrimRight(src[end:], "\n"))
	b.WriteString("\n\n")
	b.Write(bytes.TrimLeft(kit[kitEnd:], "\n"))
	return b.Bytes(), nil
}

// imports lists the import specs of the Go file src as source text (name
// and path), and returns the offset where its import declarations end.
func imports(src []byte, name string) (specs []string, end int, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, 0, fmt.Errorf("%s does not parse: %v", name, firstLine(err.Error()))
	}
	tf := fset.File(f.Pos())
	end = tf.Offset(f.Name.End())
	for _, s := range f.Imports {
		text := s.Path.Value
		if s.Name != nil {
			text = s.Name.Name + " " + text
		}
		specs = append(specs, text)
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = tf.Offset(g.End())
		}
	}
	return specs, end, nil
}

// firstLine is the first line of s: a parse error must not carry the
// generated source into a message.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
