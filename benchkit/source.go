package benchkit

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// source is this package's own source, so that a program built elsewhere
// (the one `normgen bench` writes for a user's spec) can compile it in.
//
//go:embed *.go
var source embed.FS

// Source returns the package's Go files, tests excluded, by base name.
func Source() map[string][]byte {
	files := map[string][]byte{}
	entries, _ := fs.ReadDir(source, ".")
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := source.ReadFile(name)
		if err != nil {
			panic("benchkit: reading the embedded source: " + err.Error())
		}
		files[name] = b
	}
	return files
}

// WriteSource writes the package's source (Source) into dir, which it
// creates, as package benchkit.
func WriteSource(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range Source() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
