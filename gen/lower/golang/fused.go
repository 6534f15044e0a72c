package golang

import (
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
)

// The float32 form of a mean and variance in one pass. The IR computes
// them in two: sum(s - pivot) for a first estimate of the mean, then the
// deviations around it with their squares, 5 float adds an element where
// scalar Go is bound by its adds. A row of whole blocks is instead summed
// block by block, each block's deviations and squares around a shift in
// float32, the blocks combined in float64 by the parallel-variance update
// (Chan, Golub and LeVeque): with block b of n_b elements, mean m_b and
// squared deviations M2_b joining the n_a elements before it,
//
//	delta = m_b - mean_a,  M2 += M2_b + delta^2 * n_a*n_b/(n_a+n_b).
//
// The first block runs the IR's two passes on its own elements around
// the pivot: its shift is its own mean, to float32 accuracy. Each later
// block is shifted by the mean before the block before it,
// K = float32(mean_a'), a' = n_a - n_{b-1} (the second block: the first
// block's mean), so that its sums need not wait for the float64 update
// of the block before. M2_b = q - d^2/n_b (d, q the block's sums of s-K
// and (s-K)^2) loses what float32 loses on n_b*((m_b-K)^2 + var_b), and
// (m_b-K)^2 <= 2*(m_b-mean_a)^2 + 2*(mean_a-K)^2. The block adds at
// least n_b*var_b + n_b*(m_b-mean_a)^2/2 to M2 (n_a >= n_b); and as
// mean_a - K = (m_{b-1}-K)*n_{b-1}/n_a with n_a >= 2*n_{b-1},
// n_b*(mean_a-K)^2 is at most n_{b-1}*(m_{b-1}-K)^2/4, half of what the
// block before added. So the relative error stays that of the float32
// sums, within a small factor (about 5 where the mean so far gave 2),
// however far the block's mean is from the means before it. A block
// summed unshifted (K = 0) saves the
// subtraction and adds about eps*n_b*K^2 to the error of M2 (eps the
// relative error of a float32 block sum). The row spends a budget on
// it: a block goes unshifted while the sum of n_b*K^2 over the
// unshifted blocks stays at most ln(blocks)*M2_a' (M2_a' <= M2_a, the
// same lag as K), so at most
// ln(n/blockLen)*M2 over the row: eps*ln(n/blockLen) relative, the
// bound a per-block test (K^2 at most M2_a/n_a) gave, now reached by
// rows of |mean| up to sqrt(ln(n/blockLen)) standard deviations where
// that test stopped at one. A constant row stays exact: every shift is
// its value, every deviation 0.
type fusion struct {
	at   int      // the first pass's index in the kernel's body
	skip []bool   // the body statements the fused code replaces
	a, b *ir.Loop // the two passes
	// The values the fused code defines in their place.
	shift, correction, variance ir.S
	devAcc, sqAcc               int // the second pass's accumulators
	// The scalars the loops get their shift from, and the fused code's
	// own: the pivot of the first pass, the shift of the second.
	pivot, pivotShift ir.S
}

// fuse finds the two passes of a mean and variance in k (see gen/algo:
// the pivot's pass, then the deviations'), as the float32 form of the
// Rows layout (and the tiled form of Columns) lowers them; nil if k has
// none.
func fuse(k *ir.Kernel) *fusion {
	if k.Layout != ir.Rows && k.Layout != ir.Columns {
		return nil
	}
	def := map[ir.S]int{} // a scalar's statement
	for i, st := range k.Body {
		if st, ok := st.(*ir.Scalar); ok && st.Code != ir.SStore && st.Code != ir.SGuard {
			def[st.Dst] = i
		}
	}
	scalar := func(s ir.S, code ir.ScalarCode) *ir.Scalar {
		i, ok := def[s]
		if !ok {
			return nil
		}
		if st := k.Body[i].(*ir.Scalar); st.Code == code {
			return st
		}
		return nil
	}
	// sumOf is the scalar SSum of acc assigns and its statement.
	sumOf := func(acc int) (ir.S, int) {
		for i, st := range k.Body {
			if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SSum && st.Acc == acc {
				return st.Dst, i
			}
		}
		return -1, -1
	}
	// averageOf is the scalar sum * invN, if one is.
	averageOf := func(sum ir.S) (ir.S, int) {
		for i, st := range k.Body {
			if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SMul && st.Args[0] == sum && scalar(st.Args[1], ir.SInvLen) != nil {
				return st.Dst, i
			}
		}
		return -1, -1
	}
	// shiftedAcc: lp's accumulation of s - splat(shift) for some shift.
	shiftedAcc := func(lp *ir.Loop, op ir.VecOp) (ir.S, bool) {
		sub := lp.Ops[op.Args[0]]
		if sub.Code != ir.VSub || lp.Ops[sub.Args[1]].Code != ir.VSplat {
			return -1, false
		}
		return lp.Ops[sub.Args[1]].Scalar, true
	}
	for ai, st := range k.Body {
		a, ok := st.(*ir.Loop)
		if !ok || len(loopAccs(a)) != 1 {
			continue
		}
		fu := &fusion{at: ai, a: a, skip: make([]bool, len(k.Body))}
		var pivot ir.S = -1
		accP := -1
		for _, op := range a.Ops {
			if op.Code == ir.VAcc {
				pivot, ok = shiftedAcc(a, op)
				accP = op.Acc
			}
		}
		if !ok || accP < 0 {
			continue
		}
		pivotSum, i1 := sumOf(accP)
		pivotMean, i2 := averageOf(pivotSum)
		if i1 < 0 || i2 < 0 {
			continue
		}
		// shift = pivot + pivotMean, and the loop that deviates from it.
		fu.shift = -1
		for i, st := range k.Body {
			if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SAdd && st.Args[0] == pivot && st.Args[1] == pivotMean {
				fu.shift = st.Dst
				fu.skip[i] = true
			}
		}
		if fu.shift < 0 || ai+1 >= len(k.Body) {
			continue
		}
		fu.pivot = pivot
		fu.skip[ai], fu.skip[i1], fu.skip[i2] = true, true, true
		for bi := ai + 1; bi < len(k.Body) && fu.b == nil; bi++ {
			b, ok := k.Body[bi].(*ir.Loop)
			if !ok {
				continue
			}
			if !fu.matchSecond(k, b, bi, sumOf, averageOf) {
				return nil
			}
		}
		if fu.b == nil || !fu.closed(k) {
			return nil
		}
		fu.pivotShift = ir.S(k.NumScalars) // the alias blockShift
		return fu
	}
	return nil
}

// matchSecond matches the second pass b (body statement bi): the sum of
// dev = s - shift and of dev*dev, and the statistics made of them.
func (fu *fusion) matchSecond(k *ir.Kernel, b *ir.Loop, bi int, sumOf func(int) (ir.S, int), averageOf func(ir.S) (ir.S, int)) bool {
	accs := loopAccs(b)
	if len(accs) != 2 {
		return false
	}
	var dev ir.V = -1
	for _, op := range b.Ops {
		switch op.Code {
		case ir.VAcc:
			dev, fu.devAcc = op.Args[0], op.Acc
		case ir.VAccMul:
			if op.Args[0] != op.Args[1] {
				return false
			}
			fu.sqAcc = op.Acc
		}
	}
	if dev < 0 {
		return false
	}
	sub := b.Ops[dev]
	if sub.Code != ir.VSub || b.Ops[sub.Args[1]].Code != ir.VSplat || b.Ops[sub.Args[1]].Scalar != fu.shift {
		return false
	}
	for _, op := range b.Ops {
		if op.Code == ir.VAccMul && op.Args[0] != dev {
			return false
		}
	}
	devSum, i1 := sumOf(fu.devAcc)
	squareSum, i2 := sumOf(fu.sqAcc)
	correction, i3 := averageOf(devSum)
	meanSquare, i4 := averageOf(squareSum)
	if i1 < 0 || i2 < 0 || i3 < 0 || i4 < 0 {
		return false
	}
	fu.correction = correction
	// variance = meanSquare - correction*correction.
	fu.variance = -1
	for i, st := range k.Body {
		sq, ok := st.(*ir.Scalar)
		if !ok || sq.Code != ir.SMul || sq.Args[0] != correction || sq.Args[1] != correction {
			continue
		}
		for j, st := range k.Body {
			if v, ok := st.(*ir.Scalar); ok && v.Code == ir.SSub && v.Args[0] == meanSquare && v.Args[1] == sq.Dst {
				fu.variance = v.Dst
				fu.skip[i], fu.skip[j] = true, true
			}
		}
	}
	if fu.variance < 0 {
		return false
	}
	fu.b = b
	fu.skip[bi], fu.skip[i1], fu.skip[i2], fu.skip[i3], fu.skip[i4] = true, true, true, true, true
	return true
}

// closed reports whether the statements the fused code replaces define
// nothing the others read but the shift, the correction and the variance.
func (fu *fusion) closed(k *ir.Kernel) bool {
	gone := map[ir.S]bool{}
	for i, st := range k.Body {
		if st, ok := st.(*ir.Scalar); ok && fu.skip[i] && st.Dst != fu.shift && st.Dst != fu.correction && st.Dst != fu.variance {
			gone[st.Dst] = true
		}
	}
	for i, st := range k.Body {
		if fu.skip[i] {
			continue
		}
		switch st := st.(type) {
		case *ir.Scalar:
			for _, a := range st.Args {
				if gone[a] {
					return false
				}
			}
		case *ir.Loop:
			for _, op := range st.Ops {
				if op.Code == ir.VSplat && gone[op.Scalar] {
					return false
				}
			}
		}
	}
	return true
}

// leaves reports whether a statement of k that the fused code does not
// replace (any, with no fusion) satisfies f.
func (fu *fusion) leaves(k *ir.Kernel, f func(ir.Stmt) bool) bool {
	for i, st := range k.Body {
		if (fu == nil || !fu.skip[i]) && f(st) {
			return true
		}
	}
	return false
}

// readsInvLen reports whether st reads 1/h by its name.
func (l *lowering) readsInvLen(st ir.Stmt) bool {
	is := func(s ir.S) bool { return l.alias[s] == l.invLen }
	switch st := st.(type) {
	case *ir.Scalar:
		for _, a := range st.Args {
			if is(a) {
				return true
			}
		}
	case *ir.Loop:
		for _, op := range st.Ops {
			if op.Code == ir.VSplat && is(op.Scalar) {
				return true
			}
		}
	}
	return false
}

// withShift is lp with every splat of scalar from reading scalar to.
func withShift(lp *ir.Loop, from, to ir.S) *ir.Loop {
	out := &ir.Loop{Ops: append([]ir.VecOp(nil), lp.Ops...)}
	for i, op := range out.Ops {
		if op.Code == ir.VSplat && op.Scalar == from {
			out.Ops[i].Scalar = to
		}
	}
	return out
}

// fusedLoop is the first pass a made to sum what the second does: its
// accumulation of dev = s - shift becomes the sums of dev and dev*dev
// into the second pass's accumulators; unshifted, of s and s*s.
func (fu *fusion) fusedLoop(shift ir.S, unshifted bool) *ir.Loop {
	a := withShift(fu.a, fu.pivot, shift)
	var out ir.Loop
	remap := make([]ir.V, len(a.Ops))
	for i, op := range a.Ops {
		if op.Code == ir.VAcc {
			d := remap[op.Args[0]]
			out.Ops = append(out.Ops,
				ir.VecOp{Code: ir.VAcc, Args: []ir.V{d}, Acc: fu.devAcc},
				ir.VecOp{Code: ir.VAccMul, Args: []ir.V{d, d}, Acc: fu.sqAcc})
			continue
		}
		if unshifted && op.Code == ir.VSub && a.Ops[op.Args[1]].Code == ir.VSplat && a.Ops[op.Args[1]].Scalar == shift {
			remap[i] = remap[op.Args[0]]
			continue
		}
		op.Args = append([]ir.V(nil), op.Args...)
		for j, v := range op.Args {
			op.Args[j] = remap[v]
		}
		if op.Code == ir.VSub {
			op.Name = "dev"
		}
		remap[i] = ir.V(len(out.Ops))
		out.Ops = append(out.Ops, op)
	}
	return &out
}

// usesOf counts each value's uses in lp.
func usesOf(lp *ir.Loop) []int {
	uses := make([]int, len(lp.Ops))
	for _, op := range lp.Ops {
		for _, a := range op.Args {
			uses[a]++
		}
	}
	return uses
}

// fusedStats is the float32 form's code for the two passes: a call of
// fn, named name, for the row's mean in runMean and squared deviations
// in runM2, both float64, then the shift, correction and variance the
// rest of the kernel reads. The passes are a function of their own,
// called once a row: its loops hold their sums and shifts in registers,
// where inside the kernel's loop over the rows the Go compiler spilled
// some to the stack to keep the row's other values.
func (l *lowering) fusedStats(fu *fusion, name string) (call, pre []jen.Code, fn jen.Code) {
	k := l.k
	l.alias[fu.pivotShift] = "blockShift"
	devName, sqName := k.AccName(fu.devAcc), k.AccName(fu.sqAcc)
	id := jen.Id
	f64 := func(c jen.Code) *jen.Statement { return jen.Float64().Call(c) }
	first := fu.a
	second := withShift(fu.b, fu.shift, fu.pivotShift)
	shifted := fu.fusedLoop(fu.pivotShift, false)
	unshifted := fu.fusedLoop(fu.pivotShift, true)
	pivotName := k.AccName(loopAccs(first)[0])

	// The first block: the two passes on its elements.
	head, pivotTotals := l.blockBody(first, usesOf(first), nil)
	head = append(head, id("blockShift").Op(":=").Add(l.value(fu.pivot)).Op("+").Parens(pivotTotals[loopAccs(first)[0]]).Op("/").Lit(blockLen))
	blk, totals := l.blockBody(second, usesOf(second), nil)
	head = append(head, blk[len(blk)-3:]...) // the lanes and their loop: the arrays are the first pass's
	head = append(head,
		jen.List(id("blockDev"), id("blockSq")).Op(":=").List(f64(totals[fu.devAcc]), f64(totals[fu.sqAcc])),
		id("runMean").Op("=").Add(f64(id("blockShift"))).Op("+").Id("blockDev").Op("/").Lit(blockLen),
		id("runM2").Op("=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Lit(blockLen))

	// combine adds a block of nb elements after na to the totals.
	combine := func(na, nb *jen.Statement) []jen.Code {
		return []jen.Code{
			jen.List(id("blockDev"), id("blockSq")).Op(":=").List(f64(totals[fu.devAcc]), f64(totals[fu.sqAcc])),
			id("delta").Op(":=").Add(f64(id("blockShift"))).Op("+").Id("blockDev").Op("/").Add(nb.Clone()).Op("-").Id("runMean"),
			id("n").Op(":=").Add(na.Clone()).Op("+").Add(nb.Clone()),
			id("runMean").Op("+=").Id("delta").Op("*").Add(nb.Clone()).Op("/").Id("n"),
			id("runM2").Op("+=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Add(nb.Clone()).
				Op("+").Float64().Call(id("delta").Op("*").Id("delta").Op("*").Parens(jen.Add(na.Clone()).Op("*").Add(nb.Clone()).Op("/").Id("n"))),
		}
	}
	// Each later block: one pass, shifted or not.
	blk, _ = l.blockBody(shifted, usesOf(shifted), id("i"))
	lanesDecl := blk[len(blk)-3 : len(blk)-1]
	body := append([]jen.Code{id("blockShift").Op(":=").Float32().Call(id("lagMean"))}, blk[:len(blk)-3]...)
	body = append(body, lanesDecl...)
	body = append(body, jen.If(
		id("cost").Op(":=").Float64().Call(jen.Lit(float64(blockLen)).Op("*").Add(f64(id("blockShift"))).Op("*").Add(f64(id("blockShift")))),
		id("spent").Op("+").Id("cost").Op(">").Id("budget").Op("*").Id("lagM2")).Block(
		l.laneLoop(shifted, usesOf(shifted)),
	).Else().Block(
		id("spent").Op("+=").Id("cost"),
		id("blockShift").Op("=").Lit(0),
		l.laneLoop(unshifted, usesOf(unshifted)),
	))
	update := combine(f64(id("i")), jen.Lit(float64(blockLen)))
	body = append(body, update[:3]...)
	body = append(body, jen.List(id("lagMean"), id("lagM2")).Op("=").List(id("runMean"), id("runM2")))
	body = append(body, update[3:]...)
	head = append(head, jen.Var().Id("spent").Float64(),
		jen.Comment("A block's shift and budget are the totals before the block before it: its sums need not wait for that block's."),
		jen.List(id("lagMean"), id("lagM2")).Op(":=").List(id("runMean"), id("runM2")))
	head = append(head, jen.For(id("i").Op(":=").Lit(blockLen), id("i").Op("<").Id("whole"), id("i").Op("+=").Lit(blockLen)).Block(body...))

	// The rest of the row, after whole blocks: one pass, shifted.
	tail := []jen.Code{id("blockShift").Op(":=").Float32().Call(id("runMean"))}
	tail = append(tail, l.chain(shifted)...)
	nb := f64(id("h").Op("-").Id("whole"))
	tail = append(tail,
		jen.List(id("blockDev"), id("blockSq")).Op(":=").List(f64(id(tailName(devName))), f64(id(tailName(sqName)))),
		id("delta").Op(":=").Add(f64(id("blockShift"))).Op("+").Id("blockDev").Op("/").Add(nb.Clone()).Op("-").Id("runMean"),
		id("n").Op(":=").Float64().Call(id("h")),
		id("runMean").Op("+=").Id("delta").Op("*").Add(nb.Clone()).Op("/").Id("n"),
		id("runM2").Op("+=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Add(nb.Clone()).
			Op("+").Float64().Call(id("delta").Op("*").Id("delta").Op("*").Parens(f64(id("whole")).Op("*").Add(nb.Clone()).Op("/").Id("n"))))
	head = append(head, jen.If(id("whole").Op("<").Id("h")).Block(tail...))

	// A row shorter than a block: the two passes, one chain each.
	short := l.chain(first)
	short = append(short, id("blockShift").Op(":=").Add(l.value(fu.pivot)).Op("+").Float32().Call(id(tailName(pivotName)).Op("*").Id(l.invLen)))
	short = append(short, l.chain(second)...)
	short = append(short,
		jen.List(id("blockDev"), id("blockSq")).Op(":=").List(f64(id(tailName(devName))), f64(id(tailName(sqName)))),
		id("runMean").Op("=").Add(f64(id("blockShift"))).Op("+").Id("blockDev").Op("/").Float64().Call(id("h")),
		id("runM2").Op("=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Float64().Call(id("h")))

	// The function's parameters: the row arrays and the scalars the
	// passes read (the pivot, a residual's alpha).
	var params, args []jen.Code
	for a, arr := range k.Arrays {
		if (arr.Role == ir.RowIn || arr.Role == ir.RowOut) && (loopUses(fu.a, a) || loopUses(fu.b, a)) {
			params = append(params, jen.Id(l.rowName(a)).Add(ElemSlice(arr.Elem)))
			args = append(args, id(l.rowName(a)))
		}
	}
	seen := map[ir.S]bool{fu.shift: true, fu.pivotShift: true}
	for _, lp := range []*ir.Loop{fu.a, fu.b} {
		for _, op := range lp.Ops {
			if op.Code != ir.VSplat || seen[op.Scalar] {
				continue
			}
			seen[op.Scalar] = true
			if _, ok := l.alias[op.Scalar]; ok && !l.sums[op.Scalar] {
				continue // a literal, or 1/h
			}
			params = append(params, id(k.ScalarName(op.Scalar)).Float32())
			args = append(args, l.value(op.Scalar))
		}
	}
	// budget, the same for every row, is computed once for the call.
	params = append(params, id("budget").Float64(), id("h").Int())
	args = append(args, id("budget"), id("h"))
	pre = []jen.Code{
		jen.Comment("What the unshifted blocks may add to the rounding of a row's squared deviations, relative to them: ln of the blocks."),
		id("budget").Op(":=").Qual("math", "Log").Call(jen.Float64().Call(id("h").Op("/").Lit(blockLen))),
	}
	fn = jen.Commentf("%s is the mean (runMean) and the squared deviations (runM2) of one row of %s, in one pass: block by block, each around the mean so far, combined in float64.", name, k.Name).Line().
		Func().Id(name).Params(params...).Params(jen.List(id("runMean"), id("runM2")).Float64()).Block(
		id(l.invLen).Op(":=").Lit(1).Op("/").Float32().Call(id("h")),
		id("whole").Op(":=").Id("h").Op("-").Id("h").Op("%").Lit(blockLen),
		jen.If(id("whole").Op(">").Lit(0)).Block(head...).Else().Block(short...),
		jen.Return(),
	)
	call = []jen.Code{
		jen.List(id("runMean"), id("runM2")).Op(":=").Id(name).Call(args...),
		id(k.ScalarName(fu.shift)).Op(":=").Float32().Call(id("runMean")),
	}
	if fu.readsCorrection(k) {
		call = append(call, id(k.ScalarName(fu.correction)).Op(":=").Float32().Call(id("runMean").Op("-").Float64().Call(id(k.ScalarName(fu.shift)))))
	}
	call = append(call, id(k.ScalarName(fu.variance)).Op(":=").Float32().Call(id("runM2").Op("/").Float64().Call(id("h"))))
	return call, pre, fn
}

// chain is lp over the elements from whole to h, each sum one float32
// chain named as a tail.
func (l *lowering) chain(lp *ir.Loop) []jen.Code {
	accs := loopAccs(lp)
	var ids, body []jen.Code
	for _, a := range accs {
		ids = append(ids, jen.Id(tailName(l.k.AccName(a))))
	}
	code, terms := l.elementOps(lp, usesOf(lp), l.at32, "")
	body = append(body, code...)
	for _, a := range accs {
		for _, t := range terms[a] {
			body = append(body, jen.Id(tailName(l.k.AccName(a))).Op("+=").Add(t))
		}
	}
	return []jen.Code{
		jen.Var().List(ids...).Float32(),
		jen.For(jen.Id("i").Op(":=").Id("whole"), jen.Id("i").Op("<").Id("h"), jen.Id("i").Op("++")).Block(body...),
	}
}

// The output pass of the IR subtracts the correction, what float32(mean)
// misses of the mean, from every deviation: an add an element. The float32
// form drops it on every row. |correction| is the float32 rounding
// remainder of the float64 mean, at most 2^-24*|mean| <= 2^-24*max|s| (or
// 2^-150 among the subnormals), so dropping it moves an output by at most
// 2^-24*|g|*max|s|/sigma: under one unit of the accuracy contract's term
// in |g|*max|s|/sigma, of the 64 it allows (docs/accuracy.md).

// corrected is the index in lp of its op subtracting the correction, or
// -1.
func (fu *fusion) corrected(lp *ir.Loop) int {
	if fu == nil {
		return -1
	}
	for i, op := range lp.Ops {
		if op.Code == ir.VSub && lp.Ops[op.Args[1]].Code == ir.VSplat && lp.Ops[op.Args[1]].Scalar == fu.correction {
			return i
		}
	}
	return -1
}

// bypass is lp without op i (a value), its uses reading its first operand.
func bypass(lp *ir.Loop, i int) *ir.Loop {
	var out ir.Loop
	remap := make([]ir.V, len(lp.Ops))
	for j, op := range lp.Ops {
		if j == i {
			remap[j] = remap[op.Args[0]]
			continue
		}
		op.Args = append([]ir.V(nil), op.Args...)
		for a, v := range op.Args {
			op.Args[a] = remap[v]
		}
		remap[j] = ir.V(len(out.Ops))
		out.Ops = append(out.Ops, op)
	}
	return &out
}

// outputLoop is the float32 form of lp, the output pass reading the
// correction, without it. The pass runs two rows at a time (see paired):
// decl goes before the loop over the rows, last after it.
func (l *lowering) outputLoop(fu *fusion, lp *ir.Loop, i int) (row, decl, last []jen.Code) {
	return l.paired(bypass(lp, i), fu.waitRows())
}

// readsCorrection reports whether a statement of k other than the fused
// code and the output pass (which drops it) reads the correction: a mean
// the kernel stores.
func (fu *fusion) readsCorrection(k *ir.Kernel) bool {
	for i, st := range k.Body {
		if fu.skip[i] {
			continue
		}
		switch st := st.(type) {
		case *ir.Scalar:
			if slices.Contains(st.Args, fu.correction) {
				return true
			}
		case *ir.Loop:
			for _, op := range st.Ops {
				if op.Code == ir.VSplat && op.Scalar == fu.correction && fu.corrected(st) < 0 {
					return true
				}
			}
		}
	}
	return false
}

// waitRows is how many rows' output passes wait for each other: their
// statistics run back to back and then their output passes, two rows a
// loop. Four rows took about 10% less time than two where the
// statistics pass only reads (LayerNorm); where it also writes a row
// (the residual sum that the output pass reads back) four were about 3%
// slower than two: the sum written four rows before had left L1.
func (fu *fusion) waitRows() int {
	for _, lp := range []*ir.Loop{fu.a, fu.b} {
		for _, op := range lp.Ops {
			if op.Code == ir.VStore {
				return 2
			}
		}
	}
	return 4
}

// paired is the output pass lp of a row, its loop over the elements
// shared with the pass of another row: a row keeps its row arrays and
// the scalars the pass reads and waits until group rows (even) wait, which
// then run two at a time, each element of gamma, beta (the Param
// arrays) loaded once for the two. Scalar Go loads at most two floats a
// cycle on the machines measured, and the pass of one row (x, gamma,
// beta) was bound by its loads, not its two adds. decl declares what
// the waiting rows keep, last runs the rows still waiting after the
// last. Rows are independent: the order of the passes changes no
// result, and a row the guard hands to the float64 form in between runs
// in its turn.
func (l *lowering) paired(lp *ir.Loop, group int) (row, decl, last []jen.Code) {
	var rowArrays, params []int
	for a, arr := range l.k.Arrays {
		switch {
		case !loopUses(lp, a):
		case arr.Role == ir.RowIn || arr.Role == ir.RowOut:
			rowArrays = append(rowArrays, a)
		case arr.Role == ir.Param:
			params = append(params, a)
		default:
			return l.loop(lp), nil, nil
		}
	}
	var scalars []ir.S // each row's own
	seen := map[ir.S]bool{}
	uses := usesOf(lp)
	for i, op := range lp.Ops {
		if op.Code != ir.VSplat || uses[i] == 0 || seen[op.Scalar] {
			continue
		}
		seen[op.Scalar] = true
		if _, ok := l.alias[op.Scalar]; ok && !l.sums[op.Scalar] {
			continue // a literal, or 1/h: the same for every row
		}
		scalars = append(scalars, op.Scalar)
	}
	pend := func(name string) string { return "pend" + strings.ToUpper(name[:1]) + name[1:] }
	// element is one element's code for the waiting row named with suffix.
	element := func(suffix string) []jen.Code {
		at := func(a int) *jen.Statement {
			if l.k.Arrays[a].Role == ir.Param {
				return jen.Id(l.arrayName(a) + "I")
			}
			return jen.Id(l.rowName(a) + suffix).Index(jen.Id("i"))
		}
		alias, sums := l.alias, l.sums
		l.alias, l.sums = maps.Clone(alias), map[ir.S]bool{}
		for _, s := range scalars {
			l.alias[s] = l.k.ScalarName(s) + suffix
		}
		code, _ := l.elementOps(lp, uses, at, suffix)
		l.alias, l.sums = alias, sums
		return code
	}
	// take names waiting row j's arrays (resliced to h: no bounds checks)
	// and scalars with suffix.
	take := func(suffix string, j *jen.Statement) []jen.Code {
		var code []jen.Code
		for _, a := range rowArrays {
			code = append(code, jen.Id(l.rowName(a)+suffix).Op(":=").Id(pend(l.rowName(a))).Index(j.Clone()).Index(jen.Empty(), jen.Id("h")))
		}
		for _, s := range scalars {
			code = append(code, jen.Id(l.k.ScalarName(s)+suffix).Op(":=").Id(pend(l.k.ScalarName(s))).Index(j.Clone()))
		}
		return code
	}
	var loads []jen.Code
	for _, a := range params {
		loads = append(loads, jen.Id(l.arrayName(a)+"I").Op(":=").Id(l.arrayName(a)).Index(jen.Id("i")))
	}
	loop := func(body ...[]jen.Code) jen.Code {
		code := append([]jen.Code(nil), loads...)
		for _, b := range body {
			code = append(code, b...)
		}
		return jen.For(jen.Id("i").Op(":=").Range().Id("h")).Block(code...)
	}
	// run is the waiting rows' passes, two at a time, then an odd one
	// (none where group rows wait: it is even).
	p := jen.Id("p")
	run := []jen.Code{
		jen.For(p.Clone().Op(":=").Lit(0), p.Clone().Op("+").Lit(1).Op("<").Id("waiting"), p.Clone().Op("+=").Lit(2)).Block(
			append(append(take("A", p.Clone()), take("B", p.Clone().Op("+").Lit(1))...), loop(element("A"), element("B")))...,
		),
		jen.If(jen.Id("waiting").Op("%").Lit(2).Op("==").Lit(1)).Block(
			append(take("A", jen.Id("waiting").Op("-").Lit(1)), loop(element("A")))...,
		),
		jen.Id("waiting").Op("=").Lit(0),
	}
	var keep, kept []jen.Code
	for _, a := range rowArrays {
		decl = append(decl, jen.Var().Id(pend(l.rowName(a))).Index(jen.Lit(group)).Add(ElemSlice(l.k.Arrays[a].Elem)))
		keep, kept = append(keep, jen.Id(pend(l.rowName(a))).Index(jen.Id("waiting"))), append(kept, jen.Id(l.rowName(a)))
	}
	for _, s := range scalars {
		decl = append(decl, jen.Var().Id(pend(l.k.ScalarName(s))).Index(jen.Lit(group)).Float32())
		keep, kept = append(keep, jen.Id(pend(l.k.ScalarName(s))).Index(jen.Id("waiting"))), append(kept, l.value(s))
	}
	decl = append([]jen.Code{jen.Commentf("Rows wait for their output passes, %d at most: their statistics run back to back, then their passes two rows a loop.", group)}, decl...)
	decl = append(decl, jen.Id("waiting").Op(":=").Lit(0))
	row = []jen.Code{
		jen.List(keep...).Op("=").List(kept...),
		jen.Id("waiting").Op("++"),
		jen.If(jen.Id("waiting").Op("==").Lit(group)).Block(run[0], run[2]),
	}
	last = run[:2]
	return row, decl, last
}
