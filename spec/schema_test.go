package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite normgen.schema.json from Schema()")

// TestSchemaInSync checks that the committed schema is what Schema builds
// from the decoder's tables today (regenerate: go run ./cmd/normgen schema
// > spec/normgen.schema.json, or go test ./spec -update-schema).
func TestSchemaInSync(t *testing.T) {
	want := Schema()
	path := filepath.Base(SchemaFile)
	if *updateSchema {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what Schema() gives today; regenerate it: go run ./cmd/normgen schema > %s", SchemaFile, SchemaFile)
	}
}

// TestSchemaTables checks that the schema names every key and value of
// the decoder's tables, and is valid JSON.
func TestSchemaTables(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(Schema(), &v); err != nil {
		t.Fatal(err)
	}
	s := string(Schema())
	for _, list := range [][]string{fileKeys, kernelKeys, runningKeys, residualKeys, deepnormKeys, Axes, Statistics, Conventions, AffinePer, Sides, Targets} {
		for _, k := range list {
			if !strings.Contains(s, `"`+k+`"`) {
				t.Errorf("the schema does not name %q", k)
			}
		}
	}
	if v["$schema"] != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema %v", v["$schema"])
	}
}

// TestShippedSchemaLine checks that every shipped spec starts with the
// line that points YAML editors at the schema.
func TestShippedSchemaLine(t *testing.T) {
	names, err := filepath.Glob("*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	const want = "# yaml-language-server: $schema=normgen.schema.json\n"
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(want)) {
			t.Errorf("%s does not start with %q", name, want)
		}
	}
}
