package amd64

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
)

// accuracyHarness runs in the scratch module: each function sums a row
// of [0, 0.1, 0.1, ...] (of 65536 and 2^20 values; Segments: one segment,
// segments of 64, of 7) and the sum is compared with float64's in units
// of 2^-24 of it. Sequential float32 chains of 2^14 terms per lane err by
// hundreds of units (across 149796 segments of 7: 10^5); chunks of
// ir.SumChunk by at most 30.
const accuracyHarness = `package k

import (
	"math"
	"testing"
)

type afunc struct {
	name           string
	runs, square bool
	seg            bool
	h              int
	call           func(stat, x *float32, sh []int) int
}

const limit = 48

func TestAccuracy(t *testing.T) {
	ran := 0
	for _, f := range afuncs {
		if !f.runs {
			continue
		}
		for _, n := range []int{65536, 1 << 20} {
			if f.h > 0 && f.h != n {
				continue
			}
			shapes := [][2]int{{1, n}}
			if f.seg {
				shapes = append(shapes, [2]int{n / 64, 64}, [2]int{n / 7, 7})
			}
			for _, sh := range shapes {
				total := sh[0] * sh[1]
				args := []int{n}
				if f.seg {
					args = []int{sh[0], sh[1], sh[1], total}
				}
				x := make([]float32, total)
				want := 0.0
				for i := 1; i < total; i++ {
					x[i] = 0.1
					v := float64(x[i])
					if f.square {
						v *= v
					}
					want += v
				}
				var stat float32
				if done := f.call(&stat, &x[0], args); done != 1 {
					t.Fatalf("%s: %d rows done", f.name, done)
				}
				u := math.Abs(float64(stat)-want) / (math.Ldexp(1, -24) * want)
				t.Logf("%s %d values in %d segments: %.1f units", f.name, total, sh[0], u)
				if !(u <= limit) {
					t.Errorf("%s %d values in %d segments: sum %v, float64 %v: %.1f units of 2^-24, want at most %d", f.name, total, sh[0], stat, want, u, limit)
				}
				ran++
			}
		}
	}
	if ran == 0 {
		t.Skip("no kernel runs on this CPU")
	}
}
`

// TestLongSumAccuracy: the sums of long rows and of long sets of
// segments follow the summation policy, in Rows (fixed and run-time
// length) and Segments functions of both ISAs; the sequential sums before
// it fail.
func TestLongSumAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a scratch module")
	}
	var funcs []target.Func
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, square := range []bool{false, true} {
			name := map[bool]string{false: "Sum", true: "SumSq"}[square]
			rows := lowertest.SumKernel(t, name, ir.Rows, square)
			seg := lowertest.SumKernel(t, name+"Seg", ir.Segments, square)
			funcs = append(funcs,
				target.Func{Kernel: rows, ISA: isa},
				target.Func{Kernel: rows, H: 65536, ISA: isa},
				target.Func{Kernel: rows, H: 1 << 20, ISA: isa},
				target.Func{Kernel: seg, ISA: isa})
		}
	}
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	table.WriteString("package k\n\nvar afuncs = []afunc{\n")
	for _, f := range funcs {
		args := []string{"stat", "x", "1"}
		for i := range target.ShapeArgs(f.Kernel.Layout, f.H) {
			args = append(args, fmt.Sprintf("sh[%d]", i))
		}
		fmt.Fprintf(&table, "\t{name: %q, runs: %v, square: %v, seg: %v, h: %d, call: func(stat, x *float32, sh []int) int { return %s(%s) }},\n",
			f.Name(), runs(f), strings.HasPrefix(f.Kernel.Name, "SumSq"), f.Kernel.Layout == ir.Segments, f.H,
			f.Name(), strings.Join(args, ", "))
	}
	table.WriteString("}\n")
	files := map[string][]byte{
		"kernels_amd64.s":  src,
		"kernels_amd64.go": lowertest.Stubs(funcs),
		"cases_test.go":    []byte(table.String()),
		"harness_test.go":  []byte(accuracyHarness),
	}
	t.Logf("%s", lowertest.Host("amd64").Scratch(t, files, "^TestAccuracy$"))
}

// TestRowChunks: a Rows function sums in chunks exactly when one of its
// partial sums would add more than ir.SumChunk terms (fixed H: with
// unroll partial sums shared by the rows of a block, the AVX-512 masked
// tail one more vector), and into super-totals exactly when it would take
// more than ir.SumTotal chunks; a run-time H always does both. A Segments
// function does both, ends its chunks between segments, and has a plain
// sweep for rows too short for chunks.
func TestRowChunks(t *testing.T) {
	ks := buildKernels(t)
	const chunkDone = "terms per lane done"
	exitFold := "the leftovers would make the last chunk too long"
	super := fmt.Sprintf("%d chunks done: the totals into the super-totals", ir.SumTotal)
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range []*ir.Kernel{ks[0], ks[2]} {
			for _, h := range []int{0, 768, 1024, 2048, 3072, 4096, 4100, 5000, 8192, 65536, 1 << 20} {
				for _, nt := range []bool{false, true} {
					f := target.Func{Kernel: k, H: h, ISA: isa, NT: nt}
					if nt && !isa.NonTemporal(k.Layout, h) {
						continue
					}
					text, err := compile(f)
					if err != nil {
						t.Fatalf("%s: %v", f.Name(), err)
					}
					src := string(text)
					block := 1
					if m := regexp.MustCompile(`// blocks of (\d+) rows`).FindStringSubmatch(src); m != nil {
						fmt.Sscan(m[1], &block)
					}
					d := isa.Desc()
					if sd := streamingDesc(f); sd != nil {
						d = sd // the AVX2 body (ymmStreamMinH)
					}
					nvec := h / d.Lanes
					if d.MaskRegs > 0 && h%d.Lanes != 0 {
						nvec++
					}
					nacc := max(1, min(unroll, nvec)/block)
					terms := (nvec + nacc - 1) / nacc
					chunks := (terms + ir.SumChunk - 1) / ir.SumChunk
					chunked := strings.Contains(src, chunkDone) || strings.Contains(src, exitFold)
					if want := h == 0 || terms > ir.SumChunk; chunked != want {
						t.Errorf("%s: sums in chunks %v, want %v (%d terms per partial sum)", f.Name(), chunked, want, terms)
					}
					if want := h == 0 || chunks > ir.SumTotal+1; strings.Contains(src, super) != want {
						t.Errorf("%s: super-totals %v, want %v (%d chunks)", f.Name(), !want, want, chunks)
					}
				}
			}
		}
	}
	_, segments := layoutKernels(t)
	for _, isa := range []target.ISA{target.AVX2, target.AVX512} {
		for _, k := range segments {
			f := target.Func{Kernel: k, ISA: isa}
			text, err := compile(f)
			if err != nil {
				t.Fatalf("%s: %v", f.Name(), err)
			}
			src := string(text)
			for _, s := range []string{chunkDone, super, "no room for another segment", "for rows too short for chunks"} {
				if !strings.Contains(src, s) {
					t.Errorf("%s: no %q", f.Name(), s)
				}
			}
		}
	}
}
