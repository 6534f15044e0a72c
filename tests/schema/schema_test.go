// Package schema checks spec/normgen.schema.json with a JSON Schema
// validator, as an editor would apply it: every shipped and test spec
// passes, and each bad spec of tests/badspecs that a schema can describe
// fails. It is a module of its own so that the validator never becomes a
// dependency of normgen's users.
package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/normgen/normgen/spec"
)

const schemaPath = "../../spec/normgen.schema.json"

// goodSpecs are globs of the specs normgen accepts.
var goodSpecs = []string{"../../spec/*.yaml", "../onnx/*.yaml", "../variants/*.yaml"}

// notYAML are the bad specs that are not a YAML mapping with a JSON form,
// which an editor reports as YAML errors of its own.
var notYAML = map[string]string{
	"01_syntax_mapping_values":      "a YAML syntax error",
	"02_syntax_unclosed_list":       "a YAML syntax error",
	"03_syntax_unterminated_string": "a YAML syntax error",
	"04_syntax_tab_indent":          "a YAML syntax error",
	"05_syntax_bad_indent":          "a YAML syntax error",
	"06_syntax_at_sign":             "a YAML syntax error",
	"09_missing":                    "no file",
	"10_directory":                  "a directory",
	"11_binary":                     "not text",
	"12_invalid_utf8":               "not UTF-8",
	"18_duplicate_key":              "a key twice, which YAML forbids",
	"38_eps_nan":                    ".nan has no JSON form",
	"40_eps_inf":                    ".inf has no JSON form",
	"52_alpha_nan":                  ".nan has no JSON form",
	"53_alpha_inf":                  ".inf has no JSON form",
	"62_control_char":               "a control character YAML rejects",
}

// beyondSchema are the bad specs the schema accepts, and why only
// normgen's own checks catch them.
var beyondSchema = map[string]string{
	"13_two_documents":                    "a second YAML document: the schema sees the first",
	"33_kernel_name_duplicate":            "names distinct across list items",
	"34_entry_point_collision":            "generated names built from names and sizes",
	"95_generated_name_fuzz_collision":    "generated names built from names and sizes",
	"96_generated_name_columns_collision": "generated names built from names and sizes",
	"63_eps_tiny":                         "float32 rounding",
	"A7_epsilon_rounds_to_one":            "float32 rounding",
	"A8_alpha_overflows_after_rounding":   "float32 rounding",
	"A3_hidden_leading_zero":              "YAML 1.1 and 1.2 read the numeral differently",
	"A4_hidden_leading_zero_not_octal":    "YAML 1.1 and 1.2 read the numeral differently",
	"B1_epsilon_underscore":               "YAML 1.1 and 1.2 read the numeral differently",
	"A5_hidden_float_tag":                 "a YAML tag, not part of the JSON value",
	"A9_doc_control_character":            "which characters are printable",
}

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("normgen.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("normgen.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// instance reads a YAML spec as the JSON value a schema validates: what
// an editor's YAML plugin gives its validator.
func instance(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(j))
}

func TestGoodSpecs(t *testing.T) {
	sch := compile(t)
	n := 0
	for _, glob := range goodSpecs {
		paths, err := filepath.Glob(glob)
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: %v %v", glob, paths, err)
		}
		for _, p := range paths {
			v, err := instance(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: the schema rejects a valid spec:\n%v", p, err)
			}
			n++
		}
	}
	if n < 7 {
		t.Errorf("only %d good specs", n)
	}
}

func TestBadSpecs(t *testing.T) {
	sch := compile(t)
	seen := map[string]bool{}
	for _, pattern := range []string{"../badspecs/*.yaml", "../badspecs/*.err"} {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			seen[strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p), ".yaml"), ".err")] = true
		}
	}
	var cases []string
	for c := range seen {
		cases = append(cases, c)
	}
	sort.Strings(cases)
	if len(cases) < 100 {
		t.Fatalf("only %d bad specs", len(cases))
	}
	rejected := 0
	for _, c := range cases {
		v, err := instance(filepath.Join("../badspecs", c+".yaml"))
		if err != nil {
			if _, ok := notYAML[c]; !ok {
				t.Errorf("%s: cannot be read as a JSON value (%v); list it in notYAML if an editor cannot either", c, err)
			}
			continue
		}
		if why, ok := notYAML[c]; ok {
			t.Errorf("%s reads as a JSON value, but notYAML says %q", c, why)
		}
		err = sch.Validate(v)
		why, beyond := beyondSchema[c]
		switch {
		case err == nil && !beyond:
			t.Errorf("%s: the schema accepts this bad spec; tighten the schema, or list it in beyondSchema with the reason", c)
		case err != nil && beyond:
			t.Errorf("%s: the schema rejects it, but beyondSchema says %q; remove it from the list", c, why)
		case err != nil:
			rejected++
		}
	}
	t.Logf("the schema rejects %d of %d bad specs; %d are not YAML mappings, %d need normgen's own checks", rejected, len(cases), len(notYAML), len(beyondSchema))
	for _, m := range []map[string]string{notYAML, beyondSchema} {
		for c := range m {
			if !seen[c] {
				t.Errorf("%s is listed but is not in tests/badspecs", c)
			}
		}
	}
}

// valid are specs normgen accepts that take each branch of the schema's
// conditions; the schema must accept every one.
var valid = []string{
	"kernels:\n  - {name: A, mean: false, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, statistic: variance, epsilon: 0, hidden: [8, 16], targets: [neon, avx2]}",
	"kernels:\n  - {name: A, mean: false, statistic: l2, epsilon: 0, affine_per: row, hidden: [8]}",
	"kernels:\n  - {name: A, mean: false, statistic: none, hidden: [8]}",
	"kernels:\n  - {name: A, mean: false, statistic: none, scale: false, shift: true, affine_per: row, hidden: [8]}",
	"kernels:\n  - {name: A, mean: false, scale: false, scale_offset: 0, shift: true, hidden: [8]}",
	"kernels:\n  - {name: A, mean: false, scale_offset: 1, doc: Gemma., hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, residual: {}, save_stats: true, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, residual: {alpha: -2.5, store_sum: true}, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, residual: {deepnorm: {encoder_layers: 18}}, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, residual: {deepnorm: {decoder_layers: 6, side: decoder}}, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, residual: {deepnorm: {encoder_layers: 6, decoder_layers: 6, side: encoder}}, hidden: [8]}",
	"kernels:\n  - {name: A, mean: true, axis: channels, hidden: [96]}",
	"kernels:\n  - {name: A, mean: false, axis: channels, hidden: [96]}",
	"kernels:\n  - {name: A, mean: true, axis: groups, groups: 32}",
	"kernels:\n  - {name: A, mean: true, axis: groups, group_size: 1, save_stats: true}",
	"kernels:\n  - {name: A, mean: true, axis: batch, running: {convention: onnx, momentum: 0.9}}",
	"kernels:\n  - {name: A, mean: false, axis: batch, statistic: none, scale: true}",
	"kernels:\n  - {name: A, mean: true, axis: batch}",
	"kernels:\n  - {name: A, mean: true, axis: last, affine_per: element, hidden: [1048576]}",
}

// TestValidSpecs checks the schema against normgen's decoder: each spec
// of valid is accepted by both.
func TestValidSpecs(t *testing.T) {
	sch := compile(t)
	for i, body := range valid {
		src := "version: 1\npackage: p\n" + body + "\n"
		if _, err := spec.Parse("valid.yaml", []byte(src)); err != nil {
			t.Errorf("valid[%d]: normgen rejects it: %v", i, err)
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("valid[%d]: the schema rejects a spec normgen accepts:\n%s\n%v", i, src, err)
		}
	}
}
