package gopkg

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// The Parallel entry points of the tensor kernels split a call into
// pieces that are themselves calls the serial entry point could make, so
// that every value comes out with the serial call's very bits: whole
// images for the per-image forms (axis channels, axis groups), and sets
// of whole channels for axis batch. The Columns form of axis batch ([N,
// C]) runs a channel per vector lane: its channel sets are blocks of
// columnBlock channels, so that each piece starts on a vector boundary
// on every ISA and its lanes, masked tails and guard fallbacks (see
// columnsRunFunc) fall on the same channels as in the serial call.

// tensorParallelEntryPoint writes NameParallel for a tensor kernel.
func tensorParallelEntryPoint(pkg string, k Kernel, h int) jen.Code {
	serial := entryName(k, h)
	name := serial + "Parallel"
	arrays := k.IR.Arrays
	id := jen.Id
	body := []jen.Code{
		id("images").Op(":=").Id(checkName(k, h)).Call(tensorArgs(k, h, jen.Lit(pkg+"."+name))...),
	}
	call := func(arrayArgs []jen.Code, ints ...jen.Code) jen.Code {
		return id(implName(k, h)).Call(append(append(arrayArgs, ints...), argIds(k.IR)...)...)
	}
	var doc string
	if k.Plan.Form.PerImage() {
		var sliced []jen.Code
		for _, a := range arrays {
			per := jen.Add(channels(h)).Op("*").Id("spatial")
			switch {
			case a.Role == ir.Param:
				sliced = append(sliced, id(a.Name))
				continue
			case a.Role.PerRow():
				per = perImageRows(k)
			}
			sliced = append(sliced, id(a.Name).Index(id("n").Op("*").Add(per), jen.Parens(id("n").Op("+").Lit(1)).Op("*").Add(per.Clone())))
		}
		var inner jen.Code
		if k.Plan.Form == algo.Positions {
			ints := []jen.Code{id("spatial")}
			if h == 0 {
				ints = append(ints, id("channels"))
			}
			inner = call(sliced, append(ints, id("spatial"))...)
		} else {
			var groups, per jen.Code
			if size := k.Plan.GroupSize; size > 0 {
				body = append(body, id("groups").Op(":=").Add(channels(h)).Op("/").Lit(size))
				groups, per = id("groups"), jen.Lit(size)
			} else {
				body = append(body, id("per").Op(":=").Add(channels(h)).Op("/").Lit(k.Plan.GroupCount).Comment("channels per group"))
				groups, per = jen.Lit(k.Plan.GroupCount), id("per")
			}
			inner = call(sliced, groups, per, id("spatial"), id("spatial"), jen.Add(per).Op("*").Id("spatial"))
		}
		body = append(body, id("parallelRows").Call(id("images"), channels(h).Op("*").Id("spatial"),
			jen.Func().Params(jen.List(id("lo"), id("hi")).Int()).Block(
				jen.For(id("n").Op(":=").Id("lo"), id("n").Op("<").Id("hi"), id("n").Op("++")).Block(inner))))
		doc = fmt.Sprintf("%s is %s with the images split into contiguous runs "+
			"on up to GOMAXPROCS goroutines, each given at least 256 KiB of x (smaller "+
			"inputs run on the calling goroutine). Every image is computed as %s "+
			"computes it, so the results are bit-identical. It returns when every run is done.", name, serial, serial)
	} else {
		// slice gives each array's part for channels c0..c1: a row array
		// from channel c0's first value (the kernel strides over the rest
		// of the batch), the per-channel ones exactly.
		slice := func(rowStart func() *jen.Statement) []jen.Code {
			var out []jen.Code
			for _, a := range arrays {
				switch {
				case a.Role == ir.RowIn || a.Role == ir.RowOut:
					out = append(out, id(a.Name).Index(rowStart(), jen.Empty()))
				case a.Role.PerRow():
					out = append(out, id(a.Name).Index(id("c0"), id("c1")))
				default:
					panic(fmt.Sprintf("gopkg: %s: array %s of role %s in a kernel over the batch", k.IR.Name, a.Name, a.Role))
				}
			}
			return out
		}
		lohi := jen.List(id("lo"), id("hi")).Int()
		body = append(body,
			jen.If(id("images").Op("==").Lit(0)).Block(jen.Return()),
			jen.If(id("spatial").Op("==").Lit(1)).Block(
				jen.Comment(fmt.Sprintf("[N, C]: blocks of %d channels, one per vector lane.", target.WidestLanes())),
				id("blocks").Op(":=").Parens(channels(h).Op("+").Id(columnBlock).Op("-").Lit(1)).Op("/").Id(columnBlock),
				id("parallelRows").Call(id("blocks"), id(columnBlock).Op("*").Id("images"), jen.Func().Params(lohi).Block(
					jen.List(id("c0"), id("c1")).Op(":=").List(id("lo").Op("*").Id(columnBlock), jen.Min(id("hi").Op("*").Id(columnBlock), channels(h))),
					id(implName(k.columns(), 0)).Call(append(append(slice(func() *jen.Statement { return id("c0") }),
						id("c1").Op("-").Id("c0"), id("images"), channels(h)), argIds(k.IR)...)...),
				)),
				jen.Return(),
			),
			jen.Comment("One row per channel: any set of channels is a call of its own."),
			id("parallelRows").Call(channels(h), id("images").Op("*").Id("spatial"), jen.Func().Params(lohi).Block(
				jen.List(id("c0"), id("c1")).Op(":=").List(id("lo"), id("hi")),
				call(slice(func() *jen.Statement { return id("c0").Op("*").Id("spatial") }),
					id("c1").Op("-").Id("c0"), id("images"), id("spatial"), channels(h).Op("*").Id("spatial"), id("spatial")),
			)),
		)
		doc = fmt.Sprintf("%s is %s with the channels split into contiguous "+
			"sets on up to GOMAXPROCS goroutines, each given at least 256 KiB of x "+
			"(smaller inputs run on the calling goroutine); with spatial = 1 the sets "+
			"are blocks of %d channels, the widest vector's lanes. Every channel is computed as "+
			"%s computes it, so the results are bit-identical. It returns when "+
			"every set is done.", name, serial, target.WidestLanes(), serial)
	}
	return jen.Comment(lineComment(wrap(doc, 77))).Line().Func().Id(name).Params(tensorParams(k, h)...).Block(body...)
}

// columnBlockConst declares columnBlock, the rows of a Columns kernel
// that a Parallel entry point keeps together and whose guard fallback
// the pure-Go kernel finishes as one.
func columnBlockConst() jen.Code {
	return jen.Comment(columnBlock + " is the widest vector's lanes: the Columns kernels' rows (channels of").Line().
		Comment("[N, C], positions of an image) are split and finished in blocks of it.").Line().
		Const().Id(columnBlock).Op("=").Lit(target.WidestLanes())
}
