package arm64

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

func TestDeterministic(t *testing.T) {
	a, err := Generate(header, testFuncs(testKernels(t)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		// Fresh kernels too: nothing may depend on pointer identity or map order.
		b, err := Generate(header, testFuncs(testKernels(t)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatal("two generations differ")
		}
	}
}

func TestFileLayout(t *testing.T) {
	funcs := testFuncs(testKernels(t))
	out, err := Generate(header, funcs)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	want := header + "\n//go:build !purego\n\n#include \"textflag.h\"\n"
	if !strings.HasPrefix(s, want) {
		t.Fatalf("file starts %q, want %q", s[:min(len(s), 200)], want)
	}
	texts := regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\), NOSPLIT, \$0-(\d+)$`).FindAllStringSubmatch(s, -1)
	if len(texts) != len(funcs) {
		t.Fatalf("%d TEXT lines for %d functions", len(texts), len(funcs))
	}
	for i, f := range funcs {
		args := len(f.Kernel.Arrays) + 1 + 1 // arrays, rows, the result
		if f.H == 0 {
			args++
		}
		if texts[i][1] != f.Name() || texts[i][2] != fmt.Sprint(8*args) {
			t.Errorf("TEXT %d is %s $0-%s, want %s $0-%d", i, texts[i][1], texts[i][2], f.Name(), 8*args)
		}
	}
	// Only caller-saved registers Go lets assembly use.
	reserved := regexp.MustCompile(`\bR(18|2[6-9]|30)\b|\bRSP\b|\bg\b`)
	for _, line := range strings.Split(s, "\n") {
		code, _, _ := strings.Cut(line, "//")
		if m := reserved.FindString(code); strings.HasPrefix(line, "\t") && m != "" {
			t.Errorf("generated code uses %s: %s", m, line)
		}
	}
}

func TestErrors(t *testing.T) {
	k := testKernels(t)[0]
	for _, f := range []target.Func{
		{Kernel: k, H: 8, ISA: target.AVX2},
		{Kernel: nil, H: 8, ISA: target.NEON},
		{Kernel: k, H: -1, ISA: target.NEON},
		{Kernel: impossibleKernel(t), H: 64, ISA: target.NEON},
		{Kernel: renamed(k, "g"), H: 8, ISA: target.NEON},
		{Kernel: renamed(k, "R1"), H: 8, ISA: target.NEON},
		{Kernel: renamed(k, "h"), H: 8, ISA: target.NEON},
	} {
		if _, err := Generate(header, []target.Func{f}); err == nil {
			t.Errorf("Generate accepted %+v", f)
		} else {
			t.Log(err)
		}
	}
}

// renamed is k with its first array called name.
func renamed(k *ir.Kernel, name string) *ir.Kernel {
	c := *k
	c.Arrays = append([]ir.Array(nil), k.Arrays...)
	c.Arrays[0].Name = name
	return &c
}

// TestUnrollFallback checks that register pressure lowers the unroll
// instead of failing, and that short fixed rows are not unrolled past
// their length.
func TestUnrollFallback(t *testing.T) {
	for _, c := range []struct {
		f    target.Func
		want string
	}{
		{target.Func{Kernel: pressureKernel(t), H: 4096, ISA: target.NEON}, "2 vectors"},
		{target.Func{Kernel: pressureKernel(t), H: 0, ISA: target.NEON}, "2 vectors"},
		{target.Func{Kernel: testKernels(t)[0], H: 4096, ISA: target.NEON}, "4 vectors"},
		{target.Func{Kernel: testKernels(t)[0], H: 12, ISA: target.NEON}, "2 vectors"},
		{target.Func{Kernel: testKernels(t)[0], H: 5, ISA: target.NEON}, "1 vectors"},
	} {
		out, err := Generate(header, []target.Func{c.f})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), c.want+" per iteration") {
			t.Errorf("%s: want %s per iteration", c.f.Name(), c.want)
		}
	}
}

func TestManyArrays(t *testing.T) {
	b := ir.NewBuilder("Wide", "a doc\nover two lines")
	var ins []int
	for i := 0; i < 30; i++ {
		ins = append(ins, b.Array(fmt.Sprintf("x%d", i), ir.RowIn, ""))
	}
	dst := b.Array("dst", ir.RowOut, "")
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Load(ins[0])) })
	_, err := Generate(header, []target.Func{{Kernel: mustKernel(t, b), H: 8, ISA: target.NEON}})
	if err == nil || !strings.Contains(err.Error(), "general registers") {
		t.Errorf("got %v, want an error about general registers", err)
	}
}
