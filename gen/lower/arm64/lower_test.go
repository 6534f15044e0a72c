package arm64

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
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
	out, err := generate(header, funcs, firstForm)
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
		{Kernel: k, H: 8, ISA: target.NEON, NT: true},
		{Kernel: lowertest.Impossible(t), H: 64, ISA: target.NEON},
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
		{target.Func{Kernel: lowertest.Pressure(t), H: 4096, ISA: target.NEON}, "2 vectors"},
		{target.Func{Kernel: lowertest.Pressure(t), H: 0, ISA: target.NEON}, "2 vectors"},
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
	_, err := Generate(header, []target.Func{{Kernel: lowertest.MustKernel(t, b), H: 8, ISA: target.NEON}})
	if err == nil || !strings.Contains(err.Error(), "general registers") {
		t.Errorf("got %v, want an error about general registers", err)
	}
}

// guardBlocks returns the instructions of each guard in the generated
// text: the lines from a "// guard:" comment to its last branch.
func guardBlocks(s string) [][]string {
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "// guard:"):
			in, cur = true, nil
			blocks = append(blocks, nil)
		case in && (strings.HasPrefix(line, "MOVW") || strings.HasPrefix(line, "FMOVS\tR") ||
			strings.HasPrefix(line, "FCMPS") || strings.HasPrefix(line, "B")):
			cur = append(cur, line)
			blocks[len(blocks)-1] = cur
		default:
			in = false
		}
	}
	return blocks
}

// TestGuardCode checks the guards' instructions: FCMPS then BLT for Lo and
// BHI for Hi (the conditions an unordered compare, a NaN, also meets; MI
// and GT would let NaN through), FCMPS v, v and BVS for infinite bounds, one register
// for Lo == Hi, bounds kept in registers, or loaded at the guard when the
// loops need every register, and every function's result stored.
func TestGuardCode(t *testing.T) {
	gen := func(k *ir.Kernel, h int) string {
		t.Helper()
		out, err := generate(header, []target.Func{{Kernel: k, H: h, ISA: target.NEON}}, firstForm)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	s := gen(lowertest.GuardPoint(t), 64)
	blocks := guardBlocks(s)
	if len(blocks) != 3 {
		t.Fatalf("%d guards, want 3:\n%s", len(blocks), s)
	}
	cmp := regexp.MustCompile(`^FCMPS\t(F\d+), (F\d+)$`)
	for i, bl := range blocks {
		if i == 1 {
			if len(bl) != 2 || !cmp.MatchString(bl[0]) || bl[1] != "BVS\tdone" {
				t.Errorf("guard 1 has infinite bounds: %q, want only the NaN check FCMPS v, v; BVS done", bl)
			}
			continue
		}
		if len(bl) != 4 || !cmp.MatchString(bl[0]) || bl[1] != "BLT\tdone" || !cmp.MatchString(bl[2]) || bl[3] != "BHI\tdone" {
			t.Fatalf("guard %d: %q, want FCMPS, BLT done, FCMPS, BHI done", i, bl)
		}
		lo, hi := cmp.FindStringSubmatch(bl[0]), cmp.FindStringSubmatch(bl[2])
		if lo[2] != hi[2] || (i == 0) != (lo[1] == hi[1]) {
			t.Errorf("guard %d: %q: want one operand, and one bound register only for lo == hi", i, bl)
		}
	}
	if m := regexp.MustCompile(`\bB(MI|GT|LE|GE|HS|CS|LS|LO|CC|VC|PL|EQ)\b`).FindString(s); m != "" {
		t.Errorf("generated code uses %s", m)
	}

	// Thirty-one vectors live at once: the bounds cannot stay in
	// registers, so they are loaded at the guard, without a smaller unroll.
	tight := lowertest.GuardTight(t)
	s = gen(tight, 4)
	blocks = guardBlocks(s)
	if len(blocks) != 1 || len(blocks[0]) != 8 || !strings.HasPrefix(blocks[0][0], "MOVW\t$0xbf800000") ||
		!strings.HasPrefix(blocks[0][4], "MOVW\t$0x3f800000") {
		t.Errorf("GuardTight: guard %q, want the bounds -1 and 1 loaded at the guard", blocks)
	}
	if !strings.Contains(s, "1 vectors per iteration") {
		t.Error("GuardTight: want 1 vector per iteration")
	}
	// With room to spare, the bounds are loaded once, before the row loop.
	s = gen(lowertest.GuardEdges(t), 4096)
	for _, bl := range guardBlocks(s) {
		if len(bl) != 4 || !strings.HasPrefix(bl[0], "FCMPS") {
			t.Errorf("GuardEdges: guard %q, want the bounds in registers", bl)
		}
	}
	if !strings.Contains(s, "4 vectors per iteration") {
		t.Error("GuardEdges: want 4 vectors per iteration")
	}

	// Every function ends by storing rows minus the rows not done.
	for _, k := range testKernels(t) {
		s := gen(k, 0)
		re := regexp.MustCompile(`(?m)^done:\n\tMOVD\trows\+(\d+)\(FP\), (R\d+)\n\tSUB\t(R\d+), (R\d+), (R\d+)\n\tMOVD\t(R\d+), ret\+(\d+)\(FP\)\n\tRET\n$`)
		m := re.FindStringSubmatch(s)
		if m == nil || m[2] != m[4] || m[4] != m[5] || m[5] != m[6] {
			t.Errorf("%s: no exit storing rows-done:\n%s", k.Name, s[max(0, len(s)-300):])
			continue
		}
		rowsOff, _ := strconv.Atoi(m[1])
		retOff, _ := strconv.Atoi(m[7])
		if rowsOff != 8*len(k.Arrays) || retOff != rowsOff+16 {
			t.Errorf("%s: rows at %d and ret at %d, want %d and %d", k.Name, rowsOff, retOff, 8*len(k.Arrays), 8*len(k.Arrays)+16)
		}
	}
}
