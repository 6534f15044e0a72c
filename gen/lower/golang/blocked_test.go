package golang

import (
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// TestBlockedForm: row kernels of float32 or half storage with a guard
// get the float32 form, which compiles, sums in blocks of 64 into float64
// totals, hands rejected rows to the float64 form with the row's slices,
// and converts nothing to float64 per element; half storage is widened
// as loaded and rounded as stored. The LayerNorm family's output pass
// drops the correction.
func TestBlockedForm(t *testing.T) {
	for _, sk := range []spec.Kernel{
		{Name: "LN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
		{Name: "AddRMS", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}},
		{Name: "Deep", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 2.449, StoreSum: true}},
		{Name: "Gemma", Epsilon: 1e-6, Scale: true, ScaleOffset: 1},
		{Name: "Eps", Epsilon: 1e-6, RuntimeEpsilon: true, Scale: true},
		{Name: "WN", Statistic: "l2", Scale: true, AffinePerRow: true},
		{Name: "BF16LN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Storage: "bf16"},
		{Name: "F16AddRMS", Epsilon: 1e-6, Scale: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}, Storage: "f16"},
	} {
		k, err := algo.Build(sk)
		if err != nil {
			t.Fatal(err)
		}
		if !Blocked(k) {
			t.Fatalf("%s: no float32 form", sk.Name)
		}
		src := render(t, k)
		f64 := "go" + sk.Name + "AnyF64"
		if Float64Name(k) != f64 || !strings.Contains(src, "func "+f64+"(") {
			t.Errorf("%s: no float64 form %s:\n%s", sk.Name, f64, src)
		}
		// A float32 kernel that stores its sum first hands rows to its
		// fallback's float64 form, emitted first.
		fb, _ := Fallback(k)
		if sum := sk.Residual != nil && sk.Residual.StoreSum && sk.Storage == ""; (fb != f64) != sum || sum && fb != "go"+sk.Name+"SumAnyF64" {
			t.Errorf("%s: rejected rows go to %s", sk.Name, fb)
		}
		fast := src[:strings.Index(src, "func "+fb+"(")]
		wants := []string{"whole := h - h%64", "(*[64]float32)(xRow[i:])", "for j := 0; j < 64; j += ", "xRow := x[r*h:][:h]", fb + "(dstRow, ", "continue"}
		if f := strings.ToUpper(sk.Storage); f != "" {
			wants = append(wants[2:], "(*[64]uint16)(xRow[i:])", "widen"+f+"(xBlock[j])", "= narrow"+f+"(")
		}
		for _, want := range wants {
			if !strings.Contains(fast, want) {
				t.Errorf("%s: float32 form lacks %q:\n%s", sk.Name, want, fast)
			}
		}
		// float64 appears only once per block or row: in the totals,
		// their conversions, the square root and the fused statistics,
		// never in a loop over the elements.
		loop := "" // the indentation of the element loop we are in
		for _, line := range strings.Split(fast, "\n") {
			trimmed := strings.TrimSpace(line)
			indent := line[:len(line)-len(strings.TrimLeft(line, "\t"))]
			switch {
			case loop != "" && trimmed == "}" && indent == loop:
				loop = ""
			case loop == "" && regexp.MustCompile(`^for (j := 0;|i := whole;|i := range h)`).MatchString(trimmed):
				loop = indent
			case loop != "" && strings.Contains(line, "float64"):
				t.Errorf("%s: float64 per element in %q", sk.Name, trimmed)
			}
		}
		if fused := fuse(k) != nil; fused != sk.Mean {
			t.Errorf("%s: mean and variance fused %v", sk.Name, fused)
		} else if fused {
			for _, want := range []string{"Moments(", "(runMean, runM2 float64) {", "runM2 += blockSq - blockDev*blockDev/64.0 + float64(delta*delta*", "spent+cost > budget*lagM2 {", "blockShift := float32(lagMean)", "blockShift = 0", "waiting++", "for p := 0; p+1 < waiting; p += 2 {", "if waiting%2 == 1 {"} {
				if !strings.Contains(fast, want) {
					t.Errorf("%s: fused form lacks %q:\n%s", sk.Name, want, fast)
				}
			}
			if strings.Contains(fast, "pivotMean") || strings.Contains(fast, "correctionSq") {
				t.Errorf("%s: the two passes remain beside the fused one:\n%s", sk.Name, fast)
			}
			// The output pass drops the correction on every row; a kernel
			// storing the mean still adds it there.
			if strings.Contains(fast, "-correction)") || strings.Contains(fast, "0x1p-44") {
				t.Errorf("%s: the output pass reads the correction:\n%s", sk.Name, fast)
			}
			stored, computed := strings.Contains(fast, "mean := shift + correction"), strings.Contains(fast, "correction :=")
			if stored != sk.SaveStats || computed != sk.SaveStats {
				t.Errorf("%s: the mean stored %v, the correction computed %v:\n%s", sk.Name, stored, computed, fast)
			}
		}
		if m := unnamed(src); m != "" {
			t.Errorf("%s: unnamed local %s:\n%s", sk.Name, m, src)
		}
	}
	// The residual's pivot x0 is a value: the block's locals are lettered.
	k, err := algo.Build(spec.Kernel{Name: "X", Mean: true, Epsilon: 1e-5, Residual: &spec.Residual{Alpha: 1}})
	if err != nil {
		t.Fatal(err)
	}
	render(t, k)
}

// TestColumnTiles: Columns kernels of float32 (parameter gradients,
// BatchNorm's backward over [N, C], a channels-first forward) get the
// tiled form, which compiles, reads whole runs of a line rather than one
// column's elements, four lines at a time with each column's chunk held
// in a local across them, sums each column in chunks of 64 lines into
// float64 totals (the last chunk leaving the sum rounded to float32 where
// the statements read it: the chunk), takes a mean and variance in one
// pass over more than a chunk of lines, and, where a guard can reject a
// column, leaves it to the float64 form with the column's offsets. Each
// group of four lines is a function of its own, a value loaded from an
// input is read from it, a loop of three row arrays takes two lines a
// step, and BatchNorm's output is (x-shift)*scale + offset with the
// offset guarded.
func TestColumnTiles(t *testing.T) {
	bw, err := algo.NewBackward(spec.Kernel{Name: "LN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true, Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	bn, err := algo.NewBackward(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true, Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := algo.Build(spec.Kernel{Name: "CF", Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true})
	if err != nil {
		t.Fatal(err)
	}
	bf, err := algo.BatchColumns(spec.Kernel{Name: "BF", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*ir.Kernel{bw.Params, bn.Columns, cf, bf} {
		if !ColumnTiles(k) {
			t.Fatalf("%s: no tiled form", k.Name)
		}
		src := render(t, k)
		fast := src
		if pass.HasGuard(k) {
			f64 := Float64Name(k)
			if !strings.HasSuffix(f64, "F64") || !strings.Contains(src, "func "+f64+"(") {
				t.Fatalf("%s: no float64 form %s:\n%s", k.Name, f64, src)
			}
			fast = src[:strings.Index(src, "func "+f64+"(")]
			for _, want := range []string{"rejected[c] = true", f64 + "(", "[r0+c:], ", ", 1, h, stride)", "if rejected[lo] {"} {
				if !strings.Contains(fast, want) {
					t.Errorf("%s: tiled form lacks %q:\n%s", k.Name, want, fast)
				}
			}
		}
		for _, want := range []string{"for r0 := 0; r0 < rows; r0 += 1024 {", "[i*stride+r0+lo:][:w]", "[(i+3)*stride+r0+lo:][:w]", "for c := range w {", "i += 4 {", "; i++ {"} {
			if !strings.Contains(fast, want) {
				t.Errorf("%s: tiled form lacks %q:\n%s", k.Name, want, fast)
			}
		}
		name := target.Func{Kernel: k, ISA: target.Go}.Name()
		if !regexp.MustCompile(`\n\t+`+name+`Lines\d+\(\w+\[i\*stride\+r0\+lo:\]\[:w\], `).MatchString(fast) ||
			!strings.Contains(fast, "\nfunc "+name+"Lines1(") || !strings.Contains(fast, "[:w]\n\tfor c := range w {") {
			t.Errorf("%s: no function of four lines:\n%s", k.Name, fast)
		}
		// The backward's output (dx, dy, x) takes two lines a step: 12
		// streams would overflow an L1 set at a 4 KiB stride.
		if k == bn.Columns && !strings.Contains(fast, "; i+2 <= h; i += 2 {") {
			t.Errorf("%s: output not two lines a step:\n%s", k.Name, fast)
		}
		// Per-column statements are functions of their own over the
		// tile's parts of the arrays: no index spilled, no bounds checks.
		if k == bf || k == bn.Columns {
			for _, want := range []string{"rejects += " + name + "Cols1(", "\nfunc " + name + "Cols1(", "[r0:][:n], ", "\t\tr := c\n"} {
				if !strings.Contains(fast, want) {
					t.Errorf("%s: tiled form lacks %q:\n%s", k.Name, want, fast)
				}
			}
			// Each per-column value in an array of its own, read with a
			// load scaled by 4.
			if regexp.MustCompile(`\]\[\d\]`).MatchString(fast) {
				t.Errorf("%s: per-column values in arrays of [c][i]:\n%s", k.Name, fast)
			}
			if strings.Contains(fast, "r := r0 + c") {
				t.Errorf("%s: per-column statements in the kernel's body:\n%s", k.Name, fast)
			}
		}
		// The saved statistics are stored with the guards' statements,
		// not in a pass of their own after the output.
		if k == bf && !regexp.MustCompile(`rejects \+= \w+Cols\d+\([^\n]*means\[r0:\]\[:n\], rstds\[r0:\]\[:n\], n\)`).MatchString(fast) {
			t.Errorf("%s: saved statistics not stored with the guards:\n%s", k.Name, fast)
		}
		if k == bf {
			for _, want := range []string{"pivotRun := x[r0+lo:][:w]", "offset := bias - offsetPart", "if !(offset >= -math.MaxFloat32 && offset <= math.MaxFloat32) {", "[c] = (float32((xLine0[c]-shiftCol)*scaleCol) + offsetCol)"} {
				if !strings.Contains(fast, want) {
					t.Errorf("%s: tiled form lacks %q:\n%s", k.Name, want, fast)
				}
			}
		}
		if strings.Contains(fast, "stride+r]") {
			t.Errorf("%s: a column walked element by element:\n%s", k.Name, fast)
		}
		onePass := onePassArray(columnsFusion(k)) >= 0
		if hasAccLoop(k) && !onePass {
			for _, want := range []string{"for i0 := 0; i0 < h; i0 += 64 {", "i1 := min(i0+64, h)", "for ; i+4 <= i1; i += 4 {", "for ; i < i1; i++ {", "Acc := ", "Chunk[c] = ", "Total[c] += float64(", "Chunk[c] = 0", "if i1 < h {", "} else if i0 > 0 {", "Chunk[c] = float32(", "Chunks[c]\n"} {
				if !strings.Contains(fast, want) {
					t.Errorf("%s: tiled form lacks %q:\n%s", k.Name, want, fast)
				}
			}
		}
		// The fused mean and variance (more than a chunk of lines) join
		// their chunks in float64; the rest of the form is float32.
		if columnsFusion(k) != nil {
			from := strings.Index(fast, "if h > 64 {")
			to := -1
			if from >= 0 {
				to = strings.Index(fast[from:], "\t} else {\n")
			}
			if from < 0 || to < 0 {
				t.Fatalf("%s: no fused statistics for more than 64 lines:\n%s", k.Name, fast)
			}
			to += from
			fused := fast[from:to]
			// At most a chunk of lines: one pass in float64, which goes
			// with the fused statistics.
			if onePass {
				end := strings.Index(fast[to:], "\n\t\t}\n")
				if end < 0 {
					t.Fatalf("%s: no end of the statistics:\n%s", k.Name, fast)
				}
				short := fast[to : to+end]
				// with the functions of its per-column statements
				for _, fn := range regexp.MustCompile(`\w+Cols\d+\(`).FindAllString(short, -1) {
					if at := strings.Index(fast, "\nfunc "+fn); at >= 0 {
						short += fast[at : strings.Index(fast[at+1:], "\n}\n")+at+3]
					}
				}
				if !strings.Contains(fast, "v3 := float64(line3[c])\n\t\ts += v3\n\t\tq += float64(v3 * v3)\n") {
					t.Errorf("%s: no one pass of four lines:\n%s", k.Name, fast)
				}
				for _, want := range []string{"one pass summing x and x^2 in float64", "sum, sumSq, w)", "mean64 := float64(runMeans[c] * perLine)", "variance64 = math.NaN()", "variance := float32(variance64)"} {
					if !strings.Contains(short, want) {
						t.Errorf("%s: one pass lacks %q:\n%s", k.Name, want, short)
					}
				}
				// The fused passes' chunks are cleared only where they run.
				if regexp.MustCompile(`n := min\(1024, rows-r0\)\n\t*clear\(\w+Chunks`).MatchString(fast) {
					t.Errorf("%s: chunks cleared for the one pass too:\n%s", k.Name, fast)
				}
				to += end
				fused = fast[from:to]
			}
			for _, want := range []string{"i1 := min(64, h)", "for i0 := 64; i0 < h; i0 += 64 {", "blockShiftCols[c] = float32(blockMean)", "runM2[c] += ", "delta*delta*(na*nb/nab)", "Chunk[c] = 0"} {
				if !strings.Contains(fused, want) {
					t.Errorf("%s: fused statistics lack %q:\n%s", k.Name, want, fused)
				}
			}
			// The functions of its groups of lines and per-column
			// statements go with it.
			for _, fn := range regexp.MustCompile(`\w+(Lines|Cols)\d+\(`).FindAllString(fused, -1) {
				if at := strings.Index(fast, "\nfunc "+fn); at >= 0 && !strings.Contains(fast[:from]+fast[to:at], fn) {
					end := strings.Index(fast[at+1:], "\n}\n") + at + 3
					fast = fast[:at] + fast[end:]
				}
			}
			fast = fast[:from] + fast[to:]
		}
		for _, line := range strings.Split(fast, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if strings.Contains(line, "float64") && !regexp.MustCompile(`var [\w, ]+ \[1024\]float64|\w+\[c\] \+= float64\(|\w+\[c\] = float32\(\w+\[c\] \+ float64\(\w+\[c\]\)\)$|math\.Sqrt\(float64\(`).MatchString(line) {
				t.Errorf("%s: float64 in %q", k.Name, strings.TrimSpace(line))
			}
		}
	}
}

// TestColumnsLinearRunningAfterGuards: the guards columnsLinear adds (a
// coefficient out of float32's range) come before the running statistics'
// stores, since the float64 form a guard hands the column to updates them
// again.
func TestColumnsLinearRunningAfterGuards(t *testing.T) {
	for _, conv := range []string{"pytorch", "onnx"} {
		k, err := algo.BatchColumns(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			AffinePerRow: true, SaveStats: true, Running: &spec.Running{Convention: conv, Momentum: 0.1}})
		if err != nil {
			t.Fatal(err)
		}
		lin := columnsLinear(k)
		if lin == k {
			t.Fatalf("%s: columnsLinear rewrote nothing", conv)
		}
		stores, lastGuard := -1, -1
		for i, st := range lin.Body {
			s, ok := st.(*ir.Scalar)
			switch {
			case !ok:
			case s.Code == ir.SGuard:
				lastGuard = i
			case s.Code == ir.SStore && lin.Arrays[s.Array].Role == ir.RowScalarInOut && stores < 0:
				stores = i
			}
		}
		if stores < 0 || lastGuard < 0 || stores < lastGuard {
			t.Errorf("%s: first running store at statement %d, last guard at %d: want the stores after every guard", conv, stores, lastGuard)
		}
	}
}
