package benchkit

import (
	"bytes"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d: %v", what, len(got), len(want), got)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %.17g, want %.17g (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

// eps32 is e as the kernels hold it.
func eps32(e float64) float64 { return float64(float32(e)) }

// Each kind of kernel against values worked out by hand from the formulas
// (spec/REFERENCE.md).
func TestNormReferenceKinds(t *testing.T) {
	x := []float32{1, 2, 3, 4, 7, 7, 7, 7}
	gamma := []float32{1, 2, 0.5, -1}
	beta := []float32{0.25, 0, -0.5, 1}
	const h = 4

	t.Run("LayerNorm", func(t *testing.T) {
		n := Norm{Mean: true, Epsilon: 1e-5, Scale: true, Shift: true}
		got := n.Reference(x, nil, gamma, beta, h)
		r := 1 / math.Sqrt(1.25+eps32(1e-5)) // mean 2.5, variance 1.25
		want := []float64{-1.5*r + 0.25, -0.5 * r * 2, 0.5*r*0.5 - 0.5, -1.5*r + 1,
			0.25, 0, -0.5, 1} // a constant row is beta exactly
		near(t, "dst", got.Dst, want)
		if got.Sum != nil || got.Mean != nil || got.Rstd != nil {
			t.Fatalf("outputs the kernel does not have: %+v", got)
		}
		// The same as the harness's own LayerNorm oracle.
		near(t, "dst vs ReferenceEps", got.Dst, ReferenceEps(LayerNorm, 1e-5, x, gamma, beta, h))
	})

	t.Run("RMSNorm", func(t *testing.T) {
		n := Norm{Epsilon: 1e-6, Scale: true}
		got := n.Reference([]float32{3, 4}, nil, []float32{2, 1}, nil, 2)
		rms := math.Sqrt(12.5 + eps32(1e-6))
		near(t, "dst", got.Dst, []float64{6 / rms, 4 / rms})
		near(t, "dst vs ReferenceEps", got.Dst, ReferenceEps(RMSNorm, 1e-6, []float32{3, 4}, []float32{2, 1}, nil, 2))
	})

	t.Run("Gemma scale_offset", func(t *testing.T) {
		n := Norm{Epsilon: 1e-6, Scale: true, ScaleOffset: 1}
		got := n.Reference([]float32{3, 4}, nil, []float32{0, 0.5}, nil, 2)
		rms := math.Sqrt(12.5 + eps32(1e-6))
		near(t, "dst", got.Dst, []float64{3 / rms, 4 * 1.5 / rms})
	})

	t.Run("no scale, shift without mean", func(t *testing.T) {
		n := Norm{Epsilon: 0, Shift: true}
		got := n.Reference([]float32{3, 4}, nil, []float32{100, 100}, []float32{1, -1}, 2)
		rms := math.Sqrt(12.5)
		near(t, "dst", got.Dst, []float64{3/rms + 1, 4/rms - 1})
	})

	t.Run("LayerNorm without affine", func(t *testing.T) {
		n := Norm{Mean: true, Epsilon: 0.25}
		got := n.Reference([]float32{1, 3}, nil, nil, nil, 2)
		r := 1 / math.Sqrt(1+0.25)
		near(t, "dst", got.Dst, []float64{-r, r})
	})

	t.Run("residual with store_sum", func(t *testing.T) {
		n := Norm{Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: true, Alpha: 2, StoreSum: true}
		xr := []float32{1, 2}
		f := []float32{0.5, -1}
		got := n.Reference(xr, f, []float32{1, 3}, []float32{0, 0.5}, 2)
		// s = 2x + f = 2.5, 3: mean 2.75, variance 0.0625
		r := 1 / math.Sqrt(0.0625+eps32(1e-5))
		near(t, "sum", got.Sum, []float64{2.5, 3})
		near(t, "dst", got.Dst, []float64{-0.25 * r, 0.25*r*3 + 0.5})
		if got.Mean != nil || got.Rstd != nil {
			t.Fatalf("stats without save_stats: %+v", got)
		}
		// alpha 0 means 1; without store_sum the same dst and no sum.
		n1 := Norm{Epsilon: 1e-6, Scale: true, Residual: true}
		got1 := n1.Reference([]float32{1, 2}, []float32{2, 2}, []float32{1, 1}, nil, 2)
		rms := math.Sqrt((9+16)/2.0 + eps32(1e-6))
		near(t, "dst (alpha 1, RMSNorm)", got1.Dst, []float64{3 / rms, 4 / rms})
		if got1.Sum != nil {
			t.Fatal("a sum without store_sum")
		}
	})

	t.Run("save_stats", func(t *testing.T) {
		ln := Norm{Mean: true, Epsilon: 1e-5, Scale: true, SaveStats: true}
		got := ln.Reference(x, nil, gamma, nil, h)
		near(t, "mean", got.Mean, []float64{2.5, 7})
		near(t, "rstd", got.Rstd, []float64{1 / math.Sqrt(1.25+eps32(1e-5)), 1 / math.Sqrt(eps32(1e-5))})
		rms := Norm{Epsilon: 1e-6, SaveStats: true, Residual: true, Alpha: 0.5}
		got = rms.Reference([]float32{6, 8}, []float32{0, 0}, nil, nil, 2)
		if got.Mean != nil {
			t.Fatal("RMSNorm saves no mean")
		}
		near(t, "rstd", got.Rstd, []float64{1 / math.Sqrt(12.5+eps32(1e-6))})
		near(t, "dst", got.Dst, []float64{3 * got.Rstd[0], 4 * got.Rstd[0]})
	})

	t.Run("l2 (WeightNorm) with per-row gain", func(t *testing.T) {
		// Rows (3, 4) and (0, 5): ||.|| = 5 and 5; gain 2 and 0.5.
		n := Norm{Statistic: "l2", Scale: true, AffinePerRow: true}
		got := n.Reference([]float32{3, 4, 0, 5}, nil, []float32{2, 0.5}, nil, 2)
		near(t, "dst", got.Dst, []float64{2 * 3.0 / 5, 2 * 4.0 / 5, 0, 0.5})
		// epsilon 0: an all-zero row is 0/0, NaN, as PyTorch gives.
		if z := n.Reference([]float32{0, 0}, nil, []float32{1}, nil, 2); !math.IsNaN(z.Dst[0]) {
			t.Errorf("a zero row with epsilon 0: %v", z.Dst)
		}
	})

	t.Run("l2 with epsilon, save_stats, per-row bias and a DeepNorm residual", func(t *testing.T) {
		alpha := math.Pow(36, 0.25) // 18 encoder layers
		a32 := float64(float32(alpha))
		n := Norm{Statistic: "l2", Epsilon: 1e-5, Scale: true, ScaleOffset: 1, Shift: true, AffinePerRow: true,
			Residual: true, Alpha: alpha, StoreSum: true, SaveStats: true}
		xr := []float32{1, 2, -1, 0.5}
		f := []float32{0.5, -1, 2, 0}
		got := n.Reference(xr, f, []float32{0, 1}, []float32{0.25, -3}, 2)
		s := []float64{a32 + 0.5, 2*a32 - 1, -a32 + 2, 0.5 * a32}
		near(t, "sum", got.Sum, s)
		r0 := 1 / math.Sqrt(s[0]*s[0]+s[1]*s[1]+eps32(1e-5))
		r1 := 1 / math.Sqrt(s[2]*s[2]+s[3]*s[3]+eps32(1e-5))
		near(t, "rstd", got.Rstd, []float64{r0, r1})
		if got.Mean != nil {
			t.Error("l2 saves no mean")
		}
		// gain + scale_offset: 1 and 2.
		near(t, "dst", got.Dst, []float64{s[0]*r0 + 0.25, s[1]*r0 + 0.25, 2*s[2]*r1 - 3, 2*s[3]*r1 - 3})
	})

	t.Run("none (folded BatchNorm) per row", func(t *testing.T) {
		n := Norm{Statistic: "none", Scale: true, Shift: true, AffinePerRow: true, SaveStats: true}
		got := n.Reference([]float32{1, 2, 3, 4}, nil, []float32{2, -1}, []float32{0.5, 0}, 2)
		near(t, "dst", got.Dst, []float64{2.5, 4.5, -3, -4})
		if got.Mean != nil || got.Rstd != nil {
			t.Errorf("statistics without a statistic: %+v", got)
		}
	})

	t.Run("none per element after a residual", func(t *testing.T) {
		n := Norm{Statistic: "none", Shift: true, Residual: true}
		got := n.Reference([]float32{1, 2}, []float32{3, -1}, nil, []float32{0.5, 1}, 2)
		near(t, "dst", got.Dst, []float64{4.5, 2})
	})

	t.Run("rms and variance named", func(t *testing.T) {
		for _, c := range []struct{ named, def Norm }{
			{Norm{Statistic: "rms", Epsilon: 1e-6, Scale: true, SaveStats: true}, Norm{Epsilon: 1e-6, Scale: true, SaveStats: true}},
			{Norm{Mean: true, Statistic: "variance", Epsilon: 1e-5, Scale: true, SaveStats: true}, Norm{Mean: true, Epsilon: 1e-5, Scale: true, SaveStats: true}},
		} {
			got, want := c.named.Reference(x, nil, gamma, nil, h), c.def.Reference(x, nil, gamma, nil, h)
			near(t, c.named.Statistic+" dst", got.Dst, want.Dst)
			near(t, c.named.Statistic+" rstd", got.Rstd, want.Rstd)
		}
		defer func() {
			if recover() == nil {
				t.Error("an unknown statistic does not panic")
			}
		}()
		Norm{Statistic: "l1"}.Reference(x, nil, nil, nil, h)
	})
}

// Arrays and Oracle follow the generated entry points' order: outputs (row,
// then per-row), inputs, parameters.
func TestNormArrays(t *testing.T) {
	join := func(a, b, c, d []string) string {
		return strings.Join([]string{strings.Join(a, ","), strings.Join(b, ","), strings.Join(c, ","), strings.Join(d, ",")}, " | ")
	}
	for n, want := range map[Norm]string{
		{Mean: true, Scale: true, Shift: true}: "dst |  | x | gamma,beta",
		{Scale: true}:                          "dst |  | x | gamma",
		{}:                                     "dst |  | x | ",
		{Mean: true, Scale: true, Shift: true, Residual: true, StoreSum: true, SaveStats: true}:     "dst,sum | mean,rstd | x,f | gamma,beta",
		{Scale: true, Residual: true, SaveStats: true}:                                              "dst | rstd | x,f | gamma",
		{Scale: true, ScaleOffset: 1, Residual: true, StoreSum: true}:                               "dst,sum |  | x,f | gamma",
		{Mean: true, SaveStats: true}:                                                               "dst | mean,rstd | x | ",
		{Mean: true, Scale: true, Shift: true, Residual: true, StoreSum: false, SaveStats: false}:   "dst |  | x,f | gamma,beta",
		{Mean: false, Scale: false, Shift: true, Residual: false, StoreSum: false, SaveStats: true}: "dst | rstd | x | beta",
		{Statistic: "l2", Scale: true, AffinePerRow: true}:                                          "dst |  | x | gain",
		{Statistic: "l2", Scale: true, Shift: true, AffinePerRow: true, SaveStats: true}:            "dst | rstd | x | gain,bias",
		{Statistic: "none", Shift: true, AffinePerRow: true, SaveStats: true}:                       "dst |  | x | bias",
		{Statistic: "none", Scale: true, Shift: true, Residual: true, StoreSum: true}:               "dst,sum |  | x,f | gamma,beta",
		{Mean: true, Scale: true, AffinePerRow: true, SaveStats: true}:                              "dst | mean,rstd | x | gain",
	} {
		if got := join(n.Arrays()); got != want {
			t.Errorf("%+v: %q, want %q", n, got, want)
		}
	}

	n := Norm{Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: true, StoreSum: true, SaveStats: true}
	a := &Args{In: [][]float32{{1, 2, 4, 8}, {1, 1, 1, 1}}, Gamma: []float32{1, 2}, Beta: []float32{0, 1}}
	out, stats := n.Oracle(a, 2)
	ref := n.Reference(a.In[0], a.In[1], a.Gamma, a.Beta, 2)
	if len(out) != 2 || len(stats) != 2 {
		t.Fatalf("oracle: %d outputs, %d stats", len(out), len(stats))
	}
	near(t, "out[0]", out[0], ref.Dst)
	near(t, "out[1]", out[1], ref.Sum)
	near(t, "stats[0]", stats[0], ref.Mean)
	near(t, "stats[1]", stats[1], ref.Rstd)

	// With AffinePerRow the oracle takes the parameters from Gain and Bias.
	n = Norm{Statistic: "l2", Scale: true, Shift: true, AffinePerRow: true, SaveStats: true}
	a = &Args{In: [][]float32{{3, 4, 0, 5}}, Gain: []float32{2, 1}, Bias: []float32{0, 1}}
	out, stats = n.Oracle(a, 2)
	if len(out) != 1 || len(stats) != 1 {
		t.Fatalf("per-row oracle: %d outputs, %d stats", len(out), len(stats))
	}
	near(t, "per-row out[0]", out[0], []float64{1.2, 1.6, 1, 2})
	near(t, "per-row rstd", stats[0], []float64{0.2, 0.2})
}

// kernel32 computes n in float32 (two passes), writing a's arrays as the
// generated code does.
func kernel32(n Norm, h int) KernelFunc {
	return func(a *Args) {
		var f []float32
		if n.Residual {
			f = a.In[1]
		}
		scale, shift := a.Gamma, a.Beta
		if n.AffinePerRow {
			scale, shift = a.Gain, a.Bias
		}
		ref := n.Reference(a.In[0], f, scale, shift, h)
		for i, v := range ref.Dst {
			a.Out[0][i] = float32(v)
		}
		if ref.Sum != nil {
			for i, v := range ref.Sum {
				a.Out[1][i] = float32(v)
			}
		}
		st := [][]float64{}
		if ref.Mean != nil {
			st = append(st, ref.Mean)
		}
		if ref.Rstd != nil {
			st = append(st, ref.Rstd)
		}
		for j, s := range st {
			for i, v := range s {
				a.Stats[j][i] = float32(v)
			}
		}
	}
}

// A fused kernel goes through Run: every output is checked, the bound
// copies every row input, and a kernel that gets any output wrong, or
// writes an input, is WRONG.
func TestRunFusedKernel(t *testing.T) {
	n := Norm{Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: true, Alpha: 2, StoreSum: true, SaveStats: true}
	k := NormKernel{Name: "AddLN", Norm: n, Hidden: []int{32}}
	good := map[string]KernelFunc{Key("AddLN", 32): kernel32(n, 32)}
	wrong := func(name string, spoil func(a *Args)) Impl {
		return FuncImpl(name, name, map[string]KernelFunc{Key("AddLN", 32): func(a *Args) {
			kernel32(n, 32)(a)
			spoil(a)
		}}, "")
	}
	impls := []Impl{
		FuncImpl("good", "right", good, ""),
		wrong("badsum", func(a *Args) { a.Out[1][5] += 0.5 }),
		wrong("nomean", func(a *Args) { a.Stats[0][2] = float32(math.NaN()) }),
		wrong("badrstd", func(a *Args) { a.Stats[1][0] *= 1.01 }),
		wrong("writesf", func(a *Args) { a.In[1][7] = 0 }),
		FuncImpl("none", "no kernels", nil, "not generated"),
		{Name: "old", About: "x and dst only", Prepare: func(Shape) (Func, string) { return func(_, _, _, _ []float32) {}, "" }},
	}
	shapes := k.Shapes(4<<10, 16<<10)
	if len(shapes) != 2 || shapes[0].Rows != 32 || shapes[1].Level != DRAM || shapes[0].Label() != "AddLN" {
		t.Fatalf("shapes: %+v", shapes)
	}
	if b := shapes[0].Bytes(); b != 2*2*4*32*32 {
		t.Errorf("the bound moves %d bytes, want x and f copied", b)
	}
	cfg := Config{Budget: 10 * time.Millisecond, MinRounds: 3, MaxRounds: 20, Sample: 10 * time.Microsecond, LLCBytes: 1 << 16, Log: io.Discard, Seed: 1}
	rep := Run(cfg, shapes, impls)
	want := map[string]Status{"copy": OK, "good": OK, "badsum": Wrong, "nomean": Wrong, "badrstd": Wrong, "writesf": Wrong, "none": NA, "old": NA}
	notes := map[string]string{"badsum": "sum row 0 col 5", "nomean": "mean row 2", "badrstd": "rstd row 0", "writesf": "input f at 7", "none": "not generated", "old": "x and dst only"}
	for _, sr := range rep.Shapes {
		for _, r := range sr.Results {
			if r.Status != want[r.Impl] {
				t.Errorf("%s %s: %s (%s), want %s", sr.Shape, r.Impl, r.Status, r.Note, want[r.Impl])
			}
			if !strings.Contains(r.Note, notes[r.Impl]) {
				t.Errorf("%s %s: note %q lacks %q", sr.Shape, r.Impl, r.Note, notes[r.Impl])
			}
		}
		if sr.Results[1].Ratio.N < 3 || sr.Results[1].MaxErr > 1e-6 {
			t.Errorf("%s: good %+v", sr.Shape, sr.Results[1])
		}
	}
	if w := rep.Wrong(); len(w) != 8 || !strings.HasPrefix(w[0], "badsum at AddLN H=32 L2") {
		t.Errorf("Wrong: %q", w)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| AddLN | 32 | L2 4 KiB |", "AddLN: x and f read, dst and sum written; their copy moves the same bytes (copies x into dst and f into sum)"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
}

// A kernel with per-row parameters gets Gain and Bias, one value per row
// (Gamma and Beta nil); it is checked against them, and must not write
// them.
func TestRunPerRowKernel(t *testing.T) {
	n := Norm{Statistic: "l2", Scale: true, Shift: true, AffinePerRow: true, SaveStats: true}
	k := NormKernel{Name: "WN", Norm: n, Hidden: []int{64}}
	shapes := k.Shapes(16<<10, 0)
	if len(shapes) != 1 || !shapes[0].AffinePerRow || shapes[0].Rows != 64 {
		t.Fatalf("shapes: %+v", shapes)
	}
	var seen *Args
	good := func(a *Args) {
		seen = a
		kernel32(n, 64)(a)
	}
	spoilt := func(name string, spoil func(a *Args)) Impl {
		return FuncImpl(name, name, map[string]KernelFunc{Key("WN", 64): func(a *Args) {
			kernel32(n, 64)(a)
			spoil(a)
		}}, "")
	}
	impls := []Impl{
		FuncImpl("good", "right", map[string]KernelFunc{Key("WN", 64): good}, ""),
		spoilt("writesgain", func(a *Args) { a.Gain[3] = 0 }),
		spoilt("nobias", func(a *Args) {
			for i := range a.Out[0] {
				a.Out[0][i] -= a.Bias[i/64]
			}
		}),
		{Name: "old", About: "x and dst only", Prepare: func(Shape) (Func, string) { return func(_, _, _, _ []float32) {}, "" }},
	}
	cfg := Config{Budget: time.Millisecond, MinRounds: 1, MaxRounds: 3, Sample: time.Microsecond, LLCBytes: 1 << 16, Log: io.Discard, Seed: 1}
	rep := Run(cfg, shapes, impls)
	want := map[string]Status{"copy": OK, "good": OK, "writesgain": Wrong, "nobias": Wrong, "old": NA}
	notes := map[string]string{"writesgain": "modified its input gain at 3", "nobias": "dst row ", "old": "x and dst only"}
	for _, r := range rep.Shapes[0].Results {
		if r.Status != want[r.Impl] || !strings.Contains(r.Note, notes[r.Impl]) {
			t.Errorf("%s: %s (%s), want %s (%s)", r.Impl, r.Status, r.Note, want[r.Impl], notes[r.Impl])
		}
	}
	if seen == nil || seen.Gamma != nil || seen.Beta != nil || len(seen.Gain) != 64 || len(seen.Bias) != 64 {
		t.Fatalf("the kernel's arrays: %+v", seen)
	}
	for i, g := range seen.Gain {
		if !(g >= 0.5 && g <= 1.5) || math.Abs(float64(seen.Bias[i])) > 1 || g == seen.Gain[(i+1)%64] {
			t.Errorf("row %d: gain %g, bias %g", i, g, seen.Bias[i])
		}
	}
}

// Source is every non-test Go file of the package, as on disk.
func TestSource(t *testing.T) {
	src := Source()
	disk, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	disk = slices.DeleteFunc(disk, func(n string) bool { return strings.HasSuffix(n, "_test.go") })
	var names []string
	for n := range src {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Sort(disk)
	if !slices.Equal(names, disk) {
		t.Fatalf("Source has %v, the directory %v", names, disk)
	}
	dir := t.TempDir()
	if err := WriteSource(filepath.Join(dir, "benchkit")); err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, err := os.ReadFile(filepath.Base(p))
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the package's file", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tensorKernel32 is t's oracle rounded to float32: a right kernel.
func tensorKernel32(t Tensor) KernelFunc {
	return func(a *Args) {
		out, stats := t.Oracle(a, a.Channels*a.Spatial)
		for i, v := range out[0] {
			a.Out[0][i] = float32(v)
		}
		for j, st := range append(slices.Clip(a.Stats), a.State...) {
			for i := range st {
				st[i] = float32(stats[j][i])
			}
		}
	}
}

// Tensor kernels go through Run: per-set statistics and the updated
// running statistics are checked, the running statistics are set back
// after each check, and wrong sets, conventions or dimensions are WRONG.
func TestRunTensorKernel(t *testing.T) {
	bn := Tensor{Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true, Running: "pytorch", Momentum: 0.1}
	gn := Tensor{Axis: "groups", Groups: 4, Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true}
	cln := Tensor{Axis: "channels", Mean: true, Epsilon: 1e-6, Scale: true, Shift: true}
	var shapes []Shape
	for _, k := range []TensorKernel{{Name: "BN", Tensor: bn, Channels: []int{8}}, {Name: "GN", Tensor: gn, Channels: []int{8}}, {Name: "CLN", Tensor: cln, Channels: []int{8}}} {
		shapes = append(shapes, k.Shapes(4*8*64*3, 0)...)
	}
	if s := shapes[0]; s.Rows != 3 || s.H != 8*64 || s.Channels != 8 || s.Spatial != 64 || s.StatLen != 8 || len(s.State) != 2 ||
		shapes[1].StatLen != 3*4 || shapes[2].StatLen != 3*64 || s.Label() != "BN [N,C,L] C=8 L=64" {
		t.Fatalf("shapes: %+v", shapes)
	}
	onnx := bn
	onnx.Running, onnx.Momentum = "onnx", 0.9
	var states [][]float32
	funcs := func(f func(name string, tk Tensor) KernelFunc) map[string]KernelFunc {
		return map[string]KernelFunc{Key("BN", 8): f("BN", bn), Key("GN", 8): f("GN", gn), Key("CLN", 8): f("CLN", cln)}
	}
	impls := []Impl{
		FuncImpl("good", "right", funcs(func(name string, tk Tensor) KernelFunc {
			return func(a *Args) {
				if name == "BN" && len(states) < 2 {
					states = append(states, slices.Clone(a.State[1])) // what each check starts from
				}
				tensorKernel32(tk)(a)
			}
		}), ""),
		FuncImpl("onnx", "BN with ONNX's update", map[string]KernelFunc{Key("BN", 8): tensorKernel32(onnx)}, "n/a"),
		FuncImpl("rms", "the mean not subtracted (the saved mean left out)", funcs(func(_ string, tk Tensor) KernelFunc {
			tk.Mean = false
			k := tensorKernel32(tk)
			return func(a *Args) {
				st := a.Stats
				if len(st) == 2 {
					a.Stats = st[1:]
				}
				k(a)
				a.Stats = st
			}
		}), ""),
		FuncImpl("instance", "GroupNorm as InstanceNorm", map[string]KernelFunc{Key("GN", 8): func(a *Args) {
			in := gn
			in.Groups, in.GroupSize = 0, 1
			k := tensorKernel32(in)
			st := [][]float32{make([]float32, 3*8), make([]float32, 3*8)}
			k(&Args{Out: a.Out, In: a.In, Stats: st, Gamma: a.Gamma, Beta: a.Beta, Channels: a.Channels, Spatial: a.Spatial})
		}}, "n/a"),
	}
	cfg := Config{Budget: time.Millisecond, MinRounds: 1, MaxRounds: 3, Sample: time.Microsecond, LLCBytes: 1 << 16, Log: io.Discard, Seed: 1}
	rep := Run(cfg, shapes, impls)
	for _, sr := range rep.Shapes {
		for _, r := range sr.Results {
			want := OK
			switch {
			case r.Impl == "onnx" && sr.Shape.Kernel == "BN", r.Impl == "instance" && sr.Shape.Kernel == "GN":
				want = Wrong
			case r.Impl == "onnx" || r.Impl == "instance":
				want = NA
			case r.Impl == "rms":
				want = Wrong
			}
			if r.Status != want {
				t.Errorf("%s at %s: %s (%s), want %s", r.Impl, sr.Shape.Label(), r.Status, r.Note, want)
			}
		}
	}
	if len(states) != 2 || !slices.Equal(states[0], states[1]) {
		t.Errorf("the running variance each check started from: %v", states)
	}
}
