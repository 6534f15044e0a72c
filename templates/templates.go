// Package templates holds the text templates of normgen's generated files
// that are more prose than structure: the generated tests.
package templates

import (
	"embed"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Tests is the template of <pkg>_test.go.
var Tests = template.Must(template.ParseFS(files, "test.go.tmpl"))
