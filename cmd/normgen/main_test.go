package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen"
	"github.com/normgen/normgen/spec"
)

// fakeGenerate stands in for gen.Generate in the tests of the command's
// own logic: small, fast, and one file per kernel so that removed
// kernels leave stale files.
func fakeGenerate(f *spec.File, version string) (*gen.Package, error) {
	h := gen.Header(version, f)
	p := &gen.Package{Name: f.Package, Files: map[string][]byte{
		f.Package + ".go": []byte(h + "\npackage " + f.Package + "\n"),
	}}
	for _, k := range f.Kernels {
		p.Files[f.Package+"_"+strings.ToLower(k.Name)+".go"] = []byte(h + "\npackage " + f.Package + "\n\n// " + k.Name + "\n")
	}
	return p, nil
}

const rmsSpec = `version: 1
package: rms
kernels:
  - name: RMSNorm
    mean: false
    hidden: [64]
  - name: Other
    mean: true
    hidden: [8]
`

type result struct {
	status         int
	stdout, stderr string
}

// normgen runs the command in a fresh temporary directory (or dir, when
// set) with the given environment.
func normgen(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	status := run(args, &out, &errb, func(k string) string { return env[k] })
	r := result{status, out.String(), errb.String()}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic:") {
		t.Errorf("normgen %v printed a stack trace:\n%s", args, r.stderr)
	}
	return r
}

// workdir makes a temporary directory holding rms.yaml the current one.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chdir(t, dir)
	if err := os.WriteFile("rms.yaml", []byte(rmsSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chdir is testing.T.Chdir, which needs a later go line than normgen's.
func chdir(t *testing.T, dir string) {
	t.Helper()
	old, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Chdir(old); err != nil {
			t.Error(err)
		}
	})
}

func useFake(t *testing.T) {
	generate = fakeGenerate
	t.Cleanup(func() { generate = gen.Generate })
}

func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestLongFlags(t *testing.T) {
	for in, want := range map[string]string{
		"-spec x.yaml":           "--spec x.yaml",
		"-spec=x.yaml -out=d":    "--spec=x.yaml --out=d",
		"--spec x -out d":        "--spec x --out d",
		"-version -help -h":      "--version --help -h",
		"-package p":             "--package p",
		"-s -sp -x":              "-s -sp -x",
		"check -spec x -- -spec": "check --spec x -- -spec",
		"-":                      "-",
	} {
		if got := strings.Join(longFlags(strings.Fields(in)), " "); got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	for _, arg := range []string{"--version", "-version"} {
		if r := normgen(t, nil, arg); r.status != 0 || r.stdout != "normgen "+gen.Version+"\n" {
			t.Errorf("%s: %+v", arg, r)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-help"}, {"-h"}, {"help"}} {
		r := normgen(t, nil, args...)
		for _, want := range []string{"-spec FILE", "out/<package>", "$GOPACKAGE", "//go:generate go tool normgen -spec", "normgen check", "one dash or two"} {
			if r.status != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("%v: status %d, no %q in\n%s", args, r.status, want, r.stdout)
			}
		}
	}
	for _, help := range []string{"--help", "-h"} {
		if r := normgen(t, nil, "check", help); r.status != 0 || !strings.Contains(r.stdout, "stale, or edited by hand") {
			t.Errorf("check %s: %+v", help, r)
		}
		if r := normgen(t, nil, "version", help); r.status != 0 || !strings.Contains(r.stdout, "Print normgen's version") {
			t.Errorf("version %s: %+v", help, r)
		}
	}
	if r := normgen(t, nil, "version"); r.status != 0 || r.stdout != "normgen "+gen.Version+"\n" || r.stderr != "" {
		t.Errorf("version: %+v", r)
	}
	if r := normgen(t, nil, "version", "x"); r.status != 2 || !strings.Contains(r.stderr, `unexpected argument "x"`) {
		t.Errorf("version x: %+v", r)
	}
}

func TestSchemaCommand(t *testing.T) {
	r := normgen(t, nil, "schema")
	if r.status != 0 || r.stdout != string(spec.Schema()) || r.stderr != "" {
		t.Errorf("schema: status %d stderr %q", r.status, r.stderr)
	}
	if r := normgen(t, nil, "schema", "x"); r.status != 2 {
		t.Errorf("schema x: %+v", r)
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for normgen",
		"zsh":  "#compdef normgen",
		"fish": "# fish completion for normgen",
	} {
		if r := normgen(t, nil, "completion", shell); r.status != 0 || !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: status %d stderr %q\n%.200s", shell, r.status, r.stderr, r.stdout)
		}
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		if r := normgen(t, nil, args...); r.status != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: %+v, want a one-line usage error, status 2", args, r)
		}
	}
	// The completion command completes normgen's own commands.
	r := normgen(t, nil, "__complete", "")
	for _, want := range []string{"check", "bench", "version", "schema", "completion"} {
		if r.status != 0 || !strings.Contains(r.stdout, want+"\t") {
			t.Errorf("__complete lacks %s: %+v", want, r)
		}
	}
}

func TestSpecFlag(t *testing.T) {
	useFake(t)
	want := []string{"rms.go", "rms_other.go", "rms_rmsnorm.go"}
	for _, tc := range []struct {
		args []string
		dir  string
	}{
		{[]string{"-spec", "rms.yaml"}, "out/rms"},
		{[]string{"--spec", "rms.yaml"}, "out/rms"},
		{[]string{"-spec=rms.yaml", "-out", "a/b"}, "a/b"},
		{[]string{"--spec=rms.yaml", "--out=c"}, "c"},
		{[]string{"-spec", "rms.yaml", "-package", "other"}, "out/other"},
	} {
		workdir(t)
		r := normgen(t, nil, tc.args...)
		if r.status != 0 || !strings.Contains(r.stdout, tc.dir) {
			t.Fatalf("%v: %+v", tc.args, r)
		}
		w := want
		if strings.Contains(tc.dir, "other") {
			w = []string{"other.go", "other_other.go", "other_rmsnorm.go"}
		}
		if got := files(t, tc.dir); !reflect.DeepEqual(got, w) {
			t.Errorf("%v: %s holds %v, want %v", tc.args, tc.dir, got, w)
		}
	}
}

// With no -spec, normgen generates every package of the built-in
// catalogue, whatever spec/*.yaml holds.
func TestCatalogue(t *testing.T) {
	useFake(t)
	workdir(t)
	cat, err := spec.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var listed, pkgs []string
	for _, f := range cat {
		listed = append(listed, f.Package)
	}
	pkgs = slices.Clone(listed)
	slices.Sort(pkgs)
	if len(pkgs) < 2 || !slices.Contains(pkgs, "rmsnorm") {
		t.Fatalf("the catalogue holds %v", pkgs)
	}
	if r := normgen(t, nil); r.status != 0 {
		t.Fatalf("%+v", r)
	}
	if got := files(t, "out"); !reflect.DeepEqual(got, pkgs) {
		t.Errorf("out holds %v, want %v", got, pkgs)
	}
	data, err := os.ReadFile("out/rmsnorm/rmsnorm.go")
	if err != nil || !bytes.Contains(data, []byte(" from rmsnorm.yaml (sha256:")) {
		t.Errorf("header: %q %v", data, err)
	}
	r := normgen(t, nil, "check")
	for _, p := range pkgs {
		if r.status != 0 || !strings.Contains(r.stdout, "out/"+p+": up to date") {
			t.Errorf("check, package %s: %+v", p, r)
		}
	}
	if r := normgen(t, nil, "-out", "gen"); r.status != 0 || !reflect.DeepEqual(files(t, "gen"), pkgs) {
		t.Errorf("-out gen: %+v, gen holds %v", r, files(t, "gen"))
	}
	// The help names the catalogue's packages.
	if r := normgen(t, nil, "--help"); !strings.Contains(r.stdout, "("+strings.Join(listed, ", ")+")") {
		t.Errorf("--help does not list the catalogue %v:\n%s", listed, r.stdout)
	}
}

// TestGoGenerate: with $GOPACKAGE set and no -out, normgen writes into the
// current directory as package $GOPACKAGE, silently.
func TestGoGenerate(t *testing.T) {
	useFake(t)
	workdir(t)
	env := map[string]string{"GOPACKAGE": "mypkg"}
	if err := os.WriteFile("doc.go", []byte("package mypkg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := normgen(t, env, "-spec", "rms.yaml")
	if r.status != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("%+v", r)
	}
	want := []string{"doc.go", "mypkg.go", "mypkg_other.go", "mypkg_rmsnorm.go", "rms.yaml"}
	if got := files(t, "."); !reflect.DeepEqual(got, want) {
		t.Errorf("holds %v, want %v", got, want)
	}
	if data, _ := os.ReadFile("mypkg.go"); !bytes.Contains(data, []byte("\npackage mypkg\n")) {
		t.Errorf("mypkg.go: %s", data)
	}
	if r := normgen(t, env, "check", "-spec", "rms.yaml"); r.status != 0 {
		t.Errorf("check: %+v", r)
	}
	// -out wins over the current directory, and the spec's name is kept.
	if r := normgen(t, env, "-spec", "rms.yaml", "-out", "sub"); r.status != 0 || len(files(t, "sub")) != 3 || files(t, "sub")[0] != "rms.go" {
		t.Errorf("-out under go generate: %+v %v", r, files(t, "sub"))
	}
	for _, tc := range []struct {
		env    map[string]string
		args   []string
		status int
		want   string
	}{
		{env, nil, 2, "normgen: no spec given; use -spec FILE"},
		{map[string]string{"GOPACKAGE": "my-pkg"}, []string{"-spec", "rms.yaml"}, 1, `normgen: $GOPACKAGE: package "my-pkg" is not a Go identifier`},
		{nil, []string{"-spec", "rms.yaml", "-package", "a/b"}, 2, `normgen: -package: package "a/b" is not a Go identifier`},
		{map[string]string{"GOPACKAGE": "norm_test"}, []string{"-spec", "rms.yaml"}, 1, `normgen: $GOPACKAGE: package "norm_test" ends in _test`},
		{map[string]string{"GOPACKAGE": "main"}, []string{"-spec", "rms.yaml"}, 1, `normgen: $GOPACKAGE: package "main"`},
		{nil, []string{"-spec", "rms.yaml", "-package", "norm_arm64"}, 2, `normgen: -package: package "norm_arm64" ends in _arm64`},
	} {
		if r := normgen(t, tc.env, tc.args...); r.status != tc.status || !strings.HasPrefix(r.stderr, tc.want) {
			t.Errorf("%v %v: %+v, want %s", tc.env, tc.args, r, tc.want)
		}
	}
}

func TestCheckFindsProblems(t *testing.T) {
	useFake(t)
	workdir(t)
	if r := normgen(t, nil, "-spec", "rms.yaml"); r.status != 0 {
		t.Fatalf("%+v", r)
	}
	if r := normgen(t, nil, "-spec", "rms.yaml", "check"); r.status != 0 {
		t.Fatalf("check of a fresh package: %+v", r)
	}
	edited := filepath.Join("out", "rms", "rms_rmsnorm.go")
	data, _ := os.ReadFile(edited)
	os.WriteFile(edited, append(data, "// my fix\n"...), 0o644)
	os.Remove(filepath.Join("out", "rms", "rms.go"))
	// Dropping a kernel from the spec leaves its file stale.
	os.WriteFile("rms.yaml", []byte(strings.Split(rmsSpec, "  - name: Other")[0]), 0o644)
	r := normgen(t, nil, "check", "-spec", "rms.yaml")
	if r.status != 1 {
		t.Fatalf("check after edits: %+v", r)
	}
	for _, want := range []string{
		"out/rms/rms.go: missing",
		"out/rms/rms_rmsnorm.go: stale", // the spec changed, so its header did
		"out/rms/rms_other.go: generated by normgen from this spec but no longer produced",
		"3 generated file(s) out of date",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in\n%s", want, r.stderr)
		}
	}
	// A hand edit with the spec unchanged is named as such.
	if r := normgen(t, nil, "-spec", "rms.yaml"); r.status != 0 {
		t.Fatalf("%+v", r)
	}
	data, _ = os.ReadFile(edited)
	os.WriteFile(edited, bytes.Replace(data, []byte("RMSNorm"), []byte("Hacked"), 1), 0o644)
	if r := normgen(t, nil, "check", "-spec", "rms.yaml"); r.status != 1 || !strings.Contains(r.stderr, "out/rms/rms_rmsnorm.go: edited by hand") {
		t.Errorf("hand edit: %+v", r)
	}
}

func TestErrors(t *testing.T) {
	useFake(t)
	dir := workdir(t)
	os.WriteFile("bad.yaml", []byte("version: 1\npackage: p\nkernels:\n  - name: K\n    mean: maybe\n"), 0o644)
	os.WriteFile("bad2.yaml", []byte("version: 1\npackage: func\nkernels:\n  - name: K\n    mean: maybe\n    epsilon: -1\n"), 0o644)
	os.MkdirAll("out/rms", 0o755)
	os.WriteFile("out/rms/rms.go", []byte("package rms // mine\n"), 0o644)
	for _, tc := range []struct {
		args   []string
		status int // 1: a spec or generation error; 2: a usage error
		want   string
	}{
		// A located error is FILE:LINE:COL: message, as editors match it.
		{[]string{"-spec", "bad.yaml"}, 1, `bad.yaml:5:11: mean is the string "maybe"; allowed: true or false` + "\n"},
		// Several problems: each on its own line, in file order.
		{[]string{"-spec", "bad2.yaml"}, 1, `bad2.yaml:2:10: package "func" is a Go keyword; allowed: a Go package name: a letter followed by letters, digits or _, not a Go keyword, lower case by convention, e.g. rmsnorm` + "\n" +
			`bad2.yaml:5:11: mean is the string "maybe"; allowed: true or false` + "\n" +
			`bad2.yaml:6:14: epsilon -1 is negative; allowed: a number with 0 <= epsilon < 1, typically 1e-5 or 1e-6` + "\n"},
		{[]string{"-spec", "missing.yaml"}, 1, "missing.yaml:1:1: no such file; give the path of an existing YAML spec, e.g. spec/rmsnorm.yaml\n"},
		{[]string{"-spec", "."}, 1, ".:1:1: is a directory; give a YAML spec file, e.g. spec/rmsnorm.yaml\n"},
		{[]string{"-spec", "rms.yaml", "-out", "/dev/null/x"}, 1, "normgen: cannot create output directory /dev/null/x: not a directory\n"},
		{[]string{"-spec", "rms.yaml"}, 1, "normgen: out/rms/rms.go exists and was not generated by normgen"},
		{[]string{"-spec", "rms.yaml", "-out", ""}, 2, "normgen: -out is empty; give a directory\n"},
		{[]string{"-spec", ""}, 2, "normgen: no spec given; use -spec FILE"},
		{[]string{"rms.yaml"}, 2, `normgen: unexpected argument "rms.yaml"; give the spec with -spec FILE`},
		{[]string{"-sepc", "rms.yaml"}, 2, "normgen: unknown shorthand flag: 's' in -sepc"},
		{[]string{"--sepc", "rms.yaml"}, 2, "normgen: unknown flag: --sepc; run normgen --help for the flags\n"},
		{[]string{"-package", "x"}, 2, "normgen: -package needs -spec"},
		{[]string{"-spec", "a\nb.yaml"}, 1, `"a\nb.yaml":1:1: the spec's path holds the control character U+000A; rename the file` + "\n"},
	} {
		r := normgen(t, nil, tc.args...)
		if r.status != tc.status || !strings.HasPrefix(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%q: status %d stdout %q\nstderr %q\nwant   %d %q", tc.args, r.status, r.stdout, r.stderr, tc.status, tc.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "out/rms/rms.go")); string(data) != "package rms // mine\n" {
		t.Errorf("the foreign file changed: %q", data)
	}
}

func TestGeneratorPanicIsOneLine(t *testing.T) {
	workdir(t)
	generate = func(*spec.File, string) (*gen.Package, error) { panic("boom") }
	t.Cleanup(func() { generate = gen.Generate })
	r := normgen(t, nil, "-spec", "rms.yaml")
	if r.status != 1 || r.stderr != "normgen: internal error: boom (please report it with the spec that caused it)\n" {
		t.Errorf("%+v", r)
	}
}

// TestRealCatalogue runs the real generator over the built-in catalogue:
// generate, check clean, then a hand edit makes check fail naming the file.
func TestRealCatalogue(t *testing.T) {
	workdir(t)
	if r := normgen(t, nil); r.status != 0 {
		t.Fatalf("normgen: %+v", r)
	}
	if r := normgen(t, nil, "check"); r.status != 0 {
		t.Fatalf("check: %+v", r)
	}
	names := files(t, "out/rmsnorm")
	var target string
	for _, n := range names {
		if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			target = filepath.Join("out", "rmsnorm", n)
			break
		}
	}
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(target, append(data, "\n// a hand edit\n"...), 0o644)
	r := normgen(t, nil, "check")
	if r.status != 1 || !strings.Contains(r.stderr, target+": edited by hand") {
		t.Errorf("check after a hand edit of %s: %+v", target, r)
	}
}
