// Package target holds the table of the instruction sets normgen lowers to
// (isa.go), the plan of the implementations a kernel gets (plan.go) and
// the conventions every lowering shares: function names and signatures.
package target

import (
	"fmt"
	"strings"

	"github.com/normgen/normgen/gen/ir"
)

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
	return table[f.ISA].Prefix + f.Kernel.Name + SizeSuffix(f.H) + f.suffix()
}

// VariantSuffixes lists what ends the names of each variant of a
// function: none for the plain one, "NT" for streaming stores.
func VariantSuffixes() []string { return []string{"", "NT"} }

func (f Func) suffix() string {
	if f.NT {
		return "NT"
	}
	return ""
}

// Label names the implementation in the generated tests: the ISA's name,
// and the variant ("avx2-nt").
func (f Func) Label() string {
	if s := f.suffix(); s != "" {
		return f.ISA.Name() + "-" + strings.ToLower(s)
	}
	return f.ISA.Name()
}

// NTMinBytes is the size of a call's row outputs (all of them together,
// in bytes) from which the dispatch chooses a function's NT variant:
// streaming stores bypass the caches, which pays for outputs larger than
// the caches keep (no read for ownership, no eviction of the inputs) and
// costs dearly for outputs that would have stayed in L2.
const NTMinBytes = 1 << 20

// SizeSuffix is what follows a kernel's name in its entry points for size h.
func SizeSuffix(h int) string {
	if h == 0 {
		return "Any"
	}
	return fmt.Sprint(h)
}

// AsmSignature is the Go signature of an assembly implementation: one
// *float32 (*uint16 for half storage) per array (the first element; never nil: the wrapper returns
// before calling when there are no rows), then rows, then the shape of the
// call (ir.Shape) as its layout needs it:
//
//	ir.Rows:     rows[, h]                                 h when H is 0
//	ir.Columns:  rows[, h], stride                         h when H is 0
//	ir.Segments: rows, segs, seglen, segstride, rowstride  (H is always 0)
//
// then the kernel's float32 scalar arguments (ir.Kernel.Args: eps).
// rows >= 1, every count >= 1 and every array long enough, all checked by
// the Go wrapper before the call. It returns k <= rows: rows 0..k-1 are
// completed and rows k.. are untouched, except for row k's outputs
// stored before its guard (those ir.Kernel.Fallback reads). k < rows means that row k was
// abandoned by an ir.SGuard (in the Columns layout, a row of the vector
// block holding k), or that the function left the rows from k to its
// caller (a Columns lowering may leave a tail narrower than a vector): the
// caller computes row k in pure Go and calls again for the rows after it.
func (f Func) AsmSignature() string {
	sig := "func("
	arrays := f.Kernel.Arrays
	for i, a := range arrays {
		sig += a.Name
		switch {
		case i+1 < len(arrays) && arrays[i+1].Elem.Half() == a.Elem.Half():
			sig += ", " // grouped with the next, as gofmt writes it
		case a.Elem.Half():
			sig += " *uint16, "
		default:
			sig += " *float32, "
		}
	}
	sig += "rows int"
	if shape := ShapeArgs(f.Kernel.Layout, f.H); len(shape) > 0 {
		sig += ", " + strings.Join(shape, ", ") + " int"
	}
	if args := ArgNames(f.Kernel); len(args) > 0 {
		sig += ", " + strings.Join(args, ", ") + " float32"
	}
	return sig + ") int"
}

// ArgNames names the kernel's float32 arguments, which follow the shape
// in every function of the kernel and in its entry points.
func ArgNames(k *ir.Kernel) []string {
	var out []string
	for _, a := range k.Args {
		out = append(out, a.Name)
	}
	return out
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
