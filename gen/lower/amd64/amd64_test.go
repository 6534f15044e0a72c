package amd64

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/gotypes"
	avoir "github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

func TestFileLayout(t *testing.T) {
	ks := buildKernels(t)
	funcs := []target.Func{
		{Kernel: ks[0], H: 768, ISA: target.AVX512},
		{Kernel: ks[0], H: 0, ISA: target.AVX2},
		{Kernel: ks[2], H: 17, ISA: target.AVX2},
	}
	src, err := Generate(testHeader, funcs)
	if err != nil {
		t.Fatal(err)
	}
	want := testHeader + "\n//go:build !purego\n\n#include \"textflag.h\"\n"
	if !bytes.HasPrefix(src, []byte(want)) {
		t.Fatalf("file starts\n%q\nwant\n%q", src[:min(len(src), len(want)+40)], want)
	}
	if n := bytes.Count(src, []byte("DO NOT EDIT")); n != 1 {
		t.Errorf("%d generated-code markers, want 1 (avo's own header must be gone)", n)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\)`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	var wantNames []string
	for _, f := range funcs {
		wantNames = append(wantNames, f.Name())
	}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("TEXT order %v, want %v", names, wantNames)
	}
	for name, text := range functions(src) {
		if !strings.Contains(text, "\tVZEROUPPER\n\tRET\n") || strings.Count(text, "RET") != 1 {
			t.Errorf("%s: want one RET, after VZEROUPPER", name)
		}
	}
}

// TestDeterministic: a second generation of TestExecute's functions, from
// fresh kernels (nothing may depend on pointer identity or map order), is
// byte for byte the first.
func TestDeterministic(t *testing.T) {
	_, a := executeSource(t)
	b, err := Generate(testHeader, testFuncs(buildKernels(t)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two runs generated different bytes")
	}
}

func TestErrors(t *testing.T) {
	k := buildKernels(t)[0]
	for _, c := range []struct {
		funcs []target.Func
		want  string
	}{
		{[]target.Func{{Kernel: k, H: 64, ISA: target.NEON}}, "neonLayerNorm64: ISA neon is not an amd64 vector target"},
		{[]target.Func{{Kernel: k, H: 64, ISA: target.Go}}, "not an amd64 vector target"},
		{[]target.Func{{Kernel: k, H: -1, ISA: target.AVX2}}, "out of range"},
		{[]target.Func{{Kernel: k, H: 1 << 29, ISA: target.AVX2}}, "out of range"},
		{[]target.Func{{Kernel: k, H: 8, ISA: target.AVX2}, {Kernel: k, H: 8, ISA: target.AVX2}}, "avx2LayerNorm8: generated twice"},
		{[]target.Func{{H: 8, ISA: target.AVX2}}, "no kernel"},
		{[]target.Func{{Kernel: k, H: 12, ISA: target.AVX2}, {Kernel: k, H: 12, ISA: target.AVX2, NT: true}}, "no non-temporal variant at hidden size 12"},
		{[]target.Func{{Kernel: k, H: 24, ISA: target.AVX512}, {Kernel: k, H: 24, ISA: target.AVX512, NT: true}}, "no non-temporal variant at hidden size 24"},
	} {
		_, err := Generate(testHeader, c.funcs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// wideKernel loads a parameter n times before adding the loads up, so
// that n vectors are live at once (loads are not merged).
func wideKernel(t *testing.T, n int) *ir.Kernel {
	b := ir.NewBuilder("Wide", "dst = n*p")
	dst := b.Array("dst", ir.RowOut, "")
	p := b.Array("p", ir.Param, "")
	b.Loop(func(l *ir.LoopBuilder) {
		var vs []ir.V
		for range n {
			vs = append(vs, l.Load(p))
		}
		s := vs[len(vs)-1]
		for i := len(vs) - 2; i >= 0; i-- {
			s = l.Add(s, vs[i])
		}
		l.Store(dst, s)
	})
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRegisterGuard: an AVX2 function needing 20 live vectors would get
// Y16+ from avo's allocator, and Generate must refuse it, naming the
// function (the liveness bound does, before the allocator runs).
// The same kernel is fine for AVX-512, and 12 live vectors fit AVX2.
func TestRegisterGuard(t *testing.T) {
	wide := wideKernel(t, 20)
	_, err := Generate(testHeader, []target.Func{{Kernel: wide, H: 8, ISA: target.AVX2}})
	if err == nil || !strings.Contains(err.Error(), "avx2Wide8") || !strings.Contains(err.Error(), "register guard") {
		t.Fatalf("AVX2 with 20 live vectors: error %v, want the register guard naming avx2Wide8", err)
	}
	if _, err := Generate(testHeader, []target.Func{{Kernel: wide, H: 16, ISA: target.AVX512}}); err != nil {
		t.Errorf("AVX-512 with 20 live vectors: %v", err)
	}
	if _, err := Generate(testHeader, []target.Func{{Kernel: wideKernel(t, 12), H: 8, ISA: target.AVX2}}); err != nil {
		t.Errorf("AVX2 with 12 live vectors: %v", err)
	}
}

// TestRegisterGuardDirect runs the guard on hand-built functions: mask
// registers in AVX2 code, and 256-bit ops on Y16+ (AVX512VL) in AVX-512 code.
func TestRegisterGuardDirect(t *testing.T) {
	build := func(name string, insts ...func() (*avoir.Instruction, error)) *avoir.Function {
		fn := avoir.NewFunction(name)
		fn.Attributes = attr.NOSPLIT
		fn.SetSignature(gotypes.NewSignatureVoid())
		for _, mk := range insts {
			i, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			fn.AddInstruction(i)
		}
		ret, _ := x86.RET()
		fn.AddInstruction(ret)
		return fn
	}
	kmov := func() (*avoir.Instruction, error) { return x86.KMOVW(reg.EAX, reg.K1) }
	if _, err := finish(build("avx2Mask", kmov), target.AVX2); err == nil || !strings.Contains(err.Error(), "K1") {
		t.Errorf("mask register in AVX2 code: error %v", err)
	}
	if _, err := finish(build("avx512Mask", kmov), target.AVX512); err != nil {
		t.Errorf("mask register in AVX-512 code: %v", err)
	}
	addY := func() (*avoir.Instruction, error) { return x86.VADDPS(reg.Y17, reg.Y17, reg.Y17) }
	if _, err := finish(build("avx512Y17", addY), target.AVX512); err == nil || !strings.Contains(err.Error(), "AVX512VL") {
		t.Errorf("VADDPS on Y17 in AVX-512 code: error %v", err)
	}
	// VMOVDQU16 has only EVEX forms: on Y17 it is AVX512VL's, which the
	// AVX-512 dispatch checks.
	movY := func() (*avoir.Instruction, error) { return x86.VMOVDQU16(reg.Y17, reg.Y3) }
	if _, err := finish(build("avx512MovY17", movY), target.AVX512); err != nil {
		t.Errorf("VMOVDQU16 on Y17 in AVX-512 code: %v", err)
	}
	addS := func() (*avoir.Instruction, error) { return x86.VADDSS(reg.X17, reg.X17, reg.X17) }
	if _, err := finish(build("avx512X17", addS), target.AVX512); err != nil {
		t.Errorf("VADDSS on X17 in AVX-512 code: %v", err)
	}
	if _, err := finish(build("avx2X17", addS), target.AVX2); err == nil || !strings.Contains(err.Error(), "X17") {
		t.Errorf("VADDSS on X17 in AVX2 code: error %v", err)
	}
}

// TestLiveBound: n vectors loaded, then summed, are all live after the
// last load; the bound refuses 17 on AVX2 and 33 on AVX-512 before the
// allocator runs, and lets 16 and 32 through to it (which fits them).
func TestLiveBound(t *testing.T) {
	build := func(n int, isa target.ISA) *avoir.Function {
		fn := avoir.NewFunction(fmt.Sprintf("live%d", n))
		fn.Attributes = attr.NOSPLIT
		fn.SetSignature(gotypes.NewSignatureVoid())
		add := func(i *avoir.Instruction, err error) {
			if err != nil {
				t.Fatal(err)
			}
			fn.AddInstruction(i)
		}
		regs := reg.NewCollection()
		vs := make([]reg.VecVirtual, n)
		for i := range vs {
			vs[i] = regs.YMM()
			if isa == target.AVX512 {
				vs[i] = regs.ZMM()
			}
			add(x86.VMOVUPS(operand.Mem{Base: reg.RAX, Disp: 64 * i}, vs[i]))
		}
		for i := 1; i < n; i++ {
			add(x86.VADDPS(vs[i], vs[0], vs[0]))
		}
		add(x86.VMOVUPS(vs[0], operand.Mem{Base: reg.RAX}))
		add(x86.RET())
		return fn
	}
	for _, c := range []struct {
		isa    target.ISA
		n      int
		refuse bool
	}{
		{target.AVX2, 16, false}, {target.AVX2, 17, true},
		{target.AVX512, 32, false}, {target.AVX512, 33, true},
	} {
		_, err := finish(build(c.n, c.isa), c.isa)
		switch {
		case c.refuse && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d vectors live", c.n))):
			t.Errorf("%s, %d live vectors: error %v, want the liveness bound", c.isa, c.n, err)
		case !c.refuse && err != nil:
			t.Errorf("%s, %d live vectors: %v", c.isa, c.n, err)
		}
	}
}

// TestResidentRow checks that short AVX-512 rows are read once: x is
// loaded by the first loop only, although all three loops use it. It
// counts the loads of the loop over single rows.
func TestResidentRow(t *testing.T) {
	ks := buildKernels(t)
	for _, c := range []struct {
		kernel *ir.Kernel
		h      int
		isa    target.ISA
		loads  int // loads from x per row
	}{
		{ks[0], 64, target.AVX512, 4},      // resident: 4 vectors, once
		{ks[0], 33, target.AVX512, 3},      // resident, with a masked tail vector
		{ks[0], 256, target.AVX512, 16},    // the largest resident row
		{ks[0], 272, target.AVX512, 3 * 5}, // streams: a 4-vector loop and 1 more, in each loop
		{ks[0], 64, target.AVX2, 3 * 8},    // AVX2 streams every loop
		{ks[2], 128, target.AVX512, 8},     // RMSNorm: two loops read x
	} {
		f := target.Func{Kernel: c.kernel, H: c.h, ISA: c.isa}
		src, err := Generate(testHeader, []target.Func{f})
		if err != nil {
			t.Fatal(err)
		}
		text := functions(src)[f.Name()]
		xreg := regexp.MustCompile(`MOVQ\s+x\+\d+\(FP\), (\w+)`).FindStringSubmatch(text)
		if _, single, ok := strings.Cut(text, "\nrow:\n"); ok {
			text = single
		}
		if xreg == nil {
			t.Fatalf("%s: no load of x", f.Name())
		}
		loads := regexp.MustCompile(`(?m)^\s+VMOVUPS(\.Z)?\s+(\d+)?\(`+xreg[1]+`\)`).FindAllString(text, -1)
		if len(loads) != c.loads {
			t.Errorf("%s: %d vector loads from x, want %d", f.Name(), len(loads), c.loads)
		}
	}
}

// functions splits a generated file into its TEXT blocks by name.
func functions(src []byte) map[string]string {
	out := map[string]string{}
	parts := regexp.MustCompile(`(?m)^TEXT ·(\w+)\(SB\)`).FindAllSubmatchIndex(src, -1)
	for i, p := range parts {
		end := len(src)
		if i+1 < len(parts) {
			end = parts[i+1][0]
		}
		out[string(src[p[2]:p[3]])] = string(src[p[0]:end])
	}
	return out
}

// TestNonTemporal checks the shape of NT functions. The loop that stores
// the output is there twice: shifted to the output's alignment, its whole
// vectors stored non-temporally and its two edge vectors under masks, and
// plain, for calls that cannot stream. SFENCE comes before the return. The
// later loops prefetch the rows ahead, moving the prefetch offset by a line
// per line prefetched from each stream. Functions without NT have none of
// that.
func TestNonTemporal(t *testing.T) {
	ks := buildKernels(t)
	for _, c := range []struct {
		kernel    *ir.Kernel
		h         int
		isa       target.ISA
		nt        int  // VMOVNTPS instructions
		prefetchs int  // PREFETCHT1 instructions
		streams   int  // arrays prefetched
		ymm       bool // an AVX-512 function lowered with the AVX2 body (ymmStreamMinH)
	}{
		// LayerNorm: a block loop of 4 and 3 more vectors in the
		// shifted loop; a line per block in loop 1 and both versions of
		// loop 2.
		{ks[0], 4096, target.AVX2, 4 + 3, 3, 1, false},
		{ks[0], 2048, target.AVX512, 4 + 3, 6, 1, false}, // 2 lines per block
		{ks[0], 4096, target.AVX512, 4 + 3, 3, 1, true},  // three passes from ymmStreamMinH: AVX2's body
		{ks[0], 8192, target.AVX512, 4 + 3, 3, 1, true},
		{ks[2], 768, target.AVX2, 4 + 3, 4, 1, false}, // RMSNorm: 2 lines per block, both versions of loop 1
		{ks[2], 768, target.AVX512, 4 + 3, 8, 1, false},
		{ks[2], 4096, target.AVX512, 4 + 3, 8, 1, false},    // two passes: 512-bit at any size
		{ks[5], 768, target.AVX2, 2 * (4 + 3), 6, 2, false}, // AddLayerNormSum: dst and sum; x and f prefetched
		{ks[5], 4096, target.AVX512, 2 * (4 + 3), 6, 2, true},
		{ks[0], 0, target.AVX2, 4 + 1, 4, 1, false}, // run-time h: blocks of 4, then vectors one by one; loop 1 for short rows and in chunks
		{ks[0], 64, target.AVX2, 7, 0, 1, false},    // 8 vectors, one block loop: no prefetch
		{ks[0], 64, target.AVX512, 3, 0, 1, false},
	} {
		nt := target.Func{Kernel: c.kernel.StreamingForm(), H: c.h, ISA: c.isa, NT: true} // as target.Plan
		twin := target.Func{Kernel: c.kernel, H: c.h, ISA: c.isa}
		src, err := Generate(testHeader, []target.Func{twin, nt})
		if err != nil {
			t.Fatal(err)
		}
		fns := functions(src)
		text, plain := fns[nt.Name()], fns[twin.Name()]
		count := func(s, re string) int { return len(regexp.MustCompile(re).FindAllString(s, -1)) }
		if n := count(text, `(?m)^\s+VMOVNTPS\s`); n != c.nt {
			t.Errorf("%s: %d VMOVNTPS, want %d", nt.Name(), n, c.nt)
		}
		edge := `(?m)^\s+VMASKMOVPS\s`
		if c.isa == target.AVX512 && !c.ymm {
			edge = `(?m)^\s+VMOVUPS\s+Z\d+, K\d+, `
		}
		if zmm, want := count(text, `\bZ\d+\b`) > 0, c.isa == target.AVX512 && !c.ymm; zmm != want {
			t.Errorf("%s: ZMM registers %v, want %v", nt.Name(), zmm, want)
		}
		outs := strings.Count(c.kernel.Name, "Sum") + 1 // dst, and sum when stored
		if n, want := count(text, edge), 2*outs; n != want {
			t.Errorf("%s: %d masked edge stores, want %d", nt.Name(), n, want)
		}
		if !strings.Contains(text, "_plain:\n") || !strings.Contains(text, "\tSFENCE\n\tVZEROUPPER\n\tRET\n") || strings.Contains(text, "JMP ·") {
			t.Errorf("%s: want a plain version of the loop and SFENCE before the one return", nt.Name())
		}
		if n := count(text, `PREFETCHT1`); n != c.prefetchs {
			t.Errorf("%s: %d prefetches, want %d", nt.Name(), n, c.prefetchs)
		}
		for _, m := range regexp.MustCompile(`((?:\s+PREFETCHT1 .*\n)+)\s+ADDQ\s+\$\+(\d+), `).FindAllStringSubmatch(text, -1) {
			if lines := strings.Count(m[1], "PREFETCHT1") / c.streams; m[2] != fmt.Sprint(lines*64) {
				t.Errorf("%s: %d lines prefetched per stream, offset moved by %s bytes", nt.Name(), lines, m[2])
			}
		}
		for _, bad := range []string{"VMOVNTPS", "SFENCE", "PREFETCH", "VMASKMOVPS"} {
			if strings.Contains(plain, bad) {
				t.Errorf("%s: has %s", twin.Name(), bad)
			}
		}
	}
}

// TestRowBlocks checks how many rows the block loop sweeps together: up
// to 4, within 16 KiB of each array, fewer when the registers do not
// suffice, none for a run-time H, for NT functions or for rows kept in
// registers. The loops that store go row by row.
func TestRowBlocks(t *testing.T) {
	ks := buildKernels(t)
	for _, c := range []struct {
		f     target.Func
		block int
	}{
		{target.Func{Kernel: ks[0], H: 768, ISA: target.AVX512}, 4},
		{target.Func{Kernel: ks[0], H: 768, ISA: target.AVX2}, 2}, // 4 rows' sums and splats need more than 16 registers
		{target.Func{Kernel: ks[2], H: 768, ISA: target.AVX2}, 4},
		{target.Func{Kernel: ks[2], H: 2048, ISA: target.AVX2}, 2},
		{target.Func{Kernel: ks[0], H: 4096, ISA: target.AVX2}, 1},
		{target.Func{Kernel: ks[0], H: 0, ISA: target.AVX2}, 1},
		{target.Func{Kernel: ks[0], H: 768, ISA: target.AVX2, NT: true}, 1},
		{target.Func{Kernel: ks[0], H: 64, ISA: target.AVX512}, 1}, // resident
	} {
		src, err := Generate(testHeader, []target.Func{c.f})
		if err != nil {
			t.Fatal(err)
		}
		text := functions(src)[c.f.Name()]
		got := 1
		if m := regexp.MustCompile(`// blocks of (\d+) rows`).FindStringSubmatch(text); m != nil {
			fmt.Sscan(m[1], &got)
		}
		if got != c.block {
			t.Errorf("%s: blocks of %d rows, want %d", c.f.Name(), got, c.block)
		}
		// The storing pass (the last) goes row by row in a block.
		storing := strings.Count(c.f.Kernel.Name, "Layer") + 2
		if got > 1 && (strings.Contains(text, fmt.Sprintf("pass %d over %d rows", storing, got)) ||
			!strings.Contains(text, fmt.Sprintf("pass %d over row %d of %d", storing, got, got))) {
			t.Errorf("%s: the storing loop does not go row by row", c.f.Name())
		}
	}
}
