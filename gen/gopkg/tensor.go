package gopkg

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
)

// The entry points of kernels over [N, C, L] tensors take the channel
// count C (unless fixed) and the spatial size L, and map the tensor onto
// the rows of their kernel as their call plan's algo.Form says.

// tensorParams is the parameter list of a tensor entry point: the arrays,
// then channels (unless fixed) and spatial.
func tensorParams(k Kernel, h int) []jen.Code {
	params := entryParams(k.IR, -1, true)
	ints := []jen.Code{jen.Id("spatial")}
	if h == 0 {
		ints = append([]jen.Code{jen.Id("channels")}, ints...)
	}
	params = append(params, jen.List(ints...).Int())
	if a := argIds(k.IR); len(a) > 0 {
		params = append(params, jen.List(a...).Float32())
	}
	return params
}

// tensorArgs passes a tensor entry point's arguments on.
func tensorArgs(k Kernel, h int, extra ...jen.Code) []jen.Code {
	args := entryArgs(k.IR, -1, extra...)
	if h == 0 {
		args = append(args, jen.Id("channels"))
	}
	return append(append(args, jen.Id("spatial")), argIds(k.IR)...)
}

// channels is the channel count inside a tensor entry point.
func channels(h int) *jen.Statement {
	if h == 0 {
		return jen.Id("channels")
	}
	return jen.Lit(h)
}

// perImageRows is the number of per-row scalars (saved statistics) per
// image, or nil for axis batch, whose rows are the channels of the batch.
func perImageRows(k Kernel) *jen.Statement {
	switch k.Plan.Form {
	case algo.Positions:
		return jen.Id("spatial")
	case algo.Groups:
		return groupCount(k, jen.Id("channels"))
	}
	return nil
}

// groupCount is the number of channel groups of an axis groups kernel
// with c channels: the spec's groups, or c/group_size.
func groupCount(k Kernel, c *jen.Statement) *jen.Statement {
	if k.Plan.GroupSize > 0 {
		return c.Op("/").Lit(k.Plan.GroupSize)
	}
	return jen.Lit(k.Plan.GroupCount)
}

// tensorCheckFunc writes the argument checks of a tensor entry point; it
// returns the number of images N.
func tensorCheckFunc(k Kernel, h int) jen.Code {
	arrays := k.IR.Arrays
	name := jen.Id("name")
	sprintf := func(format string, args ...jen.Code) jen.Code {
		return jen.Panic(jen.Qual("fmt", "Sprintf").Call(append([]jen.Code{jen.Lit(format), name}, args...)...))
	}
	first := firstRowInput(k.IR)
	body := argChecks(k.IR)
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
		name, jen.Lit(arrays[first].Name), jen.Len(jen.Id(arrays[first].Name)), channels(h), jen.Id("spatial")))
	if k.Plan.OneValuePanics {
		body = append(body, jen.If(jen.Id("images").Op("*").Id("spatial").Op("==").Lit(1)).Block(
			sprintf("%s: N*L = 1: a batch of one value per channel has no variance to normalize by")))
	}
	for i, a := range arrays {
		if i == first {
			continue
		}
		var want jen.Code
		switch {
		case a.Role == ir.RowIn || a.Role == ir.RowOut:
			want = jen.Id("images").Op("*").Add(channels(h)).Op("*").Id("spatial")
		case a.Role == ir.Param || perImageRows(k) == nil:
			want = channels(h)
		default:
			want = jen.Id("images").Op("*").Add(perImageRows(k))
		}
		body = append(body, jen.Id("checkLen").Call(name, jen.Lit(a.Name), jen.Len(jen.Id(a.Name)), want))
	}
	body = append(body, overlapChecks(arrays)...)
	body = append(body, jen.Return(jen.Id("images")))
	params := append([]jen.Code{jen.Id("name").String()}, tensorParams(k, h)...)
	return jen.Func().Id(checkName(k, h)).Params(params...).Int().Block(body...)
}

// tensorEntryPoint writes the exported function of a tensor kernel.
func tensorEntryPoint(pkg string, k Kernel, h int) jen.Code {
	name := entryName(k, h)
	arrays := k.IR.Arrays
	body := []jen.Code{
		jen.Id("images").Op(":=").Id(checkName(k, h)).Call(tensorArgs(k, h, jen.Lit(pkg+"."+name))...),
		jen.If(jen.Id("images").Op("==").Lit(0)).Block(jen.Return()),
	}
	call := func(arrayArgs []jen.Code, ints ...jen.Code) jen.Code {
		return jen.Id(implName(k, h)).Call(append(append(arrayArgs, ints...), argIds(k.IR)...)...)
	}
	var whole []jen.Code
	for _, a := range arrays {
		whole = append(whole, jen.Id(a.Name))
	}
	if !k.Plan.Form.PerImage() {
		// One call: channel c's values over the batch are its row; with
		// one position per image they are column c of an [N, C] matrix.
		body = append(body, jen.If(jen.Id("spatial").Op("==").Lit(1)).Block(
			jen.Id(implName(k.columns(), 0)).Call(append(whole, append([]jen.Code{channels(h), jen.Id("images"), channels(h)}, argIds(k.IR)...)...)...),
			jen.Return(),
		))
		body = append(body, call(whole, channels(h), jen.Id("images"), jen.Id("spatial"),
			channels(h).Op("*").Id("spatial"), jen.Id("spatial")))
	} else {
		// One call per image, each with the arrays resliced to it.
		var sliced []jen.Code
		for _, a := range arrays {
			per := jen.Add(channels(h)).Op("*").Id("spatial")
			switch {
			case a.Role == ir.Param:
				sliced = append(sliced, jen.Id(a.Name))
				continue
			case a.Role.PerRow():
				per = perImageRows(k)
			}
			sliced = append(sliced, jen.Id(a.Name).Index(jen.Id("n").Op("*").Add(per), jen.Parens(jen.Id("n").Op("+").Lit(1)).Op("*").Add(per.Clone())))
		}
		var inner jen.Code
		if k.Plan.Form == algo.Positions {
			ints := []jen.Code{jen.Id("spatial")}
			if h == 0 {
				ints = append(ints, jen.Id("channels"))
			}
			inner = call(sliced, append(ints, jen.Id("spatial"))...)
		} else {
			var groups, per jen.Code
			if size := k.Plan.GroupSize; size > 0 {
				body = append(body, jen.Id("groups").Op(":=").Add(channels(h)).Op("/").Lit(size))
				groups, per = jen.Id("groups"), jen.Lit(size)
			} else {
				body = append(body, jen.Id("per").Op(":=").Add(channels(h)).Op("/").Lit(k.Plan.GroupCount).Comment("channels per group"))
				groups, per = jen.Lit(k.Plan.GroupCount), jen.Id("per")
			}
			inner = call(sliced, groups, per, jen.Id("spatial"), jen.Id("spatial"), jen.Add(per).Op("*").Id("spatial"))
		}
		body = append(body, jen.For(jen.Id("n").Op(":=").Range().Id("images")).Block(inner))
	}
	return jen.Comment(tensorEntryDoc(k, h)).Line().Func().Id(name).Params(tensorParams(k, h)...).Block(body...)
}

func tensorEntryDoc(k Kernel, h int) string {
	var b strings.Builder
	c := "channels"
	if h > 0 {
		c = fmt.Sprint(h)
	}
	name := entryName(k, h)
	switch k.Plan.Form {
	case algo.Positions:
		fmt.Fprintf(&b, "%s normalizes, in an [N, %s, spatial] tensor, the %s channel values at each\n// image's spatial position (channels first, ConvNeXt): %s.\n//\n", name, c, c, k.IR.Doc)
	case algo.Channels:
		if k.Plan.NoStat() {
			fmt.Fprintf(&b, "%s scales and shifts each channel of an [N, %s, spatial] tensor (BatchNorm at\n// inference, its statistics folded once into gain = gamma/sqrt(runVar+eps) and\n// bias = beta - runMean*gain): %s.\n//\n", name, c, k.IR.Doc)
			break
		}
		fmt.Fprintf(&b, "%s normalizes each channel of an [N, %s, spatial] tensor by its statistics over\n// the N images and spatial positions (BatchNorm in training): %s.\n//\n", name, c, k.IR.Doc)
	case algo.Groups:
		if size := k.Plan.GroupSize; size > 0 {
			what := fmt.Sprintf("groups of %d consecutive channels", size)
			if size == 1 {
				what = "channels"
			}
			fmt.Fprintf(&b, "%s normalizes, in an [N, %s, spatial] tensor, each image's %s\n// over their spatial values: %s.\n//\n", name, c, what, k.IR.Doc)
			break
		}
		fmt.Fprintf(&b, "%s normalizes, in an [N, %s, spatial] tensor, each image's %d groups of\n// consecutive channels over their spatial values (GroupNorm): %s.\n//\n", name, c, k.Plan.GroupCount, k.IR.Doc)
	}
	if r := k.Spec.Running; r != nil {
		if r.Convention == "onnx" {
			fmt.Fprintf(&b, "// Running statistics (ONNX's convention): runMean = %g*runMean + %g*mean,\n// runVar = %g*runVar + %g*var, with the biased batch variance.\n//\n", float32(r.Momentum), float32(1-r.Momentum), float32(r.Momentum), float32(1-r.Momentum))
		} else {
			fmt.Fprintf(&b, "// Running statistics (PyTorch's convention): runMean = %g*runMean + %g*mean,\n// runVar = %g*runVar + %g*var*n/(n-1), with the unbiased batch variance\n// (n = N*spatial values per channel; n = 1 panics).\n//\n", float32(1-r.Momentum), float32(r.Momentum), float32(1-r.Momentum), float32(r.Momentum))
		}
	}
	per := "N*" + c
	switch k.Plan.Form {
	case algo.Positions:
		per = "N*spatial"
	case algo.Channels:
		per = c
	case algo.Groups:
		per = fmt.Sprintf("N*%d", k.Plan.GroupCount)
		if size := k.Plan.GroupSize; size > 0 {
			per = fmt.Sprintf("N*%s/%d", c, size)
		}
	}
	for _, a := range k.IR.Arrays {
		var n string
		switch {
		case a.Role == ir.RowIn || a.Role == ir.RowOut:
			n = "N*" + c + "*spatial"
		case a.Role == ir.Param || k.Plan.Form == algo.Channels:
			n = c
		default:
			n = per
		}
		fmt.Fprintf(&b, "//   - %s (len %s): %s\n", a.Name, n, tensorArrayDoc(k.Plan.Form, a))
	}
	b.WriteString(argsDoc(k.IR))
	b.WriteString("//\n// N is len(x)/(" + c + "*spatial). dst may be the very same slice as x (in\n// place); any other overlap between an output and another argument panics.")
	return "// " + b.String()
}

// tensorArrayDoc describes an array of a tensor entry point: the IR's
// descriptions speak of rows, which here are positions, channels or groups.
func tensorArrayDoc(form algo.Form, a ir.Array) string {
	set := map[algo.Form]string{algo.Positions: "each position's", algo.Channels: "each channel's", algo.Groups: "each group's"}[form]
	switch a.Name {
	case "dst":
		return "the normalized tensor"
	case "x":
		return "the input tensor, [N, C, spatial]"
	case "gamma", "gain":
		return "each channel's scale"
	case "beta", "bias":
		return "each channel's shift"
	case "mean":
		return set + " mean"
	case "rstd":
		return set + " 1/sqrt(var+eps)"
	}
	return a.Doc
}

// tensorHelpers are the checks only tensor entry points use.
func tensorHelpers() jen.Code {
	n := jen.Id("n")
	return jen.Comment("imageCount returns n/(channels*spatial), the number of images, or panics if n is not a multiple of it.").Line().
		Func().Id("imageCount").Params(jen.List(jen.Id("name"), jen.Id("arr")).String(), jen.List(jen.Id("n"), jen.Id("channels"), jen.Id("spatial")).Int()).Int().Block(
		jen.If(jen.Id("channels").Op(">").Qual("math", "MaxInt").Op("/").Id("spatial")).Block(
			jen.Panic(jen.Qual("fmt", "Sprintf").Call(jen.Lit("%s: channels*spatial = %d*%d overflows int"),
				jen.Id("name"), jen.Id("channels"), jen.Id("spatial")))),
		jen.If(n.Clone().Op("%").Parens(jen.Id("channels").Op("*").Id("spatial")).Op("!=").Lit(0)).Block(
			jen.Panic(jen.Qual("fmt", "Sprintf").Call(jen.Lit("%s: len(%s) = %d is not a multiple of channels*spatial = %d*%d"),
				jen.Id("name"), jen.Id("arr"), n, jen.Id("channels"), jen.Id("spatial")))),
		jen.Return(n.Clone().Op("/").Parens(jen.Id("channels").Op("*").Id("spatial"))),
	)
}
