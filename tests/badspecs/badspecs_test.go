// Package badspecs holds a corpus of invalid specs, NN_name.yaml, each
// with NN_name.err: the exact error spec.Load must give. 09_missing.yaml
// does not exist and 10_directory.yaml is a directory, on purpose.
package badspecs

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/normgen/normgen/spec"
)

var update = flag.Bool("update", false, "rewrite the .err files from the current messages (review the diff)")

func TestBadSpecs(t *testing.T) {
	// The corpus is every NN_name with a .yaml or a .err file.
	seen := map[string]bool{}
	for _, pattern := range []string{"*.yaml", "*.err"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			seen[strings.TrimSuffix(strings.TrimSuffix(m, ".yaml"), ".err")] = true
		}
	}
	var cases []string
	for c := range seen {
		cases = append(cases, c)
	}
	sort.Strings(cases)
	if len(cases) < 40 {
		t.Errorf("the corpus has %d specs; it should have at least 40", len(cases))
	}
	for _, c := range cases {
		path := c + ".yaml"
		f, err := spec.Load(path)
		if err == nil {
			t.Errorf("%s: accepted (package %s)", path, f.Package)
			continue
		}
		var se *spec.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: error of type %T, want *spec.Error: %v", path, err, err)
		}
		got := err.Error()
		if *update {
			if err := os.WriteFile(c+".err", []byte(got+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, rerr := os.ReadFile(c + ".err")
		if rerr != nil {
			t.Errorf("%s: no expected message: %v", path, rerr)
			continue
		}
		if got != strings.TrimSuffix(string(want), "\n") {
			t.Errorf("%s:\ngot  %s\nwant %s", path, got, want)
		}
	}
}
