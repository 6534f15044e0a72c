package benchkit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3})
	if s.Min != 1 || s.Max != 5 || s.Median != 3 || s.P25 != 2 || s.P75 != 4 || s.N != 5 {
		t.Fatalf("got %+v", s)
	}
	s = Summarize([]float64{1, 2})
	if s.Median != 1.5 {
		t.Fatalf("median of 1,2: %v", s.Median)
	}
	if (Summarize(nil) != Stats{}) {
		t.Fatal("empty")
	}
}

func TestReference(t *testing.T) {
	// A constant row normalizes to beta exactly; an offset row keeps its shape.
	x := []float32{7, 7, 7, 7, 1e4 + 1, 1e4 - 1, 1e4 + 1, 1e4 - 1}
	g := []float32{2, 2, 2, 2}
	b := []float32{0.5, -1, 0, 3}
	y := Reference(LayerNorm, x, g, b, 4)
	for i, want := range []float64{0.5, -1, 0, 3} {
		if y[i] != want {
			t.Fatalf("constant row: y[%d] = %v, want %v", i, y[i], want)
		}
	}
	r := 1 / math.Sqrt(1+1e-5)
	for i, want := range []float64{2*r + 0.5, -2*r - 1, 2 * r, -2*r + 3} {
		if math.Abs(y[4+i]-want) > 1e-12 {
			t.Fatalf("offset row: y[%d] = %v, want %v", 4+i, y[4+i], want)
		}
	}
	y = Reference(RMSNorm, []float32{3, 4}, []float32{1, 1}, nil, 2)
	rms := math.Sqrt(12.5 + 1e-6)
	if math.Abs(y[0]-3/rms) > 1e-12 || math.Abs(y[1]-4/rms) > 1e-12 {
		t.Fatalf("RMSNorm: %v", y)
	}
}

// good is a plain float32 two-pass LayerNorm/RMSNorm.
func good(op Op, h int) Func {
	return func(dst, x, gamma, beta []float32) {
		ref := Reference(op, x, gamma, beta, h)
		for i := range ref {
			dst[i] = float32(ref[i])
		}
	}
}

func TestCheckCatchesWrongKernels(t *testing.T) {
	const h = 64
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 4*h)
	FillInput(rng, x, h)
	// Offset rows, where E[x^2]-mean^2 cancels.
	for i := 2 * h; i < 3*h; i++ {
		x[i] = 1e4 + float32(rng.NormFloat64())
	}
	g, b := make([]float32, h), make([]float32, h)
	for i := range g {
		g[i], b[i] = 1+float32(i)/h, float32(i)/h-0.5
	}
	ref := Reference(LayerNorm, x, g, b, h)
	dst := make([]float32, len(x))
	if _, err := Check(LayerNorm, good(LayerNorm, h), dst, x, g, b, ref, h); err != nil {
		t.Fatalf("good kernel rejected: %v", err)
	}
	wrong := map[string]Func{
		"no beta": func(dst, x, gamma, beta []float32) { good(LayerNorm, h)(dst, x, gamma, make([]float32, h)) },
		"skips the last row": func(dst, x, gamma, beta []float32) {
			good(LayerNorm, h)(dst[:len(x)-h], x[:len(x)-h], gamma, beta)
		},
		"E[x^2]-mean^2": func(dst, x, gamma, beta []float32) {
			for r := 0; r < len(x); r += h {
				var s, ss float32
				for _, v := range x[r : r+h] {
					s += v
					ss += v * v
				}
				m := s / h
				v := ss/h - m*m
				rstd := float32(1 / math.Sqrt(float64(v+1e-5)))
				for i := range h {
					dst[r+i] = (x[r+i]-m)*rstd*gamma[i] + beta[i]
				}
			}
		},
		"writes x":       func(dst, x, gamma, beta []float32) { good(LayerNorm, h)(dst, x, gamma, beta); x[3] = 0 },
		"panics":         func(dst, x, gamma, beta []float32) { panic("boom") },
		"RMS by mistake": func(dst, x, gamma, beta []float32) { good(RMSNorm, h)(dst, x, gamma, nil) },
	}
	for name, f := range wrong {
		xc := append([]float32(nil), x...)
		if _, err := Check(LayerNorm, f, dst, xc, g, b, ref, h); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestShapes(t *testing.T) {
	s := Shapes([]Op{LayerNorm}, []int{768, 4096}, 128<<10, 32<<20)
	if len(s) != 4 {
		t.Fatalf("%d shapes", len(s))
	}
	if s[0].Rows != 43 || s[1].Rows != 8 || s[2].Level != DRAM || s[3].Rows != 2048 {
		t.Fatalf("%+v", s)
	}
}

func TestRunAndReport(t *testing.T) {
	slow := func(s Shape) (Func, string) {
		f := good(s.Op, s.H)
		return func(dst, x, gamma, beta []float32) { f(dst, x, gamma, beta) }, ""
	}
	impls := []Impl{
		{Name: "ref64", About: "float64 reference", Prepare: slow},
		{Name: "broken", About: "forgets beta", Prepare: func(s Shape) (Func, string) {
			return func(dst, x, gamma, beta []float32) { good(s.Op, s.H)(dst, x, gamma, nil) }, ""
		}},
		{Name: "lnonly", About: "LayerNorm only", Prepare: func(s Shape) (Func, string) {
			if s.Op != LayerNorm {
				return nil, "no RMSNorm"
			}
			return slow(s)
		}},
	}
	cfg := Config{Budget: 20 * time.Millisecond, MinRounds: 3, MaxRounds: 50, Sample: 20 * time.Microsecond, LLCBytes: 1 << 16, Log: io.Discard}
	shapes := Shapes([]Op{LayerNorm, RMSNorm}, []int{64}, 4<<10, 16<<10)
	rep := Run(cfg, shapes, impls)
	if len(rep.Shapes) != 4 {
		t.Fatalf("%d shape results", len(rep.Shapes))
	}
	for _, sr := range rep.Shapes {
		if sr.Rounds < 3 {
			t.Errorf("%v: %d rounds", sr.Shape, sr.Rounds)
		}
		if sr.Shape.Level == DRAM && sr.Sets < 2 {
			t.Errorf("%v: %d sets", sr.Shape, sr.Sets)
		}
		c := sr.Results[0]
		if c.Impl != Bound || c.Ratio.Median != 1 || c.Ns.Median <= 0 {
			t.Errorf("%v: bound %+v", sr.Shape, c)
		}
		if r := sr.Results[1]; r.Status != OK || r.Ratio.Median <= 0 || r.Ratio.N != sr.Rounds {
			t.Errorf("%v: ref64 %+v", sr.Shape, r)
		}
		wantBroken := OK
		if sr.Shape.Op == LayerNorm {
			wantBroken = Wrong // RMSNorm has no beta: forgetting it is right there
		}
		if r := sr.Results[2]; r.Status != wantBroken || (r.Status == Wrong && r.Ratio.N != 0) {
			t.Errorf("%v: broken %+v", sr.Shape, r)
		}
		wantLN := OK
		if sr.Shape.Op == RMSNorm {
			wantLN = NA
		}
		if r := sr.Results[3]; r.Status != wantLN {
			t.Errorf("%v: lnonly %+v", sr.Shape, r)
		}
	}
	var md, svg bytes.Buffer
	if err := rep.WriteMarkdown(&md, "plot.svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| LayerNorm | 64 | L2 4 KiB |", "WRONG", "n/a", "![ratio to copy](plot.svg)", "**ref64**: float64 reference", "Go |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&svg)
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestSlug(t *testing.T) {
	for cpu, want := range map[string]string{
		"Intel(R) Xeon(R) Processor":               "intel-xeon-processor",
		"AMD EPYC 7B13 64-Core Processor":          "amd-epyc-7b13-64-core-processor",
		"Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz": "intel-core-i7-8700k-cpu-3-70ghz",
		"": "unknown",
	} {
		if got := (Machine{CPU: cpu}).Slug(); got != want {
			t.Errorf("Slug(%q) = %q, want %q", cpu, got, want)
		}
	}
}

func TestReferenceBatch(t *testing.T) {
	// Two channels over three rows: channel 0 is 1, 2, 3; channel 1 is constant.
	x := []float32{1, 5, 2, 5, 3, 5}
	y := Reference(BatchNorm, x, []float32{1, 2}, []float32{0, 0.25}, 2)
	r := 1 / math.Sqrt(2.0/3+1e-5)
	want := []float64{-r, 0.25, 0, 0.25, r, 0.25}
	for i := range want {
		if math.Abs(y[i]-want[i]) > 1e-12 {
			t.Fatalf("y = %v, want %v", y, want)
		}
	}
}

// A driver for a user's own kernel names it, sets its epsilon and brings
// its own oracle: here Gemma's RMSNorm, y = x/rms * (1 + gamma), eps 1e-5.
func TestCustomKernel(t *testing.T) {
	const eps = 1e-5
	gemma := func(x, gamma, _ []float32, h int) []float64 {
		y := make([]float64, len(x))
		for r := 0; r < len(x); r += h {
			ss := 0.0
			for _, v := range x[r : r+h] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(h)+eps)
			for i := range h {
				y[r+i] = float64(x[r+i]) * inv * (1 + float64(gamma[i]))
			}
		}
		return y
	}
	impl := func(eps float32) Impl {
		return Impl{Name: fmt.Sprint(eps), Prepare: func(s Shape) (Func, string) {
			return func(dst, x, gamma, _ []float32) {
				h := s.H
				for r := 0; r < len(x); r += h {
					var ss float32
					for _, v := range x[r : r+h] {
						ss += v * v
					}
					inv := float32(1 / math.Sqrt(float64(ss/float32(h)+eps)))
					for i := range h {
						dst[r+i] = x[r+i] * inv * (1 + gamma[i])
					}
				}
			}, ""
		}}
	}
	s := Shape{Op: RMSNorm, H: 16, Rows: 3, Level: L2, Kernel: "GemmaRMSNorm", Eps: eps, Ref: gemma}
	cfg := Config{Budget: 5 * time.Millisecond, MinRounds: 2, MaxRounds: 5, Sample: 10 * time.Microsecond, Log: io.Discard, Seed: 1}
	rep := Run(cfg, []Shape{s}, []Impl{impl(eps)})
	r := rep.Shapes[0].Results
	if r[1].Status != OK {
		t.Errorf("right kernel: %+v", r[1])
	}
	if rep.Shapes[0].Shape.Label() != "GemmaRMSNorm" || s.Epsilon() != eps {
		t.Errorf("label %q eps %g", s.Label(), s.Epsilon())
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md, "")
	if !strings.Contains(md.String(), "| GemmaRMSNorm | 16 |") {
		t.Errorf("markdown lacks the kernel's name:\n%s", md.String())
	}
}

// The residual ops' shapes read x and f and write dst and sum; Verify
// accepts add-then-norm with the op's alpha and epsilon and rejects a
// kernel that drops alpha, leaves sum unwritten or normalizes x alone.
func TestResidualOps(t *testing.T) {
	const h = 48
	for _, op := range []Op{AddRMSNorm, AddLayerNorm, DeepNorm} {
		s := OpShape(op, h, 5, L2)
		if !slices.Equal(s.inputs(), []string{"x", "f"}) || !slices.Equal(s.outputs(), []string{"dst", "sum"}) || s.Oracle == nil {
			t.Fatalf("%s: shape %+v", op, s)
		}
		if s.Bytes() != 2*2*4*h*5 {
			t.Errorf("%s: the copy moves %d bytes", op, s.Bytes())
		}
		base := op.Base()
		alpha := float32(1)
		if op == DeepNorm {
			alpha = float32(DeepNormAlpha)
		}
		addThen := func(alpha float32, writeSum bool) Impl {
			return Impl{Name: "k", PrepareArgs: func(Shape) (KernelFunc, string) {
				return func(a *Args) {
					sum := make([]float32, len(a.In[0]))
					for i := range sum {
						sum[i] = alpha*a.In[0][i] + a.In[1][i]
					}
					if writeSum {
						copy(a.Out[1], sum)
					}
					beta := a.Beta
					if !base.HasShift() {
						beta = nil
					}
					good(base, h)(a.Out[0], sum, a.Gamma, beta)
				}, ""
			}}
		}
		if _, why, err := Verify(addThen(alpha, true), s, 1); why != "" || err != nil {
			t.Errorf("%s: add then norm rejected: %s %v", op, why, err)
		}
		bad := map[string]Impl{"alpha 2": addThen(2, true), "no sum": addThen(alpha, false)}
		if op == DeepNorm {
			bad["alpha 1"] = addThen(1, true)
		}
		for name, im := range bad {
			if _, _, err := Verify(im, s, 1); err == nil {
				t.Errorf("%s: %s accepted", op, name)
			}
		}
		old := Impl{Name: "plain", Prepare: func(Shape) (Func, string) { return good(base, h), "" }}
		if _, why, _ := Verify(old, s, 1); why == "" {
			t.Errorf("%s: a kernel of x and dst only was not n/a", op)
		}
	}
	if DeepNormAlpha < 2.449 || DeepNormAlpha > 2.45 {
		t.Errorf("DeepNormAlpha = %v, want 36^(1/4)", DeepNormAlpha)
	}
}

// A half-storage shape: a kernel that rounds the float32 result passes
// within one rounding, one that leaves outputs unwritten or changes its
// input fails; Run times it against a copy of the 2-byte rows.
func TestHalfShape(t *testing.T) {
	n := Norm{Mean: true, Epsilon: 1e-5, Scale: true, Shift: true}
	outputs, _, inputs, _ := n.Arrays()
	s := Shape{Op: LayerNorm, H: 33, Rows: 4, Level: L2, Kernel: "BF16LayerNorm", Storage: BF16,
		Inputs: inputs, Outputs: outputs, Oracle: n.Oracle}
	good := func(a *Args) {
		x := widen(BF16, a.In16[0])
		ref := n.Reference(x, nil, a.Gamma, a.Beta, s.H)
		for i, v := range ref.Dst {
			a.Out16[0][i] = ToHalf(BF16, float32(v))
		}
	}
	for name, f := range map[string]KernelFunc{
		"good":      good,
		"unwritten": func(a *Args) { good(a); a.Out16[0][5] = halfNaN(BF16) },
		"modifies":  func(a *Args) { good(a); a.In16[0][0] ^= 1 },
		"doubles":   func(a *Args) { good(a); a.Out16[0][7] += 0x80 }, // the exponent + 1
	} {
		im := Impl{Name: name, PrepareArgs: func(Shape) (KernelFunc, string) { return f, "" }}
		_, why, err := Verify(im, s, 1)
		if why != "" || (err == nil) != (name == "good") {
			t.Errorf("%s: why %q, err %v", name, why, err)
		}
	}
	im := Impl{Name: "good", PrepareArgs: func(Shape) (KernelFunc, string) { return good, "" }}
	rep := Run(Config{Budget: time.Millisecond, MinRounds: 2, MaxRounds: 3, Sample: time.Microsecond, Seed: 1}, []Shape{s}, []Impl{im})
	if r := rep.Shapes[0].Results; r[1].Status != OK || s.Bytes() != 2*2*33*4 {
		t.Errorf("status %v, bytes %d", r[1].Status, s.Bytes())
	}
}

// A size that gives BatchNorm one row gets MinBatchRows, said in the
// shape and the report; other ops keep one row.
func TestShapesBatchNormRows(t *testing.T) {
	s := Shapes([]Op{BatchNorm, LayerNorm}, []int{768, 4096, 8192}, 16<<10, 0)
	if len(s) != 6 {
		t.Fatalf("%d shapes", len(s))
	}
	for i, want := range []int{5, 2, 2, 5, 1, 1} {
		if s[i].Rows != want {
			t.Errorf("%v: %d rows, want %d", s[i], s[i].Rows, want)
		}
		if raised := s[i].RowsNote != ""; raised != (s[i].Op == BatchNorm && want == MinBatchRows) {
			t.Errorf("%v: note %q", s[i], s[i].RowsNote)
		}
	}
	if !strings.Contains(s[1].String(), BatchRowsNote) {
		t.Errorf("%q lacks the note", s[1].String())
	}
	// A kernel that rejects one row, as the generated ones do, is timed.
	h := 64
	impls := []Impl{{Name: "ref64", About: "float64 reference", Prepare: func(s Shape) (Func, string) {
		f := good(s.Op, s.H)
		return func(dst, x, gamma, beta []float32) {
			if len(x) < 2*h {
				panic("one row")
			}
			f(dst, x, gamma, beta)
		}, ""
	}}}
	cfg := Config{Budget: 5 * time.Millisecond, MinRounds: 3, MaxRounds: 10, Sample: 10 * time.Microsecond, LLCBytes: 1 << 16, Log: io.Discard}
	rep := Run(cfg, Shapes([]Op{BatchNorm}, []int{h}, 4*int64(h), 0), impls)
	if len(rep.Shapes) != 1 || rep.Shapes[0].Shape.Rows != 2 || rep.Shapes[0].Results[1].Status != OK {
		t.Fatalf("%+v", rep.Shapes)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| BatchNorm | 64 | L2 512 B (N = 2) |", "2 rows: " + BatchRowsNote} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "WRONG") {
		t.Errorf("markdown reports WRONG:\n%s", md.String())
	}
}
