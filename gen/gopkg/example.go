package gopkg

import (
	"fmt"
	"math"
	"strings"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// Example is a kernel's runnable Example function in the generated tests:
// one call of its first entry point on small deterministic inputs, whose
// first outputs it prints, rounded so that every instruction set prints
// the same.
type Example struct {
	ExampleName string // Example<entry point>
	ExampleBody string // the statements, tab-indented
	ExampleOut  string // the // Output: text
}

// exampleEps is the run-time epsilon the examples pass.
const exampleEps = 1e-5

// example builds k's Example at its first fixed size, or at the next
// (or at a run-time size) where the first would compute the row another
// way (an ir.SGuard: a row of one value with epsilon 0 is 0/0) or, in
// half storage, round a printed value at a boundary of its format. Its output
// is the IR's float32 evaluation (ir.EvalShape) of the same inputs.
func example(k Kernel) Example {
	for _, h := range k.Sizes {
		if e, ok := exampleAt(k, h); ok {
			return e
		}
	}
	e, ok := exampleAt(k, 0)
	if !ok && target.KernelElem(k.IR).Half() {
		return Example{} // no size prints the same on every ISA: none
	}
	return e
}

// exampleAt is k's Example at size h (0: the run-time entry point); ok
// is false where the evaluation abandoned a row.
func exampleAt(k Kernel, h int) (Example, bool) {
	kern := k.IR
	var (
		n, c, l = 1, h, 3 // tensor shape
		rows    int
		shape   ir.Shape
		sizes   []string // the size arguments of the call
		decl    []string
	)
	switch k.Plan.Form {
	case algo.Rows:
		if h == 0 {
			h = 10
			sizes = []string{"h"}
		}
		rows, shape = 1, ir.Shape{H: h}
		decl = append(decl, fmt.Sprintf("const h = %d // one row of h values", h))
	case algo.Positions:
		if c == 0 {
			c = 4
			sizes = []string{"c"}
		}
		rows, shape = l, ir.Shape{H: c, Stride: l}
	case algo.Channels:
		n, c, l = 2, 3, 2
		sizes = []string{"c"}
		rows, shape = c, ir.Shape{Segs: n, SegLen: l, SegStride: c * l, RowStride: l}
	case algo.Groups:
		per := 2
		if k.Plan.GroupSize > 0 {
			per = k.Plan.GroupSize
		}
		g := k.Plan.GroupCount
		if g == 0 {
			g = 2
		}
		c = g * per
		sizes = []string{"c"}
		rows, shape = g, ir.Shape{Segs: per, SegLen: l, SegStride: l, RowStride: per * l}
	}
	if k.Plan.Form.Tensor() {
		sizes = append(sizes, "l")
		decl = append(decl, fmt.Sprintf("const n, c, l = %d, %d, %d // an [N, C, L] tensor", n, c, l))
	}
	length := func(a ir.Array) (int, string) {
		switch {
		case !k.Plan.Form.Tensor() && (a.Role == ir.RowIn || a.Role == ir.RowOut):
			return h, "h"
		case !k.Plan.Form.Tensor() && a.Role == ir.Param:
			return h, "h"
		case !k.Plan.Form.Tensor():
			return 1, "1"
		case a.Role == ir.RowIn || a.Role == ir.RowOut:
			return n * c * l, "n*c*l"
		case a.Role == ir.Param || k.Plan.Form == algo.Channels:
			return c, "c"
		}
		return rows, fmt.Sprint(rows) // per-row values of one image
	}
	// fill is each input's pattern, as Go source and as values.
	fill := func(a ir.Array) (string, func(i int) float32) {
		switch {
		case a.Name == "x":
			return "float32((i*7)%11)*0.25 - 1", func(i int) float32 { return float32((i*7)%11)*0.25 - 1 }
		case a.Name == "runVar" || a.Name == "gamma" || a.Name == "gain":
			return "1 + 0.125*float32(i%3)", func(i int) float32 { return 1 + 0.125*float32(i%3) }
		}
		return "0.5*float32((i*5)%7) - 1.5", func(i int) float32 { return 0.5*float32((i*5)%7) - 1.5 }
	}
	arrays := make([][]float32, len(kern.Arrays))
	var names []string
	for i, a := range kern.Arrays {
		nv, ns := length(a)
		arrays[i] = make([]float32, nv)
		names = append(names, a.Name)
		// A half array is filled as float32 values (a32), which the
		// patterns give exactly in either format, and converted.
		name := a.Name
		if a.Elem.Half() {
			name = a.Name + "32"
			decl = append(decl, fmt.Sprintf("%s := make([]uint16, %s)", a.Name, ns))
		}
		if a.Role == ir.RowOut || a.Role == ir.RowScalarOut {
			if !a.Elem.Half() {
				decl = append(decl, fmt.Sprintf("%s := make([]float32, %s)", a.Name, ns))
			}
			continue
		}
		src, f := fill(a)
		for j := range arrays[i] {
			arrays[i][j] = a.Elem.Round(f(j))
		}
		decl = append(decl, fmt.Sprintf("%s := make([]float32, %s)", name, ns),
			fmt.Sprintf("for i := range %s {\n\t%s[i] = %s\n}", name, name, src))
		if a.Elem.Half() {
			decl = append(decl, fmt.Sprintf("%s(%s, %s)", algo.ConversionName(a.Elem, true), a.Name, name))
		}
	}
	args := append(names, sizes...)
	var evalArgs []float32
	if len(kern.Args) > 0 {
		args = append(args, fmt.Sprint(exampleEps))
		evalArgs = append(evalArgs, float32(exampleEps))
	}
	name := entryName(k, h)
	if len(sizes) > 0 && k.Plan.Form == algo.Rows {
		name = entryName(k, 0)
	}
	if k.Plan.Form.Tensor() {
		name = entryName(k, 0)
		if h > 0 {
			name = entryName(k, h)
			args = append(names, "l")
			if len(kern.Args) > 0 {
				args = append(args, fmt.Sprint(exampleEps))
			}
		}
	}
	decl = append(decl, fmt.Sprintf("%s(%s)", name, strings.Join(args, ", ")))
	// Half storage: the outputs before their rounding, from the kernel
	// with float32 arrays, must lie well clear of the format's rounding
	// boundaries, or an instruction set's last-bit difference could round
	// a printed value the other way.
	var wide [][]float32
	if target.KernelElem(kern).Half() {
		wide = make([][]float32, len(arrays))
		for i := range arrays {
			wide[i] = append([]float32(nil), arrays[i]...)
		}
	}
	done := ir.EvalShape(kern, shape, rows, arrays, evalArgs...)
	d := kern.ArrayIndex("dst")
	dst := arrays[d]
	show := dst[:min(4, len(dst))]
	printed := "dst"
	if e := kern.Arrays[d].Elem; e.Half() {
		printed = "dst32"
		decl = append(decl, fmt.Sprintf("dst32 := make([]float32, len(dst))\n%s(dst32, dst)", algo.ConversionName(e, false)))
		f32 := *kern
		f32.Arrays = append([]ir.Array(nil), kern.Arrays...)
		for i := range f32.Arrays {
			f32.Arrays[i].Elem = ir.F32
		}
		ir.EvalShape(&f32, shape, rows, wide, evalArgs...)
		for _, v := range wide[d][:len(show)] {
			if !printsSame(e, v, decimals(show)) {
				done = -1
			}
		}
	}
	decl = append(decl, fmt.Sprintf("fmt.Printf(\"%%.%df\\n\", %s[:%d])", decimals(show), printed, len(show)))
	return Example{
		ExampleName: "Example" + name,
		ExampleBody: "\t" + strings.ReplaceAll(strings.Join(decl, "\n"), "\n", "\n\t"),
		ExampleOut:  fmt.Sprintf("%.*f", decimals(show), show),
	}, done == rows
}

// printsSame reports whether v, rounded to format e, prints the same
// with d decimals when off by 1e-4 relative first: far beyond any
// instruction set's error before the rounding.
func printsSame(e ir.Elem, v float32, d int) bool {
	off := float32(1e-4 * math.Max(1, math.Abs(float64(v))))
	p := func(v float32) string { return fmt.Sprintf("%.*f", d, e.Round(v)) }
	return p(v-off) == p(v) && p(v+off) == p(v)
}

// decimals is the most decimals (at most 3) that print vs the same even
// when each value is off by far more than any instruction set's error.
func decimals(vs []float32) int {
	for d := 3; d > 0; d-- {
		ok := true
		for _, v := range vs {
			e := 1e-4 * math.Max(1, math.Abs(float64(v)))
			lo, hi := fmt.Sprintf("%.*f", d, float64(v)-e), fmt.Sprintf("%.*f", d, float64(v)+e)
			ok = ok && lo == hi
		}
		if ok {
			return d
		}
	}
	return 0
}
