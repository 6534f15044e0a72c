package gopkg

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/golang"
	"github.com/normgen/normgen/templates"
)

// backwardKernels are the implementation kernels of k's backward pass
// (algo.Backward): the Rows kernel at every size of k, and the Params
// kernel (Columns layout) at the run-time size only, its row length being
// the number of rows of the call. Neither has an entry point of its own.
func (k Kernel) backwardKernels() []Kernel {
	bw := k.Plan.Backward
	if bw == nil {
		return nil
	}
	// The dx kernel has the forward's fixed sizes (rows over the last
	// axis, or ConvNeXt's channel counts); the others run at run-time
	// sizes only.
	sized := k.Plan.Form == algo.Rows || k.Plan.Form == algo.Positions
	rows := &algo.Plan{Kernel: bw.Rows, Form: algo.Rows, Sized: sized, Statistic: k.Plan.Statistic}
	var sizes []int
	if sized {
		rows.Sizes, sizes = k.Sizes, k.Sizes
	}
	out := []Kernel{{Plan: rows, IR: bw.Rows, Spec: k.Spec, Sizes: sizes, ISAs: k.ISAs, noNT: true}}
	for _, ik := range []*ir.Kernel{bw.Columns, bw.Params, bw.Sums} {
		if ik != nil {
			plan := &algo.Plan{Kernel: ik, Form: algo.Rows, Statistic: k.Plan.Statistic}
			out = append(out, Kernel{Plan: plan, IR: ik, Spec: k.Spec, ISAs: k.ISAs, noNT: true})
		}
	}
	return out
}

// backwardKernel is the implementation kernel of k's backward whose IR is ik.
func (k Kernel) backwardKernel(ik *ir.Kernel) Kernel {
	for _, bk := range k.backwardKernels() {
		if bk.IR == ik {
			return bk
		}
	}
	panic("gopkg: no backward kernel " + ik.Name)
}

// HasBackward reports whether a kernel of the package has a backward pass.
func (p *Package) HasBackward() bool {
	for _, k := range p.Kernels {
		if k.Plan.Backward != nil {
			return true
		}
	}
	return false
}

// backwardEntryName is the exported backward entry point of k at size h.
func backwardEntryName(k Kernel, h int) string {
	return k.Plan.Backward.Name + k.Plan.EntrySuffix(h)
}

func backwardParams(args []algo.BackwardArg, h int) []jen.Code {
	params := golang.ArrayParams(backwardArrays(args), nil)
	if h == 0 {
		params = append(params, jen.Id("h").Int())
	}
	return params
}

// backwardArrays are the entry point's arrays as ir.Arrays: their names
// and storage.
func backwardArrays(args []algo.BackwardArg) []ir.Array {
	out := make([]ir.Array, len(args))
	for i, a := range args {
		out[i] = ir.Array{Name: a.Name, Elem: a.Elem}
	}
	return out
}

func backwardArgs(args []algo.BackwardArg, h int, extra ...jen.Code) []jen.Code {
	out := append([]jen.Code{}, extra...)
	for _, a := range args {
		out = append(out, jen.Id(a.Name))
	}
	if h == 0 {
		out = append(out, jen.Id("h"))
	}
	return out
}

// backwardEntryPoints writes the backward entry point of k at size h, its
// Parallel form and their argument checks.
func backwardEntryPoints(pkg string, k Kernel, h int) jen.Code {
	bw := k.Plan.Backward
	name := backwardEntryName(k, h)
	check := "check" + name
	rowsK := k.backwardKernel(bw.Rows)
	// zero clears the sums over rows: a call of zero rows has gradients 0.
	var zero []jen.Code
	for _, a := range bw.Args {
		if a.Out && a.Extent == algo.PerColumn {
			zero = append(zero, jen.Clear(jen.Id(a.Name)))
		}
	}
	zero = append(zero, jen.Return())
	id := jen.Id
	// rowsCall runs the Rows kernel on rows [lo, hi), all with nil.
	rowsCall := func(lo, hi *jen.Statement) jen.Code {
		args := rowsArrays(bw.Rows, h, lo, hi)
		if lo == nil {
			args = append(args, id("rows"))
		} else {
			args = append(args, hi.Clone().Op("-").Add(lo.Clone()))
		}
		if h == 0 {
			args = append(args, id("h"))
		}
		return id(implName(rowsK, h)).Call(args...)
	}
	// blockRowsCalls runs the Rows kernel block by block over [lo, hi),
	// as the serial entry point runs it: the same calls, the same bits.
	blockRowsCalls := func(lo, hi *jen.Statement) jen.Code {
		return jen.For(id("r0").Op(":=").Add(lo), id("r0").Op("<").Add(hi.Clone()), id("r0").Op("+=").Id("block")).Block(
			id("r1").Op(":=").Min(id("r0").Op("+").Id("block"), hi.Clone()),
			rowsCall(id("r0"), id("r1")))
	}

	body := []jen.Code{
		id("rows").Op(":=").Id(check).Call(backwardArgs(bw.Args, h, jen.Lit(pkg+"."+name))...),
		jen.If(id("rows").Op("==").Lit(0)).Block(zero...),
	}
	pbody := []jen.Code{
		id("rows").Op(":=").Id(check).Call(backwardArgs(bw.Args, h, jen.Lit(pkg+"."+name+"Parallel"))...),
		jen.If(id("rows").Op("==").Lit(0)).Block(zero...),
	}
	var pdoc string
	if bw.Params == nil {
		body = append(body, rowsCall(nil, nil))
		pbody = append(pbody, id("parallelRowBlocks").Call(id("rows"), hExpr(h),
			jen.Func().Params(jen.List(id("lo"), id("hi")).Int()).Block(rowsCall(id("lo"), id("hi")))))
		pdoc = fmt.Sprintf("// %sParallel is %s with its rows split across up to\n"+
			"// GOMAXPROCS goroutines by blocks of 64 rows. Every value is computed by\n"+
			"// the same instructions in the same order as in %s, so the results are\n"+
			"// the same bits; only rows after one whose float32 sums left float32's\n"+
			"// range (which the float64 path then computed) may differ in their last bits.", name, name, name)
	} else {
		// A call whose dy and x stay in L2 as a whole needs no blocks for
		// them: its sums run over all its rows at once, sparing the
		// totals' adds; its Rows kernel still runs block by block, as
		// Parallel runs it.
		rb := paramsRowBytes(bw.Params)
		whole := id("rows").Op("*").Add(hExpr(h)).Op("*").Lit(rb).Op("<=").Id("bwdWholeBytes")
		blockDecl := jen.Const().Id("block").Op("=").Lit(backwardBlockRows(h, paramsRowBytes(bw.Params)))
		if h == 0 {
			blockDecl = id("block").Op(":=").Id("bwdBlockRows").Call(id("h").Op("*").Lit(paramsRowBytes(bw.Params)))
		}
		// In place (an output is dy) the Params kernel must read dy before
		// the Rows kernel overwrites it; otherwise the Rows kernel goes
		// first, its reads streaming from memory in order, and the Params
		// kernel, which reads the block column by column, finds it in cache.
		var inPlace *jen.Statement
		for _, a := range bw.Args {
			if a.Out && a.Extent == algo.PerElement {
				same := jen.Op("&").Id(a.Name).Index(jen.Lit(0)).Op("==").Op("&").Id("dy").Index(jen.Lit(0))
				if inPlace == nil {
					inPlace = same
				} else {
					inPlace = inPlace.Op("||").Add(same)
				}
			}
		}
		body = append(body, blockDecl)
		if bw.Fused != nil {
			body = append(body, fusedSumsCall(k, h, whole.Clone()))
		}
		body = append(body,
			id("inPlace").Op(":=").Add(inPlace),
			jen.If(whole.Clone()).Block(
				jen.If(id("inPlace")).Block(
					paramsBlock(k, h, nil, nil, nil, nil),
					blockRowsCalls(jen.Lit(0), id("rows")),
				).Else().Block(
					blockRowsCalls(jen.Lit(0), id("rows")),
					paramsBlock(k, h, nil, nil, nil, nil),
				),
				jen.Return(),
			))
		body = append(body, blockedSums(k, h, nil, nil, func(lo, hi *jen.Statement) jen.Code {
			return rowsCall(lo, hi)
		})...)
		pbody = append(pbody, blockDecl,
			jen.If(whole.Clone()).Block(
				id("parallelColumns").Call(hExpr(h), id("rows"), jen.Func().Params(jen.List(id("c0"), id("c1")).Int()).Block(
					id("w").Op(":=").Id("c1").Op("-").Id("c0"),
					paramsBlock(k, h, nil, nil, id("c0"), id("c1")))),
			).Else().Block(
				id("parallelColumns").Call(hExpr(h), id("rows"), jen.Func().Params(jen.List(id("c0"), id("c1")).Int()).Block(
					blockedSums(k, h, id("c0"), id("c1"), nil)...)),
			),
			id("parallelRowBlocks").Call(id("rows"), hExpr(h), jen.Func().Params(jen.List(id("lo"), id("hi")).Int()).Block(
				blockRowsCalls(id("lo"), id("hi")))))
		pdoc = fmt.Sprintf("// %sParallel is %s with its work split across up to\n"+
			"// GOMAXPROCS goroutines: the sums over rows by blocks of 64 columns, then the\n"+
			"// rows by blocks of 64 rows, each run block by block as %s runs it.\n"+
			"// Every value is computed by the same instructions in the same order as\n"+
			"// in %s, so the results are the same bits.", name, name, name, name)
	}
	entry := jen.Comment(backwardDoc(k, h)).Line().Func().Id(name).Params(backwardParams(bw.Args, h)...).Block(body...)
	parallel := jen.Comment(pdoc).Line().Func().Id(name + "Parallel").Params(backwardParams(bw.Args, h)...).Block(pbody...)

	return jen.Add(entry).Line().Line().Add(parallel).Line().Line().Add(backwardCheck(k, h))
}

// rowsArrays are the array arguments of a call of the Rows kernel rows
// on rows [lo, hi) of an entry point's arrays, all of them with nil lo.
func rowsArrays(rows *ir.Kernel, h int, lo, hi *jen.Statement) []jen.Code {
	var args []jen.Code
	for _, a := range rows.Arrays {
		name := jen.Id(a.Name)
		switch {
		case lo == nil || a.Role == ir.Param:
			args = append(args, name)
		case a.Role.PerRow():
			args = append(args, name.Index(lo.Clone(), hi.Clone()))
		default:
			args = append(args, name.Index(lo.Clone().Op("*").Add(hExpr(h)), hi.Clone().Op("*").Add(hExpr(h))))
		}
	}
	return args
}

// fusedSums is the pure-Go build's serial path of a backward whose Rows
// kernel's float32 form adds the column sums itself (algo.FusedSums):
// the rows in chunks, each chunk's sums one float32 chain per column
// added into float64 totals, the chunks being Params' (ir.SumChunk rows
// when the call is whole, else the blocks), so every value has the bits
// of the Rows and Params kernels that Parallel runs.
func fusedSumsCall(k Kernel, h int, whole *jen.Statement) jen.Code {
	bw := k.Plan.Backward
	id := jen.Id
	var outs, clears, adds, stores, tots, vals []jen.Code
	n := len(bw.Fused.Cols)
	for i, c := range bw.Fused.Cols {
		outs = append(outs, id(c.Out))
		clears = append(clears, jen.Clear(id(c.Out)))
		// Each output's totals are a run of h values of t.
		tot := jen.Op("*").Id("t")
		if n > 1 {
			tot = id(c.Out + "Sum")
			lo, hi := jen.Empty(), jen.Empty()
			if i > 0 {
				lo = jen.Lit(i).Op("*").Add(hExpr(h))
			}
			if i < n-1 {
				hi = jen.Lit(i + 1).Op("*").Add(hExpr(h))
			}
			tots = append(tots, id(c.Out+"Sum"))
			vals = append(vals, jen.Parens(jen.Op("*").Id("t")).Index(lo, hi))
		}
		adds = append(adds, id("bwdAdd").Call(tot.Clone(), id(c.Out)))
		stores = append(stores, id("bwdStore").Call(id(c.Out), tot.Clone()))
	}
	call := func(lo, hi *jen.Statement) jen.Code {
		args := append(append([]jen.Code{}, outs...), rowsArrays(bw.Rows, h, lo, hi)...)
		rows := id("rows")
		if lo != nil {
			rows = hi.Clone().Op("-").Add(lo.Clone())
		}
		args = append(args, rows, hExpr(h))
		return id(golang.FusedName(bw.GoRowsKernel())).Call(args...)
	}
	tDecl := []jen.Code{id("t").Op(":=").Id("bwdTotals").Call(totalsLen(n, h))}
	if n > 1 {
		tDecl = append(tDecl, jen.List(tots...).Op(":=").List(vals...))
	}
	loop := append(append(append([]jen.Code{}, id("hi").Op(":=").Min(id("lo").Op("+").Id("chunk"), id("rows"))), clears...), call(id("lo"), id("hi")))
	loop = append(loop, adds...)
	body := []jen.Code{
		jen.Comment("Pure Go: the sums over rows in the Rows kernel's first loop (one read of dy and x fewer)."),
		id("chunk").Op(":=").Lit(ir.SumChunk),
		jen.If(jen.Op("!").Parens(whole)).Block(id("chunk").Op("=").Id("block")),
		jen.If(id("rows").Op("<=").Id("chunk")).Block(append(append(clears, call(nil, nil)), jen.Return())...),
	}
	body = append(body, tDecl...)
	body = append(body, jen.For(id("lo").Op(":=").Lit(0), id("lo").Op("<").Id("rows"), id("lo").Op("+=").Id("chunk")).Block(loop...))
	body = append(body, stores...)
	body = append(body, id("bwdTotalsPool").Dot("Put").Call(id("t")), jen.Return())
	return jen.If(id("fusedSums")).Block(body...)
}

// totalsLen is the length of the float64 totals of n column sums.
func totalsLen(n, h int) jen.Code {
	if n == 1 {
		return hExpr(h)
	}
	return jen.Lit(n).Op("*").Add(hExpr(h))
}

// hasFusedSums reports a kernel whose pure-Go backward adds its column
// sums in the Rows kernel (the fusedSums constant is true under purego).
func (p *Package) hasFusedSums() bool {
	for _, k := range p.Kernels {
		if bw := k.Plan.Backward; bw != nil && !k.Plan.Form.Tensor() && bw.Fused != nil {
			return true
		}
	}
	return false
}

// fusedSumsConst declares fusedSums: whether the backward entry points
// run the pure-Go fused sums (the purego build) or the kernels apart.
func fusedSumsConst(pureGo bool) jen.Code {
	return jen.Comment("Whether the backward entry points have the pure-Go Rows kernel add the column sums.").Line().
		Const().Id("fusedSums").Op("=").Lit(pureGo)
}

// Blocked backward: the entry points run the rows in blocks whose dy and
// x (and f) fit in L2, each block's parameter sums (the Params kernel)
// then its input gradients (the Rows kernel) while the block is in cache,
// so that dy and x come from memory once, not twice. A block has at most
// ir.SumChunk rows: its Params sums are single float32 chunks, which
// float64 totals per column add up across the blocks (the summation
// policy, its chunks ended at the blocks' ends). The totals come from a
// pool: no allocation per call, and no stack frame of H float64s.
const (
	// backwardBlockBytes is the most bytes of dy and x (and f) a block
	// spans: a quarter of a 1 MiB L2, leaving room for dx and the rest.
	backwardBlockBytes = 256 << 10
	// backwardWholeBytes is the most bytes of dy and x (and f) of a call
	// that runs no blocks: it stays in L2 between the kernels anyway.
	backwardWholeBytes = 512 << 10
	// backwardMaxBlock is the most rows of a block: one float32 chunk.
	backwardMaxBlock = ir.SumChunk
)

// backwardBlockRows is the rows of a block for rows of h values and
// valueBytes bytes per value of the Params kernel's inputs: the largest
// power of two up to backwardMaxBlock within backwardBlockBytes, at least
// 1. bwdBlockRows (bwdHelpers) computes the same at run time.
func backwardBlockRows(h, valueBytes int) int {
	b := backwardMaxBlock
	for b > 1 && b*h*valueBytes > backwardBlockBytes {
		b /= 2
	}
	return b
}

// paramsRowBytes is the bytes per column of one row the Params kernel
// reads (dy, x or sum, f).
func paramsRowBytes(ik *ir.Kernel) int {
	n := 0
	for _, a := range ik.Arrays {
		if a.Role == ir.RowIn {
			n += a.Elem.Bytes()
		}
	}
	return n
}

// paramsBlock calls the Params kernel of k at size h on the lines (rows
// of the call) [lo, hi) and the columns [c0, c1), w of them; nil: all.
func paramsBlock(k Kernel, h int, lo, hi, c0, c1 *jen.Statement) jen.Code {
	bw := k.Plan.Backward
	var args []jen.Code
	for _, a := range bw.Params.Arrays {
		v := jen.Id(a.Name)
		switch a.Role {
		case ir.RowScalarOut:
			if c0 != nil {
				v = v.Index(c0.Clone(), c1.Clone())
			}
		case ir.Param:
			if lo != nil {
				v = v.Index(lo.Clone(), hi.Clone())
			}
		default:
			var start *jen.Statement
			if lo != nil {
				start = lo.Clone().Op("*").Add(hExpr(h))
			}
			if c0 != nil {
				if start == nil {
					start = c0.Clone()
				} else {
					start = start.Op("+").Add(c0.Clone())
				}
			}
			if start != nil {
				v = v.Index(start, jen.Empty())
			}
		}
		args = append(args, v)
	}
	cols, lines := hExpr(h), jen.Id("rows")
	if c0 != nil {
		cols = jen.Id("w")
	}
	if lo != nil {
		lines = hi.Clone().Op("-").Add(lo.Clone())
	}
	args = append(args, cols, lines, hExpr(h))
	return jen.Id(implName(k.backwardKernel(bw.Params), 0)).Call(args...)
}

// blockedSums are the statements that sum the parameter gradients of
// columns [c0, c1) (nil: all) block by block into float64 totals, with
// perBlock (nil: none) before each block's sums, or after them inPlace.
func blockedSums(k Kernel, h int, c0, c1 *jen.Statement, perBlock func(lo, hi *jen.Statement) jen.Code) []jen.Code {
	id := jen.Id
	var outs []string
	for _, a := range k.Plan.Backward.Params.Arrays {
		if a.Role == ir.RowScalarOut {
			outs = append(outs, a.Name)
		}
	}
	width := hExpr(h)
	var code []jen.Code
	if c0 != nil {
		width = id("w")
		code = append(code, id("w").Op(":=").Add(c1.Clone()).Op("-").Add(c0.Clone()))
	}
	part := func(name string) jen.Code {
		if c0 == nil {
			return id(name)
		}
		return id(name).Index(c0.Clone(), c1.Clone())
	}
	n := width.Clone()
	if len(outs) > 1 {
		n = jen.Lit(len(outs)).Op("*").Add(width.Clone())
	}
	code = append(code, id("t").Op(":=").Id("bwdTotals").Call(n))
	var sums, slices []jen.Code
	for i, n := range outs {
		sums = append(sums, id(n+"Sum"))
		at := func(j int) jen.Code {
			switch j {
			case 0, len(outs):
				return jen.Empty()
			case 1:
				return width.Clone()
			}
			return jen.Lit(j).Op("*").Add(width.Clone())
		}
		if len(outs) == 1 {
			slices = append(slices, jen.Op("*").Id("t"))
			continue
		}
		slices = append(slices, jen.Parens(jen.Op("*").Id("t")).Index(at(i), at(i+1)))
	}
	code = append(code, jen.List(sums...).Op(":=").List(slices...))
	lo, hi := id("lo"), id("hi")
	loop := []jen.Code{id("hi").Op(":=").Min(id("lo").Op("+").Id("block"), id("rows"))}
	if perBlock != nil {
		loop = append(loop, jen.If(jen.Op("!").Id("inPlace")).Block(perBlock(lo, hi)))
	}
	loop = append(loop, paramsBlock(k, h, lo, hi, c0, c1))
	for _, n := range outs {
		loop = append(loop, id("bwdAdd").Call(id(n+"Sum"), part(n)))
	}
	if perBlock != nil {
		loop = append(loop, jen.If(id("inPlace")).Block(perBlock(lo, hi)))
	}
	code = append(code, jen.For(id("lo").Op(":=").Lit(0), id("lo").Op("<").Id("rows"), id("lo").Op("+=").Id("block")).Block(loop...))
	for _, n := range outs {
		code = append(code, id("bwdStore").Call(part(n), id(n+"Sum")))
	}
	return append(code, id("bwdTotalsPool").Dot("Put").Call(id("t")))
}

// hasBlockedBackward reports a backward over rows with a Params kernel:
// one that needs bwdHelpers.
func (p *Package) hasBlockedBackward() bool {
	for _, k := range p.Kernels {
		if bw := k.Plan.Backward; bw != nil && !k.Plan.Form.Tensor() && bw.Params != nil {
			return true
		}
	}
	return false
}

// bwdHelpers writes the run-time helpers of the blocked backward.
func bwdHelpers() jen.Code {
	id := jen.Id
	return jen.Comment("bwdBlockRows is the rows of a block of a blocked backward for rows of rowBytes").Line().
		Comment(fmt.Sprintf("bytes of dy and x: the largest power of two up to %d (one float32 chunk of the", backwardMaxBlock)).Line().
		Comment(fmt.Sprintf("sums over rows) within %d KiB (in L2 between the kernels that read them), at least 1.", backwardBlockBytes>>10)).Line().
		Func().Id("bwdBlockRows").Params(id("rowBytes").Int()).Int().Block(
		id("b").Op(":=").Lit(backwardMaxBlock),
		jen.For(id("b").Op(">").Lit(1).Op("&&").Id("b").Op("*").Id("rowBytes").Op(">").Lit(backwardBlockBytes>>10).Op("<<").Lit(10)).Block(
			id("b").Op("/=").Lit(2)),
		jen.Return(id("b")),
	).Line().Line().
		Comment("bwdTotalsPool keeps the float64 column totals of the blocked backward between").Line().
		Comment("calls: a call allocates none once the pool holds enough.").Line().
		Var().Id("bwdTotalsPool").Qual("sync", "Pool").Line().Line().
		Comment("bwdWholeBytes is the most dy and x of a call whose sums over rows run at once,").Line().
		Comment("without blocks: the call stays in L2, and the blocks' totals would only add work.").Line().
		Const().Id("bwdWholeBytes").Op("=").Lit(backwardWholeBytes>>10).Op("<<").Lit(10).Line().Line().
		Comment("bwdTotals is n zeroed totals from bwdTotalsPool (give them back with Put).").Line().
		Func().Id("bwdTotals").Params(id("n").Int()).Op("*").Index().Float64().Block(
		jen.List(id("t"), jen.Id("_")).Op(":=").Id("bwdTotalsPool").Dot("Get").Call().Assert(jen.Op("*").Index().Float64()),
		jen.If(id("t").Op("==").Nil().Op("||").Cap(jen.Op("*").Id("t")).Op("<").Id("n")).Block(
			id("s").Op(":=").Make(jen.Index().Float64(), id("n")),
			jen.Return(jen.Op("&").Id("s"))),
		jen.Op("*").Id("t").Op("=").Parens(jen.Op("*").Id("t")).Index(jen.Empty(), id("n")),
		jen.Clear(jen.Op("*").Id("t")),
		jen.Return(id("t")),
	).Line().Line().
		Comment("bwdAdd adds a block's float32 column sums into the totals.").Line().
		Func().Id("bwdAdd").Params(id("total").Index().Float64(), id("part").Index().Float32()).Block(
		id("part").Op("=").Id("part").Index(jen.Empty(), jen.Len(id("total"))),
		jen.For(jen.List(id("i"), id("v")).Op(":=").Range().Id("part")).Block(
			id("total").Index(id("i")).Op("+=").Float64().Call(id("v")))).Line().Line().
		Comment("bwdStore rounds the totals into the gradients.").Line().
		Func().Id("bwdStore").Params(id("out").Index().Float32(), id("total").Index().Float64()).Block(
		id("out").Op("=").Id("out").Index(jen.Empty(), jen.Len(id("total"))),
		jen.For(jen.List(id("i"), id("v")).Op(":=").Range().Id("total")).Block(
			id("out").Index(id("i")).Op("=").Float32().Call(id("v"))))
}

// backwardCheck writes the argument checks of k's backward entry points
// at size h: every length, and every overlap; an output may be the very
// same slice as dy, nothing else.
func backwardCheck(k Kernel, h int) jen.Code {
	bw := k.Plan.Backward
	name := jen.Id("name")
	var body []jen.Code
	if h == 0 {
		body = append(body, jen.If(jen.Id("h").Op("<").Lit(1)).Block(
			jen.Panic(jen.Qual("fmt", "Sprintf").Call(jen.Lit("%s: h = %d, want h >= 1"), name, jen.Id("h")))))
	}
	body = append(body, jen.Id("rows").Op(":=").Id("rowCount").Call(name, jen.Lit("dy"), jen.Len(jen.Id("dy")), hExpr(h)))
	for _, a := range bw.Args {
		if a.Name == "dy" {
			continue
		}
		var want jen.Code
		switch a.Extent {
		case algo.PerElement:
			want = jen.Id("rows").Op("*").Add(hExpr(h))
		case algo.PerColumn:
			want = hExpr(h)
		case algo.PerRow:
			want = jen.Id("rows")
		}
		body = append(body, jen.Id("checkLen").Call(name, jen.Lit(a.Name), jen.Len(jen.Id(a.Name)), want))
	}
	for i, out := range bw.Args {
		if !out.Out {
			continue
		}
		for j, other := range bw.Args {
			if j == i || (other.Out && j < i) {
				continue
			}
			sameOK := out.Extent == algo.PerElement && other.Name == "dy"
			if out.Elem.Half() || other.Elem.Half() {
				body = append(body, halfOverlap(ir.Array{Name: out.Name, Elem: out.Elem}, ir.Array{Name: other.Name, Elem: other.Elem}, sameOK))
				continue
			}
			body = append(body, jen.Id("checkOverlap").Call(name,
				jen.Lit(out.Name), jen.Id(out.Name), jen.Lit(other.Name), jen.Id(other.Name), jen.Lit(sameOK)))
		}
	}
	body = append(body, jen.Return(jen.Id("rows")))
	params := append([]jen.Code{jen.Id("name").String()}, backwardParams(bw.Args, h)...)
	return jen.Func().Id("check" + backwardEntryName(k, h)).Params(params...).Int().Block(body...)
}

func backwardDoc(k Kernel, h int) string {
	bw := k.Plan.Backward
	size := fmt.Sprint(h)
	if h == 0 {
		size = "h"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is the backward pass of %s for rows of %s values:\n// %s.\n//\n",
		backwardEntryName(k, h), entryName(k, h), size, bw.Rows.Doc)
	for _, a := range bw.Args {
		n := "rows*" + size
		switch a.Extent {
		case algo.PerColumn:
			n = size
		case algo.PerRow:
			n = "rows"
		}
		bits := ""
		if a.Elem.Half() {
			bits = ", " + a.Elem.String() + " bits"
		}
		fmt.Fprintf(&b, "//   - %s (len %s%s): %s\n", a.Name, n, bits, a.Doc)
	}
	b.WriteString("//\n// rows is len(dy)/" + size + "; with zero rows the parameter gradients are set to 0.\n")
	b.WriteString("// An output may be the very same slice as dy (in place); other overlaps panic.\n")
	b.WriteString("// A NaN in a row makes that row's input gradients NaN, and the parameter\n")
	b.WriteString("// gradients it enters; the other rows are unaffected.")
	return "// " + b.String()
}

// parallelRowBlocksHelper writes parallelRowBlocks: parallelRows with
// chunks of whole blocks of 64 rows, a multiple of the rows an assembly
// kernel sweeps together at a fixed size, so that every row is computed as
// in one call.
func parallelRowBlocksHelper() jen.Code {
	id := jen.Id
	return jen.Comment("parallelRowBlocks runs f over [0, rows) in chunks of whole blocks of 64 rows").Line().
		Comment("(a multiple of the rows the kernels sweep together, so that every row is").Line().
		Comment("computed as in one call) on up to GOMAXPROCS goroutines, and waits for all.").Line().
		Func().Id("parallelRowBlocks").Params(jen.List(id("rows"), id("h")).Int(), id("f").Func().Params(jen.List(id("lo"), id("hi")).Int())).Block(
		id("parallelColumns").Call(id("rows"), id("h"), id("f")),
	)
}

// parallelColumnsHelper writes parallelColumns, the column splitting of
// the backward Parallel entry points.
func parallelColumnsHelper() jen.Code {
	id := jen.Id
	return jen.Comment("parallelColumns runs f over the columns [0, cols) of a rows-line matrix in").Line().
		Comment("chunks of whole blocks of 64 columns (a multiple of every vector width, so").Line().
		Comment("that each column is computed by the same instructions as in one call), on").Line().
		Comment("up to GOMAXPROCS goroutines, and waits for all of them.").Line().
		Func().Id("parallelColumns").Params(jen.List(id("cols"), id("rows")).Int(), id("f").Func().Params(jen.List(id("lo"), id("hi")).Int())).Block(
		id("blocks").Op(":=").Parens(id("cols").Op("+").Lit(63)).Op("/").Lit(64),
		id("workers").Op(":=").Min(jen.Qual("runtime", "GOMAXPROCS").Call(jen.Lit(0)), id("blocks")),
		jen.If(id("n").Op(":=").Id("rows").Op("*").Id("cols").Op("*").Lit(4).Op("/").Id("parallelMinBytes"), id("n").Op("<").Id("workers")).Block(
			id("workers").Op("=").Id("n")),
		jen.If(id("workers").Op("<=").Lit(1)).Block(id("f").Call(jen.Lit(0), id("cols")), jen.Return()),
		id("per").Op(":=").Parens(id("blocks").Op("+").Id("workers").Op("-").Lit(1)).Op("/").Id("workers").Op("*").Lit(64),
		jen.Var().Id("wg").Qual("sync", "WaitGroup"),
		jen.For(id("lo").Op(":=").Id("per"), id("lo").Op("<").Id("cols"), id("lo").Op("+=").Id("per")).Block(
			id("wg").Dot("Add").Call(jen.Lit(1)),
			jen.Go().Func().Params(jen.List(id("lo"), id("hi")).Int()).Block(
				jen.Defer().Id("wg").Dot("Done").Call(),
				id("f").Call(id("lo"), id("hi")),
			).Call(id("lo"), jen.Min(id("lo").Op("+").Id("per"), id("cols"))),
		),
		id("f").Call(jen.Lit(0), jen.Min(id("per"), id("cols"))),
		id("wg").Dot("Wait").Call(),
	)
}

// BackwardTestFile is <pkg>_backward_test.go, from
// templates/backward_test.go.tmpl: the tests of the backward entry points.
func BackwardTestFile(p *Package) ([]byte, error) {
	type kernel struct {
		Name, Args                             string
		Mean, L2, NoStat, Scale, Shift         bool
		AffinePerRow, Residual, StoreSum       bool
		Eps, ScaleOffset, Alpha, Storage       string
		HalfOpen, HalfClose                    string
		Sizes, Extents, Zero                   []int
		Arrays                                 []string
		Outs                                   []bool
		GoRows, RowsArgs, GoParams, ParamsArgs string
		// RowBytes: the blocked backward's bytes per value (0: no
		// blocks); Blocks: its block rows at Sizes.
		RowBytes int
		Blocks   []int
	}
	data := struct {
		Header, Package string
		Tolerance       int
		Kernels         []kernel
	}{Header: p.Header, Package: p.Name, Tolerance: backwardTolerance}
	for _, k := range p.Kernels {
		bw := k.Plan.Backward
		if bw == nil || k.Plan.Form.Tensor() {
			continue
		}
		sk := k.Spec
		tk := kernel{
			Name: bw.Name, Mean: sk.Mean, L2: k.Plan.Statistic == "l2", NoStat: k.Plan.NoStat(),
			Scale: sk.Scale, Shift: sk.Shift, AffinePerRow: sk.AffinePerRow,
			Residual: sk.Residual != nil, StoreSum: sk.Residual != nil && sk.Residual.StoreSum,
			Eps: float(sk.Epsilon), ScaleOffset: float(sk.ScaleOffset), Alpha: "1",
			Sizes: k.Sizes, Storage: "f32",
		}
		if sk.RuntimeEpsilon {
			// The backward entry points take no eps (they read the saved
			// rstd): the tests save statistics as a forward call with a
			// typical eps would.
			tk.Eps = float(float64(float32(exampleEps)))
		}
		if sk.Residual != nil {
			tk.Alpha = float(float64(float32(sk.Residual.Alpha)))
		}
		index := map[string]int{}
		var args, mask []string
		arg := func(name string) string {
			i := index[name]
			return fmt.Sprintf("%s[%d]", halfArg(ir.Array{Elem: bw.Args[i].Elem}), i)
		}
		for i, a := range bw.Args {
			index[a.Name] = i
			tk.Arrays = append(tk.Arrays, a.Name)
			tk.Extents = append(tk.Extents, int(a.Extent))
			tk.Outs = append(tk.Outs, a.Out)
			args = append(args, arg(a.Name))
			mask = append(mask, fmt.Sprint(a.Elem.Half()))
			if a.Elem.Half() {
				// The tests call the entry points through halfCall, which
				// hands the half arrays over as u.
				tk.Storage = a.Elem.String()
				tk.HalfOpen = fmt.Sprintf("halfCall(%q, []bool{%s}, a, func(u [][]uint16) { ", tk.Storage, "MASK")
				tk.HalfClose = " })"
			}
			if a.Out && a.Extent == algo.PerColumn {
				tk.Zero = append(tk.Zero, i)
			}
		}
		tk.HalfOpen = strings.Replace(tk.HalfOpen, "MASK", strings.Join(mask, ", "), 1)
		tk.Args = strings.Join(args, ", ")
		irArgs := func(ik *ir.Kernel) string {
			var out []string
			for _, a := range ik.Arrays {
				out = append(out, arg(a.Name))
			}
			return strings.Join(out, ", ")
		}
		tk.GoRows, tk.RowsArgs = goName(bw.Rows), irArgs(bw.Rows)
		if bw.Params != nil {
			tk.GoParams, tk.ParamsArgs = goName(bw.Params), irArgs(bw.Params)
			tk.RowBytes = paramsRowBytes(bw.Params)
			for _, h := range k.Sizes {
				tk.Blocks = append(tk.Blocks, backwardBlockRows(h, tk.RowBytes))
			}
		}
		data.Kernels = append(data.Kernels, tk)
	}
	var buf bytes.Buffer
	if err := templates.BackwardTests.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("gopkg: backward test template: %v", err)
	}
	return gofmt(p.Name+"_backward_test.go", buf.Bytes())
}

// backwardTolerance is the gradients' accuracy contract, in units of
// 2^-24 times each value's magnitude (see the template).
const backwardTolerance = 64
