// Package templates holds the text templates of normgen's generated files
// that are more prose than structure: the generated tests.
package templates

import (
	"embed"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Tests is the template of <pkg>_test.go: the kernels over rows.
var Tests = template.Must(template.ParseFS(files, "test.go.tmpl"))

// TensorTests is the template of <pkg>_tensor_test.go: the kernels over
// [N, C, L] tensors.
var TensorTests = template.Must(template.ParseFS(files, "tensor_test.go.tmpl"))
