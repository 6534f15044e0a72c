package golang

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// The float32 form of a kernel: the IR's arithmetic in float32, as the
// assembly does it, written for what the Go compiler makes fast in scalar
// code. Each sum adds blocks of blockLen elements in several independent
// float32 lanes (the latency of one float add would otherwise bound the
// loop), each lane adding at most blockLen terms, and the block's lanes
// go into a float64 total: chains are shorter than the summation policy
// allows, and nothing accumulates rounding across blocks. Every row array
// is resliced to exactly h values, so the loops carry no bounds checks.
// A row whose guard fails (a float32 statistic out of range) is computed
// by the float64 form.

// blockLen is the elements of one block of a sum: the policy's chunk.
const blockLen = pass.ChunkTerms

// Blocked reports whether k gets the float32 form: contiguous rows (or
// rows of contiguous segments) of float32 or half storage (loads widen,
// stores round, as in the float64 form), and float32 sums only where a
// guard catches their failure or, in a kernel of sums alone (a tensor
// backward's parameter gradients), where the assembly has none either.
// The float64 form then remains, named Float64Name(k), for the rows the
// guards reject.
func Blocked(k *ir.Kernel) bool {
	if k.Layout != ir.Rows && k.Layout != ir.Segments {
		return false
	}
	for _, a := range k.Arrays {
		if a.Elem != ir.F32 && !a.Elem.Half() {
			return false
		}
	}
	return k.NumAccs == 0 || pass.HasGuard(k) || sumsOnly(k)
}

// sumsOnly reports whether k's only outputs are per-row sums: a row's
// sum overflowing float32 is stored as such by the float64 form too.
func sumsOnly(k *ir.Kernel) bool {
	for _, a := range k.Arrays {
		if a.Role == ir.RowOut {
			return false
		}
	}
	return true
}

// rowLen is the length of the contiguous runs the float32 form sums in
// blocks: the row, or the segment.
func (l *lowering) rowLen() string {
	if l.k.Layout == ir.Segments {
		return "seglen"
	}
	return "h"
}

// Float64Name is the function that computes a row with float64
// statistics: the one an assembly kernel hands the rows its guard
// rejects to. It is the kernel's pure-Go function itself unless that is
// the float32 form.
func Float64Name(k *ir.Kernel) string {
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	if (Blocked(k) || ColumnTiles(k)) && pass.HasGuard(k) {
		return name + "F64"
	}
	return name
}

// Fallback is the function an assembly kernel of k hands the rows its
// guard rejects to (Float64Name of k, or of k.Fallback where k stores row
// outputs first), and the indices in k.Arrays of the arrays it takes, in
// its order; its other arguments are k's (the row count, the shape, the
// scalar arguments).
func Fallback(k *ir.Kernel) (name string, arrays []int) {
	fb := k
	if k.Fallback != nil {
		fb = k.Fallback
	}
	for _, a := range fb.Arrays {
		arrays = append(arrays, k.ArrayIndex(a.Name))
	}
	return Float64Name(fb), arrays
}

// blockedFunc is the float32 form of k under the name of its pure-Go
// function (see Func).
func blockedFunc(k *ir.Kernel) jen.Code {
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	l := newLowering(k)
	l.f32 = true
	body, statsFn := l.blockedBody()
	doc := jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc).Line().
		Comment("Float32 arithmetic, its sums in float32 blocks added in float64.")
	if pass.HasGuard(k) {
		name, _ := Fallback(k)
		doc = doc.Line().Commentf("A row whose statistics leave float32's range takes %s.", name)
	}
	fn := doc.Line().Func().Id(name).Params(l.params()...).Block(body...)
	if statsFn != nil {
		fn = fn.Line().Line().Add(statsFn)
	}
	return fn
}

// blockedBody is the body of the float32 form of l.k, and the function
// of its fused statistics pass if it has one (nil otherwise).
func (l *lowering) blockedBody() (body []jen.Code, statsFn jen.Code) {
	k := l.k
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	n := l.rowLen()
	fu := fuse(k)
	if l.invLen != "" && fu.leaves(k, l.readsInvLen) {
		count := jen.Id("h")
		if k.Layout == ir.Segments {
			count = jen.Id("segs").Op("*").Id("seglen")
		}
		body = append(body, jen.Id(l.invLen).Op(":=").Lit(1).Op("/").Float32().Call(count))
	}
	if fu.leaves(k, accumulates) {
		what := "row"
		if k.Layout == ir.Segments {
			what = "segment"
		}
		body = append(body, jen.Commentf("Sums run over whole blocks, then over the rest of the %s.", what),
			jen.Id("whole").Op(":=").Id(n).Op("-").Id(n).Op("%").Lit(blockLen))
	}
	var params []jen.Code
	for i, a := range k.Arrays {
		if a.Role == ir.Param && k.Layout == ir.Rows {
			params = append(params, jen.Id(l.arrayName(i)).Op("=").Id(l.arrayName(i)).Index(jen.Empty(), jen.Id("h")))
		}
	}
	for _, c := range l.colSums {
		params = append(params, jen.Id(c.name).Op("=").Id(c.name).Index(jen.Empty(), jen.Id("h")))
	}
	if len(params) > 0 {
		body = append(body, jen.Comment("Lengths the compiler can see: no bounds checks in the loops."))
		body = append(body, params...)
	}
	rowBody := l.rowSlices()
	var before, after []jen.Code // around the loop over the rows
	for i, st := range k.Body {
		if fu != nil && i == fu.at {
			call, pre, fn := l.fusedStats(fu, name+"Moments")
			rowBody, before, statsFn = append(rowBody, call...), append(before, pre...), fn
		}
		if fu != nil && fu.skip[i] {
			continue
		}
		switch st := st.(type) {
		case *ir.Scalar:
			if st.Code == ir.SGuard {
				rowBody = append(rowBody, l.guard(st))
				continue
			}
			if c := l.scalar(st); c != nil {
				rowBody = append(rowBody, c)
			}
		case *ir.Loop:
			if c := fu.corrected(st); c >= 0 {
				row, decl, last := l.outputLoop(fu, st, c)
				rowBody = append(rowBody, row...)
				before, after = append(before, decl...), append(after, last...)
				continue
			}
			rowBody = append(rowBody, l.loop(st)...)
		}
	}
	if l.rowFunc {
		if len(before)+len(after) > 0 || statsFn != nil {
			panic("golang: " + k.Name + ": a row function cannot hold a fused statistics pass")
		}
		return append(body, rowBody...), nil
	}
	body = append(body, before...)
	body = append(body, jen.For(
		jen.Id("r").Op(":=").Lit(0), jen.Id("r").Op("<").Id("rows"), jen.Id("r").Op("++"),
	).Block(rowBody...))
	return append(body, after...), statsFn
}

// hasAccLoop reports whether a loop of k accumulates.
func hasAccLoop(k *ir.Kernel) bool {
	for _, st := range k.Body {
		if accumulates(st) {
			return true
		}
	}
	return false
}

// accumulates reports whether st is a loop that accumulates.
func accumulates(st ir.Stmt) bool {
	lp, ok := st.(*ir.Loop)
	return ok && len(loopAccs(lp)) > 0
}

// loopAccs are the accumulators lp adds to, in order of first use.
func loopAccs(lp *ir.Loop) []int {
	var out []int
	for i, op := range lp.Ops {
		if (op.Code == ir.VAcc || op.Code == ir.VAccMul) && !containsAcc(lp.Ops[:i], op.Acc) {
			out = append(out, op.Acc)
		}
	}
	return out
}

// guard hands the row to the float64 form when st's value is out of
// range (or NaN), and goes on with the next row.
func (l *lowering) guard(st *ir.Scalar) jen.Code {
	if l.rowFunc {
		v := l.value(st.Args[0])
		return jen.If(jen.Op("!").Parens(jen.Add(v).Op(">=").Add(bound32(st.Lo)).Op("&&").Add(v).Op("<=").Add(bound32(st.Hi)))).Block(
			jen.Return(jen.False()))
	}
	var args []jen.Code
	seg := l.k.Layout == ir.Segments
	name, arrays := Fallback(l.k)
	for _, i := range arrays {
		a := l.k.Arrays[i]
		switch {
		case seg && (a.Role == ir.RowIn || a.Role == ir.RowOut):
			args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r").Op("*").Id("rowstride"), jen.Empty()))
		case a.Role == ir.RowIn || a.Role == ir.RowOut:
			args = append(args, jen.Id(l.rowName(i)))
		case a.Role.PerRow():
			args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r"), jen.Empty()))
		case seg:
			args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r").Op("*").Id("segs"), jen.Empty()))
		default:
			args = append(args, jen.Id(l.arrayName(i)))
		}
	}
	args = append(args, jen.Lit(1))
	for _, a := range target.ShapeArgs(l.k.Layout, 0) {
		args = append(args, jen.Id(a))
	}
	for _, n := range target.ArgNames(l.k) {
		args = append(args, jen.Id(n))
	}
	v := l.value(st.Args[0])
	return jen.If(jen.Op("!").Parens(jen.Add(v).Op(">=").Add(bound32(st.Lo)).Op("&&").Add(v).Op("<=").Add(bound32(st.Hi)))).Block(
		jen.Id(name).Call(args...),
		jen.Continue(),
	)
}

// bound32 spells a guard's bound as a constant that converts to exactly
// that float32.
func bound32(c float32) jen.Code {
	switch c {
	case math.MaxFloat32:
		return jen.Qual("math", "MaxFloat32")
	case -math.MaxFloat32:
		return jen.Op("-").Qual("math", "MaxFloat32")
	}
	return jen.Op(strconv.FormatFloat(float64(c), 'g', -1, 32))
}

// lanes is how a block loop splits its sums: each of an accumulator's
// lanes adds per step the sum of terms of its elements (lane,
// lane+lanes, ...), so a step covers lanes*terms elements. One sum gets
// four lanes, enough to hide the latency of an add; a loop with two sums
// or more, two each, which keeps every value in a register on amd64.
func lanes(accs int) (n, terms int) {
	if accs == 1 {
		return 4, 2
	}
	return 2, 2
}

// lanes is lanes for l's kernel: a backward row kernel (rowFunc) with
// two or more sums keeps one lane per sum, four terms a step: its loop
// also holds the row's statistics and, fused, column chains' values, and
// with two lanes a sum the compiler spilled lanes on every step. The
// adds are the same in number; the chain's latency, one add per four
// elements, stays under the loop's add throughput.
func (l *lowering) lanes(accs int) (n, terms int) {
	if l.rowFunc && accs >= 2 {
		return 1, 4
	}
	return lanes(accs)
}

// blockLoop is an accumulating loop in the float32 form: whole blocks
// with their lanes, the float64 totals, then the rest of the row.
func (l *lowering) blockLoop(lp *ir.Loop, uses []int) []jen.Code {
	accs := loopAccs(lp)
	var out []jen.Code
	for _, a := range accs {
		out = append(out, jen.Var().Id(l.k.AccName(a)).Float64())
	}
	blk, totals := l.blockBody(lp, uses, jen.Id("i"))
	for _, a := range accs {
		blk = append(blk, jen.Id(l.k.AccName(a)).Op("+=").Float64().Call(totals[a]))
	}
	out = append(out, jen.For(jen.Id("i").Op(":=").Lit(0), jen.Id("i").Op("<").Id("whole"), jen.Id("i").Op("+=").Lit(blockLen)).Block(blk...))
	return append(out, l.tailLoop(lp, uses)...)
}

// tailLoop is the rest of the row after the whole blocks: fewer than
// blockLen elements, one float32 chain per sum, added to the totals.
func (l *lowering) tailLoop(lp *ir.Loop, uses []int) []jen.Code {
	accs := loopAccs(lp)
	var out, tail []jen.Code
	var tailIds []jen.Code
	for _, a := range accs {
		tailIds = append(tailIds, jen.Id(tailName(l.k.AccName(a))))
	}
	out = append(out, jen.Var().List(tailIds...).Float32())
	l.colAt = func(name string) *jen.Statement { return jen.Id(name).Index(jen.Id("i")) }
	code, accTerms := l.elementOps(lp, uses, l.at32, "")
	tail = append(tail, code...)
	for _, a := range accs {
		for _, term := range accTerms[a] {
			tail = append(tail, jen.Id(tailName(l.k.AccName(a))).Op("+=").Add(term))
		}
	}
	out = append(out, jen.For(jen.Id("i").Op(":=").Id("whole"), jen.Id("i").Op("<").Id(l.rowLen()), jen.Id("i").Op("++")).Block(tail...))
	for _, a := range accs {
		out = append(out, jen.Id(l.k.AccName(a)).Op("+=").Float64().Call(jen.Id(tailName(l.k.AccName(a)))))
	}
	return out
}

// blockBody is one block of an accumulating loop, the block starting at
// element start (nil: the row's first): the arrays as arrays of blockLen
// values, the lanes and their loop; totals are the float32 sums of each
// accumulator's lanes.
func (l *lowering) blockBody(lp *ir.Loop, uses []int, start *jen.Statement) (blk []jen.Code, totals map[int]*jen.Statement) {
	accs := loopAccs(lp)
	nLanes, _ := l.lanes(len(accs))
	for a := range l.k.Arrays {
		if loopUses(lp, a) && !l.segParam(a) {
			row := jen.Id(l.rowName(a))
			if start != nil {
				row = row.Index(start.Clone(), jen.Empty())
			}
			blk = append(blk, jen.Id(l.blockName(a)).Op(":=").Parens(jen.Op("*").Index(jen.Lit(blockLen)).Add(elemType(l.k.Arrays[a].Elem))).Call(row))
		}
	}
	for _, c := range l.colSums {
		if c.lp == lp {
			blk = append(blk, jen.Id(c.name+"Block").Op(":=").Parens(jen.Op("*").Index(jen.Lit(blockLen)).Float32()).Call(jen.Id(c.name).Index(start.Clone(), jen.Empty())))
		}
	}
	for _, a := range accs {
		var ids []jen.Code
		for ln := range nLanes {
			ids = append(ids, jen.Id(laneName(l.k.AccName(a), ln)))
		}
		blk = append(blk, jen.Var().List(ids...).Float32())
	}
	blk = append(blk, l.laneLoop(lp, uses))
	totals = map[int]*jen.Statement{}
	for _, a := range accs {
		var ids []*jen.Statement
		for ln := range nLanes {
			ids = append(ids, jen.Id(laneName(l.k.AccName(a), ln)))
		}
		totals[a] = pairwise(ids)
	}
	return blk, totals
}

// laneLoop is the loop over one block's elements, each step adding to
// every lane of every accumulator.
func (l *lowering) laneLoop(lp *ir.Loop, uses []int) jen.Code {
	accs := loopAccs(lp)
	nLanes, terms := l.lanes(len(accs))
	step := nLanes * terms
	// Each element's locals are numbered, dev0 to dev7; or lettered, sA
	// to sH, where a number would make a value's name (the pivot x0) or
	// one that reads as unnamed (s0, v10).
	suffix := strconv.Itoa
	for i, op := range lp.Ops {
		n := vecName(lp, ir.V(i))
		if l.taken[n+"0"] || l.taken[n+strconv.Itoa(step-1)] || n == "s" || n == "acc" || op.Name == "" {
			suffix = func(e int) string { return string(rune('A' + e)) }
		}
	}
	var stepBody []jen.Code
	elems := make([]map[int][]jen.Code, step) // per element: each acc's terms
	for e := range step {
		idx := jen.Id("j")
		if e > 0 {
			idx = jen.Id("j").Op("+").Lit(e)
		}
		at := func(a int) *jen.Statement {
			if l.segParam(a) {
				return jen.Id(l.segName(a))
			}
			return jen.Id(l.blockName(a)).Index(idx.Clone())
		}
		l.colAt = func(name string) *jen.Statement { return jen.Id(name + "Block").Index(idx.Clone()) }
		code, accTerms := l.elementOps(lp, uses, at, suffix(e))
		stepBody = append(stepBody, code...)
		elems[e] = accTerms
		if nLanes == 1 {
			// The step's sum of each accumulator grows element by element,
			// in the order of the one-expression form (the same bits): the
			// terms need not all stay live to the step's end.
			for _, a := range accs {
				for t, term := range accTerms[a] {
					op := "+="
					if e == 0 && t == 0 {
						op = ":="
					}
					stepBody = append(stepBody, jen.Id(stepName(l.k.AccName(a))).Op(op).Add(term))
				}
			}
		}
	}
	if nLanes == 1 {
		for _, a := range accs {
			stepBody = append(stepBody, jen.Id(laneName(l.k.AccName(a), 0)).Op("+=").Id(stepName(l.k.AccName(a))))
		}
		return jen.For(jen.Id("j").Op(":=").Lit(0), jen.Id("j").Op("<").Lit(blockLen), jen.Id("j").Op("+=").Lit(step)).Block(stepBody...)
	}
	for _, a := range accs {
		for ln := range nLanes {
			var sum *jen.Statement
			for t := range terms {
				for _, term := range elems[ln+t*nLanes][a] {
					if sum == nil {
						sum = jen.Add(term)
					} else {
						sum = sum.Op("+").Add(term)
					}
				}
			}
			stepBody = append(stepBody, jen.Id(laneName(l.k.AccName(a), ln)).Op("+=").Add(sum))
		}
	}
	return jen.For(jen.Id("j").Op(":=").Lit(0), jen.Id("j").Op("<").Lit(blockLen), jen.Id("j").Op("+=").Lit(step)).Block(stepBody...)
}

// elementOps writes the loop's operations on one element, whose value in
// array a is at(a): its stores, and its locals (suffixed with suffix),
// and returns the terms each accumulator adds.
func (l *lowering) elementOps(lp *ir.Loop, uses []int, at func(a int) *jen.Statement, suffix string) ([]jen.Code, map[int][]jen.Code) {
	var code []jen.Code
	terms := map[int][]jen.Code{}
	expr := make([]*jen.Statement, len(lp.Ops))
	// An inlined product as the right operand of a product keeps its
	// parentheses: float32 products do not associate.
	product := make([]bool, len(lp.Ops))
	ref := func(v ir.V) *jen.Statement { return jen.Null().Add(expr[v]) }
	right := func(v ir.V) *jen.Statement {
		if product[v] {
			return jen.Parens(ref(v))
		}
		return ref(v)
	}
	// Go may fuse a product into the sum it enters (FMA on arm64, ppc64,
	// s390x, riscv64, amd64 with GOAMD64=v3), and does so or not by the
	// shape of the code around it (a load folded into the product stops
	// it): two forms promised the same bits (Parallel's kernels and the
	// serial fused one; a row's output pass alone or beside another) then
	// differ. A conversion rounds a product that enters a sum, as the
	// IR's separate operations do everywhere (the Go spec: an explicit
	// conversion prevents fusion).
	rounded := make([]bool, len(lp.Ops))
	for _, op := range lp.Ops {
		switch op.Code {
		case ir.VAdd, ir.VSub, ir.VAcc:
			for _, a := range op.Args {
				rounded[a] = true
			}
		case ir.VFMA:
			rounded[op.Args[2]] = true
		}
	}
	for _, c := range l.colSums {
		if c.lp == lp {
			rounded[c.v] = true
		}
	}
	for i, op := range lp.Ops {
		var e *jen.Statement
		switch op.Code {
		case ir.VAcc:
			terms[op.Acc] = append(terms[op.Acc], ref(op.Args[0]))
			continue
		case ir.VAccMul:
			terms[op.Acc] = append(terms[op.Acc], jen.Float32().Call(ref(op.Args[0]).Op("*").Add(right(op.Args[1]))))
			continue
		case ir.VStore:
			code = append(code, at(op.Array).Op("=").Add(narrow(l.k.Arrays[op.Array].Elem, ref(op.Args[0]))))
			continue
		case ir.VLoad:
			e = at(op.Array)
			if !l.segParam(op.Array) { // segments() widened it
				e = widen(l.k.Arrays[op.Array].Elem, e)
			}
		case ir.VMul:
			e = ref(op.Args[0]).Op("*").Add(right(op.Args[1]))
			product[i] = true
			if rounded[i] {
				e = jen.Float32().Call(e)
				product[i] = false
			}
		default:
			e = l.vecExpr(op, ref)
		}
		if _, lit := l.alias[op.Scalar]; uses[i] > 1 && !(op.Code == ir.VSplat && lit) {
			name := vecName(lp, ir.V(i)) + suffix
			code = append(code, jen.Id(name).Op(":=").Add(e))
			e = jen.Id(name)
			product[i] = false
		}
		expr[i] = e
		for _, c := range l.colSums {
			if c.lp == lp && c.v == ir.V(i) {
				code = append(code, l.colAt(c.name).Op("+=").Add(ref(c.v)))
			}
		}
	}
	return code, terms
}

// vecExpr is the expression of an arithmetic or splat op.
func (l *lowering) vecExpr(op ir.VecOp, ref func(ir.V) *jen.Statement) *jen.Statement {
	switch op.Code {
	case ir.VSplat:
		return l.value(op.Scalar)
	case ir.VAdd:
		return jen.Parens(ref(op.Args[0]).Op("+").Add(ref(op.Args[1])))
	case ir.VSub:
		return jen.Parens(ref(op.Args[0]).Op("-").Add(ref(op.Args[1])))
	case ir.VMul:
		return ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))
	case ir.VFMA:
		// Rounded twice, as on every platform (see elementOps).
		return jen.Parens(jen.Float32().Call(ref(op.Args[0]).Op("*").Add(ref(op.Args[1]))).Op("+").Add(ref(op.Args[2])))
	}
	panic(fmt.Sprintf("golang: unknown vector op %v", op.Code))
}

// at32 is array a's value at element i in the float32 form.
func (l *lowering) at32(a int) *jen.Statement {
	if l.segParam(a) {
		return jen.Id(l.segName(a))
	}
	return jen.Id(l.rowName(a)).Index(jen.Id("i"))
}

// segParam reports a Param array of the Segments layout: one value per
// segment, read once per segment into segName(a).
func (l *lowering) segParam(a int) bool {
	return l.k.Layout == ir.Segments && l.k.Arrays[a].Role == ir.Param
}

func (l *lowering) segName(a int) string { return l.arrayName(a) + "Seg" }

// segments wraps a sweep's code in the loop over the row's segments,
// each row array resliced to the segment and each Param array's value
// for it read, for the arrays lp uses.
func (l *lowering) segments(lp *ir.Loop, code []jen.Code) jen.Code {
	seg := []jen.Code{jen.Id("base").Op(":=").Id("r").Op("*").Id("rowstride").Op("+").Id("k").Op("*").Id("segstride")}
	for a, arr := range l.k.Arrays {
		if !loopUses(lp, a) {
			continue
		}
		switch {
		case arr.Role == ir.RowIn || arr.Role == ir.RowOut:
			seg = append(seg, jen.Id(l.rowName(a)).Op(":=").Id(l.arrayName(a)).Index(jen.Id("base"), jen.Empty()).Index(jen.Empty(), jen.Id("seglen")))
		case arr.Role == ir.Param:
			seg = append(seg, jen.Id(l.segName(a)).Op(":=").Add(widen(arr.Elem, jen.Id(l.arrayName(a)).Index(jen.Id("r").Op("*").Id("segs").Op("+").Id("k")))))
		}
	}
	return jen.For(jen.Id("k").Op(":=").Range().Id("segs")).Block(append(seg, code...)...)
}

// elemType is the Go type of one stored value of storage e.
func elemType(e ir.Elem) *jen.Statement {
	if e.Half() {
		return jen.Uint16()
	}
	return jen.Float32()
}

// blockName is the local holding the current block of array a.
func (l *lowering) blockName(a int) string { return l.arrayName(a) + "Block" }

func laneName(acc string, lane int) string { return acc + strconv.Itoa(lane) }

func tailName(acc string) string { return acc + "Tail" }

func stepName(acc string) string { return acc + "Step" }

// pairwise adds ids as a balanced tree: ((a + b) + (c + d)).
func pairwise(ids []*jen.Statement) *jen.Statement {
	if len(ids) == 1 {
		return ids[0]
	}
	h := len(ids) / 2
	l, r := pairwise(ids[:h]), pairwise(ids[h:])
	if h > 1 {
		l = jen.Parens(l)
	}
	if len(ids)-h > 1 {
		r = jen.Parens(r)
	}
	return jen.Null().Add(l).Op("+").Add(r)
}
