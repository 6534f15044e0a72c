package arm64

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/lowertest"
	"github.com/normgen/normgen/gen/target"
)

// TestChunked checks that a Rows or Segments function sums in chunks
// exactly when a lane's chain could pass ir.SumChunk terms (a run-time h,
// Segments, or a fixed H of more than SumChunk iterations of 4*u
// elements), and in super-chunks exactly when it could pass
// SumChunk*SumTotal; shorter fixed rows keep their plain loop.
func TestChunked(t *testing.T) {
	var funcs []target.Func
	for _, k := range append(testKernels(t)[:3], lowertest.Pressure(t)) {
		for _, h := range []int{0, 5, 1024, 1028, 1040, 5000, 65536, 65552, 70000, 512, 520, 32768, 32776} {
			funcs = append(funcs, target.Func{Kernel: k, H: h, ISA: target.NEON})
		}
	}
	for _, f := range layoutFuncs(t) {
		if f.Kernel.Layout == ir.Segments {
			funcs = append(funcs, f)
		}
	}
	asm, err := generate(header, funcs, firstForm)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range funcs {
		body := funcText(string(asm), f.Name())
		m := regexp.MustCompile(`// ` + f.Name() + ` is [^\n]* (\d) vectors per iteration`).FindStringSubmatch(string(asm))
		if m == nil {
			t.Fatalf("%s: no unroll in its doc", f.Name())
		}
		u, _ := strconv.Atoi(m[1])
		// A sum of one array runs its own unroll (chainBound).
		if m := regexp.MustCompile(`// ` + f.Name() + ` is [^\n]*\((\d) in a sum of one array\)`).FindStringSubmatch(string(asm)); m != nil {
			u, _ = strconv.Atoi(m[1])
		}
		n := f.H / (4 * u)
		chunks := f.H == 0 || n > ir.SumChunk
		super := f.H == 0 || n > ir.SumChunk*ir.SumTotal
		if got := strings.Contains(body, "chunk:"); got != chunks {
			t.Errorf("%s (unroll %d): chunked sums %v, want %v", f.Name(), u, got, chunks)
		}
		if got := strings.Contains(body, "into the super-totals"); got != super {
			t.Errorf("%s (unroll %d): super-chunked sums %v, want %v", f.Name(), u, got, super)
		}
		seen[fmt.Sprint(chunks, super)] = true
	}
	if len(seen) != 3 {
		t.Errorf("the sizes do not cover plain, chunked and super-chunked sums: %v", seen)
	}
}
