package amd64

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// Shapes of the layout tests.
var (
	columnSizes  = []int{1, 3, 4, 17, 96}
	columnRows   = []int{1, 5, 8, 16, 17, 33}
	segLens      = []int{1, 3, 16, 17, 40, 70} // 70: the AVX-512 block loop of 4 vectors
	segCounts    = []int{1, 2, 3}
	segmentRows  = []int{1, 3}
	dataVariants = []string{"", "nan", "huge", "zero", "inplace"}
)

// columnLong are the Columns shapes at and past pass.ChunkTerms elements,
// whose sums run in several chunks (past pass.SuperTerms: in several
// super-chunks too): exactly one chunk (64), the last chunk one element
// (65, 513, 4097), partial (100, 1100, 5000) or whole (1024, 4096, 4160);
// 4097 and 5000 add a second super-chunk, one element of it or a partial
// one. 134 and 128 rows are an AVX-512 group (134: none of its blocks and
// a tail), AVX2 groups; 17 rows an AVX2 group or an AVX-512 block, and a
// tail. Each has fewer data variants (its files are large): the NaN trips
// a guard in a group or block, "huge" in the tail.
var columnLong = []struct {
	layoutShape
	variants []string
}{
	{layoutShape{16, ir.Shape{H: 64, Stride: 16}}, []string{""}},
	{layoutShape{134, ir.Shape{H: 65, Stride: 134}}, []string{"", "nan", "huge"}},
	{layoutShape{17, ir.Shape{H: 100, Stride: 20}}, []string{"", "nan"}},
	{layoutShape{134, ir.Shape{H: 513, Stride: 134}}, []string{"", "nan", "huge"}},
	{layoutShape{17, ir.Shape{H: 1100, Stride: 20}}, []string{"", "nan"}},
	{layoutShape{33, ir.Shape{H: 1024, Stride: 33}}, []string{""}},
	{layoutShape{16, ir.Shape{H: 4096, Stride: 16}}, []string{""}},
	{layoutShape{128, ir.Shape{H: 4097, Stride: 128}}, []string{""}},
	{layoutShape{17, ir.Shape{H: 4160, Stride: 17}}, []string{"", "huge"}},
	{layoutShape{17, ir.Shape{H: 5000, Stride: 18}}, []string{"", "nan"}},
}

// columnSwitch are the Columns shapes on either side of the check that
// picks an AVX-512 call's group size (columnSmallMaxH, columnSmallMaxBytes):
// 9 elements spanning one float more than the bytes (groups of 8, a NaN
// in the first, row 67, hands it to the groups of 4) and one float fewer
// (groups of 4 only), 8 elements spanning more (groups of 4 only). 134
// rows leave a tail. Of columnLong, 134 rows of 513 elements take the
// groups of 8 and of 65 those of 4, a NaN in each. Only the functions
// with both sizes take them (their files are large).
var columnSwitch = []struct {
	layoutShape
	variants []string
}{
	{layoutShape{134, ir.Shape{H: 9, Stride: columnSmallMaxBytes/4/9 + 1}}, []string{"", "nan"}},
	{layoutShape{134, ir.Shape{H: 9, Stride: columnSmallMaxBytes / 4 / 9}}, []string{"nan"}},
	{layoutShape{134, ir.Shape{H: 8, Stride: columnSmallMaxBytes/4/8 + 1}}, []string{"nan"}},
}

// segmentLong are the Segments shapes whose sums take several chunks:
// within one segment (300000 values: several AVX-512 super-totals;
// 4097: the blocks end on a chunk's end, a vector is left), across
// segments shorter than a chunk (4100 of 64, 5000 of 17: their chunks end
// between segments, and their totals enter super-totals), and sums that
// the AVX2 element tail makes alone (3000 segments of 7).
var segmentLong = []struct {
	layoutShape
	variants []string
}{
	{layoutShape{1, ir.Shape{Segs: 1, SegLen: 300000, SegStride: 300000, RowStride: 300000}}, []string{"", "nan"}},
	{layoutShape{2, ir.Shape{Segs: 3, SegLen: 4097, SegStride: 2 * 4097, RowStride: 4097}}, []string{""}},
	{layoutShape{2, ir.Shape{Segs: 4100, SegLen: 64, SegStride: 128, RowStride: 64}}, []string{"", "huge"}},
	{layoutShape{1, ir.Shape{Segs: 5000, SegLen: 17, SegStride: 17, RowStride: 85003}}, []string{""}},
	{layoutShape{1, ir.Shape{Segs: 3000, SegLen: 7, SegStride: 7, RowStride: 21000}}, []string{""}},
}

// layoutKernels returns the Columns and the Segments kernels under test:
// each built by gen/algo (whose guard, var+eps within [1e-25, MaxFloat32],
// trips on a NaN or on a row whose squares overflow), a copy with the
// tight test guard (lowertest.WithGuard: zero rows and large rows trip it)
// and lowertest.GuardStats in
// the layout (one-sided guards: infinite bounds). lowertest.SumsC has five
// sums in one loop: the chunk totals of a group do not fit in registers
// beside the chunks' (AVX2: 2 blocks of 5 and 5 YMM; AVX-512: 8 blocks of
// 5 and 5 ZMM), so they go to the frame. lowertest.ReadTwice loads each
// array twice in one loop.
func layoutKernels(t testing.TB) (columns, segments []*ir.Kernel) {
	t.Helper()
	build := func(sk spec.Kernel) *ir.Kernel {
		k, err := algo.Build(sk)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	inLayout := func(k *ir.Kernel, l ir.Layout, name string) *ir.Kernel {
		c := *k
		c.Layout, c.Name = l, name
		return &c
	}
	bnSpec := func(name, conv string) spec.Kernel {
		return spec.Kernel{Name: name, Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			AffinePerRow: true, SaveStats: true, Running: &spec.Running{Momentum: 0.1, Convention: conv}}
	}
	// BatchNorm over [N, C]: one lane per channel, every per-row role.
	bnColumns := func(name, conv string) *ir.Kernel {
		k, err := algo.BatchColumns(bnSpec(name, conv))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	// BatchNorm's backward over [N, C]: the most per-row scalars, which
	// AVX2 keeps in the frame.
	bnBackward := func(name string) *ir.Kernel {
		sk := bnSpec(name, "pytorch")
		sk.Running = nil
		bw, err := algo.NewBackward(sk)
		if err != nil {
			t.Fatal(err)
		}
		c := *bw.Columns
		c.Name = name
		return &c
	}
	cln := build(spec.Kernel{Name: "CLN", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true})
	columns = []*ir.Kernel{
		cln,
		build(spec.Kernel{Name: "CRMS", Axis: "channels", Epsilon: 1e-6, Scale: true}),
		lowertest.WithGuard(cln),
		inLayout(lowertest.GuardStats(t), ir.Columns, "GuardStatsC"),
		bnColumns("BNTorch", "pytorch"), bnColumns("BNOnnx", "onnx"), bnBackward("BNBackC"),
		lowertest.SumsC(t), lowertest.ReadTwice(t, "ReadTwiceC", ir.Columns),
	}
	gn := build(spec.Kernel{Name: "GN", Axis: "groups", Groups: 2, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true})
	segments = []*ir.Kernel{
		build(bnSpec("BNTorch", "pytorch")), build(bnSpec("BNOnnx", "onnx")), gn,
		lowertest.WithGuard(gn),
		inLayout(lowertest.GuardStats(t), ir.Segments, "GuardStatsS"),
		lowertest.ReadTwice(t, "ReadTwiceS", ir.Segments),
	}
	for _, k := range append(append([]*ir.Kernel{}, columns...), segments...) {
		if k == nil {
			t.Fatal("a layout test kernel could not take the test guard")
		}
	}
	return columns, segments
}

// layoutShape is one call's shape.
type layoutShape struct {
	rows  int
	shape ir.Shape
}

// layoutShapes is every shape a kernel of layout l is called with: for
// Columns, strides equal to the rows and larger (and columnLong, which
// layoutVariants gives fewer data variants); for Segments, the
// BatchNorm geometry (segments rows*seglen apart, rows seglen apart) and
// the GroupNorm one (contiguous segments, rows padded apart).
func layoutShapes(l ir.Layout) []layoutShape {
	var out []layoutShape
	if l == ir.Columns {
		for _, h := range columnSizes {
			for _, rows := range columnRows {
				for _, stride := range []int{rows, rows + 3} {
					out = append(out, layoutShape{rows, ir.Shape{H: h, Stride: stride}})
				}
			}
		}
		for _, s := range columnLong {
			out = append(out, s.layoutShape)
		}
		return out
	}
	for _, seglen := range segLens {
		for _, segs := range segCounts {
			for _, rows := range segmentRows {
				out = append(out,
					layoutShape{rows, ir.Shape{Segs: segs, SegLen: seglen, SegStride: rows * seglen, RowStride: seglen}},
					layoutShape{rows, ir.Shape{Segs: segs, SegLen: seglen, SegStride: seglen, RowStride: segs*seglen + 2}})
			}
		}
	}
	for _, s := range segmentLong {
		out = append(out, s.layoutShape)
	}
	return out
}

// layoutVariants are the data variants of a shape.
func layoutVariants(s layoutShape) []string {
	for _, l := range columnLong {
		if l.layoutShape == s {
			return l.variants
		}
	}
	for _, l := range segmentLong {
		if l.layoutShape == s {
			return l.variants
		}
	}
	return dataVariants
}

// columnFixed are the fixed H of the Columns functions under test: the
// columnSizes and the H of columnLong.
func columnFixed() []int {
	hs := append([]int{}, columnSizes...)
	for _, s := range columnLong {
		hs = append(hs, s.shape.H)
	}
	return hs
}

// layoutPlans are the rows of one data variant of a call of rows rows: a
// NaN (row rows/2), squares that overflow (the last row, so a partial
// Columns block; float32 variance overflows), or zeros (row rows/3: trips
// only the tight test guards); "inplace" makes dst and x one array.
func layoutPlans(variant string, rows int) []lowertest.RowPlan {
	switch variant {
	case "nan":
		return lowertest.With(rows, rows/2, lowertest.RowNaN)
	case "huge":
		return lowertest.With(rows, rows-1, lowertest.RowOverflow)
	case "zero":
		return lowertest.With(rows, rows/3, lowertest.RowZero)
	}
	return lowertest.Plain(rows)
}

// TestExecuteLayouts runs the Columns and Segments lowerings of both ISAs
// against ir.EvalShape, in a scratch module like TestExecute's: Columns
// kernels at every fixed H of columnFixed and at run-time H, Segments at
// every shape, each on clean data and on data that trips a guard.
func TestExecuteLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	columns, segments := layoutKernels(t)
	var funcs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range columns {
			for _, h := range append(columnFixed(), 0) {
				funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
		for _, k := range segments {
			funcs = append(funcs, target.Func{Kernel: k, ISA: isa})
		}
	}
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	// The functions with groups of two sizes take the columnSwitch shapes.
	twoSizes := map[string]bool{}
	for _, fn := range strings.Split(string(src), "\nTEXT ·")[1:] {
		name, _, _ := strings.Cut(fn, "(SB)")
		twoSizes[name] = strings.Contains(fn, "\nsgroups:\n")
	}
	rng := rand.New(rand.NewPCG(3, 5))
	var cases []lowertest.Case
	short, switched := 0, 0
	for _, f := range funcs {
		if !runs(f) {
			continue
		}
		// A Columns function runs the last partial block of rows under
		// a mask, and abandons the whole block of a row a guard abandons.
		rule := lowertest.MaskedTail(map[target.ISA]int{target.AVX2: 8, target.AVX512: 16}[f.ISA])
		for _, s := range layoutShapes(f.Kernel.Layout) {
			if f.H > 0 && s.shape.H != f.H {
				continue
			}
			for _, v := range layoutVariants(s) {
				if v == "inplace" && f.Kernel.ArrayIndex("dst") < 0 {
					continue // a backward kernel: dx is not in place of x
				}
				c, _ := lowertest.NewCase(rng, f, s.shape, layoutPlans(v, s.rows), v == "inplace", rule)
				cases = append(cases, c)
				short += lowertest.B2i(c.Want < s.rows)
			}
		}
		if !twoSizes[f.Name()] {
			continue
		}
		for _, s := range columnSwitch {
			for _, v := range s.variants {
				c, _ := lowertest.NewCase(rng, f, s.shape, layoutPlans(v, s.rows), false, rule)
				cases = append(cases, c)
				short += lowertest.B2i(c.Want < s.rows)
				switched++
			}
		}
	}
	t.Logf("%d cases, %d stop short at a guard, %d at the group sizes' switch", len(cases), short, switched)
	if runs(target.Func{ISA: target.AVX512}) && switched == 0 {
		t.Error("no function with groups of two sizes")
	}
	if len(cases) > 0 && short == 0 {
		t.Error("no case trips a guard")
	}
	lowertest.Host("amd64").Execute(t, src, funcs, cases)
}

// TestLayoutsGenerate: the layout functions generate deterministically,
// within the register guard (16 vector registers for AVX2) at every size.
func TestLayoutsGenerate(t *testing.T) {
	columns, segments := layoutKernels(t)
	var funcs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range columns {
			for _, h := range []int{0, 1, 5, 16, pass.ChunkTerms, pass.ChunkTerms + 1, pass.SuperTerms, pass.SuperTerms + 1, 8192} {
				funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
		for _, k := range segments {
			funcs = append(funcs, target.Func{Kernel: k, ISA: isa})
		}
	}
	a, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("two runs generated different bytes")
	}
}

// TestColumnChunks: a Columns function sums in chunks exactly when its
// rows may be longer than pass.ChunkTerms, and adds the totals into
// super-totals exactly when they may be longer than pass.SuperTerms; it keeps
// its sums and scalars in registers where they fit and uses the frame
// only where they do not (SumsC's five sums never fit).
func TestColumnChunks(t *testing.T) {
	columns, _ := layoutKernels(t)
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range columns {
			for _, h := range []int{0, 1, 63, pass.ChunkTerms, pass.ChunkTerms + 1, 96, 512, pass.SuperTerms, pass.SuperTerms + 1, 5000} {
				f := target.Func{Kernel: k, H: h, ISA: isa}
				text, err := compile(f)
				if err != nil {
					t.Fatalf("%s: %v", f.Name(), err)
				}
				src := string(text)
				chunked := strings.Contains(src, fmt.Sprintf("a chunk of %d elements done", pass.ChunkTerms))
				if want := h == 0 || h > pass.ChunkTerms; chunked != want {
					t.Errorf("%s: sums in chunks %v, want %v", f.Name(), chunked, want)
				}
				super := strings.Contains(src, fmt.Sprintf("%d chunks done: the totals into the super-totals", pass.ChunkTerms))
				if want := h == 0 || h > pass.SuperTerms; super != want {
					t.Errorf("%s: super-totals %v, want %v", f.Name(), super, want)
				}
				_, fn, _ := strings.Cut(src, "TEXT ")
				head, _, _ := strings.Cut(fn, "\n")
				// $8: no slot, only the saved BP, which the prefetch
				// offset's register may need; $16: the prefetch
				// offset's slot too.
				framed := !strings.Contains(head, "$0-") && !strings.Contains(head, "$8-") && !strings.Contains(head, "$16-")
				lf, _, _, err := lower(f, 0, 0, false)
				if err != nil {
					t.Fatalf("%s: %v", f.Name(), err)
				}
				_, err = finish(lf, f.ISA)
				fits := err == nil
				if chunked && k.Name == "SumsC" && fits {
					t.Errorf("%s: SumsC's sums fit in registers", f.Name())
				}
				if framed && fits {
					t.Errorf("%s: a frame, though the registers suffice (%s)", f.Name(), head)
				}
			}
		}
	}
}

// batchNormColumns are BatchNorm's Columns kernels over [N, C]: the
// training forward and its backward's.
func batchNormColumns(t *testing.T) []*ir.Kernel {
	t.Helper()
	sk := spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
		AffinePerRow: true, SaveStats: true}
	fwd, err := algo.BatchColumns(sk)
	if err != nil {
		t.Fatal(err)
	}
	bw, err := algo.NewBackward(sk)
	if err != nil {
		t.Fatal(err)
	}
	return []*ir.Kernel{fwd, bw.Columns}
}

// columnGroup is the group header of the Columns kernels of any element
// count on isa.
func columnGroup(isa target.ISA) string {
	return fmt.Sprintf("// a group of %d blocks,", columnBlocks(isa, 0))
}

// TestColumnGroups: BatchNorm's Columns kernels, forward and backward, keep
// whole groups of 4 blocks on AVX2 and of 8 on AVX-512 (their per-row
// scalars go to the frame rather than the group being halved): each step
// down the rows then reads whole cache lines, 8 of each array on AVX-512;
// at a fixed element count, 4 blocks on both. At any element count,
// AVX-512 has groups of 4 too, for the calls that the entry's check of
// columnSmallMaxH and columnSmallMaxBytes sends there and for the rows
// the groups of 8 leave: each size's code is that of the function of
// that group size alone (labels and frame offsets aside), the groups of
// 4, blocks and tail keeping their scalars in registers.
func TestColumnGroups(t *testing.T) {
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range batchNormColumns(t) {
			f := target.Func{Kernel: k, ISA: isa}
			text, err := compile(f)
			if err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			src := string(text)
			if !strings.Contains(src, columnGroup(isa)) {
				t.Errorf("%s: no %q", f.Name(), columnGroup(isa))
			}
			if isa == target.AVX512 {
				checkColumnSwitch(t, f, src)
			} else if strings.Contains(src, "sgroup") {
				t.Errorf("%s: groups of two sizes on AVX2", f.Name())
			}
			// A fixed element count keeps groups of 4 on AVX-512 too,
			// and one size.
			f.H = 96
			text, err = compile(f)
			if err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			if want := "// a group of 4 blocks,"; !strings.Contains(string(text), want) || strings.Contains(string(text), "sgroup") {
				t.Errorf("%s: want %q only", f.Name(), want)
			}
		}
	}
}

// TestColumnOneGroup: BatchNorm at inference over [N, C] keeps its
// per-row scalars in registers in groups of 8 blocks, and so has no groups
// of 4 beside them (compileColumnGroups).
func TestColumnOneGroup(t *testing.T) {
	k, err := algo.BatchColumns(spec.Kernel{Name: "BNInf", Axis: "batch", Statistic: "none", Scale: true, Shift: true})
	if err != nil {
		t.Fatal(err)
	}
	f := target.Func{Kernel: k, ISA: target.AVX512}
	text, err := compile(f)
	if err != nil {
		t.Fatal(err)
	}
	big, err := search(f, lowerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if big.cfg.stackSums >= 3 || !strings.Contains(string(text), columnGroup(target.AVX512)) || strings.Contains(string(text), "sgroup") {
		t.Errorf("%s: want groups of 8 only, with the scalars in registers (stackSums %d)", f.Name(), big.cfg.stackSums)
	}
}

// checkColumnSwitch checks src, f's code with groups of 8 and of 4
// blocks (TestColumnGroups).
func checkColumnSwitch(t *testing.T, f target.Func, src string) {
	t.Helper()
	small := columnSmallGroup(f)
	if small != 4 || !strings.Contains(src, "// a group of 4 blocks, 64 rows") {
		t.Errorf("%s: no groups of 4 blocks beside those of 8", f.Name())
		return
	}
	// The check, once, before the groups of 8: rows of at most
	// columnSmallMaxH elements, or spanning at most columnSmallMaxBytes
	// (stride times h), go to the groups of 4.
	head, rest, _ := strings.Cut(src, "\ngroup:")
	sw := regexp.MustCompile(fmt.Sprintf(`CMPQ\s+(\w+), \$\+%d\n\s+JBE\s+sgroups\n\s+MOVQ\s+\w+, (\w+)\n\s+IMULQ\s+(\w+), (\w+)\n\s+CMPQ\s+(\w+), \$\+%d\n\s+JBE\s+sgroups\n`,
		columnSmallMaxH, columnSmallMaxBytes))
	m := sw.FindStringSubmatch(head)
	if m == nil || m[1] != m[3] || m[2] != m[4] || m[4] != m[5] || sw.MatchString(rest) {
		t.Errorf("%s: want the check %q once, before the groups, of h and h*stride", f.Name(), sw)
	}
	// Frame offsets differ: the two sizes share the frame.
	code := func(src, from, to string) string {
		_, s, _ := strings.Cut(src, "\n"+from+":\n")
		if to != "" {
			s, _, _ = strings.Cut(s, "\n"+to+":\n")
		}
		return regexp.MustCompile(`-?\d+\(SP\)`).ReplaceAllString(s, "N(SP)")
	}
	big, err := search(f, lowerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := search(f, lowerConfig{maxBlock: small})
	if err != nil {
		t.Fatal(err)
	}
	// The groups of 8 hand the rows they leave, or abandon, to the
	// groups of 4 rather than to the blocks.
	got := strings.ReplaceAll(code(src, "group", "sgroups"), "sgroups", "blocks")
	if want := code(string(big.text), "group", "blocks"); got != want {
		t.Errorf("%s: the groups of 8 differ from those of the function of groups of 8 alone", f.Name())
	}
	got = strings.NewReplacer("sgroup", "group", "sloop", "gloop").Replace(code(src, "sgroup", ""))
	if want := code(string(alone.text), "group", ""); got != want {
		t.Errorf("%s: the groups of 4, blocks and tail differ from those of the function of groups of 4 alone", f.Name())
	}
}

// TestColumnPrefetch: BatchNorm's Columns kernels prefetch, in every loop
// of a group, each line of the group's rows of every row array the loop
// reads, columnPrefetchAhead elements ahead, the offset moving by the
// stride with the loads', unless the offset is 0 (rows spanning under
// columnPrefetchMinBytes, checked once per call); lowered without
// prefetch, they have none.
func TestColumnPrefetch(t *testing.T) {
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range batchNormColumns(t) {
			f := target.Func{Kernel: k, ISA: isa}
			text, err := compile(f)
			if err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			src := string(text)
			group, _, _ := strings.Cut(src[strings.Index(src, columnGroup(isa)):], "\nblocks:")
			g := columnBlocks(isa, 0)
			lines := g * isa.Desc().VectorBytes / 64 // of one row array per group element
			var loops []*ir.Loop
			for _, st := range k.Body {
				if loop, ok := st.(*ir.Loop); ok {
					loops = append(loops, loop)
				}
			}
			for n, loop := range loops {
				reads := map[int]bool{}
				for _, op := range loop.Ops {
					if op.Code == ir.VLoad && k.Arrays[op.Array].Role != ir.Param {
						reads[op.Array] = true
					}
				}
				body := group[strings.Index(group, fmt.Sprintf("\ngloop%d:\n", n)):]
				body, _, _ = strings.Cut(body, "\tJB ")
				if got, want := strings.Count(body, "PREFETCHT0"), lines*len(reads); got != want {
					t.Errorf("%s: loop %d: %d prefetches, want %d", f.Name(), n, got, want)
				}
				if !regexp.MustCompile(fmt.Sprintf(`\tJZ\s+gloop%dfetched\n`, n)).MatchString(body) {
					t.Errorf("%s: loop %d: prefetches not skipped for a 0 offset:\n%s", f.Name(), n, body)
				}
				if strings.Count(body, "\tADDQ ") != 2 {
					t.Errorf("%s: loop %d: want the offset and the prefetch offset moved on:\n%s", f.Name(), n, body)
				}
			}
			// The offset is worked out once per call, before the group.
			head, _, _ := strings.Cut(src, "\ngroup:")
			c := regexp.MustCompile(fmt.Sprintf(`CMPQ\s+\w+, \$\+%d\n\s+JB\s+nopf\n`, columnPrefetchMinBytes))
			if len(c.FindAllString(head, -1)) != 1 || c.MatchString(src[len(head):]) {
				t.Errorf("%s: want %q once, before the group", f.Name(), c)
			}
			// Without prefetch, at compile's retries with fewer hoisted
			// splats.
			var plain []byte
			for cut := 0; cut <= maxHoistCut; cut++ {
				lf, _, _, _, err := lowerWith(f, 0, 4, true, cut)
				if err != nil {
					t.Fatal(err)
				}
				if plain, err = finish(lf, isa); err == nil {
					break
				} else if cut == maxHoistCut {
					t.Fatalf("%s without prefetch: %v", f.Name(), err)
				}
			}
			if strings.Contains(string(plain), "PREFETCH") {
				t.Errorf("%s: prefetches when lowered without", f.Name())
			}
		}
	}
}

// ntShapes are Columns shapes whose stride is a whole number of vectors
// on both ISAs (16 floats), so that with a page-aligned output (the
// kit's page-start placement) and the threshold at 0 the output pass
// streams: groups, blocks and a masked tail (134 rows: AVX-512 groups of
// 4 blocks, or at 33 elements spanning more than columnSmallMaxBytes,
// of 8 and then of 4; AVX2 groups), sums in chunks (H 65 and 100).
var ntShapes = []layoutShape{
	{16, ir.Shape{H: 3, Stride: 16}},
	{134, ir.Shape{H: 65, Stride: 144}},
	{134, ir.Shape{H: 33, Stride: 1024}},
	{33, ir.Shape{H: 100, Stride: 48}},
	{5, ir.Shape{H: 17, Stride: 16}},
}

// TestExecuteColumnsNT runs BatchNorm's Columns kernels, forward (also in
// place) and backward, and the channels-first LayerNorm (ConvNeXt's), with
// columnNTMinBytes at 0 and no least stride, so that every aligned
// call takes the streaming copy of the output pass, against
// ir.EvalShape on both ISAs, at fixed and run-time H, with a guard
// tripping in a group and in the tail.
func TestExecuteColumnsNT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	defer func(v int, m map[int]int) { columnNTMinBytes, columnNTMinStride = v, m }(columnNTMinBytes, columnNTMinStride)
	columnNTMinBytes, columnNTMinStride = 0, nil
	columns, _ := layoutKernels(t)
	var funcs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range append(batchNormColumns(t), columns[0]) {
			for _, h := range []int{0, 65} {
				funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: isa})
			}
		}
	}
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "VMOVNTPS"); n == 0 {
		t.Fatal("no streaming store generated")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var cases []lowertest.Case
	for _, f := range funcs {
		if !runs(f) {
			continue
		}
		rule := lowertest.MaskedTail(map[target.ISA]int{target.AVX2: 8, target.AVX512: 16}[f.ISA])
		for _, s := range ntShapes {
			if f.H > 0 && s.shape.H != f.H {
				continue
			}
			for _, v := range []string{"", "nan", "huge", "inplace"} {
				if v == "inplace" && f.Kernel.ArrayIndex("dst") < 0 {
					continue
				}
				c, _ := lowertest.NewCase(rng, f, s.shape, layoutPlans(v, s.rows), v == "inplace", rule)
				cases = append(cases, c)
			}
		}
	}
	if len(cases) == 0 {
		t.Skip("no ISA of these functions runs here")
	}
	lowertest.Host("amd64").Execute(t, src, funcs, cases)
}

// TestColumnNTLoops: BatchNorm's Columns kernels stream their output pass
// only: VMOVNTPS in the last loop's streaming copy of every group (of
// either size) and block (a masked tail stores plainly), one gate per call before the
// group (on AVX2 with its least stride), and SFENCE at the exit behind it.
func TestColumnNTLoops(t *testing.T) {
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range batchNormColumns(t) {
			f := target.Func{Kernel: k, ISA: isa}
			text, err := compile(f)
			if err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			src := string(text)
			loops := 0
			for _, st := range k.Body {
				if _, ok := st.(*ir.Loop); ok {
					loops++
				}
			}
			last := loops - 1
			bodies := []string{"g", "b"}
			if columnSmallGroup(f) > 0 {
				bodies = append(bodies, "s") // the smaller groups
			}
			for _, b := range bodies {
				body := src[strings.Index(src, fmt.Sprintf("\n%sloop%dnt:\n", b, last)):]
				body, _, _ = strings.Cut(body, "\tJB ")
				if got, want := strings.Count(body, "VMOVNTPS"), 1; got < want {
					t.Errorf("%s: %sloop%dnt has %d streaming stores", f.Name(), b, last, got)
				}
			}
			tail := src[strings.Index(src, "\ntail:\n"):]
			if strings.Count(src, "VMOVNTPS") == 0 || strings.Contains(tail, "VMOVNTPS") {
				t.Errorf("%s: want streaming stores in groups and blocks only", f.Name())
			}
			for n := range last {
				if strings.Contains(src, fmt.Sprintf("loop%dnt:", n)) {
					t.Errorf("%s: loop %d, not the output pass, streams", f.Name(), n)
				}
			}
			head, _, _ := strings.Cut(src, "\ngroup:")
			gate := regexp.MustCompile(fmt.Sprintf(`CMPQ\s+\w+, \$\+%d\n\s+JB\s+nont\n`, columnNTMinBytes))
			if !gate.MatchString(head) || gate.MatchString(src[len(head):]) {
				t.Errorf("%s: want the gate %q once, before the group", f.Name(), gate)
			}
			if m := columnNTMinStride[isa.Desc().VectorBytes]; m > 0 &&
				!regexp.MustCompile(fmt.Sprintf(`CMPQ\s+\w+, \$\+%d\n\s+JB\s+nont\n`, m)).MatchString(head) {
				t.Errorf("%s: no least stride %d in the gate", f.Name(), m)
			}
			if !regexp.MustCompile(`\nnosfence:\n`).MatchString(src) || !strings.Contains(src[strings.Index(src, "\ndone:\n"):], "SFENCE") {
				t.Errorf("%s: no SFENCE at the exit", f.Name())
			}
		}
	}
}
