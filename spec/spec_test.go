package spec

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// head is a valid spec up to the first kernel's keys; tests append keys.
const head = "version: 1\npackage: p\nkernels:\n  - name: K\n"

func TestParseGood(t *testing.T) {
	all := []string{"avx512bf16", "avx512", "avx2", "neon", "purego"}
	tests := []struct {
		name, src string
		want      File
	}{{
		name: "defaults",
		src:  head + "    mean: false\n    hidden: [4096]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{{
			Name: "K", Axis: "last", Epsilon: 1e-5, Scale: true, Statistic: "rms",
			Hidden: []int{4096}, Targets: all, Pos: Pos{4, 5},
		}}},
	}, {
		name: "every field",
		src: head + `    doc: "  Fused: s = 2*x + f.  "
    axis: last
    mean: true
    epsilon: 0
    scale: true
    scale_offset: -0.5
    shift: true
    residual:
      alpha: 2.5
      store_sum: true
    save_stats: true
    hidden: [8192, 1, 1048576]
    targets: [purego, avx2]
`,
		want: File{Version: 1, Package: "p", Kernels: []Kernel{{
			Name: "K", Doc: "Fused: s = 2*x + f.", Axis: "last", Mean: true, Epsilon: 0,
			Scale: true, ScaleOffset: -0.5, Shift: true, Statistic: "variance",
			Residual:  &Residual{Alpha: 2.5, StoreSum: true},
			SaveStats: true, Hidden: []int{8192, 1, 1048576},
			Targets: []string{"avx2", "purego"}, Pos: Pos{4, 5},
		}}},
	}, {
		name: "flow style, CRLF, BOM, purego added",
		src:  "\uFEFFversion: 1\r\npackage: Upper_2\r\nkernels: [{name: A_1, mean: true, hidden: [0x10], targets: [neon], residual: {}, epsilon: 1.2e-38}]\r\n",
		want: File{Version: 1, Package: "Upper_2", Kernels: []Kernel{{
			Name: "A_1", Axis: "last", Mean: true, Epsilon: 1.2e-38, Scale: true, Statistic: "variance",
			Residual: &Residual{Alpha: 1}, Hidden: []int{16},
			Targets: []string{"neon", "purego"}, Pos: Pos{3, 11},
		}}},
	}, {
		name: "scale false with a zero offset, two kernels",
		src: head + "    mean: false\n    scale: false\n    scale_offset: 0\n    hidden: [1]\n" +
			"  - name: K2\n    mean: true\n    hidden: [1]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{
			{Name: "K", Axis: "last", Epsilon: 1e-5, Statistic: "rms", Hidden: []int{1}, Targets: all, Pos: Pos{4, 5}},
			{Name: "K2", Axis: "last", Mean: true, Epsilon: 1e-5, Scale: true, Statistic: "variance", Hidden: []int{1}, Targets: all, Pos: Pos{9, 5}},
		}},
	}, {
		name: "WeightNorm: l2, epsilon 0, a gain per row",
		src:  head + "    mean: false\n    statistic: l2\n    epsilon: 0\n    affine_per: row\n    save_stats: true\n    hidden: [768]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{{
			Name: "K", Axis: "last", Statistic: "l2", Scale: true, AffinePerRow: true, SaveStats: true,
			Hidden: []int{768}, Targets: all, Pos: Pos{4, 5},
		}}},
	}, {
		name: "folded BatchNorm: none, gain and bias per row, epsilon not used",
		src:  head + "    mean: false\n    statistic: none\n    shift: true\n    affine_per: row\n    save_stats: false\n    hidden: [1]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{{
			Name: "K", Axis: "last", Statistic: "none", Scale: true, Shift: true, AffinePerRow: true,
			Hidden: []int{1}, Targets: all, Pos: Pos{4, 5},
		}}},
	}, {
		name: "explicit defaults: variance, rms, affine_per element",
		src: head + "    mean: true\n    statistic: variance\n    affine_per: element\n    hidden: [2]\n" +
			"  - name: K2\n    mean: false\n    statistic: rms\n    hidden: [2]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{
			{Name: "K", Axis: "last", Mean: true, Epsilon: 1e-5, Scale: true, Statistic: "variance", Hidden: []int{2}, Targets: all, Pos: Pos{4, 5}},
			{Name: "K2", Axis: "last", Epsilon: 1e-5, Scale: true, Statistic: "rms", Hidden: []int{2}, Targets: all, Pos: Pos{9, 5}},
		}},
	}, {
		name: "DeepNorm encoder-only, store_sum after deepnorm",
		src:  head + "    mean: true\n    residual:\n      deepnorm: {encoder_layers: 18}\n      store_sum: true\n    hidden: [1024]\n",
		want: File{Version: 1, Package: "p", Kernels: []Kernel{{
			Name: "K", Axis: "last", Mean: true, Epsilon: 1e-5, Scale: true, Statistic: "variance",
			Residual: &Residual{Alpha: math.Pow(36, 0.25), StoreSum: true, DeepNorm: &DeepNorm{EncoderLayers: 18, Side: "encoder"}},
			Hidden:   []int{1024}, Targets: all, Pos: Pos{4, 5},
		}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("g.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if f.Path != "g.yaml" || string(f.Source) != tt.src {
				t.Errorf("Path %q, Source %q: want the path and bytes given", f.Path, f.Source)
			}
			f.Path, f.Source = "", nil
			if !reflect.DeepEqual(*f, tt.want) {
				t.Errorf("got  %+v\nwant %+v", f.Kernels, tt.want.Kernels)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	k := head + "    mean: true\n"  // a kernel needing only hidden
	r := head + "    mean: false\n" // the same without the mean
	tests := []struct{ src, want string }{
		{"", "1:1: empty spec; a spec is a YAML mapping that starts with version: 1"},
		{"# only a comment\n", "1:1: empty spec; a spec is a YAML mapping that starts with version: 1"},
		{"version: 1\n---\nversion: 1\n", "2:1: a second YAML document; a spec is one document (remove the ---)"},
		{"version: 1\npackage: p: q\n", "2:11: invalid YAML: mapping values are not allowed in this context; a spec is plain YAML: key: value mappings, lists, spaces for indentation"},
		{"version: 1\n\tpackage: p\n", "2:1: invalid YAML: a tab in the indentation; indent with spaces, not tabs"},
		{"version: 1\nkernels: [1, 2\n", "2:1: invalid YAML: did not find expected ',' or ']'; a spec is plain YAML: key: value mappings, lists, spaces for indentation"},
		{"version: 1\nx:\t\x40\n", "2:4: invalid YAML: a plain value cannot start with '@'; quote the value"},
		{"version: 1\n\x00", "2:1: control character U+0000; a spec is text: only tab, line feed and carriage return are allowed (is this a binary file?)"},
		{"vé\xff", "1:3: byte 0xff is not valid UTF-8; a spec is UTF-8 text (is this a binary file?)"},
		{"a\uFEFF", "1:2: byte order mark (U+FEFF) inside the text; allowed only as the very first character"},
		{"- 1\n", "1:1: the spec is a list; allowed: a mapping, e.g. version: 1"},
		{"version: 1\nversion: 1\n", `2:1: key "version" appears twice in the spec (first at 1:1); give each key once`},
		{"versio: 1\n", `1:1: unknown key "versio" in the spec (did you mean version?); allowed keys: version, package, kernels`},
		{"package: p\n", "1:1: the spec has no version; allowed: version: 1, as the first key"},
		{"version: 2\n", "1:10: version 2 is not supported; allowed: the integer 1"},
		{"version: '1'\n", `1:10: version is the string "1"; allowed: the integer 1`},
		{"version: 1\n", "1:1: the spec has no package; allowed: package: NAME, the Go package name of the generated code, e.g. rmsnorm"},
		{"version: 1\npackage: ../evil\n", `2:10: package "../evil" is not a Go identifier; allowed: a Go package name: a letter followed by letters, digits or _, not a Go keyword, lower case by convention, e.g. rmsnorm`},
		{"version: 1\npackage: type\n", `2:10: package "type" is a Go keyword; allowed: a Go package name: a letter followed by letters, digits or _, not a Go keyword, lower case by convention, e.g. rmsnorm`},
		{"version: 1\npackage:\n", "2:9: package has no value; allowed: a Go package name: a letter followed by letters, digits or _, not a Go keyword, lower case by convention, e.g. rmsnorm"},
		{"version: 1\npackage: p\n", "1:1: the spec has no kernels; allowed: kernels: a list of kernels, each with name, mean and hidden"},
		{"version: 1\npackage: p\nkernels: {}\n", "3:10: kernels is a mapping; allowed: a list of kernels, each a mapping with name, mean and hidden"},
		{"version: 1\npackage: p\nkernels: [K]\n", `3:11: kernel is the string "K"; allowed: a mapping, e.g. {name: RMSNorm, mean: false, hidden: [4096]}`},
		{head + "    hidden: [1]\n", "4:5: kernel K has no mean; allowed: mean: true (LayerNorm: subtract the mean) or mean: false (RMSNorm)"},
		{k, "4:5: kernel K has no hidden; allowed: hidden: a list of row lengths to specialise, e.g. [4096]"},
		{k + "    hidden: 4096\n", "6:13: hidden is the integer 4096; allowed: a list of distinct row lengths from 1 to 1048576, e.g. [4096]"},
		{k + "    hidden: [-1]\n", "6:14: hidden size -1 is out of range; allowed: an integer from 1 to 1048576"},
		{k + "    hidden: [1048577]\n", "6:14: hidden size 1048577 is out of range; allowed: an integer from 1 to 1048576"},
		{k + "    hidden: [1e3]\n", "6:14: hidden size 1e3 is not an integer; allowed: an integer from 1 to 1048576"},
		{k + "    hidden: [7, 8, 7]\n", "6:20: hidden size 7 is listed twice (first at 6:14); allowed: a list of distinct row lengths from 1 to 1048576, e.g. [4096]"},
		{k + "    hidden: [1]\n    epsilon: 1\n", "7:14: epsilon 1 is absurdly large (it would dominate the variance); allowed: a number with 0 <= epsilon < 1, typically 1e-5 or 1e-6"},
		{k + "    hidden: [1]\n    epsilon: -.inf\n", "7:14: epsilon -.inf is not a finite number; allowed: a number with 0 <= epsilon < 1, typically 1e-5 or 1e-6"},
		{k + "    hidden: [1]\n    epsilon: 1e-50\n", "7:14: epsilon 1e-50 is too small for float32 (it would round to 0 or lose precision); allowed: 0, or from 1.1754944e-38 up to 1"},
		{k + "    hidden: [1]\n    scale: false\n    scale_offset: 1\n", "8:19: scale_offset 1 without a scale (scale: false); allowed: scale_offset only with scale: true, where it gives (scale_offset + gamma)"},
		{k + "    hidden: [1]\n    residual: {alpha: 0}\n", "7:23: alpha is 0; allowed: a finite non-zero number, e.g. 1 (Pre-LN, Post-LN) or DeepNorm's (2N)^(1/4)"},
		{k + "    hidden: [1]\n    residual: {alpha: 1e39}\n", "7:23: alpha 1e39 overflows float32; allowed: a finite non-zero number, e.g. 1 (Pre-LN, Post-LN) or DeepNorm's (2N)^(1/4)"},
		{k + "    hidden: [1]\n    residual: {beta: 1}\n", `7:16: unknown key "beta" in residual; allowed keys: alpha, deepnorm, store_sum`},
		{k + "    hidden: [1]\n    residual: true\n", "7:15: residual is the boolean true; allowed: a mapping, e.g. {alpha: 1, store_sum: true}"},
		{k + "    hidden: [1]\n    targets: []\n", "7:14: targets is empty; allowed: a list of distinct instruction sets from avx512bf16, avx512, avx2, neon, purego (leave targets out for all)"},
		{k + "    hidden: [1]\n    targets: [avx]\n", `7:15: unknown target "avx" (did you mean avx2?); allowed: avx512bf16, avx512, avx2, neon, purego`},
		{k + "    hidden: [1]\n    storage: fp16\n", "7:14: storage fp16 is not supported (did you mean f16?); allowed: f32 (float32), bf16 (bfloat16 bits in uint16) or f16 (IEEE binary16 bits in uint16)"},
		{k + "    hidden: [1]\n    axis: first\n", `7:11: axis first is not supported; allowed: last (each row is H contiguous values), channels (the C channels at each position of [N, C, L]: ConvNeXt), batch (each channel over N and L: BatchNorm training) or groups (each group of channels over L: GroupNorm)`},
		{k + "    hidden: [1]\n    shift: 1\n", "7:12: shift is the integer 1; allowed: true or false"},
		{k + "    hidden: [1]\n    doc: \"a\\x01\"\n", "7:10: doc holds the unprintable character U+0001; allowed: one line of printable text"},
		{k + "    hidden: [1]\n    mean: false\n", `7:5: key "mean" appears twice in kernel (first at 5:5); give each key once`},
		{"version: 1\npackage: p\nkernels:\n  - name: rms\n", `4:11: name "rms" is not exported (it must start with A-Z); allowed: an exported Go identifier: an upper-case letter A-Z followed by letters, digits or _, e.g. RMSNorm`},
		{"version: 1\npackage: p\nkernels:\n  - name: RMS(); os.Exit(1)\n", `4:11: name "RMS(); os.Exit(1)" is not a Go identifier; allowed: an exported Go identifier: an upper-case letter A-Z followed by letters, digits or _, e.g. RMSNorm`},
		{"version: 1\npackage: p\nkernels:\n  - name: Ünï\n", `4:11: name "Ünï" is not a Go identifier; allowed: an exported Go identifier: an upper-case letter A-Z followed by letters, digits or _, e.g. RMSNorm`},
		{"version: 1\npackage: p\nkernels:\n  - mean: true\n", "4:5: kernel 1 has no name; allowed: name: an exported Go identifier, e.g. RMSNorm"},
		{k + "    hidden: [1]\n  - name: K\n", `7:11: kernel name K is used twice (first at 4:11); give each kernel its own name`},
		{k + "    hidden: [12]\n  - name: K1\n    mean: true\n    hidden: [2]\n", "9:14: kernel K1's generated name K12 is also a generated name of kernel K (at 6:14); allowed: kernel names and sizes whose generated names (Name+H, Name+\"Any\", Fuzz+Name, Name+\"Columns\", ...) are all distinct (rename a kernel)"},
		{"version: &v 1\npackage: *v\n", "2:10: package is the alias *v; aliases are not supported in specs: write the value out"},
		{"version: *v\n", "1:10: alias *v names no anchor; aliases are not supported in specs: write the value out"},
		{"version: !!str 1\n", `1:10: version is the string "1"; allowed: the integer 1`},
		{"version: !x 1\n", "1:10: version has the tag !x; custom tags are not supported: remove it"},
		{"? [a]\n: 1\n", "1:3: a list as a key in the spec; allowed keys: version, package, kernels"},
		// statistic, affine_per and how they combine with the other fields.
		{k + "    hidden: [1]\n    statistic: l1\n", `7:16: unknown statistic l1 (did you mean l2?); allowed: variance (LayerNorm, with mean: true), rms (RMSNorm), l2 (WeightNorm's ||v||) or none (no normalization: the affine alone)`},
		{k + "    hidden: [1]\n    statistic: true\n", `7:16: statistic is the boolean true; allowed: variance (LayerNorm, with mean: true), rms (RMSNorm), l2 (WeightNorm's ||v||) or none (no normalization: the affine alone)`},
		{k + "    hidden: [1]\n    statistic: l2\n", "7:16: statistic l2 with mean: true (at 5:11); allowed: variance with mean: true (LayerNorm), l2 only with mean: false"},
		{k + "    hidden: [1]\n    statistic: none\n", "7:16: statistic none with mean: true (at 5:11); allowed: variance with mean: true (LayerNorm), none only with mean: false"},
		{r + "    statistic: variance\n    hidden: [1]\n", "6:16: statistic variance with mean: false (at 5:11); allowed: variance only with mean: true (it is taken about the mean), rms, l2 or none with mean: false"},
		{r + "    hidden: [1]\n    statistic: none\n    epsilon: 0\n", "8:14: epsilon with statistic none (at 7:16), which takes no square root to add it to; allowed: no epsilon with statistic none (fold it into gain and bias, as BatchNorm's running variance is)"},
		{r + "    hidden: [1]\n    save_stats: true\n    statistic: none\n", "7:17: save_stats: true with statistic none (at 8:16), which computes no statistics; allowed: save_stats: false, or a statistic variance, rms or l2"},
		{r + "    hidden: [1]\n    statistic: none\n    scale: false\n", "7:16: statistic none with neither scale nor shift leaves the kernel nothing to do; allowed: statistic none with scale: true or shift: true (y = x*gain + bias)"},
		// The first problem in the file is the one reported.
		{r + "    epsilon: 1e-6\n    save_stats: true\n    statistic: none\n    hidden: [1]\n", "6:14: epsilon with statistic none (at 8:16), which takes no square root to add it to; allowed: no epsilon with statistic none (fold it into gain and bias, as BatchNorm's running variance is)"},
		{r + "    hidden: [1]\n    affine_per: channel\n", "7:17: affine_per channel is not supported; allowed: element (gamma and beta, one value per element of the row) or row (gain and bias, one value per row)"},
		{r + "    hidden: [1]\n    affine_per: rows\n", "7:17: affine_per rows is not supported (did you mean row?); allowed: element (gamma and beta, one value per element of the row) or row (gain and bias, one value per row)"},
		{r + "    hidden: [1]\n    affine_per: row\n    scale: false\n", "7:17: affine_per: row with neither scale nor shift; allowed: affine_per: row with scale: true (gain) or shift: true (bias), or leave affine_per out"},
		// DeepNorm's derived alpha.
		{k + "    hidden: [1]\n    residual: {alpha: 2, deepnorm: {encoder_layers: 6}}\n", "7:26: residual has both alpha (at 7:16) and deepnorm; allowed: one of them: alpha, or deepnorm to derive alpha from the layer counts"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {decoder_layers: 6}, alpha: 2}\n", "7:47: residual has both alpha (at 7:16) and deepnorm; allowed: one of them: alpha, or deepnorm to derive alpha from the layer counts"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {}}\n", "7:26: deepnorm has neither encoder_layers nor decoder_layers; allowed: encoder_layers: N (encoder-only), decoder_layers: M (decoder-only), or both with side: encoder or side: decoder"},
		{k + "    hidden: [1]\n    residual: {deepnorm: 18}\n", "7:26: deepnorm is the integer 18; allowed: a mapping, e.g. {encoder_layers: 18}"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {layers: 18}}\n", `7:27: unknown key "layers" in deepnorm; allowed keys: encoder_layers, decoder_layers, side`},
		{k + "    hidden: [1]\n    residual: {deepnorm: {encoder_layers: 0}}\n", "7:43: encoder_layers 0 is out of range; allowed: an integer from 1 to 100000"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {decoder_layers: 2.5}}\n", "7:43: decoder_layers 2.5 is not an integer; allowed: an integer from 1 to 100000"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {encoder_layers: 6, decoder_layers: 6}}\n", "7:26: deepnorm of an encoder-decoder model (encoder_layers and decoder_layers) has no side; allowed: side: encoder or decoder, the stack of an encoder-decoder model the kernel normalizes (their alphas differ)"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {encoder_layers: 6, side: decoder}}\n", "7:52: side decoder, but deepnorm has only encoder_layers; allowed: side: encoder or no side when only encoder_layers is given, or both layer counts for an encoder-decoder model"},
		{k + "    hidden: [1]\n    residual: {deepnorm: {encoder_layers: 6, decoder_layers: 6, side: both}}\n", "7:71: side both is not supported; allowed: encoder or decoder, the stack of an encoder-decoder model the kernel normalizes"},
	}
	for _, tt := range tests {
		_, err := Parse("e.yaml", []byte(tt.src))
		if err == nil {
			t.Errorf("%q: no error; want %s", tt.src, tt.want)
			continue
		}
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%q: error %T, want *spec.Error", tt.src, err)
		}
		if got, want := err.Error(), "e.yaml:"+tt.want; got != want {
			t.Errorf("%q:\ngot  %s\nwant %s", tt.src, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	src := head + "    mean: true\n    hidden: [8]\n"
	if err := os.WriteFile(good, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != good || string(f.Source) != src {
		t.Errorf("Load: Path %q Source %q", f.Path, f.Source)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", MaxSize+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.yaml"): "no such file; give the path of an existing YAML spec, e.g. spec/rmsnorm.yaml",
		dir:                                "is a directory; give a YAML spec file, e.g. spec/rmsnorm.yaml",
		filepath.Join(good, "x.yaml"):      "cannot read the spec: not a directory; give the path of a readable YAML spec file",
		"/dev/null":                        "is not a regular file; give a YAML spec file, e.g. spec/rmsnorm.yaml",
		big:                                "spec is larger than 1048576 bytes; a spec is a short YAML file",
		"":                                 "no spec file named; give the path of a YAML spec, e.g. spec/rmsnorm.yaml",
	} {
		_, err := Load(path)
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("Load(%q): %v (%T), want *spec.Error", path, err, err)
			continue
		}
		name := path
		if name == "" {
			name = "<spec>"
		}
		if got := err.Error(); got != name+":1:1: "+want {
			t.Errorf("Load(%q):\ngot  %s\nwant %s:1:1: %s", path, got, name, want)
		}
	}
}

// TestShipped checks that the shipped specs parse, that the embedded
// catalogue is exactly them, and what the README promises about them.
func TestShipped(t *testing.T) {
	files, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
		disk, err := Load(filepath.Base(f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if string(disk.Source) != string(f.Source) || !reflect.DeepEqual(disk.Kernels, f.Kernels) {
			t.Errorf("%s: the embedded copy differs from the file", f.Path)
		}
	}
	if want := []string{"spec/convnorm.yaml", "spec/deepnorm.yaml", "spec/halfnorm.yaml", "spec/layernorm.yaml", "spec/rmsnorm.yaml", "spec/weightnorm.yaml"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("catalogue %v, want %v", names, want)
	}
	cn, dn, hn, ln, rms, wn := files[0], files[1], files[2], files[3], files[4], files[5]
	if hn.Package != "halfnorm" || len(hn.Kernels) != 6 {
		t.Fatalf("halfnorm.yaml: %d kernels, package %s", len(hn.Kernels), hn.Package)
	}
	// Kernels over rows (the fifth, BF16GroupNorm, is checked below).
	for i, want := range map[int]string{0: "bf16", 1: "bf16", 2: "bf16", 3: "f16", 5: "bf16"} {
		if k := hn.Kernels[i]; k.Storage != want || k.Axis != "last" || k.Mean != (i == 0 || i == 5) || k.Backward != (i == 5) {
			t.Errorf("halfnorm.yaml %s: storage %q, axis %s, mean %v, backward %v", k.Name, k.Storage, k.Axis, k.Mean, k.Backward)
		}
	}
	if k := hn.Kernels[4]; k.Storage != "bf16" || k.Axis != "groups" || k.Groups != 32 || !k.Mean || !k.SaveStats || !k.Backward {
		t.Errorf("halfnorm.yaml %s: %+v", k.Name, k)
	}
	if len(cn.Kernels) != 6 || cn.Package != "convnorm" {
		t.Fatalf("convnorm.yaml: %d kernels, package %s", len(cn.Kernels), cn.Package)
	}
	if k := cn.Kernels[0]; k.Axis != "channels" || !k.Mean || k.Epsilon != 1e-6 || !k.Scale || !k.Shift || len(k.Hidden) == 0 {
		t.Errorf("convnorm.yaml ConvNeXtLayerNorm: %+v", k)
	}
	for i, conv := range []string{"pytorch", "onnx"} {
		k := cn.Kernels[1+i]
		if k.Axis != "batch" || !k.Mean || !k.AffinePerRow || k.Running == nil || k.Running.Convention != conv ||
			k.Running.Momentum != map[string]float64{"pytorch": 0.1, "onnx": 0.9}[conv] || len(k.Hidden) != 0 {
			t.Errorf("convnorm.yaml %s: %+v %+v", k.Name, k, k.Running)
		}
	}
	if k := cn.Kernels[3]; k.Axis != "batch" || k.Mean || k.Statistic != "none" || !k.AffinePerRow || !k.Scale || !k.Shift {
		t.Errorf("convnorm.yaml BatchNormInference: %+v", k)
	}
	if k := cn.Kernels[4]; k.Axis != "groups" || k.Groups != 32 || !k.Mean || k.AffinePerRow || !k.SaveStats {
		t.Errorf("convnorm.yaml GroupNorm: %+v", k)
	}
	if k := cn.Kernels[5]; k.Axis != "groups" || k.GroupSize != 1 || k.Groups != 0 || !k.Mean || !k.Scale || !k.Shift {
		t.Errorf("convnorm.yaml InstanceNorm: %+v", k)
	}
	if k := dn.Kernels[0]; dn.Package != "deepnorm" || !k.Mean || !k.Shift || k.Residual == nil ||
		k.Residual.DeepNorm == nil || k.Residual.DeepNorm.EncoderLayers != 18 || k.Residual.StoreSum ||
		math.Abs(k.Residual.Alpha-math.Sqrt(6)) > 1e-15 || !reflect.DeepEqual(k.Hidden, []int{1024}) {
		t.Errorf("deepnorm.yaml: %+v %+v", k, k.Residual)
	}
	if k := wn.Kernels[0]; wn.Package != "weightnorm" || k.Name != "WeightNorm" || k.Mean || k.Statistic != "l2" ||
		k.Epsilon != 0 || !k.Scale || !k.AffinePerRow || k.Shift || k.Residual != nil || k.SaveStats {
		t.Errorf("weightnorm.yaml: %+v", k)
	}
	if ln.Package != "layernorm" || !ln.Kernels[0].Mean || ln.Kernels[0].Epsilon != 1e-5 ||
		!reflect.DeepEqual(ln.Kernels[0].Hidden, []int{768, 1024, 4096, 8192}) {
		t.Errorf("layernorm.yaml: %+v", ln.Kernels[0])
	}
	if k := ln.Kernels[len(ln.Kernels)-1]; k.Name != "LayerNormStats" || !k.SaveStats || !k.Mean || !k.Scale || !k.Shift {
		t.Errorf("layernorm.yaml LayerNormStats: %+v", k)
	}
	if k := rms.Kernels[len(rms.Kernels)-2]; k.Name != "RMSNormStats" || !k.SaveStats || k.Mean || !k.Scale {
		t.Errorf("rmsnorm.yaml RMSNormStats: %+v", k)
	}
	if k := rms.Kernels[len(rms.Kernels)-1]; k.Name != "RMSNormEps" || !k.RuntimeEpsilon || k.Epsilon != 0 || k.Mean || !k.Scale {
		t.Errorf("rmsnorm.yaml RMSNormEps: %+v", k)
	}
	if rms.Package != "rmsnorm" || rms.Kernels[0].Mean || rms.Kernels[0].Shift || rms.Kernels[0].Epsilon != 1e-6 ||
		!reflect.DeepEqual(rms.Kernels[0].Hidden, []int{2048, 4096, 5120, 8192}) {
		t.Errorf("rmsnorm.yaml: %+v", rms.Kernels[0])
	}
}

func TestCheckPackageName(t *testing.T) {
	for _, s := range []string{"rmsnorm", "x", "norm_2", "Norm"} {
		if msg := CheckPackageName(s); msg != "" {
			t.Errorf("%q: %s", s, msg)
		}
	}
	for _, s := range []string{"", "_", "2x", "a.b", "a/b", "go", "x y", strings.Repeat("a", 65), "ä"} {
		if msg := CheckPackageName(s); msg == "" {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestFloat32Limits pins the bounds the messages state.
func TestFloat32Limits(t *testing.T) {
	if float32(minNormal32) != math.SmallestNonzeroFloat32*(1<<23) {
		t.Errorf("minNormal32 = %g", float32(minNormal32))
	}
}

// TestDeepNormAlpha checks the derived alphas against the paper's formulas,
// written out here as numbers: DeepNet (Wang et al. 2022), table 1.
func TestDeepNormAlpha(t *testing.T) {
	for _, tt := range []struct {
		deepnorm string
		alpha    float64
		dn       DeepNorm
	}{
		{"{encoder_layers: 18}", 2.4494897427831781, DeepNorm{EncoderLayers: 18, Side: "encoder"}},                // 36^(1/4) = sqrt(6)
		{"{encoder_layers: 8, side: encoder}", 2, DeepNorm{EncoderLayers: 8, Side: "encoder"}},                    // 16^(1/4)
		{"{decoder_layers: 50}", 3.1622776601683795, DeepNorm{DecoderLayers: 50, Side: "decoder"}},                // 100^(1/4) = sqrt(10)
		{"{decoder_layers: 12, side: decoder}", 2.2133638394006434, DeepNorm{DecoderLayers: 12, Side: "decoder"}}, // 24^(1/4)
		// 0.81 * (16^4 * 16)^(1/16) = 0.81 * 16^(5/16) = 0.81 * 2^(5/4)
		{"{encoder_layers: 16, decoder_layers: 16, side: encoder}", 0.81 * 2.3784142300054421, DeepNorm{16, 16, "encoder"}},
		// (3*27)^(1/4) = 81^(1/4) = 3
		{"{side: decoder, encoder_layers: 100, decoder_layers: 27}", 3, DeepNorm{100, 27, "decoder"}},
		{"{encoder_layers: 1000, decoder_layers: 1000, side: encoder}", 0.81 * 8.6596432336006535, DeepNorm{1000, 1000, "encoder"}}, // 0.81 * 1000^(5/16) = 0.81 * 10^(15/16)
	} {
		src := head + "    mean: true\n    hidden: [8]\n    residual:\n      deepnorm: " + tt.deepnorm + "\n"
		f, err := Parse("d.yaml", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", tt.deepnorm, err)
			continue
		}
		r := f.Kernels[0].Residual
		if math.Abs(r.Alpha-tt.alpha) > 1e-12*tt.alpha || r.DeepNorm == nil || *r.DeepNorm != tt.dn || r.StoreSum {
			t.Errorf("%s: alpha %.17g, %+v; want %.17g, %+v", tt.deepnorm, r.Alpha, r.DeepNorm, tt.alpha, tt.dn)
		}
	}
}
