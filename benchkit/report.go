package benchkit

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteMarkdown writes the report: the machine, the ratio-to-copy table, the
// throughput table, the per-shape details and what each implementation is.
func (rep *Report) WriteMarkdown(w io.Writer, plotFile string) error {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "# normgen benchmark: %s\n\n", m.CPU)
	fmt.Fprintf(&b, "Single thread, time as a ratio to Go's `copy` of the same bytes (x read, dst written) measured in the same round: lower is better, 1.0 is the copy bound. Medians over interleaved rounds; p25-p75 in brackets.\n\n")
	// Kernels with more row arrays: which bytes their copy moves, once per
	// set of arrays.
	var seen []string
	for _, sr := range rep.Shapes {
		s := sr.Shape
		if !s.moreArrays() {
			continue
		}
		ins, outs := s.inputs(), s.outputs()
		key := strings.Join(ins, ",") + "/" + strings.Join(outs, ",")
		if slices.Contains(seen, key) {
			continue
		}
		seen = append(seen, key)
		var kernels []string
		for _, o := range rep.Shapes {
			if k := o.Shape.Label(); o.Shape.moreArrays() && strings.Join(o.Shape.inputs(), ",")+"/"+strings.Join(o.Shape.outputs(), ",") == key && !slices.Contains(kernels, k) {
				kernels = append(kernels, k)
			}
		}
		var pairs []string
		for i := 0; i < s.copies(); i++ {
			to := "a scratch array"
			if i < len(outs) {
				to = outs[i]
			}
			pairs = append(pairs, fmt.Sprintf("%s into %s", ins[i%len(ins)], to))
		}
		moves := "moves the same bytes"
		if len(ins) > len(outs) {
			moves = fmt.Sprintf("reads the same bytes and writes %d arrays where the kernel writes %d", s.copies(), len(outs))
		}
		fmt.Fprintf(&b, "%s: %s read, %s written; their copy %s (copies %s), and their GB/s count all of them.",
			strings.Join(kernels, ", "), strings.Join(ins, " and "), strings.Join(outs, " and "), moves, strings.Join(pairs, " and "))
		if len(s.StatInputs)+len(s.Stats) > 0 {
			fmt.Fprintf(&b, " Their smaller arrays (%s) are not part of the copy.", strings.Join(slices.Concat(s.StatInputs, s.Stats), ", "))
		}
		b.WriteString("\n\n")
	}
	var half []string
	for _, sr := range rep.Shapes {
		if k := sr.Shape.Label(); sr.Shape.Storage != F32 && !slices.Contains(half, k) {
			half = append(half, k)
		}
	}
	if len(half) > 0 {
		fmt.Fprintf(&b, "%s: rows of 2-byte elements (bf16 or f16 bits); their copy moves those 2-byte elements, and their data size is that of x in that format.\n\n", strings.Join(half, ", "))
	}
	b.WriteString("## Machine\n\n| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", k, mdEscape(v))
		}
	}
	row("CPU", m.CPU)
	row("SIMD", strings.Join(m.Features, " "))
	row("logical CPUs", fmt.Sprint(m.Cores))
	row("caches (per core / shared)", strings.Join(m.Caches, ", "))
	row("OS", m.Kernel)
	row("Go", fmt.Sprintf("%s %s", m.Go, m.GOARCH))
	row("GOEXPERIMENT", m.Experiment)
	row("GOMAXPROCS while timing", fmt.Sprint(m.GOMAXPROCS))
	for _, e := range m.Extra {
		k, v, _ := strings.Cut(e, ": ")
		row(k, v)
	}
	row("load average at start (1, 5, 15 min)", m.Load)
	row("date", m.Date.Format("2006-01-02 15:04 MST"))
	dram := rep.Config.DRAMBudget
	if dram == 0 {
		dram = rep.Config.Budget
	}
	row("run", fmt.Sprintf("%.0f s; per shape: %v of timing (DRAM: %v), at least %d rounds, samples of at least %v (L2)", rep.Elapsed.Seconds(), rep.Config.Budget, dram, rep.Config.MinRounds, rep.Config.Sample))
	if len(rep.Shapes) > 0 {
		lo, hi := 1.0, 0.0
		for _, sr := range rep.Shapes {
			lo, hi = math.Min(lo, sr.OnCPU), math.Max(hi, sr.OnCPU)
		}
		row("clock", fmt.Sprintf("%s; the benchmark thread ran %.0f%%-%.0f%% of the wall time (the rest: preempted by other work on the machine)", rep.Shapes[0].Clock, 100*lo, 100*hi))
	}
	b.WriteString("\n")
	if plotFile != "" {
		fmt.Fprintf(&b, "![ratio to copy](%s)\n\n", plotFile)
	}

	names := []string{}
	for _, im := range rep.Impls {
		names = append(names, im.Name)
	}
	header := func(first string) {
		fmt.Fprintf(&b, "| kernel | H | data | %s |", first)
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", n)
		}
		b.WriteString("\n|---|--:|---|--:|")
		for range names {
			b.WriteString("--:|")
		}
		b.WriteString("\n")
	}
	b.WriteString("## Time / copy time (median, p25-p75)\n\nBold: the fastest implementation other than the copy.\n\n")
	header("copy GB/s")
	for _, sr := range rep.Shapes {
		s := sr.Shape
		best := sr.best()
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f |", s.Label(), s.H, s.dataCell(), sr.Results[0].GBps(s))
		for _, r := range sr.Results[1:] {
			cell := r.cell(func(r Result) string {
				return fmt.Sprintf("%.2fx (%.2f-%.2f)", r.Ratio.Median, r.Ratio.P25, r.Ratio.P75)
			})
			if r.Impl == best {
				cell = "**" + cell + "**"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Throughput, GB/s (bytes the copy moves, per second, at the median time: x read + dst written, and for the kernels with more row arrays all of those)\n\n")
	header("copy")
	for _, sr := range rep.Shapes {
		s := sr.Shape
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f |", s.Label(), s.H, s.dataCell(), sr.Results[0].GBps(s))
		for _, r := range sr.Results[1:] {
			fmt.Fprintf(&b, " %s |", r.cell(func(r Result) string { return fmt.Sprintf("%.1f", r.GBps(s)) }))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	rep.Scaling.WriteMarkdown(&b)
	b.WriteString("## Details\n\n")
	for _, sr := range rep.Shapes {
		s := sr.Shape
		fmt.Fprintf(&b, "### %s H=%d, %s: %d rows (x %s)\n\n", s.Label(), s.H, s.Level, s.Rows, sizeString(s.XBytes()))
		if s.RowsNote != "" {
			fmt.Fprintf(&b, "%d rows: %s.\n\n", s.Rows, s.RowsNote)
		}
		fmt.Fprintf(&b, "%d rounds; %d buffer set(s) cycled; timed by %s; the benchmark thread was on the CPU %.0f%% of the wall time.\n\n", sr.Rounds, sr.Sets, sr.Clock, 100*sr.OnCPU)
		b.WriteString("| implementation | ratio median | p25 | p75 | min | max | time/call | GB/s | max rel. error |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range sr.Results {
			if r.Status != OK {
				fmt.Fprintf(&b, "| %s | %s: %s | | | | | | | |\n", r.Impl, r.Status, mdEscape(r.Note))
				continue
			}
			fmt.Fprintf(&b, "| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.1f | %.1e |\n", r.Impl,
				r.Ratio.Median, r.Ratio.P25, r.Ratio.P75, r.Ratio.Min, r.Ratio.Max, nsString(r.Ns.Median), r.GBps(s), r.MaxErr)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Implementations\n\n")
	fmt.Fprintf(&b, "- **%s**: Go's built-in `copy(dst, x)` of the same bytes: the bound every figure is divided by.\n", Bound)
	for _, im := range rep.Impls {
		fmt.Fprintf(&b, "- **%s**: %s\n", im.Name, im.About)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// best is the name of the fastest timed implementation other than the bound.
func (sr ShapeResult) best() string {
	best, bestV := "", math.Inf(1)
	for _, r := range sr.Results[1:] {
		if r.Status == OK && r.Ratio.Median < bestV {
			best, bestV = r.Impl, r.Ratio.Median
		}
	}
	return best
}

func (r Result) cell(ok func(Result) string) string {
	switch r.Status {
	case OK:
		return ok(r)
	case Wrong:
		return "WRONG"
	}
	return "n/a"
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func nsString(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// dataCell is the tables' data column: the level and x's size, and the
// rows when RowsNote says they were raised.
func (s Shape) dataCell() string {
	if s.RowsNote != "" {
		return fmt.Sprintf("%s %s (N = %d)", s.Level, sizeString(s.XBytes()), s.Rows)
	}
	return fmt.Sprintf("%s %s", s.Level, sizeString(s.XBytes()))
}
