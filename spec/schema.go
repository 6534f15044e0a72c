package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/token"
	"strings"
)

// SchemaFile is where the repository keeps Schema's output, next to the
// shipped specs, whose first line points editors at it.
const SchemaFile = "spec/normgen.schema.json"

// Schema returns a JSON Schema (draft-07, which editors' YAML plugins
// read) of spec format Version, built from the tables the decoder checks
// against: the key lists, the allowed values and the limits. It accepts
// every valid spec; the decoder checks more than a schema can say (float32
// rounding, YAML 1.1 numerals, generated-name collisions, ...), so a spec
// the schema accepts may still be refused, with a located message.
func Schema() []byte {
	integer := func(lo, hi int) obj {
		return obj{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}
	}
	enum := func(desc string, values []string) obj {
		return obj{{"description", desc}, {"type", "string"}, {"enum", values}}
	}
	boolean := func(desc string, def bool) obj {
		return obj{{"description", desc}, {"type", "boolean"}, {"default", def}}
	}
	var osArch []string
	osArch = append(append(osArch, knownOS...), knownArch...)
	var reserved []string
	for t := token.Token(0); t < 256; t++ {
		if t.IsKeyword() {
			reserved = append(reserved, t.String())
		}
	}
	for _, s := range []string{"_", "main", "init", "documentation"} {
		if CheckPackageName(s) != "" {
			reserved = append(reserved, s)
		}
	}

	req := func(keys ...string) obj { return obj{{"required", keys}} }
	is := func(key string, v any) obj {
		return obj{{"required", []string{key}}, {"properties", obj{{key, obj{{"const", v}}}}}}
	}
	in := func(key string, vs ...string) obj {
		return obj{{"required", []string{key}}, {"properties", obj{{key, obj{{"enum", vs}}}}}}
	}
	not := func(o obj) obj { return obj{{"not", o}} }
	anyOf := func(os ...obj) obj { return obj{{"anyOf", os}} }
	// hasAffine: scale (true by default) or shift.
	hasAffine := anyOf(not(req("scale")), is("scale", true), is("shift", true))

	deepnorm := obj{
		{"description", "DeepNorm's layer counts, from which alpha is derived (instead of alpha)"},
		{"type", "object"},
		{"additionalProperties", false},
		{"properties", props(deepnormKeys, map[string]obj{
			"encoder_layers": append(obj{{"description", "N, the number of encoder layers"}}, integer(1, MaxLayers)...),
			"decoder_layers": append(obj{{"description", "M, the number of decoder layers"}}, integer(1, MaxLayers)...),
			"side":           enum("the stack of an encoder-decoder model this kernel normalizes; required when both counts are given", Sides),
		})},
		{"anyOf", []obj{req("encoder_layers"), req("decoder_layers")}},
		{"allOf", []obj{
			ifThen(req("encoder_layers", "decoder_layers"), req("side"), nil),
			ifThen(not(req("decoder_layers")), obj{{"properties", obj{{"side", obj{{"const", Sides[0]}}}}}}, nil),
			ifThen(not(req("encoder_layers")), obj{{"properties", obj{{"side", obj{{"const", Sides[1]}}}}}}, nil),
		}},
	}
	residual := obj{
		{"description", "a fused residual input: normalize s = alpha*x + f instead of x"},
		{"type", "object"},
		{"additionalProperties", false},
		{"properties", props(residualKeys, map[string]obj{
			"alpha":     {{"description", "the scale of the residual stream x (1 for Pre-LN and Post-LN); finite, not 0"}, {"type", "number"}, {"not", obj{{"const", 0}}}, {"default", 1}},
			"deepnorm":  deepnorm,
			"store_sum": boolean("also write s, the residual stream of a Pre-LN stack", false),
		})},
		{"not", obj{{"required", []string{"alpha", "deepnorm"}}}},
	}
	running := obj{
		{"description", "with axis batch: update running mean and variance in the same call"},
		{"type", "object"},
		{"additionalProperties", false},
		{"required", runningKeys},
		{"properties", props(runningKeys, map[string]obj{
			"momentum":   {{"description", "as the convention reads it: PyTorch's default is 0.1, ONNX's 0.9"}, {"type", "number"}, {"minimum", 0}, {"maximum", 1}},
			"convention": enum("pytorch: running = (1-momentum)*running + momentum*batch, unbiased variance; onnx: running = momentum*running + (1-momentum)*batch, biased variance", Conventions),
		})},
	}
	kernel := obj{
		{"type", "object"},
		{"additionalProperties", false},
		{"required", []string{"name", "mean"}},
		{"properties", props(kernelKeys, map[string]obj{
			"name": {{"description", "the exported Go name prefix of the kernel's entry points (Name+H, Name+\"Any\")"},
				{"type", "string"}, {"pattern", kernelRE.String()}, {"maxLength", MaxNameLen}},
			"doc": {{"description", "one line of text added to the generated documentation"},
				{"type", "string"}, {"maxLength", MaxDocLen}, {"pattern", `^\s*[^\r\n]*\s*$`}},
			"axis":       append(enum("the normalized axis: last (rows of H values), channels, batch or groups of [N, C, L] tensors", Axes), kv{"default", DefaultAxis}),
			"groups":     append(obj{{"description", "with axis groups: the number of channel groups (GroupNorm)"}}, integer(1, MaxHidden)...),
			"group_size": append(obj{{"description", "with axis groups, instead of groups: the channels per group (1: InstanceNorm)"}}, integer(1, MaxHidden)...),
			"mean":       {{"description", "true: subtract the mean (LayerNorm); false: no mean (RMSNorm)"}, {"type", "boolean"}},
			"statistic":  enum("what the row is divided by: variance (with mean: true), rms, l2 or none (each with mean: false); default: variance with mean, rms without", Statistics),
			"epsilon": {{"description", "added to the statistic inside the square root; not with statistic none; " + RuntimeEpsilon + ": an eps float32 argument, last, of every entry point"},
				{"anyOf", []obj{{{"type", "number"}, {"minimum", 0}, {"exclusiveMaximum", 1}}, {{"const", RuntimeEpsilon}}}}, {"default", DefaultEpsilon}},
			"scale":        boolean("multiply by gamma (with affine_per: row, by gain)", true),
			"scale_offset": {{"description", "multiply by (scale_offset + gamma): 1 for Gemma"}, {"type", "number"}, {"default", 0}},
			"shift":        boolean("add beta (with affine_per: row, bias)", false),
			"affine_per":   append(enum("element: gamma and beta hold one value per element of the row; row: gain and bias hold one value per row", AffinePer), kv{"default", AffinePer[0]}),
			"residual":     residual,
			"save_stats":   boolean("also write each row's mean (with mean: true) and rstd", false),
			"backward":     boolean("also generate the backward pass (the gradients of the inputs and parameters); implies save_stats", false),
			"running":      running,
			"hidden": {{"description", "the row lengths (with axis channels, channel counts) that get their own entry points"},
				{"type", "array"}, {"minItems", 1}, {"maxItems", MaxSizes}, {"uniqueItems", true}, {"items", integer(1, MaxHidden)}},
			"storage": append(enum("how the row arrays (x, f, dst, sum; over tensors x and dst) hold their values: f32 ([]float32), bf16 or f16 (the bits in []uint16); parameters, saved and running statistics stay float32; a backward pass takes dy, x and dx in the same storage", Storages), kv{"default", "f32"}),
			"targets": {{"description", "the instruction sets to generate; purego is always generated"},
				{"type", "array"}, {"minItems", 1}, {"uniqueItems", true}, {"items", obj{{"type", "string"}, {"enum", Targets}}}},
		})},
		// The checks between keys that a schema can say.
		{"allOf", []obj{
			ifThen(obj{{"required", []string{"axis"}}, {"properties", obj{{"axis", obj{{"enum", []string{"batch", "groups"}}}}}}},
				obj{{"not", obj{{"required", []string{"hidden"}}}}},
				obj{{"required", []string{"hidden"}}}),
			ifThen(obj{{"required", []string{"axis"}}, {"properties", obj{{"axis", obj{{"const", "groups"}}}}}},
				obj{{"oneOf", []obj{{{"required", []string{"groups"}}}, {{"required", []string{"group_size"}}}}}},
				obj{{"not", obj{{"anyOf", []obj{{{"required", []string{"groups"}}}, {{"required", []string{"group_size"}}}}}}}}),
			ifThen(obj{{"required", []string{"axis"}}, {"properties", obj{{"axis", obj{{"const", "batch"}}}}}},
				nil,
				obj{{"not", obj{{"required", []string{"running"}}}}}),
			ifThen(obj{{"required", []string{"axis"}}, {"properties", obj{{"axis", obj{{"enum", []string{"channels", "batch", "groups"}}}}}}},
				obj{{"not", obj{{"anyOf", []obj{{{"required", []string{"residual"}}}, {{"required", []string{"affine_per"}}}}}}}},
				nil),
			ifThen(obj{{"required", []string{"statistic"}}, {"properties", obj{{"statistic", obj{{"const", "none"}}}}}},
				obj{{"not", obj{{"required", []string{"epsilon"}}}}, {"properties", obj{{"save_stats", obj{{"const", false}}}}}},
				nil),
			// Statistics[0], variance, is taken about the mean; the others without.
			ifThen(obj{{"required", []string{"statistic"}}, {"properties", obj{{"statistic", obj{{"const", Statistics[0]}}}}}},
				obj{{"properties", obj{{"mean", obj{{"const", true}}}}}},
				nil),
			ifThen(obj{{"required", []string{"statistic"}}, {"properties", obj{{"statistic", obj{{"enum", Statistics[1:]}}}}}},
				obj{{"properties", obj{{"mean", obj{{"const", false}}}}}},
				nil),
			ifThen(obj{{"required", []string{"scale"}}, {"properties", obj{{"scale", obj{{"const", false}}}}}},
				obj{{"properties", obj{{"scale_offset", obj{{"const", 0}}}}}},
				nil),
			ifThen(is("statistic", "none"), obj{{"allOf", []obj{hasAffine, not(req("running"))}}}, nil),
			ifThen(is("affine_per", "row"), hasAffine, nil),
			ifThen(is("backward", true), anyOf(not(is("save_stats", false)), is("statistic", "none")), nil),
			ifThen(in("axis", "channels", "groups"), not(in("statistic", "l2", "none")), nil),
			ifThen(is("axis", "batch"), obj{{"allOf", []obj{
				not(is("statistic", "l2")),
				anyOf(is("mean", true), is("statistic", "none")),
			}}}, nil),
		}},
	}
	schema := obj{
		{"$schema", "http://json-schema.org/draft-07/schema#"},
		{"title", fmt.Sprintf("normgen spec, format version %d", Version)},
		{"description", "A YAML file naming the normalization kernels of one generated Go package (spec/REFERENCE.md). Generated by normgen schema; do not edit."},
		{"type", "object"},
		{"additionalProperties", false},
		{"required", fileKeys},
		{"properties", props(fileKeys, map[string]obj{
			"version": {{"description", "the spec format version"}, {"type", "integer"}, {"const", Version}},
			"package": {{"description", "the Go package name of the generated code"},
				{"type", "string"}, {"pattern", packageRE.String()}, {"maxLength", MaxNameLen},
				{"not", obj{{"anyOf", []obj{
					{{"enum", reserved}},
					{{"pattern", "_test$"}},
					{{"pattern", "_(" + strings.Join(osArch, "|") + ")$"}},
				}}}}},
			"kernels": {{"description", "the kernels, with distinct names"},
				{"type", "array"}, {"minItems", 1}, {"maxItems", MaxKernels}, {"items", obj{{"$ref", "#/definitions/kernel"}}}},
		})},
		{"definitions", obj{{"kernel", kernel}}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(schema); err != nil {
		panic(err) // only strings, numbers and the types below: cannot fail
	}
	return buf.Bytes()
}

// kv is one member of a JSON object; obj keeps its members in order, so
// that the schema reads like REFERENCE.md.
type kv struct {
	k string
	v any
}

type obj []kv

func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(m.k)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// props is the properties object of keys, in their order; each key must
// have a schema, so that a key added to a table cannot be left out.
func props(keys []string, schemas map[string]obj) obj {
	var o obj
	for _, k := range keys {
		s, ok := schemas[k]
		if !ok {
			panic("spec: no schema for key " + k)
		}
		o = append(o, kv{k, s})
	}
	if len(schemas) != len(keys) {
		panic("spec: a schema for a key the decoder does not know")
	}
	return o
}

// ifThen is an if/then/else; a nil branch is left out.
func ifThen(cond, then, otherwise obj) obj {
	o := obj{{"if", cond}}
	if then != nil {
		o = append(o, kv{"then", then})
	}
	if otherwise != nil {
		o = append(o, kv{"else", otherwise})
	}
	return o
}
