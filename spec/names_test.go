package spec

import (
	"math"
	"strings"
	"testing"
)

// TestPackageNamesTheGoToolCannotUse: names the go command refuses or
// reads as something else.
func TestPackageNamesTheGoToolCannotUse(t *testing.T) {
	for s, why := range map[string]string{
		"main":          "is a command",
		"init":          "cannot be imported",
		"documentation": "ignored by the go command",
		"p_test":        "ends in _test",
		"norm_windows":  "a GOOS",
		"norm_linux":    "a GOOS",
		"norm_arm64":    "a GOARCH",
		"norm_amd64":    "a GOARCH",
		"x_386":         "a GOARCH",
	} {
		if msg := CheckPackageName(s); !strings.Contains(msg, why) {
			t.Errorf("%q: %q, want it to say %q", s, msg, why)
		}
	}
	for _, s := range []string{"norm", "norm_test2", "windows", "arm64", "norm_generic", "mainx"} {
		if msg := CheckPackageName(s); msg != "" {
			t.Errorf("%q: %s", s, msg)
		}
	}
}

// TestYAML12Numbers: a spec is YAML 1.2, whose numbers have no octal
// 010, and every float limit holds after rounding to float32.
func TestYAML12Numbers(t *testing.T) {
	good := map[string]func(*File) bool{
		head + "    mean: true\n    hidden: [10]\n":                         func(f *File) bool { return f.Kernels[0].Hidden[0] == 10 },
		head + "    mean: true\n    hidden: [0x10]\n":                       func(f *File) bool { return f.Kernels[0].Hidden[0] == 16 },
		head + "    mean: true\n    epsilon: 0.5\n    hidden: [8]\n":        func(f *File) bool { return f.Kernels[0].Epsilon == 0.5 },
		head + "    mean: true\n    epsilon: 0.99999994\n    hidden: [8]\n": func(f *File) bool { return float32(f.Kernels[0].Epsilon) < 1 },
		head + "    mean: true\n    epsilon: 0e0\n    hidden: [8]\n":        func(f *File) bool { return f.Kernels[0].Epsilon == 0 },
		head + "    mean: true\n    residual: {alpha: 3.4028235e38}\n    hidden: [8]\n": func(f *File) bool {
			return float32(f.Kernels[0].Residual.Alpha) == math.MaxFloat32
		},
		head + "    mean: true\n    residual: {alpha: -3.4028235e38}\n    hidden: [8]\n": func(f *File) bool {
			return float32(f.Kernels[0].Residual.Alpha) == -math.MaxFloat32
		},
	}
	for src, ok := range good {
		f, err := Parse("n.yaml", []byte(src))
		if err != nil || !ok(f) {
			t.Errorf("%q: %v", src, err)
		}
	}
	bad := map[string]string{
		head + "    mean: true\n    hidden: [010]\n":                                    "6:14: hidden size 010 has a leading zero",
		head + "    mean: true\n    hidden: [-0768]\n":                                  "6:14: hidden size -0768 has a leading zero",
		head + "    mean: true\n    hidden: [!!float 64]\n":                             "6:14: hidden size 64 has the tag !!float",
		head + "    mean: true\n    hidden: [!!int 64]\n":                               "6:14: hidden size 64 has the tag !!int",
		head + "    mean: true\n    epsilon: 1e400\n    hidden: [8]\n":                  "6:14: epsilon 1e400 overflows",
		head + "    mean: true\n    epsilon: 0.99999999\n    hidden: [8]\n":             "6:14: epsilon 0.99999999 rounds to 1 in float32",
		head + "    mean: true\n    epsilon: 01e-5\n    hidden: [8]\n":                  "6:14: epsilon 01e-5 has a leading zero",
		head + "    mean: true\n    residual: {alpha: 1e400}\n    hidden: [8]\n":        "6:23: alpha 1e400 overflows",
		head + "    mean: true\n    residual: {alpha: 3.4028236e38}\n    hidden: [8]\n": "6:23: alpha 3.4028236e38 overflows float32",
		"version: 01\npackage: p\n":                                                     "1:10: version 01 has a leading zero",
	}
	for src, want := range bad {
		_, err := Parse("n.yaml", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), "n.yaml:"+want) {
			t.Errorf("%q: %v, want %s", src, err, want)
		}
	}
}

// TestSpecPathControlCharacter: a path with a newline is named quoted,
// on one line.
func TestSpecPathControlCharacter(t *testing.T) {
	for _, path := range []string{"a\nb.yaml", "x\x1b.yaml", "tab\there.yaml"} {
		_, err := Load(path)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "control character") {
			t.Errorf("Load(%q): %v", path, err)
		}
		_, err = Parse(path, []byte(head+"    mean: true\n    hidden: [8]\n"))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): %v", path, err)
		}
	}
}

// TestGeneratedNameCollisions: every name the generated code declares is
// checked, with the position of the kernel that collides.
func TestGeneratedNameCollisions(t *testing.T) {
	for src, want := range map[string]string{
		"version: 1\npackage: p\nkernels:\n  - name: A\n    mean: true\n    hidden: [1]\n  - name: A1\n    axis: groups\n    groups: 2\n    mean: true\n":                        "7:11: kernel A1's generated name A1 is also a generated name of kernel A (at 6:14)",
		"version: 1\npackage: p\nkernels:\n  - name: B\n    axis: batch\n    mean: true\n  - name: BColumns\n    axis: batch\n    mean: true\n":                                  "7:11: kernel BColumns's generated name checkBColumns is also a generated name of kernel B (at 4:11)",
		"version: 1\npackage: p\nkernels:\n  - name: G\n    axis: groups\n    groups: 2\n    mean: true\n  - name: GParallel\n    axis: groups\n    groups: 2\n    mean: true\n": "8:11: kernel GParallel's generated name GParallel is also a generated name of kernel G (at 4:11)",
		"version: 1\npackage: p\nkernels:\n  - name: A\n    mean: true\n    hidden: [1]\n  - name: A1\n    mean: true\n    hidden: [2]\n":                                        "",
	} {
		_, err := Parse("n.yaml", []byte(src))
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", src, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), "n.yaml:"+want)):
			t.Errorf("%q: %v, want %s", src, err, want)
		}
	}
}
