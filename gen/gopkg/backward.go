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
	rowsK, paramsK := k.backwardKernel(bw.Rows), Kernel{}
	if bw.Params != nil {
		paramsK = k.backwardKernel(bw.Params)
	}
	// zero clears the sums over rows: a call of zero rows has gradients 0.
	var zero []jen.Code
	for _, a := range bw.Args {
		if a.Out && a.Extent == algo.PerColumn {
			zero = append(zero, jen.Clear(jen.Id(a.Name)))
		}
	}
	zero = append(zero, jen.Return())
	// The Params kernel reads dy and x: it runs before the Rows kernel,
	// which may overwrite dy in place.
	paramsCall := func(lo, hi jen.Code, chunk bool) jen.Code {
		var args []jen.Code
		for _, a := range bw.Params.Arrays {
			switch {
			case !chunk || a.Role == ir.Param:
				args = append(args, jen.Id(a.Name))
			case a.Role == ir.RowScalarOut:
				args = append(args, jen.Id(a.Name).Index(lo, hi))
			default:
				args = append(args, jen.Id(a.Name).Index(lo, jen.Empty()))
			}
		}
		cols := hExpr(h)
		if chunk {
			cols = jen.Id("hi").Op("-").Id("lo")
		}
		args = append(args, cols, jen.Id("rows"), hExpr(h))
		return jen.Id(implName(paramsK, 0)).Call(args...)
	}
	rowsCall := func(chunk bool) jen.Code {
		var args []jen.Code
		lo, hi := jen.Id("lo"), jen.Id("hi")
		for _, a := range bw.Rows.Arrays {
			switch {
			case !chunk || a.Role == ir.Param:
				args = append(args, jen.Id(a.Name))
			case a.Role.PerRow():
				args = append(args, jen.Id(a.Name).Index(lo.Clone(), hi.Clone()))
			default:
				args = append(args, jen.Id(a.Name).Index(lo.Clone().Op("*").Add(hExpr(h)), hi.Clone().Op("*").Add(hExpr(h))))
			}
		}
		if chunk {
			args = append(args, jen.Id("hi").Op("-").Id("lo"))
		} else {
			args = append(args, jen.Id("rows"))
		}
		if h == 0 {
			args = append(args, jen.Id("h"))
		}
		return jen.Id(implName(rowsK, h)).Call(args...)
	}

	body := []jen.Code{
		jen.Id("rows").Op(":=").Id(check).Call(backwardArgs(bw.Args, h, jen.Lit(pkg+"."+name))...),
		jen.If(jen.Id("rows").Op("==").Lit(0)).Block(zero...),
	}
	if bw.Params != nil {
		body = append(body, paramsCall(nil, nil, false))
	}
	body = append(body, rowsCall(false))
	entry := jen.Comment(backwardDoc(k, h)).Line().Func().Id(name).Params(backwardParams(bw.Args, h)...).Block(body...)

	pbody := []jen.Code{
		jen.Id("rows").Op(":=").Id(check).Call(backwardArgs(bw.Args, h, jen.Lit(pkg+"."+name+"Parallel"))...),
		jen.If(jen.Id("rows").Op("==").Lit(0)).Block(zero...),
	}
	if bw.Params != nil {
		pbody = append(pbody, jen.Id("parallelColumns").Call(hExpr(h), jen.Id("rows"),
			jen.Func().Params(jen.List(jen.Id("lo"), jen.Id("hi")).Int()).Block(paramsCall(jen.Id("lo"), jen.Id("hi"), true))))
	}
	pbody = append(pbody, jen.Id("parallelRowBlocks").Call(jen.Id("rows"), hExpr(h),
		jen.Func().Params(jen.List(jen.Id("lo"), jen.Id("hi")).Int()).Block(rowsCall(true))))
	pdoc := fmt.Sprintf("// %sParallel is %s with its work split across up to\n"+
		"// GOMAXPROCS goroutines: the sums over rows by blocks of 64 columns, then the\n"+
		"// rows by blocks of 64 rows. Every value is computed by the same\n"+
		"// instructions in the same order as in %s, so the results are the\n"+
		"// same bits; only rows after one whose float32 sums left float32's range\n"+
		"// (which the float64 path then computed) may differ in their last bits.", name, name, name)
	parallel := jen.Comment(pdoc).Line().Func().Id(name + "Parallel").Params(backwardParams(bw.Args, h)...).Block(pbody...)

	return jen.Add(entry).Line().Line().Add(parallel).Line().Line().Add(backwardCheck(k, h))
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
