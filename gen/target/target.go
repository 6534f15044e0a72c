// Package target names the instruction sets normgen lowers to and the
// conventions every lowering shares: function names, signatures and the
// CPU features a kernel needs at run time.
package target

import (
	"fmt"
	"strings"

	"github.com/normgen/normgen/gen/ir"
)

// ISA is one lowering target.
type ISA int

const (
	AVX512 ISA = iota // amd64, AVX-512F (+VL, DQ, BW), 512-bit vectors, masked tails
	AVX2              // amd64, AVX2 + FMA, 256-bit vectors
	NEON              // arm64 ASIMD, 128-bit vectors
	Go                // pure Go: the fallback and the reference every ISA is tested against
)

// All lists every ISA, in dispatch preference order within an architecture.
var All = []ISA{AVX512, AVX2, NEON, Go}

// Name is the spelling used in specs and documentation.
func (i ISA) Name() string { return [...]string{"avx512", "avx2", "neon", "purego"}[i] }

// prefix starts the unexported function names of this ISA's kernels.
func (i ISA) prefix() string { return [...]string{"avx512", "avx2", "neon", "go"}[i] }

// GOARCH is the architecture whose assembly holds this ISA ("" for pure Go).
func (i ISA) GOARCH() string { return [...]string{"amd64", "amd64", "arm64", ""}[i] }

// Assembly reports whether the ISA is lowered to assembly.
func (i ISA) Assembly() bool { return i != Go }

func (i ISA) String() string { return i.Name() }

// Parse reads an ISA's spec spelling.
func Parse(s string) (ISA, error) {
	for _, i := range All {
		if i.Name() == s {
			return i, nil
		}
	}
	names := make([]string, len(All))
	for j, i := range All {
		names[j] = i.Name()
	}
	return 0, fmt.Errorf("unknown target %q; allowed: %s", s, strings.Join(names, ", "))
}

// Func is one generated implementation: a kernel, specialised for a fixed
// hidden size H (or H taken at run time when H is 0), lowered to one ISA.
type Func struct {
	Kernel *ir.Kernel
	H      int
	ISA    ISA
	// NT asks for non-temporal (streaming) stores of the row outputs, for
	// outputs too large to stay in cache (see NTMinBytes). Only where
	// ISA.NonTemporal(Kernel.Layout, H) says so. Same signature and results as the
	// function without NT, which it falls back to when the outputs are not
	// aligned for streaming stores.
	NT bool
}

// Name is the unexported Go name of the implementation, e.g. avx2RMSNorm4096
// or, for run-time H, avx2RMSNormAny; NT variants end in NT
// (avx2RMSNorm4096NT).
func (f Func) Name() string {
	name := f.ISA.prefix() + f.Kernel.Name + SizeSuffix(f.H)
	if f.NT {
		name += "NT"
	}
	return name
}

// NTMinBytes is the size of a call's row outputs (all of them together,
// in bytes) from which the dispatch chooses a function's NT variant:
// streaming stores bypass the caches, which pays for outputs larger than
// the caches keep (no read for ownership, no eviction of the inputs) and
// costs dearly for outputs that would have stayed in L2.
const NTMinBytes = 1 << 20

// NonTemporal reports whether the ISA has NT variants of kernels of layout
// l at row length h (0: chosen at run time): amd64's vector ISAs, for
// contiguous rows (ir.Rows) when every row starts at the same alignment as
// the first (4h a multiple of the vector size; checked at run time for
// h = 0).
func (i ISA) NonTemporal(l ir.Layout, h int) bool {
	if l != ir.Rows {
		return false
	}
	switch i {
	case AVX512:
		return h%16 == 0
	case AVX2:
		return h%8 == 0
	}
	return false
}

// SizeSuffix is what follows a kernel's name in its entry points for size h.
func SizeSuffix(h int) string {
	if h == 0 {
		return "Any"
	}
	return fmt.Sprint(h)
}

// AsmSignature is the Go signature of an assembly implementation: one
// *float32 per array (the first element; never nil: the wrapper returns
// before calling when there are no rows), then rows, then the shape of the
// call (ir.Shape) as its layout needs it:
//
//	ir.Rows:     rows[, h]                                 h when H is 0
//	ir.Columns:  rows[, h], stride                         h when H is 0
//	ir.Segments: rows, segs, seglen, segstride, rowstride  (H is always 0)
//
// rows >= 1, every count >= 1 and every array long enough, all checked by
// the Go wrapper before the call. It returns k <= rows: rows 0..k-1 are
// completed and rows k.. are untouched. k < rows means that row k was
// abandoned by an ir.SGuard (in the Columns layout, a row of the vector
// block holding k), or that the function left the rows from k to its
// caller (a Columns lowering may leave a tail narrower than a vector): the
// caller computes row k in pure Go and calls again for the rows after it.
func (f Func) AsmSignature() string {
	names := make([]string, len(f.Kernel.Arrays))
	for i, a := range f.Kernel.Arrays {
		names[i] = a.Name
	}
	sig := "func(" + strings.Join(names, ", ") + " *float32, rows int"
	if shape := ShapeArgs(f.Kernel.Layout, f.H); len(shape) > 0 {
		sig += ", " + strings.Join(shape, ", ") + " int"
	}
	return sig + ") int"
}

// ShapeArgs names the int arguments that follow rows in the functions of a
// kernel of layout l at size h (0: chosen at run time), in order: the
// fields of ir.Shape the layout uses. The pure-Go functions take them as
// for h = 0.
func ShapeArgs(l ir.Layout, h int) []string {
	var args []string
	switch l {
	case ir.Segments:
		return []string{"segs", "seglen", "segstride", "rowstride"}
	case ir.Columns:
		args = []string{"stride"}
	}
	if h == 0 {
		args = append([]string{"h"}, args...)
	}
	return args
}
