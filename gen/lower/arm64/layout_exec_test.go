package arm64

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// Kernels of the Columns and Segments layouts, each also with a second
// guard (4*eps <= var+eps <= 1e20, see guardedTwice) that the tiny,
// constant and huge test rows trip.
var (
	columnSpecs = []spec.Kernel{
		{Name: "ChanLayerNorm", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true},
		{Name: "ChanRMSNorm", Axis: "channels", Epsilon: 1e-6, Scale: true, Shift: true},
	}
	segmentSpecs = []spec.Kernel{
		{Name: "BatchNormTorch", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			AffinePerRow: true, SaveStats: true, Running: &spec.Running{Momentum: 0.1, Convention: "pytorch"}},
		{Name: "BatchNormONNX", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			AffinePerRow: true, SaveStats: true, Running: &spec.Running{Momentum: 0.1, Convention: "onnx"}},
		{Name: "GroupNorm", Axis: "groups", Groups: 2, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true},
	}
	// Columns sum 4 elements an iteration, in 4 partial sums: past
	// 4*ir.SumChunk (259, 300, ...) the accumulators sum in chunks, past
	// 4*ir.SumChunk*ir.SumTotal (16387) the totals in super-totals; a
	// run-time h of exactly one chunk, two and one super-chunk (256, 512,
	// 16384) ends on a full one, 16387 just after. Every h%4 comes with
	// each, fixed and at run time. Columns longer than longColumn run with
	// fewer row counts (longRows).
	columnSizes = []int{1, 2, 3, 4, 6, 17, 64, 65, 100, 257, 259, 300, 4097, 16387}
	columnHs    = []int{1, 2, 3, 5, 7, 17, 64, 65, 96, 128, 256, 258, 259, 512, 4097, 5000, 16384, 16387}
	columnRows  = []int{1, 3, 4, 5, 8, 17}
	longRows    = []int{5, 9}
	longColumn  = 128
	segLens     = []int{1, 3, 4, 5, 17, 40}
	segCounts   = []int{1, 2, 3}
)

// layoutFuncs is every layout kernel, plain and guarded, and
// lowertest.ReadTwice in both layouts: the Columns ones at every size and
// with H at run time, the Segments ones (H always 0).
func layoutFuncs(t testing.TB) []target.Func {
	var fs []target.Func
	build := func(specs []spec.Kernel, hs []int) {
		for _, s := range specs {
			k, err := algo.Build(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []*ir.Kernel{k, guardedTwice(t, k, float32(4*s.Epsilon), 1e20)} {
				for _, h := range hs {
					fs = append(fs, target.Func{Kernel: k, H: h, ISA: target.NEON})
				}
			}
		}
	}
	build(columnSpecs, append(columnSizes, 0))
	// Each array loaded twice in a loop, with registers tight at four
	// vectors an iteration (no guard: it runs the shapes of normal rows).
	twice := lowertest.ReadTwice(t, "ReadTwiceC", ir.Columns)
	for _, h := range append(columnSizes, 0) {
		fs = append(fs, target.Func{Kernel: twice, H: h, ISA: target.NEON})
	}
	fs = append(fs, target.Func{Kernel: lowertest.ReadTwice(t, "ReadTwiceS", ir.Segments), ISA: target.NEON})
	build(segmentSpecs, []int{0})
	return fs
}

// guardedTwice is k with another guard, Guard(v, lo, hi), right after its
// first guard, on the same operand v (gen/algo's var+eps): unlike
// guarded's place before the last loop, this one comes before the
// running statistics' stores too.
func guardedTwice(t testing.TB, k *ir.Kernel, lo, hi float32) *ir.Kernel {
	c := *k
	c.Name = k.Name + "Guarded"
	c.Body = nil
	added := false
	for _, st := range k.Body {
		c.Body = append(c.Body, st)
		if g, ok := st.(*ir.Scalar); ok && g.Code == ir.SGuard && !added {
			c.Body = append(c.Body, &ir.Scalar{Code: ir.SGuard, Dst: -1, Args: g.Args, Lo: lo, Hi: hi})
			added = true
		}
	}
	if err := ir.Check(&c); err != nil || !added {
		t.Fatalf("%s: %v (guard added: %v)", c.Name, err, added)
	}
	return &c
}

// layoutCase is one call: its shape and each row's plan.
type layoutCase struct {
	f     target.Func
	shape ir.Shape
	plans []lowertest.RowPlan
}

// layoutCases lists the calls: every shape with normal rows, and for the
// guarded kernels rows of the kinds that trip a guard among normal ones.
func layoutCases(funcs []target.Func, rng *rand.Rand) []layoutCase {
	var cs []layoutCase
	for _, f := range funcs {
		k := f.Kernel
		guard := strings.HasSuffix(k.Name, "Guarded")
		type call struct {
			shape ir.Shape
			rows  []int
		}
		var calls []call
		switch k.Layout {
		case ir.Columns:
			hs := []int{f.H}
			if f.H == 0 {
				hs = columnHs
			}
			for _, h := range hs {
				if h > longColumn {
					// One block and a tail, two blocks and a tail with gaps.
					for i, rows := range longRows {
						calls = append(calls, call{ir.Shape{H: h, Stride: rows + 3*i}, []int{rows}})
					}
					continue
				}
				for _, rows := range columnRows {
					for _, extra := range []int{0, 3} {
						calls = append(calls, call{ir.Shape{H: h, Stride: rows + extra}, []int{rows}})
					}
				}
			}
		case ir.Segments:
			for _, segs := range segCounts {
				for _, seglen := range segLens {
					// BatchNorm's (a row is a channel of N images: the
					// rows lie between the segments), GroupNorm's
					// (consecutive channels) and one with gaps.
					calls = append(calls,
						call{ir.Shape{Segs: segs, SegLen: seglen, SegStride: 5 * seglen, RowStride: seglen}, []int{1, 5}},
						call{ir.Shape{Segs: segs, SegLen: seglen, SegStride: seglen, RowStride: segs * seglen}, []int{1, 3}},
						call{ir.Shape{Segs: segs, SegLen: seglen, SegStride: seglen + 2, RowStride: segs*(seglen+2) + 1}, []int{1, 3, 9}})
				}
			}
			if !guard {
				// Chunks across segments: one segment of many chunks and
				// super-chunks, and many short segments sharing chunks, with
				// every tail.
				calls = append(calls,
					call{ir.Shape{Segs: 1, SegLen: 300000, SegStride: 300000, RowStride: 300000}, []int{1}},
					call{ir.Shape{Segs: 3000, SegLen: 5, SegStride: 7, RowStride: 3000*7 + 1}, []int{2}},
					call{ir.Shape{Segs: 700, SegLen: 31, SegStride: 31, RowStride: 700 * 31}, []int{1}},
					call{ir.Shape{Segs: 40, SegLen: 4097, SegStride: 4097, RowStride: 40 * 4097}, []int{1}})
			}
		}
		for ci, c := range calls {
			shape := c.shape
			for _, rows := range c.rows {
				cs = append(cs, layoutCase{f, shape, lowertest.Plain(rows)})
				// Guard cases: Columns with 5 rows or more, Segments
				// with 9 rows in the layout with gaps.
				if !guard || rows < 5 || (k.Layout == ir.Segments && ci%3 != 2) {
					continue
				}
				// One row of each kind among normal ones, and random mixes.
				n := rows
				for _, kind := range []lowertest.RowKind{lowertest.RowTiny, lowertest.RowHuge, lowertest.RowConst, lowertest.RowNaN, lowertest.RowOverflow} {
					cs = append(cs, layoutCase{f, shape, lowertest.With(n, rng.IntN(n), kind)})
				}
				plans := lowertest.Plain(n)
				for r := range plans {
					if rng.IntN(4) == 0 {
						plans[r].Kind = lowertest.RowKind(rng.IntN(int(lowertest.NumRowKinds)))
					}
				}
				cs = append(cs, layoutCase{f, shape, plans})
			}
		}
	}
	return cs
}

// TestExecuteLayouts builds the Columns and Segments kernels into one
// scratch arm64 package, vets it, and runs every case under qemu-user
// against ir.EvalShape.
func TestExecuteLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and emulates an arm64 package")
	}
	tg := neon(t)
	funcs := layoutFuncs(t)
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	// Guard coverage: no row abandoned, the first, a later one; and for
	// Columns, returns short of the rows through the tail alone (blocks
	// of 4 rows, the last partial one left to the caller).
	var cases []lowertest.Case
	var none, first, later, tailOnly int
	for _, c := range layoutCases(funcs, rng) {
		kc, _ := lowertest.NewCase(rng, c.f, c.shape, c.plans, false, lowertest.WholeBlocks(4))
		cases = append(cases, kc)
		switch rows := len(c.plans); {
		case kc.Done == rows && kc.Want < rows:
			tailOnly++
		case kc.Done == rows:
			none++
		case kc.Done == 0:
			first++
		default:
			later++
		}
	}
	t.Logf("%d cases: %d complete, %d short by a tail only, %d abandoning row 0, %d a later row", len(cases), none, tailOnly, first, later)
	if first == 0 || later == 0 || tailOnly == 0 {
		t.Fatal("the cases do not abandon rows at every position")
	}
	tg.Execute(t, asm, funcs, cases)
}

// TestLayoutsGenerate checks that the layout functions come out the same
// every time, take the arguments target.ShapeArgs names, and that a
// Segments kernel with a fixed H is refused.
func TestLayoutsGenerate(t *testing.T) {
	funcs := layoutFuncs(t)
	a, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate(header, layoutFuncs(t), firstForm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two generations differ")
	}
	texts := regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\), NOSPLIT, \$0-(\d+)$`).FindAllStringSubmatch(string(a), -1)
	if len(texts) != len(funcs) {
		t.Fatalf("%d TEXT lines for %d functions", len(texts), len(funcs))
	}
	for i, f := range funcs {
		size := 8 * (len(f.Kernel.Arrays) + 1 + len(target.ShapeArgs(f.Kernel.Layout, f.H)) + 1)
		if texts[i][1] != f.Name() || texts[i][2] != fmt.Sprint(size) {
			t.Errorf("TEXT %d is %s $0-%s, want %s $0-%d", i, texts[i][1], texts[i][2], f.Name(), size)
		}
	}
	// Columns accumulators sum in chunks exactly when a partial sum (one
	// of u, each taking every u-th element) may exceed one, and chunks in
	// super-chunks exactly when it may exceed one of those.
	seen := map[int]bool{}
	for _, f := range funcs {
		if f.Kernel.Layout != ir.Columns {
			continue
		}
		body := funcText(string(a), f.Name())
		m := regexp.MustCompile(`// ` + f.Name() + ` is [^\n]*, (\d) elements per iteration`).FindStringSubmatch(string(a))
		if m == nil {
			t.Fatalf("%s: no unroll in its doc", f.Name())
		}
		u, _ := strconv.Atoi(m[1])
		seen[u] = true
		terms := (f.H + u - 1) / u
		want := f.H == 0 || terms > ir.SumChunk
		if got := strings.Contains(body, "chunk:"); got != want {
			t.Errorf("%s (unroll %d): chunked sums %v, want %v", f.Name(), u, got, want)
		}
		want = f.H == 0 || terms > ir.SumChunk*ir.SumTotal
		if got := strings.Contains(body, "into the super-totals"); got != want {
			t.Errorf("%s (unroll %d): super-chunked sums %v, want %v", f.Name(), u, got, want)
		}
	}
	// 4 elements an iteration, 2 or 1 where h is shorter.
	if !seen[4] || !seen[2] || !seen[1] {
		t.Errorf("Columns unrolls seen: %v, want 4, 2 and 1", seen)
	}
	seg := funcs[len(funcs)-1]
	if seg.Kernel.Layout != ir.Segments {
		t.Fatal("the last function is not a Segments one")
	}
	seg.H = 64
	if _, err := Generate(header, []target.Func{seg}); err == nil {
		t.Error("a Segments kernel with a fixed H was accepted")
	}
}

// funcText is the text of function name in the assembly file asm, from its
// TEXT line to the next one.
func funcText(asm, name string) string {
	i := strings.Index(asm, "TEXT ·"+name+"(SB)")
	if i < 0 {
		return ""
	}
	body := asm[i+1:]
	if j := strings.Index(body, "\nTEXT "); j >= 0 {
		body = body[:j]
	}
	return body
}
