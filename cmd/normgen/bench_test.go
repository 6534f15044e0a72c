package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/normgen/normgen/benchkit"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/out/convnorm"
	"github.com/normgen/normgen/out/deepnorm"
	"github.com/normgen/normgen/out/layernorm"
	"github.com/normgen/normgen/out/rmsnorm"
	"github.com/normgen/normgen/out/weightnorm"
	"github.com/normgen/normgen/spec"
)

// tinySpec has a kernel of each kind of array and of each statistic: a
// DeepNorm-style LayerNorm with the residual sum and the statistics; a
// Gemma RMSNorm with a residual, no sum, its rstd, and AVX2 alone among its
// targets; an L2 norm (WeightNorm's) with per-row gain and bias, a derived
// DeepNorm alpha, the sum and its rstd; a folded BatchNorm (statistic none,
// per-row gain and bias); the affine alone per element after a residual;
// and one that -hidden 256 leaves out.
const tinySpec = `version: 1
package: tiny
kernels:
  - name: AddLN
    mean: true
    shift: true
    save_stats: true
    residual: {alpha: 2, store_sum: true}
    hidden: [256, 320]
  - name: GemmaRes
    mean: false
    scale_offset: 1
    save_stats: true
    residual: {alpha: 0.5}
    hidden: [256]
    targets: [avx2]
  - name: WNRow
    mean: false
    statistic: l2
    epsilon: 0
    affine_per: row
    shift: true
    save_stats: true
    residual: {deepnorm: {encoder_layers: 18}, store_sum: true}
    hidden: [256]
  - name: FoldedBN
    mean: false
    statistic: none
    affine_per: row
    scale_offset: 1
    shift: true
    hidden: [256]
  - name: Affine
    mean: false
    statistic: none
    shift: true
    residual: {}
    hidden: [256]
  - name: Plain
    mean: false
    scale: false
    hidden: [320]
`

// The -h, -quick and -keep flags take one dash or two.
func TestBenchLongFlags(t *testing.T) {
	got := strings.Join(longFlags(strings.Fields("bench -spec s.yaml -quick -keep -hidden=768 -h 4096 -h=8")), " ")
	if want := "bench --spec s.yaml --quick --keep --hidden=768 -h 4096 -h=8"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBenchErrors(t *testing.T) {
	workdir(t)
	if err := os.WriteFile("tiny.yaml", []byte(tinySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("bad.yaml", []byte("version: 1\npackage: p\nkernels:\n  - name: A\n    mean: true\n    hidden: [0]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		status int // 2 for usage errors
		want   string
	}{
		{[]string{"bench"}, 2, "bench needs -spec FILE"},
		{[]string{"bench", "-spec", "missing.yaml"}, 1, "missing.yaml:1:1: no such file"},
		{[]string{"bench", "-spec", "bad.yaml"}, 1, "bad.yaml:6:14: "},
		{[]string{"bench", "-spec", "tiny.yaml", "-hidden", "100"}, 1, "-hidden 100: no kernel of tiny.yaml has that hidden size; its sizes: 256, 320"},
		{[]string{"bench", "-spec", "tiny.yaml", "-hidden", "x"}, 2, `invalid argument "x"`},
		{[]string{"bench", "-spec", "tiny.yaml", "-out", "d"}, 2, "-out does not apply"},
		{[]string{"bench", "-spec", "tiny.yaml", "-package", "p"}, 2, "-package does not apply"},
		{[]string{"bench", "-spec", "tiny.yaml", "extra"}, 2, `unexpected argument "extra"`},
	} {
		r := normgen(t, nil, c.args...)
		if r.status != c.status || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: status %d, stderr %q; want one line with %q", c.args, r.status, r.stderr, c.want)
		}
	}

	// No go command: said before anything is written.
	t.Setenv("PATH", t.TempDir())
	r := normgen(t, nil, "bench", "-spec", "tiny.yaml")
	if r.status != 1 || !strings.Contains(r.stderr, "no go command on PATH") {
		t.Errorf("without go: %+v", r)
	}

	for _, help := range []string{"--help", "-h"} {
		r = normgen(t, nil, "bench", help)
		for _, want := range []string{"  --hidden SIZES", "-h, --help", "--quick", "--keep", "ratio to the copy"} {
			if r.status != 0 || !strings.Contains(r.stdout, want) {
				t.Errorf("bench %s lacks %q:\n%s", help, want, r.stdout)
			}
		}
	}
}

// fakeGo puts on PATH a go command that records how it was run (arguments,
// directory, environment, the files there) into log, and exits with status.
func fakeGo(t *testing.T, status int) (log string) {
	t.Helper()
	bin := t.TempDir()
	log = filepath.Join(t.TempDir(), "log")
	script := fmt.Sprintf(`#!/bin/sh
{ echo "args: $*"; echo "dir: $PWD"; echo "GOFLAGS=$GOFLAGS GOWORK=$GOWORK GOARCH=$GOARCH"; ls . benchkit nb*; } > %q
echo "go: golang.org/x/sys@v0.50.0: module lookup disabled" >&2
exit %d
`, log, status)
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// What bench writes and how it runs go, without building anything: the
// temporary directory holds the module, and is gone afterwards (kept with
// -keep); the user's GOFLAGS do not reach the build.
func TestBenchRunsGo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake go command is a shell script")
	}
	workdir(t)
	if err := os.WriteFile("tiny.yaml", []byte(tinySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("GOFLAGS", "-tags=purego")

	log := fakeGo(t, 0)
	r := normgen(t, nil, "bench", "-spec", "tiny.yaml", "-quick", "-hidden", "256")
	if r.status != 0 {
		t.Fatalf("bench: %+v", r)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	want := []string{"args: run . -quick", "GOFLAGS=-mod=mod GOWORK=off GOARCH=" + runtime.GOARCH,
		"go.mod", "go.sum", "main.go", "harness.go", "norm.go", "nbpurego:", "tiny_normgen_purego.go"}
	if runs("avx2") {
		want = append(want, "nbavx2:", "tiny_normgen_amd64.s")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the go command's log lacks %q:\n%s", w, got)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "normgen-bench-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat("out"); err == nil {
		t.Error("bench wrote into the current directory")
	}

	// A failure keeps nothing either, and says what to do about x/sys.
	fakeGo(t, 1)
	r = normgen(t, nil, "bench", "-spec", "tiny.yaml")
	if r.status != 1 || !strings.Contains(r.stderr, "go run of the benchmark program failed: exit status 1") ||
		!strings.Contains(r.stderr, "go mod download golang.org/x/sys@"+xsysVersion) {
		t.Errorf("failing go: %+v", r)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "normgen-bench-*")); len(left) != 0 {
		t.Errorf("left behind after a failure: %v", left)
	}

	// -keep: the directory stays, and its path is printed.
	fakeGo(t, 0)
	r = normgen(t, nil, "bench", "-spec", "tiny.yaml", "-keep")
	left, _ := filepath.Glob(filepath.Join(tmp, "normgen-bench-*"))
	if r.status != 0 || len(left) != 1 || !strings.Contains(r.stderr, "the program is in "+left[0]) {
		t.Errorf("-keep: %+v, directories %v", r, left)
	}
}

// The program's main.go calls each entry point with its arrays in the
// generated signature's order, and only in the packages of the kernel's
// targets.
func TestBenchMain(t *testing.T) {
	f, err := spec.Parse("tiny.yaml", []byte(tinySpec))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := benchKernels(f, []int{256})
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 5 || !slices.Equal(ks[0].hidden, []int{256}) {
		t.Fatalf("kernels: %+v", ks)
	}
	for i, want := range []string{
		"a.Out[0], a.Out[1], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.Gamma, a.Beta", // AddLN
		"a.Out[0], a.Stats[0], a.In[0], a.In[1], a.Gamma",                               // GemmaRes
		"a.Out[0], a.Out[1], a.Stats[0], a.In[0], a.In[1], a.Gain, a.Bias",              // WNRow: no mean
		"a.Out[0], a.In[0], a.Gain, a.Bias",                                             // FoldedBN: no statistic
		"a.Out[0], a.In[0], a.In[1], a.Gamma, a.Beta",                                   // Affine
	} {
		if got := strings.Join(ks[i].args, ", "); got != want {
			t.Errorf("%s args: %s, want %s", ks[i].spec.Name, got, want)
		}
	}
	// DeepNorm's alpha reaches the reference: (2*18)^(1/4).
	if a := ks[2].norm.Alpha; math.Abs(a-math.Pow(36, 0.25)) > 1e-12 || ks[2].norm.Statistic != "l2" || !ks[2].norm.AffinePerRow {
		t.Errorf("WNRow's norm: %+v", ks[2].norm)
	}
	all := func(string) bool { return true }
	isas, skipped := benchISAs(ks, all)
	if !slices.Equal(isas, []string{"avx512", "avx2", "neon", "purego"}) || skipped != nil {
		t.Errorf("every ISA runnable: %v %v", isas, skipped)
	}
	isas, skipped = benchISAs(ks[1:2], func(isa string) bool { return isa != "avx2" })
	if !slices.Equal(isas, []string{"purego"}) || len(skipped) != 1 || !strings.Contains(skipped[0], "avx2") {
		t.Errorf("GemmaRes without AVX2: %v %v", isas, skipped)
	}

	dir := t.TempDir()
	pkgs, err := writeBenchPackages(dir, f, ks, []string{"avx2", "neon", "purego"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 3 || !slices.Equal(pkgs[1].kernels, []string{"AddLN", "WNRow", "FoldedBN", "Affine"}) ||
		!slices.Equal(pkgs[2].kernels, []string{"AddLN", "GemmaRes", "WNRow", "FoldedBN", "Affine"}) {
		t.Fatalf("packages: %+v", pkgs)
	}
	if err := writeBenchProgram(dir, f, ks, pkgs, []string{"spec: tiny.yaml"}); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	alpha := strconv.FormatFloat(ks[2].norm.Alpha, 'g', -1, 64)
	for _, want := range []string{
		`{Name: "AddLN", Hidden: []int{256}, Norm: benchkit.Norm{Mean: true, Epsilon: 1e-05, Scale: true, Shift: true, Residual: true, Alpha: 2, StoreSum: true, SaveStats: true}},`,
		`{Name: "GemmaRes", Hidden: []int{256}, Norm: benchkit.Norm{Mean: false, Epsilon: 1e-05, Scale: true, ScaleOffset: 1, Shift: false, Residual: true, Alpha: 0.5, StoreSum: false, SaveStats: true}},`,
		`{Name: "WNRow", Hidden: []int{256}, Norm: benchkit.Norm{Mean: false, Statistic: "l2", Epsilon: 0, Scale: true, Shift: true, AffinePerRow: true, Residual: true, Alpha: ` + alpha + `, StoreSum: true, SaveStats: true}},`,
		`{Name: "FoldedBN", Hidden: []int{256}, Norm: benchkit.Norm{Mean: false, Statistic: "none", Epsilon: 0, Scale: true, ScaleOffset: 1, Shift: true, AffinePerRow: true}},`,
		`{Name: "Affine", Hidden: []int{256}, Norm: benchkit.Norm{Mean: false, Statistic: "none", Epsilon: 0, Scale: true, Shift: true, Residual: true, Alpha: 1, StoreSum: false}},`,
		`nbneon.AddLN256(a.Out[0], a.Out[1], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.Gamma, a.Beta)`,
		`benchkit.Key("GemmaRes", 256): func(a *benchkit.Args) { nbavx2.GemmaRes256(a.Out[0], a.Stats[0], a.In[0], a.In[1], a.Gamma) },`,
		`nbpurego.WNRow256(a.Out[0], a.Out[1], a.Stats[0], a.In[0], a.In[1], a.Gain, a.Bias)`,
		`nbavx2.FoldedBN256(a.Out[0], a.In[0], a.Gain, a.Bias)`,
		`nbneon.Affine256(a.Out[0], a.In[0], a.In[1], a.Gamma, a.Beta)`,
		`benchkit.Key("AddLN", 256): func(a *benchkit.Args) {`,
		`"normgenbench/nbpurego"`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("main.go lacks\n\t%s\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "nbneon.GemmaRes") || strings.Contains(string(src), "Plain") {
		t.Errorf("main.go calls what it should not:\n%s", src)
	}
	// The generated signatures are the ones called.
	for _, p := range []struct{ file, want string }{
		{"nbavx2/tiny_normgen.go", "func AddLN256(dst, sum, mean, rstd, x, f, gamma, beta []float32)"},
		{"nbavx2/tiny_normgen.go", "func GemmaRes256(dst, rstd, x, f, gamma []float32)"},
		{"nbneon/tiny_normgen.go", "func AddLN256(dst, sum, mean, rstd, x, f, gamma, beta []float32)"},
		{"nbpurego/tiny_normgen.go", "func WNRow256(dst, sum, rstd, x, f, gain, bias []float32)"},
		{"nbavx2/tiny_normgen.go", "func FoldedBN256(dst, x, gain, bias []float32)"},
		{"nbneon/tiny_normgen.go", "func Affine256(dst, x, f, gamma, beta []float32)"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil || !strings.Contains(string(b), p.want) {
			t.Errorf("%s lacks %q (%v)", p.file, p.want, err)
		}
	}
	gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.Contains(string(gomod), "require golang.org/x/sys "+xsysVersion) {
		t.Errorf("go.mod:\n%s", gomod)
	}
}

// The program's x/sys requirement is normgen's own.
func TestBenchXSysMatchesGoMod(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Skip("no go.mod: not in normgen's checkout")
	}
	if m := regexp.MustCompile(`(?m)^\s*golang\.org/x/sys (v\S+)`).FindSubmatch(mod); m == nil || string(m[1]) != xsysVersion {
		t.Errorf("go.mod requires golang.org/x/sys %q; bench.go says %s", m, xsysVersion)
	}
	sum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(sum)))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "golang.org/x/sys "+xsysVersion+" ") || strings.HasPrefix(sc.Text(), "golang.org/x/sys "+xsysVersion+"/go.mod ") {
			lines = append(lines, sc.Text())
		}
	}
	if got := strings.Join(lines, "\n") + "\n"; got != xsysSum {
		t.Errorf("go.sum has\n%s\nbench.go's xsysSum is\n%s", got, xsysSum)
	}
	// The go version x/sys declares, when the module cache has it.
	if gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(gomodcache)), "cache/download/golang.org/x/sys/@v", xsysVersion+".mod"))
		if err == nil && !strings.Contains(string(b), "\ngo "+xsysGo+"\n") {
			t.Errorf("golang.org/x/sys %s's go.mod:\n%s\nbench.go's xsysGo is %s", xsysVersion, b, xsysGo)
		}
	}
}

// The reference of every kernel of the built-in catalogue (LayerNorm,
// AddLayerNorm, RMSNorm, Gemma's, AddRMSNorm, WeightNorm with its per-row
// gain, DeepNorm with its derived alpha; over [N, C, L], ConvNeXt's
// LayerNorm, BatchNorm in training with PyTorch's and ONNX's running
// statistics and at inference, GroupNorm, InstanceNorm), as bench derives
// it from the spec, accepts the generated kernels in out/ on this machine,
// called with the arguments bench would pass.
func TestBenchReferenceMatchesOut(t *testing.T) {
	files, err := spec.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]func(a *benchkit.Args, h int){
		"LayerNorm": func(a *benchkit.Args, h int) { layernorm.LayerNormAny(a.Out[0], a.In[0], a.Gamma, a.Beta, h) },
		"AddLayerNorm": func(a *benchkit.Args, h int) {
			layernorm.AddLayerNormAny(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, a.Beta, h)
		},
		"RMSNorm":      func(a *benchkit.Args, h int) { rmsnorm.RMSNormAny(a.Out[0], a.In[0], a.Gamma, h) },
		"GemmaRMSNorm": func(a *benchkit.Args, h int) { rmsnorm.GemmaRMSNormAny(a.Out[0], a.In[0], a.Gamma, h) },
		"AddRMSNorm": func(a *benchkit.Args, h int) {
			rmsnorm.AddRMSNormAny(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, h)
		},
		"WeightNorm": func(a *benchkit.Args, h int) { weightnorm.WeightNormAny(a.Out[0], a.In[0], a.Gain, h) },
		"DeepNorm":   func(a *benchkit.Args, h int) { deepnorm.DeepNormAny(a.Out[0], a.In[0], a.In[1], a.Gamma, a.Beta, h) },
		"LayerNormStats": func(a *benchkit.Args, h int) {
			layernorm.LayerNormStatsAny(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta, h)
		},
		"RMSNormStats": func(a *benchkit.Args, h int) { rmsnorm.RMSNormStatsAny(a.Out[0], a.Stats[0], a.In[0], a.Gamma, h) },
		"ConvNeXtLayerNorm": func(a *benchkit.Args, _ int) {
			convnorm.ConvNeXtLayerNormAny(a.Out[0], a.In[0], a.Gamma, a.Beta, a.Channels, a.Spatial)
		},
		"BatchNormTrain": func(a *benchkit.Args, _ int) {
			convnorm.BatchNormTrain(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta, a.State[0], a.State[1], a.Channels, a.Spatial)
		},
		"BatchNormTrainONNX": func(a *benchkit.Args, _ int) {
			convnorm.BatchNormTrainONNX(a.Out[0], a.In[0], a.Gamma, a.Beta, a.State[0], a.State[1], a.Channels, a.Spatial)
		},
		"BatchNormInference": func(a *benchkit.Args, _ int) {
			convnorm.BatchNormInference(a.Out[0], a.In[0], a.Gamma, a.Beta, a.Channels, a.Spatial)
		},
		"GroupNorm": func(a *benchkit.Args, _ int) {
			convnorm.GroupNorm(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta, a.Channels, a.Spatial)
		},
		"InstanceNorm": func(a *benchkit.Args, _ int) {
			convnorm.InstanceNorm(a.Out[0], a.In[0], a.Gamma, a.Beta, a.Channels, a.Spatial)
		},
		"RMSNormEps": func(a *benchkit.Args, h int) { rmsnorm.RMSNormEpsAny(a.Out[0], a.In[0], a.Gamma, h, benchEps) },
	}
	// The arguments bench passes, for the ones above.
	args := map[string]string{
		"LayerNorm":      "a.Out[0], a.In[0], a.Gamma, a.Beta",
		"AddLayerNorm":   "a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, a.Beta",
		"RMSNorm":        "a.Out[0], a.In[0], a.Gamma",
		"GemmaRMSNorm":   "a.Out[0], a.In[0], a.Gamma",
		"AddRMSNorm":     "a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma",
		"WeightNorm":     "a.Out[0], a.In[0], a.Gain",
		"DeepNorm":       "a.Out[0], a.In[0], a.In[1], a.Gamma, a.Beta",
		"LayerNormStats": "a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta",
		"RMSNormStats":   "a.Out[0], a.Stats[0], a.In[0], a.Gamma",
		// Tensor kernels: the arrays (the dimensions follow).
		"ConvNeXtLayerNorm":  "a.Out[0], a.In[0], a.Gamma, a.Beta",
		"BatchNormTrain":     "a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta, a.State[0], a.State[1]",
		"BatchNormTrainONNX": "a.Out[0], a.In[0], a.Gamma, a.Beta, a.State[0], a.State[1]",
		"BatchNormInference": "a.Out[0], a.In[0], a.Gamma, a.Beta",
		"GroupNorm":          "a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta",
		"InstanceNorm":       "a.Out[0], a.In[0], a.Gamma, a.Beta",
		"RMSNormEps":         "a.Out[0], a.In[0], a.Gamma",
	}
	var shapes []benchkit.Shape
	impl := map[string]benchkit.KernelFunc{}
	kernels := 0
	for _, f := range files {
		ks, err := benchKernels(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			kernels++
			fn, ok := funcs[k.spec.Name]
			if !ok {
				t.Errorf("no test for the catalogue's kernel %s (%s)", k.spec.Name, f.Path)
				continue
			}
			if got := strings.Join(k.args, ", "); got != args[k.spec.Name] {
				t.Errorf("%s: bench passes (%s), the test (%s)", k.spec.Name, got, args[k.spec.Name])
			}
			h := k.hidden[0]
			if k.tensor != nil {
				// Three images of 8x8 positions (benchkit.TensorSpatial).
				tk := benchkit.TensorKernel{Name: k.spec.Name, Tensor: *k.tensor, Channels: []int{h}}
				shapes = append(shapes, tk.Shapes(int64(4*3*h*benchkit.TensorSpatial[benchkit.L2]), 0)...)
				impl[benchkit.Key(k.spec.Name, h)] = func(a *benchkit.Args) { fn(a, h) }
				continue
			}
			nk := benchkit.NormKernel{Name: k.spec.Name, Norm: k.norm, Hidden: []int{h}}
			shapes = append(shapes, nk.Shapes(int64(4*3*h), 0)...)
			impl[benchkit.Key(k.spec.Name, h)] = func(a *benchkit.Args) { fn(a, h) }
		}
	}
	cfg := benchkit.Config{Budget: time.Millisecond, MinRounds: 1, MaxRounds: 2, Sample: time.Microsecond, LLCBytes: 1 << 20, Log: io.Discard, Seed: 1}
	rep := benchkit.Run(cfg, shapes, []benchkit.Impl{benchkit.FuncImpl("out", "out/", impl, "missing")})
	for _, sr := range rep.Shapes {
		if r := sr.Results[1]; r.Status != benchkit.OK || !(r.MaxErr < 1e-5) || math.IsNaN(r.MaxErr) {
			t.Errorf("%s: %s %s (max error %g)", sr.Shape, r.Status, r.Note, r.MaxErr)
		}
	}
	if len(rep.Shapes) != kernels || kernels < len(funcs) {
		t.Errorf("%d shapes for %d kernels of the catalogue, %d tested", len(rep.Shapes), kernels, len(funcs))
	}
}

// normgen bench for real: generates, builds with the go command, checks
// and times the tiny spec's kernels (-quick), and prints the table.
func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a benchmark (about a minute)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	workdir(t)
	if err := os.WriteFile("tiny.yaml", []byte(tinySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "")
	t.Setenv("GOPROXY", "off") // offline: x/sys comes from the module cache
	r := normgen(t, nil, "bench", "-spec", "tiny.yaml", "-quick", "-hidden", "256", "-keep")
	m := regexp.MustCompile(`the program is in (\S+) `).FindStringSubmatch(r.stderr)
	if m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
	}
	if r.status != 0 {
		t.Fatalf("normgen bench: status %d\nstderr:\n%s\nstdout:\n%s", r.status, r.stderr, r.stdout)
	}
	if m == nil {
		t.Errorf("-keep printed no directory:\n%s", r.stderr)
	} else if _, err := os.Stat(filepath.Join(m[1], "main.go")); err != nil {
		t.Errorf("-keep: %v", err)
	}

	var isas []string
	for _, isa := range spec.Targets {
		// A form of an ISA (avx512bf16) is timed in its base's column.
		if i, err := target.Parse(isa); err == nil && i.Desc().Base != "" {
			continue
		}
		if runs(isa) {
			isas = append(isas, isa)
		}
	}
	header := "| kernel | H | data | copy GB/s |"
	for _, isa := range isas {
		header += " normgen-" + isa + " |"
	}
	_, table, ok := strings.Cut(r.stdout, "## Time / copy time")
	table, _, _ = strings.Cut(table, "\n## ")
	if !ok || !strings.Contains(table, header+"\n") {
		t.Fatalf("no table with the header %q:\n%s", header, r.stdout)
	}
	ratio := `\**\d+\.\d\dx \(\d+\.\d\d-\d+\.\d\d\)\**`
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| kernel") {
			rows = append(rows, line)
		}
	}
	var wantRows []string
	for _, k := range []string{"AddLN", "GemmaRes", "WNRow", "FoldedBN", "Affine"} {
		wantRows = append(wantRows, "| "+k+" | 256 | L2 128 KiB |", "| "+k+" | 256 | DRAM 32 MiB |")
	}
	if len(rows) != len(wantRows) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(wantRows), table)
	}
	for i, row := range rows {
		if !strings.HasPrefix(row, wantRows[i]) {
			t.Errorf("row %d: %q, want it to start %q", i, row, wantRows[i])
		}
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 4+len(isas) {
			t.Errorf("row %q: %d cells, want %d", row, len(cells), 4+len(isas))
			continue
		}
		for j, isa := range isas {
			cell := cells[4+j]
			want := ratio
			if strings.HasPrefix(row, "| GemmaRes") && isa != "avx2" && isa != "purego" {
				want = `n/a` // not among its targets
			}
			if !regexp.MustCompile(`^` + want + `$`).MatchString(cell) {
				t.Errorf("row %q, %s: %q does not match %s", row, isa, cell, want)
			}
		}
	}
	if strings.Contains(r.stdout, "WRONG") || strings.Contains(r.stderr, "WRONG") {
		t.Errorf("a kernel failed its check:\n%s\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "| spec | tiny.yaml |") || !strings.Contains(r.stdout, "| mode | -quick") {
		t.Errorf("the machine section lacks the spec or the mode:\n%s", r.stdout)
	}
}

// A spec of tensor kernels only is timed: each at its hidden channel
// counts (axis channels, fixed-size entry points taking spatial) or at
// benchkit.DefaultChannels rounded up to its groups, called with the
// dimensions after the arrays.
func TestBenchTensorMain(t *testing.T) {
	const src = `version: 1
package: conv
kernels:
  - name: CLN
    axis: channels
    mean: true
    epsilon: 1e-6
    hidden: [96, 128]
  - name: BNT
    axis: batch
    mean: true
    shift: true
    save_stats: true
    running: {convention: pytorch, momentum: 0.1}
  - name: GN24
    axis: groups
    groups: 24
    mean: true
    shift: true
    targets: [avx2]
`
	f, err := spec.Parse("conv.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ks, err := benchKernels(f, []int{96})
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 3 || !slices.Equal(ks[0].hidden, []int{96}) || !slices.Equal(ks[1].hidden, benchkit.DefaultChannels) ||
		!slices.Equal(ks[2].hidden, []int{72, 264}) || ks[1].tensor == nil || ks[1].tensor.Running != "pytorch" {
		t.Fatalf("kernels: %+v", ks)
	}
	dir := t.TempDir()
	pkgs, err := writeBenchPackages(dir, f, ks, []string{"avx2", "purego"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeBenchProgram(dir, f, ks, pkgs, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{Name: "CLN", Channels: []int{96}, Tensor: benchkit.Tensor{Axis: "channels", Mean: true, Statistic: "variance", Epsilon: 1e-06, Scale: true, Shift: false}},`,
		`{Name: "BNT", Channels: []int{64, 256}, Tensor: benchkit.Tensor{Axis: "batch", Mean: true, Statistic: "variance", Epsilon: 1e-05, Scale: true, Shift: true, SaveStats: true, Running: "pytorch", Momentum: 0.1}},`,
		`{Name: "GN24", Channels: []int{72, 264}, Tensor: benchkit.Tensor{Axis: "groups", Groups: 24,`,
		`benchkit.Key("CLN", 96): func(a *benchkit.Args) { nbavx2.CLN96(a.Out[0], a.In[0], a.Gamma, a.Spatial) },`,
		`nbpurego.BNT(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.Gamma, a.Beta, a.State[0], a.State[1], a.Channels, a.Spatial)`,
		`benchkit.Key("GN24", 264): func(a *benchkit.Args) { nbavx2.GN24(a.Out[0], a.In[0], a.Gamma, a.Beta, a.Channels, a.Spatial) },`,
		`shapes = append(shapes, k.Shapes(benchkit.L2Bytes, benchkit.DRAMBytes)...)`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("main.go lacks\n\t%s\n%s", want, b)
		}
	}
	// The fixed sizes generated are the ones timed; the tensor kernels
	// without sizes stay without.
	gen, err := os.ReadFile(filepath.Join(dir, "nbavx2", "conv_normgen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"func CLN96(dst, x, gamma []float32, spatial int)", "func BNT(dst, mean, rstd, x, gain, bias, runMean, runVar []float32, channels, spatial int)"} {
		if !strings.Contains(string(gen), want) {
			t.Errorf("the generated package lacks %q", want)
		}
	}
	if strings.Contains(string(gen), "func CLN128(") {
		t.Error("-h 96 generated CLN128 too")
	}
}
