package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/normgen/normgen/benchkit"
	"github.com/normgen/normgen/gen"
	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/gen/write"
	"github.com/normgen/normgen/spec"
)

// The golang.org/x/sys requirement of normgen's go.mod and its go.sum
// lines: the generated packages import golang.org/x/sys/cpu, and the
// program bench writes requires that version, so that it builds offline
// when the module cache has it. TestBenchXSysMatchesGoMod keeps these in
// step with go.mod and go.sum.
const (
	xsysVersion = "v0.26.0"
	xsysSum     = `golang.org/x/sys v0.26.0 h1:KHjCJyddX0LoSTb3J+vWpupP9p0oznkqVk/IfjymZbo=
golang.org/x/sys v0.26.0/go.mod h1:/VUhepiaJMQUp4+oa/7Zr1D23ma6VTLIYjOOTFZPUcA=
`
	// xsysGo is the go version golang.org/x/sys xsysVersion declares: the
	// least the program's go.mod may say.
	xsysGo = "1.18"
	// generatedGo is the least go line the generated packages (and
	// benchkit) build with; the program's go.mod says it, as it is above
	// xsysGo.
	generatedGo = "1.22.0"
	// benchModule is the module path of the program bench writes.
	benchModule = "normgenbench"
)

// benchOptions are bench's own flags.
type benchOptions struct {
	quick, keep bool
	hidden      []int
}

const benchLong = `bench generates the spec's kernels once for each instruction set this CPU
can run among the spec's targets (AVX-512, AVX2+FMA, NEON; pure Go always),
each into a package of its own in a temporary directory, next to a copy of
normgen's benchmark harness (package benchkit) and a small main. It then
runs that program with go run, which needs the Go toolchain on PATH and
golang.org/x/sys ` + xsysVersion + ` (from the module cache, or downloaded).

The program checks every kernel against a float64 reference of the spec's
formula, then times it on one thread at every hidden size, with inputs of
about 128 KiB (in cache) and 32 MiB (from memory), against Go's copy of the
same bytes in the same interleaved rounds. A kernel over [N, C, L] tensors
(axis channels, batch or groups) is timed at its hidden sizes as C, or,
without any, at C = 64 and 256 (rounded up to a multiple of its groups),
whatever -hidden says; L is 8x8 = 64 positions in cache and 56x56 = 3136 from
memory, N what makes x the size above. Its saved and running statistics
are checked too. It prints a markdown report on
standard output: the time of each instruction set as a ratio to the copy
(median and p25-p75; 1.0 is the copy bound), the throughput, and the
machine. Progress goes to standard error.

Nothing is written next to the spec; the temporary directory is removed
afterwards unless -keep is given. A full run takes about 25 seconds per
kernel and hidden size; -quick about 5, with noisier figures.`

func newBench(o *options) *cobra.Command {
	bo := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench -spec FILE [-quick] [-hidden SIZES] [-keep]",
		Short: "Time the spec's kernels on this machine, as a ratio to Go's copy",
		Long:  benchLong,
		Example: `  normgen bench -spec rmsnorm.yaml
  normgen bench -spec rmsnorm.yaml -quick -hidden 4096,8192 > bench.md`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.bench(cmd, bo)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.spec, "spec", "", "the YAML spec `FILE` whose kernels to time (required)")
	fl.BoolVar(&bo.quick, "quick", false, "a short run (about 5 s per kernel and size): noisier figures")
	// No shorthand: -h is help, as everywhere.
	fl.IntSliceVar(&bo.hidden, "hidden", nil, "time only these hidden `SIZES` (comma-separated; default: every size of the spec; tensor kernels without sizes are timed at their default channel counts)")
	fl.BoolVar(&bo.keep, "keep", false, "keep the generated program's directory and print its path")
	return cmd
}

// benchKernel is one kernel of the spec as the program times it.
type benchKernel struct {
	spec   spec.Kernel
	norm   benchkit.Norm
	tensor *benchkit.Tensor // a kernel over [N, C, L] (axis other than last); norm is then unused
	hidden []int            // H, or C for a tensor kernel
	args   []string         // the entry point's arguments, as Go expressions of a *benchkit.Args named a
}

// benchPkg is one generated package: an instruction set.
type benchPkg struct {
	isa     string
	name    string // nb<isa>
	kernels []string
}

func (o *options) bench(cmd *cobra.Command, bo *benchOptions) error {
	for _, name := range []string{"out", "package"} {
		if cmd.Flags().Changed(name) {
			return usagef("bench writes nothing but its report: -%s does not apply (-keep keeps the generated program)", name)
		}
	}
	if o.spec == "" {
		return usagef("bench needs -spec FILE: the spec whose kernels to time (run normgen bench --help)")
	}
	f, err := spec.Load(o.spec)
	if err != nil {
		return err
	}
	kernels, err := benchKernels(f, bo.hidden)
	if err != nil {
		return err
	}
	if len(kernels) == 0 {
		return fmt.Errorf("-h: no kernel of %s is left to time", f.Path)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return errors.New("bench builds and runs a Go program, but there is no go command on PATH: install Go (https://go.dev/dl/) or add its bin directory to PATH")
	}
	isas, skipped := benchISAs(kernels, runs)
	for _, s := range skipped {
		fmt.Fprintf(o.stderr, "normgen bench: %s\n", s)
	}

	dir, err := os.MkdirTemp("", "normgen-bench-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	runArgs := []string{"run", "."}
	if bo.quick {
		runArgs = append(runArgs, "-quick")
	}
	if bo.keep {
		fmt.Fprintf(o.stderr, "normgen bench: the program is in %s (to run it again: cd %s && go %s)\n", dir, dir, strings.Join(runArgs, " "))
	} else {
		defer os.RemoveAll(dir)
	}
	pkgs, err := writeBenchPackages(dir, f, kernels, isas)
	if err != nil {
		return err
	}
	notes := []string{"spec: " + f.Path, "normgen: " + gen.Version}
	notes = append(notes, skipped...)
	if err := writeBenchProgram(dir, f, kernels, pkgs, notes); err != nil {
		return err
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.isa)
	}
	n := 0
	for _, k := range kernels {
		n += len(k.hidden)
	}
	fmt.Fprintf(o.stderr, "normgen bench: %d kernel(s), %d (kernel, hidden size) pair(s), instruction sets %s: building with %s\n",
		len(kernels), n, strings.Join(names, ", "), goTool)

	c := exec.Command(goTool, runArgs...)
	c.Dir = dir
	c.Env = benchEnv(os.Environ())
	tail := &tailWriter{max: 4096}
	c.Stdout, c.Stderr = o.stdout, io.MultiWriter(o.stderr, tail)
	// Ctrl-C reaches the program too; normgen waits for it to stop, then
	// removes the directory.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	err = c.Run()
	interrupted := false
	select {
	case <-sig:
		interrupted = true
	default:
	}
	if err != nil || interrupted {
		where := " (-keep keeps the program to look at)"
		if bo.keep {
			where = " (the program is in " + dir + ")"
		}
		if interrupted {
			return errors.New("bench: interrupted" + where)
		}
		msg := fmt.Sprintf("bench: go run of the benchmark program failed: %v%s", err, where)
		if strings.Contains(string(tail.b), "golang.org/x/sys") {
			msg += fmt.Sprintf("; the generated packages need golang.org/x/sys %s: with network access, `go mod download golang.org/x/sys@%s` puts it in the module cache", xsysVersion, xsysVersion)
		}
		return errors.New(msg)
	}
	return nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	b   []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

// benchEnv is env for go run: the program's own module (no workspace, go.mod
// updated as needed, none of the user's GOFLAGS such as -tags purego, which
// would time pure Go under every name), built for this machine.
func benchEnv(env []string) []string {
	return append(slices.Clip(env), "GOFLAGS=-mod=mod", "GOWORK=off", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
}

// benchKernels turns the spec's kernels into what the program times, with
// the hidden sizes in hidden (all when empty), and checks that normgen's
// entry points take the arrays benchkit.Norm says they do.
func benchKernels(f *spec.File, hidden []int) ([]benchKernel, error) {
	for _, h := range hidden {
		found := false
		for _, k := range f.Kernels {
			found = found || slices.Contains(k.Hidden, h)
		}
		if !found {
			var all []int
			for _, k := range f.Kernels {
				all = append(all, k.Hidden...)
			}
			slices.Sort(all)
			if len(all) == 0 {
				return nil, fmt.Errorf("-hidden %d: the kernels of %s have no hidden sizes (their channel counts are timed at the defaults): leave -hidden out", h, f.Path)
			}
			return nil, fmt.Errorf("-hidden %d: no kernel of %s has that hidden size; its sizes: %s", h, f.Path, joinInts(slices.Compact(all)))
		}
	}
	var out []benchKernel
	for _, k := range f.Kernels {
		if k.Storage != "" && k.Storage != "f32" {
			// Half-precision rows ([]uint16): the harness's arrays are
			// float32; not benchmarked here yet.
			continue
		}
		hs := k.Hidden
		if len(hidden) > 0 {
			hs = slices.DeleteFunc(slices.Clone(hs), func(h int) bool { return !slices.Contains(hidden, h) })
		}
		if k.Axis != spec.DefaultAxis {
			t := benchTensor(k)
			if len(k.Hidden) == 0 {
				// Channel counts given at run time only: the defaults,
				// whatever -h says.
				hs = tensorChannels(t)
			}
			if len(hs) == 0 {
				continue
			}
			_, stats, state, _, params := t.Arrays()
			args, err := entryArgs(k, slices.Concat([]string{"dst"}, stats, []string{"x"}, params, state), true)
			if err != nil {
				return nil, err
			}
			out = append(out, benchKernel{spec: k, tensor: &t, hidden: hs, args: args})
			continue
		}
		if len(hs) == 0 {
			continue
		}
		bk := benchKernel{spec: k, norm: benchNorm(k), hidden: hs}
		outputs, stats, inputs, params := bk.norm.Arrays()
		args, err := entryArgs(k, slices.Concat(outputs, stats, inputs, params), false)
		if err != nil {
			return nil, err
		}
		bk.args = args
		out = append(out, bk)
	}
	return out, nil
}

// benchTensor is the math of a spec's tensor kernel, for the reference.
func benchTensor(k spec.Kernel) benchkit.Tensor {
	t := benchkit.Tensor{Axis: k.Axis, Groups: k.Groups, GroupSize: k.GroupSize, Mean: k.Mean, Statistic: k.Statistic,
		Epsilon: k.Epsilon, Scale: k.Scale, ScaleOffset: k.ScaleOffset, Shift: k.Shift, SaveStats: k.SaveStats}
	if k.RuntimeEpsilon {
		t.Epsilon = float64(float32(benchEps))
	}
	if r := k.Running; r != nil {
		t.Running, t.Momentum = r.Convention, r.Momentum
	}
	return t
}

// tensorChannels is benchkit.DefaultChannels, each rounded up to suit the
// kernel's groups.
func tensorChannels(t benchkit.Tensor) []int {
	var cs []int
	for _, c := range benchkit.DefaultChannels {
		m := max(t.Groups, t.GroupSize, 1)
		c = (c + m - 1) / m * m
		if !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// benchNorm is the math of a spec kernel, for the reference. A DeepNorm
// residual is its derived Alpha.
func benchNorm(k spec.Kernel) benchkit.Norm {
	n := benchkit.Norm{Mean: k.Mean, Statistic: k.Statistic, Epsilon: k.Epsilon, Scale: k.Scale, ScaleOffset: k.ScaleOffset,
		Shift: k.Shift, AffinePerRow: k.AffinePerRow, SaveStats: k.SaveStats}
	if r := k.Residual; r != nil {
		n.Residual, n.Alpha, n.StoreSum = true, r.Alpha, r.StoreSum
	}
	if k.RuntimeEpsilon {
		n.Epsilon = float64(float32(benchEps))
	}
	return n
}

// benchEps is the eps bench passes to kernels that take it at run time.
const benchEps = 1e-5

// entryArgs is the array arguments of k's generated entry points, from the
// same description the generator uses, as expressions of a *benchkit.Args
// named a; it fails when those arrays are not the ones want names (a
// generator that grew a kind of array bench does not know). A tensor
// kernel's per-channel gain and bias are Args' Gamma and Beta (C values).
func entryArgs(k spec.Kernel, want []string, tensor bool) ([]string, error) {
	irk, err := algo.Build(k)
	if err != nil {
		return nil, err
	}
	var got, args []string
	var nOut, nStat, nIn, nState int
	for _, a := range irk.Arrays {
		got = append(got, a.Name)
		switch {
		case a.Role == ir.RowOut:
			args = append(args, fmt.Sprintf("a.Out[%d]", nOut))
			nOut++
		case a.Role == ir.RowScalarOut:
			args = append(args, fmt.Sprintf("a.Stats[%d]", nStat))
			nStat++
		case a.Role == ir.RowIn:
			args = append(args, fmt.Sprintf("a.In[%d]", nIn))
			nIn++
		case a.Role == ir.Param && a.Name == "gamma":
			args = append(args, "a.Gamma")
		case a.Role == ir.Param && a.Name == "beta":
			args = append(args, "a.Beta")
		case a.Role == ir.RowScalarIn && a.Name == "gain" && tensor:
			args = append(args, "a.Gamma")
		case a.Role == ir.RowScalarIn && a.Name == "bias" && tensor:
			args = append(args, "a.Beta")
		case a.Role == ir.RowScalarIn && a.Name == "gain":
			args = append(args, "a.Gain")
		case a.Role == ir.RowScalarIn && a.Name == "bias":
			args = append(args, "a.Bias")
		case a.Role == ir.RowScalarInOut && tensor:
			args = append(args, fmt.Sprintf("a.State[%d]", nState))
			nState++
		default:
			got = append(got, "?")
		}
	}
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("bench: kernel %s: its entry points take (%s), the benchmark expects (%s); please report this with the spec",
			k.Name, strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return args, nil
}

// runs reports whether this CPU runs isa, by the same test as the dispatch
// of the generated packages.
func runs(isa string) bool {
	i, err := target.Parse(isa)
	return err == nil && i.Desc().Runs()
}

// benchISAs is the instruction sets among the kernels' targets that this
// CPU runs (by runs), in spec.Targets order, and why the others are left out.
func benchISAs(kernels []benchKernel, runs func(string) bool) (isas, skipped []string) {
	for _, isa := range spec.Targets {
		if i, err := target.Parse(isa); err == nil && i.Desc().Base != "" {
			continue // a form of another ISA: timed in that one's package, which holds it
		}
		listed := isa == "purego"
		for _, k := range kernels {
			listed = listed || slices.Contains(k.spec.Targets, isa)
		}
		switch {
		case !listed:
		case runs(isa):
			isas = append(isas, isa)
		default:
			skipped = append(skipped, fmt.Sprintf("not timed: %s, which this machine (%s/%s) cannot run", isa, runtime.GOOS, runtime.GOARCH))
		}
	}
	return isas, skipped
}

// writeBenchPackages generates the spec once per instruction set, as
// package nb<isa> under dir with targets [isa], holding the kernels that
// list isa among their targets (all of them for purego).
func writeBenchPackages(dir string, f *spec.File, kernels []benchKernel, isas []string) ([]benchPkg, error) {
	var pkgs []benchPkg
	for _, isa := range isas {
		p := benchPkg{isa: isa, name: "nb" + isa}
		g := *f
		g.Package = p.name
		g.Kernels = nil
		for _, k := range kernels {
			if isa != "purego" && !slices.Contains(k.spec.Targets, isa) {
				continue
			}
			sk := k.spec
			if len(sk.Hidden) > 0 {
				sk.Hidden = k.hidden
			}
			sk.Targets = []string{isa}
			g.Kernels = append(g.Kernels, sk)
			p.kernels = append(p.kernels, sk.Name)
		}
		if len(g.Kernels) == 0 {
			continue
		}
		gp, err := generate(&g, gen.Version)
		if err != nil {
			return nil, fmt.Errorf("bench: generating for %s: %w", isa, err)
		}
		if err := write.Package(filepath.Join(dir, p.name), gp); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// writeBenchProgram writes the harness's source, main.go, go.mod and go.sum
// into dir.
func writeBenchProgram(dir string, f *spec.File, kernels []benchKernel, pkgs []benchPkg, notes []string) error {
	if err := benchkit.WriteSource(filepath.Join(dir, "benchkit")); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	src, err := benchMain(f, kernels, pkgs, notes)
	if err != nil {
		return err
	}
	gomod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire golang.org/x/sys %s\n", benchModule, generatedGo, xsysVersion)
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(gomod), "go.sum": []byte(xsysSum)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// isaAbout describes an instruction set in the report: "AVX-512 assembly".
func isaAbout(isa string) string {
	i, err := target.Parse(isa)
	if err != nil {
		return isa
	}
	if i.Assembly() {
		return i.Desc().Title + " assembly"
	}
	return i.Desc().Title
}

var benchMainTemplate = template.Must(template.New("main").Parse(`// Code generated by normgen bench from {{.Spec}}. DO NOT EDIT.

// Command {{.Module}} times the kernels of {{.Spec}}, generated by normgen
// once per instruction set (packages nb<isa>), against Go's copy of the
// same bytes, and prints the report in markdown: go run . [-quick]
package main

import (
	"flag"
	"fmt"
	"os"

	"{{.Module}}/benchkit"
{{- range .Pkgs}}
	"{{$.Module}}/{{.Name}}"
{{- end}}
)

var kernels = []benchkit.NormKernel{
{{- range .Kernels}}
	{Name: {{printf "%q" .Name}}, Hidden: []int{ {{- .Hidden -}} }, Norm: benchkit.Norm{ {{- .Norm -}} }},
{{- end}}
}

// Kernels over [N, C, L] tensors, at channel counts C.
var tensors = []benchkit.TensorKernel{
{{- range .Tensors}}
	{Name: {{printf "%q" .Name}}, Channels: []int{ {{- .Hidden -}} }, Tensor: benchkit.Tensor{ {{- .Norm -}} }},
{{- end}}
}

var impls = []benchkit.Impl{
{{- range .Pkgs}}
	benchkit.FuncImpl({{printf "%q" .Impl}}, {{printf "%q" .About}}, map[string]benchkit.KernelFunc{
	{{- $p := .}}
	{{- range .Entries}}
		benchkit.Key({{printf "%q" .Kernel}}, {{.H}}): func(a *benchkit.Args) { {{$p.Name}}.{{.Func}}({{.Args}}) },
	{{- end}}
	}, "not among the kernel's targets"),
{{- end}}
}

var notes = []string{
{{- range .Notes}}
	{{printf "%q" .}},
{{- end}}
}

func main() {
	quick := flag.Bool("quick", false, "a short run: noisier figures")
	flag.Parse()
	cfg := benchkit.DefaultConfig()
	if *quick {
		cfg = benchkit.QuickConfig()
		notes = append(notes, "mode: -quick (short budget: noisier figures)")
	}
	cfg.Log = os.Stderr
	var shapes []benchkit.Shape
	for _, k := range kernels {
		shapes = append(shapes, k.Shapes(benchkit.L2Bytes, benchkit.DRAMBytes)...)
	}
	for _, k := range tensors {
		shapes = append(shapes, k.Shapes(benchkit.L2Bytes, benchkit.DRAMBytes)...)
	}
	rep := benchkit.Run(cfg, shapes, impls)
	rep.Machine.Extra = append(rep.Machine.Extra, notes...)
	if err := rep.WriteMarkdown(os.Stdout, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if wrong := rep.Wrong(); len(wrong) > 0 {
		for _, w := range wrong {
			fmt.Fprintln(os.Stderr, "WRONG:", w)
		}
		fmt.Fprintln(os.Stderr, "generated kernels failed the float64 reference check: please report it to normgen with the spec")
		os.Exit(3)
	}
}
`))

type mainEntry struct {
	Kernel string
	H      int
	Func   string
	Args   string
}

type mainPkg struct {
	Name, Impl, About string
	Entries           []mainEntry
}

type mainKernel struct {
	Name, Hidden, Norm string
}

// benchMain is the program's main.go.
func benchMain(f *spec.File, kernels []benchKernel, pkgs []benchPkg, notes []string) ([]byte, error) {
	data := struct {
		Spec, Module string
		Kernels      []mainKernel
		Tensors      []mainKernel
		Pkgs         []mainPkg
		Notes        []string
	}{Spec: filepath.Base(f.Path), Module: benchModule, Notes: notes}
	byName := map[string]benchKernel{}
	for _, k := range kernels {
		byName[k.spec.Name] = k
		if k.tensor != nil {
			data.Tensors = append(data.Tensors, mainKernel{Name: k.spec.Name, Hidden: joinInts(k.hidden), Norm: tensorLiteral(*k.tensor)})
			continue
		}
		data.Kernels = append(data.Kernels, mainKernel{Name: k.spec.Name, Hidden: joinInts(k.hidden), Norm: normLiteral(k.norm)})
	}
	for _, p := range pkgs {
		mp := mainPkg{Name: p.name, Impl: "normgen-" + p.isa,
			About: fmt.Sprintf("normgen's %s (package %s, generated with targets: [%s])", isaAbout(p.isa), p.name, p.isa)}
		for _, name := range p.kernels {
			k := byName[name]
			for _, h := range k.hidden {
				fn, args := name+strconv.Itoa(h), k.args
				if k.tensor != nil {
					// Tensor entry points take the dimensions after the
					// arrays: spatial alone when C is fixed by the name.
					switch {
					case slices.Contains(k.spec.Hidden, h):
						args = append(slices.Clip(args), "a.Spatial")
					case len(k.spec.Hidden) > 0 || k.spec.Axis == "channels":
						fn, args = name+"Any", append(slices.Clip(args), "a.Channels", "a.Spatial")
					default:
						fn, args = name, append(slices.Clip(args), "a.Channels", "a.Spatial")
					}
				}
				if k.spec.RuntimeEpsilon {
					args = append(slices.Clip(args), fmt.Sprint(float32(benchEps))) // eps, last
				}
				mp.Entries = append(mp.Entries, mainEntry{Kernel: name, H: h, Func: fn, Args: strings.Join(args, ", ")})
			}
		}
		data.Pkgs = append(data.Pkgs, mp)
	}
	var b bytes.Buffer
	if err := benchMainTemplate.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("bench: writing main.go: %w", err)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("bench: main.go: %w", err)
	}
	return src, nil
}

// normLiteral is the fields of a benchkit.Norm literal.
func normLiteral(n benchkit.Norm) string {
	fl := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	fields := []string{fmt.Sprintf("Mean: %t", n.Mean)}
	// The statistic only when it is not the one Mean implies.
	def := "rms"
	if n.Mean {
		def = "variance"
	}
	if n.Statistic != "" && n.Statistic != def {
		fields = append(fields, fmt.Sprintf("Statistic: %q", n.Statistic))
	}
	fields = append(fields, "Epsilon: "+fl(n.Epsilon), fmt.Sprintf("Scale: %t", n.Scale))
	if n.ScaleOffset != 0 {
		fields = append(fields, "ScaleOffset: "+fl(n.ScaleOffset))
	}
	fields = append(fields, fmt.Sprintf("Shift: %t", n.Shift))
	if n.AffinePerRow {
		fields = append(fields, "AffinePerRow: true")
	}
	if n.Residual {
		fields = append(fields, "Residual: true", "Alpha: "+fl(n.Alpha), fmt.Sprintf("StoreSum: %t", n.StoreSum))
	}
	if n.SaveStats {
		fields = append(fields, "SaveStats: true")
	}
	return strings.Join(fields, ", ")
}

// tensorLiteral is the fields of a benchkit.Tensor literal.
func tensorLiteral(t benchkit.Tensor) string {
	fl := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	fields := []string{fmt.Sprintf("Axis: %q", t.Axis)}
	if t.Groups > 0 {
		fields = append(fields, fmt.Sprintf("Groups: %d", t.Groups))
	}
	if t.GroupSize > 0 {
		fields = append(fields, fmt.Sprintf("GroupSize: %d", t.GroupSize))
	}
	fields = append(fields, fmt.Sprintf("Mean: %t", t.Mean))
	if t.Statistic != "" {
		fields = append(fields, fmt.Sprintf("Statistic: %q", t.Statistic))
	}
	fields = append(fields, "Epsilon: "+fl(t.Epsilon), fmt.Sprintf("Scale: %t", t.Scale))
	if t.ScaleOffset != 0 {
		fields = append(fields, "ScaleOffset: "+fl(t.ScaleOffset))
	}
	fields = append(fields, fmt.Sprintf("Shift: %t", t.Shift))
	if t.SaveStats {
		fields = append(fields, "SaveStats: true")
	}
	if t.Running != "" {
		fields = append(fields, fmt.Sprintf("Running: %q", t.Running), "Momentum: "+fl(t.Momentum))
	}
	return strings.Join(fields, ", ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
