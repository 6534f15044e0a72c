package amd64

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// TestBF16Shape checks the shape of bf16 code: the loops that only sum
// (ir.Kernel.OrderFree) load each pair of vectors once per half, with no
// widening shuffle; the stores go in pairs (one narrowing and one
// full-width store per two vectors); the later loops prefetch the rows
// ahead (past a block of rows too), a half stream's lines at 2 bytes per
// element. The f16
// form keeps one-vector loads and stores.
func TestBF16Shape(t *testing.T) {
	ln, err := algo.Build(spec.Kernel{Name: "BF16LayerNorm", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Storage: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	f16, err := algo.Build(spec.Kernel{Name: "F16RMSNorm", Epsilon: 1e-6, Scale: true, Storage: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	count := func(s, re string) int { return len(regexp.MustCompile(re).FindAllString(s, -1)) }
	for _, c := range []struct {
		f                target.Func
		split, pairStore string // an instruction of each, or "" for none
		rowBytes         int    // the prefetch offset's bytes per row; 0: no prefetch
		widen            int    // VPMOVZXWD: the output pass's loads, each alone
	}{
		// 4096: the loops over blocks of 4 vectors, no leftovers; the
		// output loop widens each of its 4 vectors alone.
		{target.Func{Kernel: ln, H: 4096, ISA: target.AVX512}, `VPANDD\s+\(`, `VPERMT2W`, 8192, 4},
		{target.Func{Kernel: ln, H: 4096, ISA: target.AVX512BF16}, `VPANDD\s+\(`, `// VCVTNE2PS2BF16 Z`, 8192, 4},
		{target.Func{Kernel: ln, H: 4096, ISA: target.AVX2}, `VPAND\s+\(`, `VPERMQ\s+\$0xd8`, 8192, 4},
		// 768: blocks of 4 rows; the output loop for each row of a
		// block and for a row alone.
		{target.Func{Kernel: ln, H: 768, ISA: target.AVX512}, `VPANDD\s+\(`, `VPERMT2W`, 1536, 5 * 4},
		{target.Func{Kernel: f16, H: 4096, ISA: target.AVX512}, "", "", 8192, 0},
	} {
		src, err := Generate(testHeader, []target.Func{c.f})
		if err != nil {
			t.Fatal(err)
		}
		text := functions(src)[c.f.Name()]
		if text == "" {
			t.Fatalf("%s: not generated", c.f.Name())
		}
		if c.split != "" {
			// Each summing loop: 2 vectors' elements per load, evens by
			// a shift from memory (AVX2: a load and a shift), odds by
			// the mask.
			if n := count(text, c.split); n == 0 {
				t.Errorf("%s: no split loads (%s)", c.f.Name(), c.split)
			}
		}
		if c.pairStore != "" && count(text, c.pairStore) == 0 {
			t.Errorf("%s: no paired store (%s)", c.f.Name(), c.pairStore)
		}
		if c.split == "" && (strings.Contains(text, "VPANDD") || strings.Contains(text, "VPERMT2W")) {
			t.Errorf("%s: f16 split or paired", c.f.Name())
		}
		if n := count(text, `(?m)^\s+VPMOVZXWD\s`); n != c.widen {
			t.Errorf("%s: %d VPMOVZXWD, want %d (the output loop's)", c.f.Name(), n, c.widen)
		}
		if pf := count(text, `PREFETCHT1`); (pf > 0) != (c.rowBytes > 0) {
			t.Errorf("%s: %d prefetches", c.f.Name(), pf)
		}
		if want := fmt.Sprintf("IMUL3Q  $+%d,", c.rowBytes); c.rowBytes > 0 && !strings.Contains(text, want) {
			t.Errorf("%s: the prefetch offset is not 2 bytes per element (%s)", c.f.Name(), want)
		}
	}
}
