package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse feeds Parse arbitrary bytes: each must give a valid spec or a
// located *Error, never a panic or a hang. Validated specs are checked
// against the invariants the generator relies on.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("*.yaml")
	bad, _ := filepath.Glob("../tests/badspecs/*.yaml")
	for _, path := range append(seeds, bad...) {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"", "---", "version: 1\n---\n", "a: b: c", "\t", "[", "{", "*a", "&a [*a, *a]", "!!binary AAAA",
		head + "    mean: true\n    hidden: [1, 2]\n    targets: [avx2]\n    residual: {alpha: -2}\n",
		head + "    mean: true\n    hidden: [12]\n  - name: K1\n    mean: true\n    hidden: [2]\n",
		head + "    mean: false\n    statistic: l2\n    epsilon: 0\n    affine_per: row\n    hidden: [768]\n",
		head + "    mean: false\n    statistic: none\n    shift: true\n    affine_per: row\n    hidden: [1]\n",
		head + "    mean: true\n    hidden: [8]\n    residual: {deepnorm: {encoder_layers: 6, decoder_layers: 6, side: decoder}}\n",
		head + "    mean: true\n    axis: channels\n    shift: true\n    hidden: [96, 384]\n",
		head + "    mean: true\n    axis: batch\n    shift: true\n    save_stats: true\n    running: {convention: pytorch, momentum: 0.1}\n",
		head + "    mean: true\n    axis: groups\n    groups: 32\n    shift: true\n",
		head + "    mean: true\n    axis: groups\n    group_size: 1\n    shift: true\n",
		head + "    mean: false\n    axis: batch\n    statistic: none\n    shift: true\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		file, err := Parse("fuzz.yaml", data)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Parse took %v", d)
		}
		if err != nil {
			if file != nil {
				t.Fatal("both a File and an error")
			}
			var list Errors
			if !errors.As(err, &list) {
				se, ok := err.(*Error)
				if !ok {
					t.Fatalf("error %T, want *spec.Error or spec.Errors: %v", err, err)
				}
				list = Errors{se}
			}
			if len(list) == 0 || len(list) > MaxErrors+1 {
				t.Fatalf("%d errors", len(list))
			}
			for _, se := range list {
				msg := se.Error()
				if se.Path != "fuzz.yaml" || se.Line < 1 || se.Col < 1 || !strings.HasPrefix(msg, "fuzz.yaml:") ||
					strings.Contains(se.Msg, "\n") || !strings.Contains(se.Msg, "; ") || !utf8.ValidString(msg) ||
					strings.Contains(msg, "internal error") {
					t.Fatalf("badly formed error %q", msg)
				}
			}
			return
		}
		checkValid(t, file, data)
	})
}

// checkValid asserts what a validated File promises.
func checkValid(t *testing.T, f *File, data []byte) {
	t.Helper()
	if string(f.Source) != string(data) || f.Version != Version || CheckPackageName(f.Package) != "" || len(f.Kernels) == 0 {
		t.Fatalf("invalid file accepted: %+v", f)
	}
	entries := map[string]bool{}
	for _, k := range f.Kernels {
		if !kernelRE.MatchString(k.Name) || len(k.Name) > MaxNameLen || strings.ContainsAny(k.Doc, "\n\r") || !contains(Axes, k.Axis) {
			t.Fatalf("invalid kernel accepted: %+v", k)
		}
		if k.Epsilon < 0 || k.Epsilon >= 1 || k.Epsilon != k.Epsilon || (!k.Scale && k.ScaleOffset != 0) {
			t.Fatalf("invalid numbers accepted: %+v", k)
		}
		if r := k.Residual; r != nil && (r.Alpha == 0 || r.Alpha != r.Alpha || r.Alpha > 3.5e38 || r.Alpha < -3.5e38) {
			t.Fatalf("invalid alpha accepted: %+v", r)
		}
		if !contains(Statistics, k.Statistic) || (k.Statistic == "variance") != k.Mean ||
			k.Statistic == "none" && (k.SaveStats || k.Epsilon != 0 || !k.Scale && !k.Shift) ||
			k.AffinePerRow && !k.Scale && !k.Shift {
			t.Fatalf("invalid statistic or affine accepted: %+v", k)
		}
		if r := k.Residual; r != nil && r.DeepNorm != nil {
			dn := r.DeepNorm
			if !(r.Alpha > 0) || dn.EncoderLayers < 0 || dn.DecoderLayers < 0 || dn.EncoderLayers+dn.DecoderLayers == 0 ||
				dn.Side != "encoder" && dn.Side != "decoder" ||
				dn.Side == "encoder" && dn.EncoderLayers == 0 || dn.Side == "decoder" && dn.DecoderLayers == 0 {
				t.Fatalf("invalid deepnorm accepted: %+v %+v", r, dn)
			}
		}
		if k.Axis != "last" && (k.Residual != nil || k.Statistic == "none" && k.Axis != "batch" || k.Statistic == "l2") ||
			(k.Axis == "groups") != (k.Groups > 0 || k.GroupSize > 0) || k.Groups > 0 && k.GroupSize > 0 ||
			k.Statistic == "none" && (k.Running != nil || k.SaveStats) || k.Running != nil && (k.Axis != "batch" || !contains(Conventions, k.Running.Convention) || !(k.Running.Momentum >= 0 && k.Running.Momentum <= 1)) ||
			k.Axis == "batch" && (!k.Mean && k.Statistic != "none" || !k.AffinePerRow) || (k.Axis == "channels" || k.Axis == "groups") && k.AffinePerRow {
			t.Fatalf("invalid axis fields accepted: %+v", k)
		}
		sized := k.Axis == "last" || k.Axis == "channels"
		if sized == (len(k.Hidden) == 0) || len(k.Targets) == 0 || k.Targets[len(k.Targets)-1] != "purego" {
			t.Fatalf("invalid lists accepted: %+v", k)
		}
		for _, name := range append([]string{k.Name + "Any"}, hiddenNames(k)...) {
			if entries[name] {
				t.Fatalf("entry point %s defined twice", name)
			}
			entries[name] = true
		}
	}
}

func hiddenNames(k Kernel) []string {
	var names []string
	seen := map[int]bool{}
	for _, h := range k.Hidden {
		if h < 1 || h > MaxHidden || seen[h] {
			return []string{k.Name + "Any"} // forces the duplicate failure
		}
		seen[h] = true
		names = append(names, k.Name+itoa(h))
	}
	return names
}

func itoa(n int) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
