// Command normbench measures normgen's generated LayerNorm and RMSNorm
// kernels (and, with -ops, BatchNorm and the fused residual AddRMSNorm,
// AddLayerNorm and DeepNorm) against their peers (naive Go, gonum,
// archsimd, oneDNN; normgen unfused for the residual ops), as a
// ratio to Go's copy of the same bytes, and writes
// results/<machine>.md and results/<machine>.svg.
//
// Run it through scripts/bench.sh at the repository root, which generates
// normgen's packages, installs what the peers need and sets the build tags
// and GOEXPERIMENT; see bench/README.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/normgen/normgen/bench/normgen"
	"github.com/normgen/normgen/bench/peers"
	"github.com/normgen/normgen/benchkit"
)

func main() {
	quick := flag.Bool("quick", false, "short run (about a minute): fewer rounds, noisier figures")
	out := flag.String("out", "results", "directory for <machine>.md and <machine>.svg; empty: print the table only")
	machine := flag.String("machine", "", "file name for the results (default: the CPU model, lower case)")
	hs := flag.String("h", "768,4096,8192", "hidden sizes")
	ops := flag.String("ops", "LayerNorm,RMSNorm", "kernels: LayerNorm, RMSNorm, BatchNorm (training mode, over the rows; h = channels; and the -ncl shapes), AddRMSNorm, AddLayerNorm, DeepNorm (fused residual: x and f read, sum = alpha*x + f and dst written); the backward passes LayerNormBackward, RMSNormBackward, BatchNormBackward (and the -ncl shapes); half storage BF16LayerNorm, BF16RMSNorm, BF16AddRMSNorm and the F16 ones")
	only := flag.String("impl", "", "comma-separated implementations to time (default: all built in)")
	l2 := flag.Int64("l2", 128<<10, "bytes of x for the cache-resident shapes (0: skip)")
	dram := flag.Int64("dram", 32<<20, "bytes of x for the DRAM shapes (0: skip)")
	ncl := flag.String("ncl", "8x64x64,8x64x3136", "with BatchNorm: channels-first shapes NxCxL (x[N, C, L], L spatial positions), comma-separated; cache-resident (L2) up to -l2 bytes of x, DRAM above (empty: none)")
	threads := flag.Int("threads", 2, "after the single-thread table, time normgen's Parallel entry points on this many threads against a copy split as many ways, at the DRAM size (below 2: skip)")
	budget := flag.Duration("budget", 0, "timing per shape, DRAM shapes twice that (default 8s, or 1.5s with -quick)")
	var extra []string
	flag.Func("note", "a line for the report's machine section, as 'key: value' (repeatable)", func(s string) error {
		extra = append(extra, s)
		return nil
	})
	flag.Parse()

	cfg := benchkit.DefaultConfig()
	if *quick {
		cfg = benchkit.QuickConfig()
	}
	if *budget > 0 {
		cfg.Budget, cfg.DRAMBudget = *budget, 2**budget
	}
	cfg.Log = os.Stderr

	var sizes []int
	for _, s := range strings.Split(*hs, ",") {
		h, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || h <= 0 {
			fatalf("-h: %q is not a positive integer", s)
		}
		sizes = append(sizes, h)
	}
	var opList []benchkit.Op
	var extraOps []string // backward and half-storage ops, in -ops order
	for _, s := range strings.Split(*ops, ",") {
		s = strings.TrimSpace(s)
		if i := slices.IndexFunc(slices.Concat(peers.BackwardOps, peers.HalfOps), func(o string) bool { return strings.EqualFold(o, s) }); i >= 0 {
			extraOps = append(extraOps, slices.Concat(peers.BackwardOps, peers.HalfOps)[i])
			continue
		}
		i := slices.IndexFunc(benchkit.Ops, func(o benchkit.Op) bool { return strings.EqualFold(o.String(), s) })
		if i < 0 {
			fatalf("-ops: unknown kernel %q; allowed: %v %v %v", s, benchkit.Ops, peers.BackwardOps, peers.HalfOps)
		}
		opList = append(opList, benchkit.Ops[i])
	}

	impls := append(peers.All(), normgen.Impls()...)
	if *only != "" {
		want := strings.Split(*only, ",")
		impls = slices.DeleteFunc(impls, func(im benchkit.Impl) bool { return !slices.Contains(want, im.Name) })
	}
	for _, m := range append(peers.Missing(), normgen.Missing()...) {
		fmt.Fprintln(os.Stderr, "note:", m)
	}

	shapes := benchkit.Shapes(opList, sizes, *l2, *dram)
	var nclDims [][3]int
	parseNCL := func(d string) (n, c, l int, level benchkit.Level) {
		if k, err := fmt.Sscanf(strings.TrimSpace(d), "%dx%dx%d", &n, &c, &l); err != nil || k != 3 || n < 1 || c < 1 || l < 1 || n*l < 2 {
			fatalf("-ncl: %q is not NxCxL with positive N, C, L and N*L > 1", d)
		}
		level = benchkit.L2
		if int64(n*c*l*4) > *l2 {
			level = benchkit.DRAM
		}
		return n, c, l, level
	}
	shapes = append(shapes, extraShapes(extraOps, sizes, *l2, *dram, *ncl, parseNCL)...)
	if slices.Contains(opList, benchkit.BatchNorm) && *ncl != "" {
		// After the last [N, C] BatchNorm shape.
		at := len(shapes)
		for i, s := range shapes {
			if s.Op == benchkit.BatchNorm {
				at = i + 1
			}
		}
		var more []benchkit.Shape
		for _, d := range strings.Split(*ncl, ",") {
			n, c, l, level := parseNCL(d)
			more = append(more, peers.BatchNormNCL(n, c, l, level))
			nclDims = append(nclDims, [3]int{n, c, l})
		}
		shapes = slices.Insert(shapes, at, more...)
	}
	rep := benchkit.Run(cfg, shapes, impls)
	if *threads > 1 && *dram > 0 {
		scaleCfg := cfg
		scaleCfg.Budget = cfg.Budget / 2 // four functions of one size per case
		rep.Scaling = benchkit.RunScaling(scaleCfg, *threads, normgen.ScaleCases(opList, sizes, *dram, nclDims))
	}
	rep.Machine.Extra = append(rep.Machine.Extra, peers.Notes()...)
	rep.Machine.Extra = append(rep.Machine.Extra, normgen.Notes()...)
	rep.Machine.Extra = append(rep.Machine.Extra, extra...)
	for _, m := range append(peers.Missing(), normgen.Missing()...) {
		rep.Machine.Extra = append(rep.Machine.Extra, "not in this run: "+m)
	}
	if *quick {
		rep.Machine.Extra = append(rep.Machine.Extra, "mode: -quick (short budget: noisier figures)")
	}

	halfMD := halfTable(rep)
	if *out == "" {
		if err := rep.WriteMarkdown(os.Stdout, ""); err != nil {
			fatalf("%v", err)
		}
		fmt.Print(halfMD)
		return
	}
	name := *machine
	if name == "" {
		name = rep.Machine.Slug()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatalf("%v", err)
	}
	md, svg := filepath.Join(*out, name+".md"), filepath.Join(*out, name+".svg")
	write(svg, rep.WriteSVG)
	write(md, func(w io.Writer) error {
		if err := rep.WriteMarkdown(w, filepath.Base(svg)); err != nil {
			return err
		}
		_, err := io.WriteString(w, halfMD)
		return err
	})
	fmt.Fprintf(os.Stderr, "wrote %s and %s in %s\n", md, svg, rep.Elapsed.Round(time.Second))
}

// write creates path through a temporary file renamed into place.
func write(path string, f func(io.Writer) error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		fatalf("%v", err)
	}
	if err := f(tmp); err != nil {
		os.Remove(tmp.Name())
		fatalf("%s: %v", path, err)
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), path); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "normbench: "+format+"\n", args...)
	os.Exit(2)
}
