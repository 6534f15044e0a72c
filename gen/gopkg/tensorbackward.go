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

// The backward entry points of the kernels over [N, C, L] tensors take the
// backward's arrays (algo.Backward.Args) and then the forward's channels
// (unless fixed) and spatial; they run the backward's kernels as the
// forward's entry point runs its kernel: per channel over the batch (axis
// batch), per image (axis groups, axis channels).

// hasBackwardOf reports whether a kernel of the package has a backward
// pass over rows (tensor false) or over tensors (tensor true).
func (p *Package) hasBackwardOf(tensor bool) bool {
	for _, k := range p.Kernels {
		if k.Plan.Backward != nil && k.Plan.Form.Tensor() == tensor {
			return true
		}
	}
	return false
}

// HasRowBackward reports a backward pass of a kernel over rows.
func (p *Package) HasRowBackward() bool { return p.hasBackwardOf(false) }

// HasTensorBackward reports a backward pass of a kernel over tensors.
func (p *Package) HasTensorBackward() bool { return p.hasBackwardOf(true) }

// tensorBackwardParams is the parameter list of a tensor backward entry
// point at size h.
func tensorBackwardParams(args []algo.BackwardArg, h int) []jen.Code {
	params := golang.ArrayParams(backwardArrays(args), nil)
	ints := []jen.Code{jen.Id("spatial")}
	if h == 0 {
		ints = append([]jen.Code{jen.Id("channels")}, ints...)
	}
	return append(params, jen.List(ints...).Int())
}

func tensorBackwardArgs(args []algo.BackwardArg, h int, extra ...jen.Code) []jen.Code {
	out := append([]jen.Code{}, extra...)
	for _, a := range args {
		out = append(out, jen.Id(a.Name))
	}
	if h == 0 {
		out = append(out, jen.Id("channels"))
	}
	return append(out, jen.Id("spatial"))
}

// tensorBackwardLen is the length an array of the backward of k must have.
func tensorBackwardLen(k Kernel, a algo.BackwardArg, h int) *jen.Statement {
	switch {
	case a.Extent == algo.PerElement:
		return jen.Id("images").Op("*").Add(channels(h)).Op("*").Id("spatial")
	case a.Extent == algo.PerColumn || k.Plan.Form == algo.Channels:
		return channels(h)
	}
	return jen.Id("images").Op("*").Add(perImageRows(k))
}

// tensorBackwardCheck writes the argument checks of k's backward at size
// h; it returns the number of images.
func tensorBackwardCheck(k Kernel, h int) jen.Code {
	bw := k.Plan.Backward
	name := jen.Id("name")
	sprintf := func(format string, args ...jen.Code) jen.Code {
		return jen.Panic(jen.Qual("fmt", "Sprintf").Call(append([]jen.Code{jen.Lit(format), name}, args...)...))
	}
	var body []jen.Code
	if h == 0 {
		body = append(body, jen.If(jen.Id("channels").Op("<").Lit(1).Op("||").Id("spatial").Op("<").Lit(1)).Block(
			sprintf("%s: channels = %d, spatial = %d, want both >= 1", jen.Id("channels"), jen.Id("spatial"))))
	} else {
		body = append(body, jen.If(jen.Id("spatial").Op("<").Lit(1)).Block(
			sprintf("%s: spatial = %d, want spatial >= 1", jen.Id("spatial"))))
	}
	if g := k.Plan.GroupCount; g > 1 {
		body = append(body, jen.If(channels(h).Op("%").Lit(g).Op("!=").Lit(0)).Block(
			sprintf(fmt.Sprintf("%%s: channels = %%d is not a multiple of the %d groups", g), channels(h))))
	}
	if size := k.Plan.GroupSize; size > 1 {
		body = append(body, jen.If(channels(h).Op("%").Lit(size).Op("!=").Lit(0)).Block(
			sprintf(fmt.Sprintf("%%s: channels = %%d is not a multiple of the group size %d", size), channels(h))))
	}
	body = append(body, jen.Id("images").Op(":=").Id("imageCount").Call(
		name, jen.Lit("dy"), jen.Len(jen.Id("dy")), channels(h), jen.Id("spatial")))
	for _, a := range bw.Args {
		if a.Name == "dy" {
			continue
		}
		body = append(body, jen.Id("checkLen").Call(name, jen.Lit(a.Name), jen.Len(jen.Id(a.Name)), tensorBackwardLen(k, a, h)))
	}
	body = append(body, backwardOverlaps(bw.Args)...)
	body = append(body, jen.Return(jen.Id("images")))
	params := append([]jen.Code{jen.Id("name").String()}, tensorBackwardParams(bw.Args, h)...)
	return jen.Func().Id("check" + backwardEntryName(k, h)).Params(params...).Int().Block(body...)
}

// backwardOverlaps are the overlap checks of a backward's arrays: an
// output may be the very same slice as dy when it has dy's length, no
// other overlap is allowed.
func backwardOverlaps(args []algo.BackwardArg) []jen.Code {
	var body []jen.Code
	for i, out := range args {
		if !out.Out {
			continue
		}
		for j, other := range args {
			if j == i || (other.Out && j < i) {
				continue
			}
			sameOK := out.Extent == algo.PerElement && other.Name == "dy"
			if out.Elem.Half() || other.Elem.Half() {
				body = append(body, halfOverlap(ir.Array{Name: out.Name, Elem: out.Elem}, ir.Array{Name: other.Name, Elem: other.Elem}, sameOK))
				continue
			}
			body = append(body, jen.Id("checkOverlap").Call(jen.Id("name"),
				jen.Lit(out.Name), jen.Id(out.Name), jen.Lit(other.Name), jen.Id(other.Name), jen.Lit(sameOK)))
		}
	}
	return body
}

// tensorBackwardCall calls the implementation of ik (a kernel of k's
// backward at size h) with each array as arg gives it and the ints after.
func tensorBackwardCall(k Kernel, ik *ir.Kernel, h int, arg func(a ir.Array) jen.Code, ints ...jen.Code) jen.Code {
	var args []jen.Code
	for _, a := range ik.Arrays {
		args = append(args, arg(a))
	}
	return jen.Id(implName(k.backwardKernel(ik), h)).Call(append(args, ints...)...)
}

// tensorBackwardEntryPoints writes the backward entry point of tensor
// kernel k at size h, its Parallel form and their checks.
func tensorBackwardEntryPoints(pkg string, k Kernel, h int) jen.Code {
	bw := k.Plan.Backward
	name := backwardEntryName(k, h)
	id := jen.Id
	whole := func(a ir.Array) jen.Code { return id(a.Name) }
	lohi := jen.List(id("lo"), id("hi")).Int()
	cl := func() *jen.Statement { return channels(h).Op("*").Id("spatial") }
	// The parameter gradients of a call without images are 0.
	var zero []jen.Code
	for _, a := range bw.Args {
		if a.Out && a.Extent != algo.PerElement {
			zero = append(zero, jen.Clear(id(a.Name)))
		}
	}
	zero = append(zero, jen.Return())
	head := func(entry string) []jen.Code {
		return []jen.Code{
			id("images").Op(":=").Id("check" + name).Call(tensorBackwardArgs(bw.Args, h, jen.Lit(pkg+"."+entry))...),
			jen.If(id("images").Op("==").Lit(0)).Block(zero...),
		}
	}
	// perImage slices a row or per-set array to image n.
	perImage := func(a ir.Array) jen.Code {
		switch {
		case a.Role == ir.Param:
			return id(a.Name)
		case a.Role.PerRow():
			per := perImageRows(k)
			return id(a.Name).Index(id("n").Op("*").Add(per), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Add(per.Clone()))
		}
		return id(a.Name).Index(id("n").Op("*").Add(cl()), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Add(cl()))
	}
	var serial, parallel []jen.Code
	var doc string
	switch k.Plan.Form {
	case algo.Channels:
		// As the forward: one row per channel, or one lane per channel of
		// an [N, C] matrix.
		fromC := func(rowStart func() *jen.Statement) func(a ir.Array) jen.Code {
			return func(a ir.Array) jen.Code {
				if a.Role.PerRow() {
					return id(a.Name).Index(id("c0"), id("c1"))
				}
				return id(a.Name).Index(rowStart(), jen.Empty())
			}
		}
		serial = append(serial,
			jen.If(id("spatial").Op("==").Lit(1)).Block(
				tensorBackwardCall(k, bw.Columns, 0, whole, channels(h), id("images"), channels(h)),
				jen.Return()),
			tensorBackwardCall(k, bw.Rows, 0, whole, channels(h), id("images"), id("spatial"), cl(), id("spatial")))
		parallel = append(parallel,
			jen.If(id("spatial").Op("==").Lit(1)).Block(
				id("blocks").Op(":=").Parens(channels(h).Op("+").Id(columnBlock).Op("-").Lit(1)).Op("/").Id(columnBlock),
				id("parallelRows").Call(id("blocks"), id(columnBlock).Op("*").Id("images"), jen.Func().Params(lohi).Block(
					jen.List(id("c0"), id("c1")).Op(":=").List(id("lo").Op("*").Id(columnBlock), jen.Min(id("hi").Op("*").Id(columnBlock), channels(h))),
					tensorBackwardCall(k, bw.Columns, 0, fromC(func() *jen.Statement { return id("c0") }),
						id("c1").Op("-").Id("c0"), id("images"), channels(h)))),
				jen.Return()),
			id("parallelRows").Call(channels(h), id("images").Op("*").Id("spatial"), jen.Func().Params(lohi).Block(
				jen.List(id("c0"), id("c1")).Op(":=").List(id("lo"), id("hi")),
				tensorBackwardCall(k, bw.Rows, 0, fromC(func() *jen.Statement { return id("c0").Op("*").Id("spatial") }),
					id("c1").Op("-").Id("c0"), id("images"), id("spatial"), cl(), id("spatial")))))
		doc = "the channels split into contiguous sets (with spatial = 1, blocks of columnBlock channels)"
	case algo.Groups:
		var groups, per jen.Code
		var decl jen.Code
		if size := k.Plan.GroupSize; size > 0 {
			decl = id("groups").Op(":=").Add(channels(h)).Op("/").Lit(size)
			groups, per = id("groups"), jen.Lit(size)
		} else {
			decl = id("per").Op(":=").Add(channels(h)).Op("/").Lit(k.Plan.GroupCount).Comment("channels per group")
			groups, per = jen.Lit(k.Plan.GroupCount), id("per")
		}
		serial = append(serial, decl)
		parallel = append(parallel, decl)
		rowsCall := tensorBackwardCall(k, bw.Rows, 0, perImage, groups, per, id("spatial"), id("spatial"), jen.Add(per).Op("*").Id("spatial"))
		if bw.Params != nil {
			// The parameter gradients run first: they read dy, which dx may
			// overwrite. One row per channel, its segments the images; the
			// saved statistics gathered to one value per channel and image.
			var gather []jen.Code
			for _, a := range bw.Params.Arrays {
				if a.Role == ir.Param {
					gather = append(gather, id("t"+a.Name).Op(":=").Id("channelStats").Call(id(a.Name), id("images"), channels(h), per))
				}
			}
			stats := func(slice bool) func(a ir.Array) jen.Code {
				return func(a ir.Array) jen.Code {
					switch {
					case a.Role == ir.Param && slice:
						return id("t"+a.Name).Index(id("c0").Op("*").Id("images"), id("c1").Op("*").Id("images"))
					case a.Role == ir.Param:
						return id("t" + a.Name)
					case !slice:
						return id(a.Name)
					case a.Role.PerRow():
						return id(a.Name).Index(id("c0"), id("c1"))
					}
					return id(a.Name).Index(id("c0").Op("*").Id("spatial"), jen.Empty())
				}
			}
			serial = append(serial, gather...)
			serial = append(serial, tensorBackwardCall(k, bw.Params, 0, stats(false), channels(h), id("images"), id("spatial"), cl(), id("spatial")))
			parallel = append(parallel, gather...)
			parallel = append(parallel, id("parallelRows").Call(channels(h), id("images").Op("*").Id("spatial"), jen.Func().Params(lohi).Block(
				jen.List(id("c0"), id("c1")).Op(":=").List(id("lo"), id("hi")),
				tensorBackwardCall(k, bw.Params, 0, stats(true), id("c1").Op("-").Id("c0"), id("images"), id("spatial"), cl(), id("spatial")))))
		}
		serial = append(serial, jen.For(id("n").Op(":=").Range().Id("images")).Block(rowsCall))
		parallel = append(parallel, id("parallelRows").Call(id("images"), cl(), jen.Func().Params(lohi).Block(
			jen.For(id("n").Op(":=").Id("lo"), id("n").Op("<").Id("hi"), id("n").Op("++")).Block(rowsCall))))
		doc = "the parameter gradients' channels, then the images, split into contiguous sets"
	case algo.Positions:
		rowsInts := []jen.Code{id("spatial")}
		if h == 0 {
			rowsInts = append(rowsInts, id("channels"))
		}
		rowsCall := tensorBackwardCall(k, bw.Rows, h, perImage, append(rowsInts, id("spatial"))...)
		if bw.Params != nil {
			// Per image, one row per channel over the positions (the
			// statistics one per position); then the images' sums added
			// per channel, an [N, C] matrix's columns.
			var alloc []jen.Code
			for _, a := range bw.Sums.Arrays {
				if a.Role == ir.RowIn {
					alloc = append(alloc, id(a.Name).Op(":=").Make(jen.Index().Float32(), id("images").Op("*").Add(channels(h))))
				}
			}
			part := func(a ir.Array) jen.Code {
				switch {
				case a.Role == ir.RowScalarOut:
					return id("part"+strings.TrimPrefix(a.Name, "d")).Index(id("n").Op("*").Add(channels(h)), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Add(channels(h)))
				case a.Role == ir.Param:
					return id(a.Name).Index(id("n").Op("*").Id("spatial"), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Id("spatial"))
				}
				return id(a.Name).Index(id("n").Op("*").Add(cl()), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Add(cl()))
			}
			paramsCall := tensorBackwardCall(k, bw.Params, 0, part, channels(h), id("spatial"))
			sums := tensorBackwardCall(k, bw.Sums, 0, whole, channels(h), id("images"), channels(h))
			serial = append(serial, alloc...)
			serial = append(serial, jen.For(id("n").Op(":=").Range().Id("images")).Block(paramsCall), sums)
			parallel = append(parallel, alloc...)
			parallel = append(parallel, id("parallelRows").Call(id("images"), cl(), jen.Func().Params(lohi).Block(
				jen.For(id("n").Op(":=").Id("lo"), id("n").Op("<").Id("hi"), id("n").Op("++")).Block(paramsCall))), sums)
		}
		serial = append(serial, jen.For(id("n").Op(":=").Range().Id("images")).Block(rowsCall))
		parallel = append(parallel, id("parallelRows").Call(id("images"), cl(), jen.Func().Params(lohi).Block(
			jen.For(id("n").Op(":=").Id("lo"), id("n").Op("<").Id("hi"), id("n").Op("++")).Block(rowsCall))))
		doc = "the images split into contiguous sets (the parameter gradients' per-image sums, then the input gradients)"
	}
	entry := jen.Comment(tensorBackwardDoc(k, h)).Line().Func().Id(name).Params(tensorBackwardParams(bw.Args, h)...).
		Block(append(head(name), serial...)...)
	pdoc := fmt.Sprintf("%sParallel is %s with %s on up to GOMAXPROCS goroutines, each given at least 256 KiB "+
		"(smaller calls run on the calling goroutine). Every value is computed as %s computes it, so the results are "+
		"bit-identical. It returns when every set is done.", name, name, doc, name)
	par := jen.Comment(lineComment(wrap(pdoc, 77))).Line().Func().Id(name + "Parallel").Params(tensorBackwardParams(bw.Args, h)...).
		Block(append(head(name+"Parallel"), parallel...)...)
	return jen.Add(entry).Line().Line().Add(par).Line().Line().Add(tensorBackwardCheck(k, h))
}

func tensorBackwardDoc(k Kernel, h int) string {
	bw := k.Plan.Backward
	c := "channels"
	if h > 0 {
		c = fmt.Sprint(h)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is the backward pass of %s over an [N, %s, spatial] tensor, with\n// the statistics the forward saved (per %s): %s.\n//\n",
		backwardEntryName(k, h), entryName(k, h), c, map[algo.Form]string{algo.Channels: "channel", algo.Groups: "image and group", algo.Positions: "image and position"}[k.Plan.Form], bw.Rows.Doc)
	sets := map[algo.Form]string{algo.Positions: "N*spatial", algo.Channels: c, algo.Groups: fmt.Sprintf("N*%d", k.Plan.GroupCount)}[k.Plan.Form]
	if size := k.Plan.GroupSize; size > 0 {
		sets = fmt.Sprintf("N*%s/%d", c, size)
	}
	for _, a := range bw.Args {
		n := "N*" + c + "*spatial"
		switch {
		case a.Extent == algo.PerColumn || (a.Extent == algo.PerRow && k.Plan.Form == algo.Channels):
			n = c
		case a.Extent == algo.PerRow:
			n = sets
		}
		bits := ""
		if a.Elem.Half() {
			bits = ", " + a.Elem.String() + " bits"
		}
		fmt.Fprintf(&b, "//   - %s (len %s%s): %s\n", a.Name, n, bits, tensorBackwardArgDoc(k.Plan.Form, a))
	}
	b.WriteString("//\n// N is len(dy)/(" + c + "*spatial); with N = 0 the parameter gradients are set to 0.\n")
	b.WriteString("// dx may be the very same slice as dy (in place); other overlaps panic.\n")
	b.WriteString("// A NaN makes NaN the input gradients of its normalized set and the parameter\n")
	b.WriteString("// gradients it enters; the other sets are unaffected.")
	return "// " + b.String()
}

func tensorBackwardArgDoc(form algo.Form, a algo.BackwardArg) string {
	set := map[algo.Form]string{algo.Positions: "each position's", algo.Channels: "each channel's", algo.Groups: "each group's"}[form]
	switch a.Name {
	case "dgamma", "dgain":
		return "the gradient with respect to each channel's scale: the sum over the call, overwritten"
	case "dbeta", "dbias":
		return "the gradient with respect to each channel's shift: the sum over the call, overwritten"
	case "x":
		return "the forward's input tensor"
	case "gamma", "gain":
		return "each channel's scale, as in the forward"
	case "mean":
		return set + " mean, as the forward saved it"
	case "rstd":
		return set + " 1/sqrt(var+eps), as the forward saved it"
	}
	return a.Doc
}

// channelStatsHelper writes channelStats, which gathers a group kernel's
// saved statistics (one per image and group) to one per channel and image,
// channel-major: the Params kernel's segment parameters.
func channelStatsHelper() jen.Code {
	id := jen.Id
	return jen.Comment("channelStats returns, for each channel c and image n, at c*images+n, the statistic").Line().
		Comment("of c's group in image n (s holds images*groups values, groups = channels/per).").Line().
		Func().Id("channelStats").Params(id("s").Index().Float32(), jen.List(id("images"), id("channels"), id("per")).Int()).Index().Float32().Block(
		id("groups").Op(":=").Id("channels").Op("/").Id("per"),
		id("out").Op(":=").Make(jen.Index().Float32(), id("images").Op("*").Id("channels")),
		jen.For(id("c").Op(":=").Range().Id("channels")).Block(
			jen.For(id("n").Op(":=").Range().Id("images")).Block(
				id("out").Index(id("c").Op("*").Id("images").Op("+").Id("n")).Op("=").Id("s").Index(id("n").Op("*").Id("groups").Op("+").Id("c").Op("/").Id("per")))),
		jen.Return(id("out")),
	)
}

// hasGroupBackward reports a backward of an axis groups kernel with
// parameter gradients (which need channelStats).
func (p *Package) hasGroupBackward() bool {
	for _, k := range p.Kernels {
		if bw := k.Plan.Backward; bw != nil && k.Plan.Form == algo.Groups && bw.Params != nil {
			return true
		}
	}
	return false
}

// TensorBackwardTestFile is <pkg>_tensor_backward_test.go, from
// templates/tensor_backward_test.go.tmpl.
func TensorBackwardTestFile(p *Package) ([]byte, error) {
	type kernel struct {
		Name, Entry, Axis, Args, Eps, ScaleOffset string
		Storage, HalfOpen, HalfClose              string
		Groups, GroupSize                         int
		Mean, NoStat, Scale, Shift                bool
		Sizes                                     []int
		Arrays                                    []string
		Outs                                      []bool
	}
	data := struct {
		Header, Package string
		Tolerance       int
		Kernels         []kernel
	}{Header: p.Header, Package: p.Name, Tolerance: backwardTolerance}
	for _, k := range p.Kernels {
		bw := k.Plan.Backward
		if bw == nil || !k.Plan.Form.Tensor() {
			continue
		}
		sk := k.Spec
		tk := kernel{
			Name: bw.Name, Entry: backwardEntryName(k, 0), Axis: sk.Axis, Groups: k.Plan.GroupCount, GroupSize: k.Plan.GroupSize,
			Mean: sk.Mean, NoStat: k.Plan.NoStat(), Scale: sk.Scale, Shift: sk.Shift,
			Eps: float(sk.Epsilon), ScaleOffset: float(sk.ScaleOffset), Sizes: k.Sizes, Storage: "f32",
		}
		if sk.RuntimeEpsilon {
			tk.Eps = float(float64(float32(exampleEps)))
		}
		var args, mask []string
		for i, a := range bw.Args {
			tk.Arrays = append(tk.Arrays, a.Name)
			tk.Outs = append(tk.Outs, a.Out)
			args = append(args, fmt.Sprintf("%s[%d]", halfArg(ir.Array{Elem: a.Elem}), i))
			mask = append(mask, fmt.Sprint(a.Elem.Half()))
			if a.Elem.Half() {
				tk.Storage = a.Elem.String()
			}
		}
		if tk.Storage != "f32" {
			// The tests call the entry points through halfCall, which
			// hands the half arrays over as u.
			tk.HalfOpen = fmt.Sprintf("halfCall(%q, []bool{%s}, a, func(u [][]uint16) { ", tk.Storage, strings.Join(mask, ", "))
			tk.HalfClose = " })"
		}
		tk.Args = strings.Join(args, ", ")
		data.Kernels = append(data.Kernels, tk)
	}
	var buf bytes.Buffer
	if err := templates.TensorBackwardTests.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("gopkg: tensor backward test template: %v", err)
	}
	return gofmt(p.Name+"_tensor_backward_test.go", buf.Bytes())
}
