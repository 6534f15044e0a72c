package spec

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

// shipped holds spec/*.yaml, so that a bare normgen binary (go install,
// go tool) generates the default catalogue without a checkout.
//
//go:embed *.yaml
var shipped embed.FS

// Catalogue returns the embedded default catalogue, the shipped
// spec/*.yaml, sorted by file name. Each File.Path is "spec/NAME.yaml",
// the path in the repository, so generated headers are the same whether
// generated from the checkout's file or from the embedded copy.
func Catalogue() ([]*File, error) {
	names, err := fs.Glob(shipped, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var files []*File
	for _, name := range names {
		data, err := shipped.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := Parse(path.Join("spec", name), data)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
