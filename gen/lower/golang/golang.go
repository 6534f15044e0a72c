// Package golang lowers an ir.Kernel to pure Go: the fallback on every
// architecture, the implementation selected by the purego build tag, and
// the reference the assembly kernels are fuzzed against.
//
// One function per kernel serves every row length: pure Go gains nothing
// from a constant H that is worth the extra code. Kernels of float32 get
// the float32 form: the assembly's arithmetic, its sums in float32 blocks
// added in float64, as fast as scalar Go gets, over rows and segments
// (blocked.go) or tiles of columns (columns.go); half storage too over
// rows and segments, its loads widened and its stores rounded. The rows
// a guard rejects (and half storage in columns) get the float64 form
// (loads widen, stores round to float32), whose statistics cannot
// overflow or underflow where float32 ones can, which is why the
// assembly hands such rows (ir.SGuard) to it too.
package golang

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// Func returns the pure-Go implementation of k, named
// target.Func{Kernel: k, ISA: target.Go}.Name(), with the signature
// func(<arrays> []float32, rows int, <target.ShapeArgs(k.Layout, 0)> int,
// <target.ArgNames(k)> float32): for contiguous rows
// func(<arrays> []float32, rows, h int).
func Func(k *ir.Kernel) jen.Code {
	if ColumnTiles(k) && !pass.HasGuard(k) {
		return columnsFunc(k)
	}
	if ColumnTiles(k) {
		return jen.Add(columnsFunc(k)).Line().Line().Add(float64Func(k, Float64Name(k)))
	}
	if !Blocked(k) {
		return float64Func(k, target.Func{Kernel: k, ISA: target.Go}.Name())
	}
	code := jen.Add(blockedFunc(k))
	if pass.HasGuard(k) {
		// The functions the rows a guard rejects go to (Fallback): k's, or
		// its fallback's and its streaming form's.
		for _, g := range []*ir.Kernel{k.Fallback, k.Streaming} {
			if g != nil {
				code = code.Line().Line().Add(float64Func(g, Float64Name(g)))
			}
		}
		if k.Fallback == nil {
			code = code.Line().Line().Add(float64Func(k, Float64Name(k)))
		}
	}
	return code
}

// float64Func is the float64 form of k, named name.
func float64Func(k *ir.Kernel, name string) jen.Code {
	l := newLowering(k)
	var body []jen.Code
	if l.invLen != "" {
		n := jen.Id("h")
		if k.Layout == ir.Segments {
			n = jen.Id("segs").Op("*").Id("seglen")
		}
		body = append(body, jen.Id(l.invLen).Op(":=").Lit(1).Op("/").Float64().Call(n))
	}
	rowBody := l.rowSlices()
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			if st.Code == ir.SGuard {
				continue // float64 statistics stay in range: nothing to hand back
			}
			if c := l.scalar(st); c != nil {
				rowBody = append(rowBody, c)
			}
		case *ir.Loop:
			rowBody = append(rowBody, l.loop(st)...)
		}
	}
	body = append(body, jen.For(
		jen.Id("r").Op(":=").Lit(0), jen.Id("r").Op("<").Id("rows"), jen.Id("r").Op("++"),
	).Block(rowBody...))

	doc := jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc)
	if name != (target.Func{Kernel: k, ISA: target.Go}).Name() {
		doc = jen.Commentf("%s is the pure-Go %s in float64, for the rows whose float32", name, k.Name).Line().
			Comment("statistics a guard rejects: " + k.Doc + ".")
	}
	return doc.Line().Func().Id(name).Params(l.params()...).Block(body...)
}

// params is the parameter list of the pure-Go functions.
func (l *lowering) params() []jen.Code {
	k := l.k
	params := ArrayParams(k.Arrays, l.arrayName)
	ints := []jen.Code{jen.Id("rows")}
	for _, a := range target.ShapeArgs(k.Layout, 0) {
		ints = append(ints, jen.Id(a))
	}
	params = append(params, jen.List(ints...).Int())
	if names := target.ArgNames(k); len(names) > 0 {
		var args []jen.Code
		for _, n := range names {
			args = append(args, jen.Id(n))
		}
		params = append(params, jen.List(args...).Float32())
	}
	return params
}

// ArrayParams declares the arrays as slices of their storage: []float32,
// or []uint16 for a half-precision format, consecutive ones of a type
// grouped as gofmt would.
func ArrayParams(arrays []ir.Array, name func(int) string) []jen.Code {
	params := make([]jen.Code, 0, len(arrays)+1)
	for i, a := range arrays {
		p := jen.Id(a.Name)
		if name != nil {
			p = jen.Id(name(i))
		}
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
	k      *ir.Kernel
	arrays []string // the arrays' parameter names
	// The scalars the row loop does not assign: a sum is its accumulator,
	// 1/n the variable invLen names before the loop, an unnamed constant
	// whose literal is exact that literal.
	alias  map[ir.S]string
	sums   map[ir.S]bool   // aliases of float64 totals (the float32 form converts them)
	invLen string          // the name of 1/n, "" if unused
	f32    bool            // the float32 form (blocked.go)
	taken  map[string]bool // the names of the kernel's values and arrays
	// perColumn are the values a loop of the tiled Columns form reads
	// per column, as <name>Col (columns.go).
	perColumn map[ir.S]bool
	// colSums are the column sums the float32 form adds to besides the
	// IR's (FusedFunc), all in one loop; colAt, the element of sum name's
	// chain being written.
	colSums []colSum
	colAt   func(name string) *jen.Statement
	// rowFunc: the float32 form's body is one row's (row r), a guard
	// returns false instead of calling the float64 form (FusedFunc).
	rowFunc bool
	// cols are the arrays of the tiled Columns form's per-column values
	// (columns.go).
	cols *colArrays
	// helpers are the tiled form's functions of a group of lines, and of
	// a run of per-column statements; colFunc: the code being written is
	// such a function's, over the tile's parts of the arrays.
	helpers []columnsHelperFunc
	colFunc bool
}

// valueNames are the Go names of k's scalar and vector values.
func valueNames(k *ir.Kernel) map[string]bool {
	taken := map[string]bool{}
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			if st.Dst >= 0 && st.Code != ir.SStore && st.Code != ir.SGuard {
				taken[k.ScalarName(st.Dst)] = true
			}
		case *ir.Loop:
			for i := range st.Ops {
				taken[vecName(st, ir.V(i))] = true
			}
		}
	}
	return taken
}

func newLowering(k *ir.Kernel) *lowering {
	l := &lowering{k: k, alias: map[ir.S]string{}, sums: map[ir.S]bool{}}
	taken := valueNames(k)
	// An array named like a value (rstd, the rstd stored into it) takes
	// a plural: rstds[r] = float32(rstd).
	for _, a := range k.Arrays {
		plural := a.Name + "s"
		if strings.HasSuffix(a.Name, "s") || strings.HasSuffix(a.Name, "x") {
			plural = a.Name + "es"
		}
		name := a.Name
		for n := 1; taken[name]; n++ {
			name = plural
			if n > 1 {
				name = fmt.Sprintf("%s%d", plural, n)
			}
		}
		taken[name] = true
		l.arrays = append(l.arrays, name)
	}
	consts := map[ir.S]string{} // unnamed constants whose literal is exact
	for _, st := range k.Body {
		st, ok := st.(*ir.Scalar)
		if !ok {
			continue
		}
		switch st.Code {
		case ir.SSum:
			if k.AccName(st.Acc) == k.ScalarName(st.Dst) {
				l.alias[st.Dst] = k.ScalarName(st.Dst)
				l.sums[st.Dst] = true
			}
		case ir.SInvLen:
			if l.invLen == "" {
				l.invLen = k.ScalarName(st.Dst)
				l.alias[st.Dst] = l.invLen
			}
		case ir.SConst:
			if lit, ok := exactLit(st.Const); ok && st.Name == "" {
				consts[st.Dst] = lit
			}
		}
	}
	// A literal inlined into an operation of constants alone would make
	// it a constant expression, evaluated exactly rather than in float64:
	// such operands keep their variables.
	allConst := func(args []ir.S) {
		for _, a := range args {
			if _, ok := consts[a]; !ok {
				return
			}
		}
		for _, a := range args {
			delete(consts, a)
		}
	}
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Scalar:
			if len(st.Args) > 1 {
				allConst(st.Args)
			}
		case *ir.Loop:
			for _, op := range st.Ops {
				var args []ir.S
				for _, a := range op.Args {
					if src := st.Ops[a]; src.Code == ir.VSplat {
						args = append(args, src.Scalar)
					} else {
						args = nil
						break
					}
				}
				if op.Code == ir.VFMA && args == nil {
					// a*b + c folds a*b when both are constants.
					if x, y := st.Ops[op.Args[0]], st.Ops[op.Args[1]]; x.Code == ir.VSplat && y.Code == ir.VSplat {
						args = []ir.S{x.Scalar, y.Scalar}
					}
				}
				if len(args) > 1 {
					allConst(args)
				}
			}
		}
	}
	for s, lit := range consts {
		l.alias[s] = lit
	}
	l.taken = taken
	return l
}

// exactLit is the shortest literal of c, and whether as a float64 it is
// c exactly (1, 0.5, 1e-10 is not).
func exactLit(c float32) (string, bool) {
	if math.IsInf(float64(c), 0) || c != c {
		return "", false
	}
	lit := strconv.FormatFloat(float64(c), 'g', -1, 32)
	v, err := strconv.ParseFloat(lit, 64)
	return lit, err == nil && v == float64(c)
}

// arrayName is the parameter name of array a.
func (l *lowering) arrayName(a int) string { return l.arrays[a] }

// value is how scalar s reads as an operand.
func (l *lowering) value(s ir.S) *jen.Statement {
	if l.perColumn[s] {
		return jen.Id(l.colName(s) + "Col")
	}
	if a, ok := l.alias[s]; ok {
		if l.f32 && l.sums[s] {
			return jen.Float32().Call(jen.Id(a))
		}
		return jen.Op(a)
	}
	return jen.Id(l.k.ScalarName(s))
}

// vecName is the local of loop value v, when it needs one.
func vecName(lp *ir.Loop, v ir.V) string {
	if n := lp.Ops[v].Name; n != "" {
		return n
	}
	return fmt.Sprintf("v%d", v)
}

// rowName is the local slice holding the current row (the current
// segment, in the Segments layout) of array a.
func (l *lowering) rowName(a int) string {
	arr := l.k.Arrays[a]
	if arr.Role == ir.Param || l.k.Layout == ir.Columns {
		return l.arrayName(a)
	}
	return l.arrayName(a) + "Row"
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
		return jen.Id(l.arrayName(a)).Index(jen.Id("r").Op("*").Id("rowstride"))
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
		if l.f32 {
			// Of length h, visibly to the compiler.
			out = append(out, jen.Id(l.rowName(i)).Op(":=").Id(l.arrayName(i)).Index(
				jen.Id("r").Op("*").Id("h"), jen.Empty()).Index(jen.Empty(), jen.Id("h")))
			continue
		}
		out = append(out, jen.Id(l.rowName(i)).Op(":=").Id(l.arrayName(i)).Index(
			jen.Id("r").Op("*").Id("h"), jen.Id("r").Op("*").Id("h").Op("+").Id("h")))
	}
	return out
}

// constLit spells the float32 constant c as a float64 expression of
// exactly its value: a float literal where one is exact (1.0), else the
// float32 literal widened.
func constLit(c float32) jen.Code {
	if lit, ok := exactLit(c); ok {
		if !strings.ContainsAny(lit, ".e") {
			lit += ".0"
		}
		return jen.Op(lit)
	}
	return jen.Float64().Call(jen.Float32().Call(jen.Op(strconv.FormatFloat(float64(c), 'g', -1, 32))))
}

// scalar is the statement of st, or nil for a scalar with an alias.
func (l *lowering) scalar(st *ir.Scalar) jen.Code {
	if _, ok := l.alias[st.Dst]; ok && st.Code != ir.SStore {
		return nil
	}
	arg := func(i int) *jen.Statement { return l.value(st.Args[i]) }
	if l.f32 {
		return l.scalar32(st, arg)
	}
	var v jen.Code
	switch st.Code {
	case ir.SConst:
		v = constLit(st.Const)
	case ir.SArg:
		v = jen.Float64().Call(jen.Id(l.k.Args[st.Arg].Name))
	case ir.SInvLen:
		v = jen.Id(l.invLen)
	case ir.SSum:
		v = jen.Id(l.k.AccName(st.Acc))
	case ir.SAdd:
		v = arg(0).Op("+").Add(arg(1))
	case ir.SSub:
		v = arg(0).Op("-").Add(arg(1))
	case ir.SMul:
		// Rounded, as in the float32 form.
		v = jen.Float64().Call(arg(0).Op("*").Add(arg(1)))
	case ir.SDiv:
		v = arg(0).Op("/").Add(arg(1))
	case ir.SSqrt:
		v = jen.Qual("math", "Sqrt").Call(arg(0))
	case ir.SLoad:
		if l.k.Arrays[st.Array].Role == ir.RowIn {
			v = jen.Float64().Call(widen(l.k.Arrays[st.Array].Elem, l.first(st.Array))) // the row's first element
		} else {
			v = jen.Float64().Call(jen.Id(l.arrayName(st.Array)).Index(jen.Id("r")))
		}
	case ir.SStore:
		return jen.Id(l.arrayName(st.Array)).Index(jen.Id("r")).Op("=").Float32().Call(arg(0))
	default:
		panic(fmt.Sprintf("golang: unknown scalar op %v", st.Code))
	}
	return jen.Id(l.k.ScalarName(st.Dst)).Op(":=").Add(v)
}

// scalar32 is scalar in the float32 form: the IR's float32 arithmetic.
func (l *lowering) scalar32(st *ir.Scalar, arg func(int) *jen.Statement) jen.Code {
	var v jen.Code
	switch st.Code {
	case ir.SConst:
		v = jen.Float32().Call(jen.Op(strconv.FormatFloat(float64(st.Const), 'g', -1, 32)))
	case ir.SArg:
		v = jen.Id(l.k.Args[st.Arg].Name)
	case ir.SInvLen:
		v = jen.Id(l.invLen)
	case ir.SSum:
		v = jen.Float32().Call(jen.Id(l.k.AccName(st.Acc)))
	case ir.SAdd:
		v = arg(0).Op("+").Add(arg(1))
	case ir.SSub:
		v = arg(0).Op("-").Add(arg(1))
	case ir.SMul:
		// Rounded: a later statement's add must not fuse with it.
		v = jen.Float32().Call(arg(0).Op("*").Add(arg(1)))
	case ir.SDiv:
		v = arg(0).Op("/").Add(arg(1))
	case ir.SSqrt:
		// float64's square root rounded to float32 is float32's.
		v = jen.Float32().Call(jen.Qual("math", "Sqrt").Call(jen.Float64().Call(arg(0))))
	case ir.SLoad:
		e := l.k.Arrays[st.Array].Elem
		if l.k.Arrays[st.Array].Role == ir.RowIn {
			v = widen(e, l.first(st.Array))
		} else {
			v = widen(e, jen.Id(l.arrayName(st.Array)).Index(jen.Id("r")))
		}
	case ir.SStore:
		return jen.Id(l.arrayName(st.Array)).Index(jen.Id("r")).Op("=").Add(narrow(l.k.Arrays[st.Array].Elem, arg(0)))
	default:
		panic(fmt.Sprintf("golang: unknown scalar op %v", st.Code))
	}
	return jen.Id(l.k.ScalarName(st.Dst)).Op(":=").Add(v)
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
	for _, c := range l.colSums {
		if c.lp == lp {
			uses[c.v]++
		}
	}
	if l.f32 {
		var code []jen.Code
		if len(loopAccs(lp)) > 0 {
			code = l.blockLoop(lp, uses)
		} else {
			body, _ := l.elementOps(lp, uses, l.at32, "")
			code = []jen.Code{jen.For(jen.Id("i").Op(":=").Range().Id(l.rowLen())).Block(body...)}
		}
		if l.k.Layout != ir.Segments {
			return code
		}
		// The totals outlive the segments.
		n := len(loopAccs(lp))
		return append(code[:n:n], l.segments(lp, code[n:]))
	}
	var pre, body []jen.Code
	expr := make([]*jen.Statement, len(lp.Ops))
	ref := func(v ir.V) *jen.Statement { return jen.Null().Add(expr[v]) }
	// A product that enters a sum is rounded by a conversion: no compiler
	// fuses the two (the same bits on every platform).
	term := func(v ir.V) *jen.Statement {
		if lp.Ops[v].Code == ir.VMul {
			return jen.Float64().Call(ref(v))
		}
		return ref(v)
	}
	for i, op := range lp.Ops {
		if op.Code == ir.VAcc || op.Code == ir.VAccMul {
			if !containsAcc(lp.Ops[:i], op.Acc) {
				pre = append(pre, jen.Var().Id(l.k.AccName(op.Acc)).Float64())
			}
		}
		var e *jen.Statement
		switch op.Code {
		case ir.VLoad:
			e = jen.Float64().Call(widen(l.k.Arrays[op.Array].Elem, l.element(op.Array)))
		case ir.VSplat:
			e = l.value(op.Scalar)
		case ir.VAdd:
			e = jen.Parens(term(op.Args[0]).Op("+").Add(term(op.Args[1])))
		case ir.VSub:
			e = jen.Parens(term(op.Args[0]).Op("-").Add(term(op.Args[1])))
		case ir.VMul:
			e = ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))
		case ir.VFMA:
			e = jen.Parens(jen.Float64().Call(ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))).Op("+").Add(term(op.Args[2])))
		case ir.VStore:
			// Half storage: float64 to float32, then to the format: the
			// assembly's one rounding of its float32 result.
			body = append(body, l.element(op.Array).Op("=").Add(narrow(l.k.Arrays[op.Array].Elem, jen.Float32().Call(ref(op.Args[0])))))
			continue
		case ir.VAcc:
			body = append(body, jen.Id(l.k.AccName(op.Acc)).Op("+=").Add(term(op.Args[0])))
			continue
		case ir.VAccMul:
			body = append(body, jen.Id(l.k.AccName(op.Acc)).Op("+=").Float64().Call(ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))))
			continue
		default:
			panic(fmt.Sprintf("golang: unknown vector op %v", op.Code))
		}
		if _, lit := l.alias[op.Scalar]; uses[i] > 1 && !(op.Code == ir.VSplat && lit) {
			name := vecName(lp, ir.V(i))
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
			seg = append(seg, jen.Id(l.rowName(a)).Op(":=").Id(l.arrayName(a)).Index(
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
