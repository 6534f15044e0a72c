// Package golang lowers an ir.Kernel to pure Go: the fallback on every
// architecture, the implementation selected by the purego build tag, and
// the reference the assembly kernels are fuzzed against.
//
// One function per kernel serves every row length: pure Go gains nothing
// from a constant H that is worth the extra code. Arithmetic is in float64
// (loads widen, stores round to float32), which costs nothing in scalar
// code: the fallback is at least as accurate as the vector kernels, and its
// statistics cannot overflow or underflow where the float32 ones of the
// assembly can, which is why the assembly hands such rows (ir.SGuard) to it.
package golang

import (
	"fmt"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// Func returns the pure-Go implementation of k, named
// target.Func{Kernel: k, ISA: target.Go}.Name(), with the signature
// func(<arrays> []float32, rows int, <target.ShapeArgs(k.Layout, 0)> int):
// for contiguous rows func(<arrays> []float32, rows, h int).
func Func(k *ir.Kernel) jen.Code {
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	l := &lowering{k: k}
	params := ArrayParams(k.Arrays)
	ints := []jen.Code{jen.Id("rows")}
	for _, a := range target.ShapeArgs(k.Layout, 0) {
		ints = append(ints, jen.Id(a))
	}
	params = append(params, jen.List(ints...).Int())

	var body []jen.Code
	if l.uses(ir.SInvLen) {
		n := jen.Id("h")
		if k.Layout == ir.Segments {
			n = jen.Id("segs").Op("*").Id("seglen")
		}
		body = append(body, jen.Id("invLen").Op(":=").Lit(1).Op("/").Float64().Call(n))
	}
	rowBody := l.rowSlices()
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			if st.Code == ir.SGuard {
				continue // float64 statistics stay in range: nothing to hand back
			}
			rowBody = append(rowBody, l.scalar(st))
		case *ir.Loop:
			rowBody = append(rowBody, l.loop(st)...)
		}
	}
	body = append(body, jen.For(
		jen.Id("r").Op(":=").Lit(0), jen.Id("r").Op("<").Id("rows"), jen.Id("r").Op("++"),
	).Block(rowBody...))

	return jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc).Line().
		Func().Id(name).Params(params...).Block(body...)
}

// ArrayParams declares the arrays as slices of their storage: []float32,
// or []uint16 for a half-precision format, consecutive ones of a type
// grouped as gofmt would.
func ArrayParams(arrays []ir.Array) []jen.Code {
	params := make([]jen.Code, 0, len(arrays)+1)
	for i, a := range arrays {
		p := jen.Id(a.Name)
		if i == len(arrays)-1 || arrays[i+1].Elem.Half() != a.Elem.Half() {
			p = p.Add(ElemSlice(a.Elem))
		}
		params = append(params, p)
	}
	return params
}

// ElemSlice is the Go slice type of an array of storage e.
func ElemSlice(e ir.Elem) *jen.Statement {
	if e.Half() {
		return jen.Index().Uint16()
	}
	return jen.Index().Float32()
}

// widen reads a stored value as float32 (exactly); narrow rounds a
// float32 to the storage. The helpers are HalfHelpers'.
func widen(e ir.Elem, v *jen.Statement) *jen.Statement {
	switch e {
	case ir.BF16:
		return jen.Id("widenBF16").Call(v)
	case ir.F16:
		return jen.Id("widenF16").Call(v)
	}
	return v
}

func narrow(e ir.Elem, v *jen.Statement) *jen.Statement {
	switch e {
	case ir.BF16:
		return jen.Id("narrowBF16").Call(v)
	case ir.F16:
		return jen.Id("narrowF16").Call(v)
	}
	return v
}

type lowering struct {
	k *ir.Kernel
}

func (l *lowering) uses(code ir.ScalarCode) bool {
	for _, st := range l.k.Body {
		if s, ok := st.(*ir.Scalar); ok && s.Code == code {
			return true
		}
	}
	return false
}

// rowName is the local slice holding the current row (the current
// segment, in the Segments layout) of array a.
func (l *lowering) rowName(a int) string {
	arr := l.k.Arrays[a]
	if arr.Role == ir.Param || l.k.Layout == ir.Columns {
		return arr.Name
	}
	return arr.Name + "Row"
}

// element is array a's value at the loop's current element: i of the
// row (or of the segment); in the Columns layout, line i of column r; a
// Segments parameter holds one value per segment.
func (l *lowering) element(a int) *jen.Statement {
	switch {
	case l.k.Layout == ir.Segments && l.k.Arrays[a].Role == ir.Param:
		return jen.Id(l.rowName(a)).Index(jen.Id("r").Op("*").Id("segs").Op("+").Id("k"))
	case l.k.Layout == ir.Columns && l.k.Arrays[a].Role != ir.Param:
		return jen.Id(l.rowName(a)).Index(jen.Id("i").Op("*").Id("stride").Op("+").Id("r"))
	}
	return jen.Id(l.rowName(a)).Index(jen.Id("i"))
}

// first is the current row's first element of row array a (a pivot).
func (l *lowering) first(a int) *jen.Statement {
	switch l.k.Layout {
	case ir.Columns:
		return jen.Id(l.rowName(a)).Index(jen.Id("r"))
	case ir.Segments:
		return jen.Id(l.k.Arrays[a].Name).Index(jen.Id("r").Op("*").Id("rowstride"))
	}
	return jen.Id(l.rowName(a)).Index(jen.Lit(0))
}

// rowSlices reslices every row array to the current row, which also lets
// the compiler drop most bounds checks in the loops. Columns are indexed
// in place and segments resliced in their loops.
func (l *lowering) rowSlices() []jen.Code {
	var out []jen.Code
	if l.k.Layout != ir.Rows {
		return nil
	}
	for i, a := range l.k.Arrays {
		if a.Role != ir.RowIn && a.Role != ir.RowOut {
			continue
		}
		out = append(out, jen.Id(l.rowName(i)).Op(":=").Id(a.Name).Index(
			jen.Id("r").Op("*").Id("h"), jen.Id("r").Op("*").Id("h").Op("+").Id("h")))
	}
	return out
}

func scalarName(s ir.S) string { return fmt.Sprintf("s%d", s) }
func accName(a int) string     { return fmt.Sprintf("acc%d", a) }

// constLit spells the float32 constant c as a float64 expression of
// exactly its value.
func constLit(c float32) jen.Code {
	return jen.Float64().Call(jen.Float32().Call(jen.Op(strconv.FormatFloat(float64(c), 'g', -1, 32))))
}

func (l *lowering) scalar(st *ir.Scalar) jen.Code {
	arg := func(i int) *jen.Statement { return jen.Id(scalarName(st.Args[i])) }
	var v jen.Code
	switch st.Code {
	case ir.SConst:
		v = constLit(st.Const)
	case ir.SInvLen:
		v = jen.Id("invLen")
	case ir.SSum:
		v = jen.Id(accName(st.Acc))
	case ir.SAdd:
		v = arg(0).Op("+").Add(arg(1))
	case ir.SSub:
		v = arg(0).Op("-").Add(arg(1))
	case ir.SMul:
		v = arg(0).Op("*").Add(arg(1))
	case ir.SDiv:
		v = arg(0).Op("/").Add(arg(1))
	case ir.SSqrt:
		v = jen.Qual("math", "Sqrt").Call(arg(0))
	case ir.SLoad:
		if l.k.Arrays[st.Array].Role == ir.RowIn {
			v = jen.Float64().Call(widen(l.k.Arrays[st.Array].Elem, l.first(st.Array))) // the row's first element
		} else {
			v = jen.Float64().Call(jen.Id(l.k.Arrays[st.Array].Name).Index(jen.Id("r")))
		}
	case ir.SStore:
		return jen.Id(l.k.Arrays[st.Array].Name).Index(jen.Id("r")).Op("=").Float32().Call(arg(0))
	default:
		panic(fmt.Sprintf("golang: unknown scalar op %v", st.Code))
	}
	return jen.Id(scalarName(st.Dst)).Op(":=").Add(v)
}

// loop writes one sweep over the row. Values used once are inlined into
// their use, so the body reads like the formula; values used more than
// once get a local variable.
func (l *lowering) loop(lp *ir.Loop) []jen.Code {
	uses := make([]int, len(lp.Ops))
	for _, op := range lp.Ops {
		for _, a := range op.Args {
			uses[a]++
		}
	}
	var pre, body []jen.Code
	expr := make([]*jen.Statement, len(lp.Ops))
	ref := func(v ir.V) *jen.Statement { return jen.Null().Add(expr[v]) }
	for i, op := range lp.Ops {
		if op.Code == ir.VAcc || op.Code == ir.VAccMul {
			if !containsAcc(lp.Ops[:i], op.Acc) {
				pre = append(pre, jen.Var().Id(accName(op.Acc)).Float64())
			}
		}
		var e *jen.Statement
		switch op.Code {
		case ir.VLoad:
			e = jen.Float64().Call(widen(l.k.Arrays[op.Array].Elem, l.element(op.Array)))
		case ir.VSplat:
			e = jen.Id(scalarName(op.Scalar))
		case ir.VAdd:
			e = jen.Parens(ref(op.Args[0]).Op("+").Add(ref(op.Args[1])))
		case ir.VSub:
			e = jen.Parens(ref(op.Args[0]).Op("-").Add(ref(op.Args[1])))
		case ir.VMul:
			e = ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))
		case ir.VFMA:
			e = jen.Parens(ref(op.Args[0]).Op("*").Add(ref(op.Args[1])).Op("+").Add(ref(op.Args[2])))
		case ir.VStore:
			// Half storage: float64 to float32, then to the format: the
			// assembly's one rounding of its float32 result.
			body = append(body, l.element(op.Array).Op("=").Add(narrow(l.k.Arrays[op.Array].Elem, jen.Float32().Call(ref(op.Args[0])))))
			continue
		case ir.VAcc:
			body = append(body, jen.Id(accName(op.Acc)).Op("+=").Add(ref(op.Args[0])))
			continue
		case ir.VAccMul:
			body = append(body, jen.Id(accName(op.Acc)).Op("+=").Add(ref(op.Args[0])).Op("*").Add(ref(op.Args[1])))
			continue
		default:
			panic(fmt.Sprintf("golang: unknown vector op %v", op.Code))
		}
		if uses[i] > 1 {
			name := fmt.Sprintf("v%d", i)
			body = append(body, jen.Id(name).Op(":=").Add(e))
			e = jen.Id(name)
		}
		expr[i] = e
	}
	if l.k.Layout != ir.Segments {
		return append(pre, jen.For(jen.Id("i").Op(":=").Range().Id("h")).Block(body...))
	}
	// Segments: the row's segments in turn, each resliced.
	var seg []jen.Code
	for a, arr := range l.k.Arrays {
		if (arr.Role == ir.RowIn || arr.Role == ir.RowOut) && loopUses(lp, a) {
			seg = append(seg, jen.Id(l.rowName(a)).Op(":=").Id(arr.Name).Index(
				jen.Id("base"), jen.Id("base").Op("+").Id("seglen")))
		}
	}
	seg = append([]jen.Code{jen.Id("base").Op(":=").Id("r").Op("*").Id("rowstride").Op("+").Id("k").Op("*").Id("segstride")}, seg...)
	seg = append(seg, jen.For(jen.Id("i").Op(":=").Range().Id("seglen")).Block(body...))
	return append(pre, jen.For(jen.Id("k").Op(":=").Range().Id("segs")).Block(seg...))
}

// loopUses reports whether the loop loads or stores array a.
func loopUses(lp *ir.Loop, a int) bool {
	for _, op := range lp.Ops {
		if (op.Code == ir.VLoad || op.Code == ir.VStore) && op.Array == a {
			return true
		}
	}
	return false
}

func containsAcc(ops []ir.VecOp, acc int) bool {
	for _, op := range ops {
		if (op.Code == ir.VAcc || op.Code == ir.VAccMul) && op.Acc == acc {
			return true
		}
	}
	return false
}
