package gopkg

import (
	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
)

// The bulk conversions (BF16FromFloat32 and the like, <pkg>_half.go) run
// the assembly of algo.Conversion's kernel where the CPU has an ISA that
// lowers it, and pure Go for what it leaves (everything without one).

// convChunk is the row length the conversions' assembly is called with:
// rows of convChunk values, then one row of the rest, so that a row's
// byte offsets stay small whatever the length.
const convChunk = 1 << 14

// convKernels lists the package's bulk conversions as kernels, on the
// assembly ISAs of its half-precision kernels that lower them.
func (p *Package) convKernels() []Kernel {
	var isas []target.ISA
	for _, isa := range target.All {
		for _, k := range p.Kernels {
			if target.KernelElem(k.IR).Half() && contains(k.ISAs, isa) && !contains(isas, isa) {
				isas = append(isas, isa)
			}
		}
	}
	var out []Kernel
	for _, e := range p.Elems() {
		for _, narrow := range []bool{true, false} {
			plan, err := algo.Conversion(e, narrow)
			if err != nil {
				panic(err) // p.Elems are half formats
			}
			var lowered []target.ISA
			for _, isa := range isas {
				if isa.Lowers(plan.Kernel) {
					lowered = append(lowered, isa)
				}
			}
			out = append(out, Kernel{Plan: plan, IR: plan.Kernel, ISAs: lowered, noNT: true})
		}
	}
	return out
}

// convFuncs lists the conversions' assembly functions on goarch.
func (p *Package) convFuncs(goarch string) []target.Func {
	var out []target.Func
	for _, k := range p.convKernels() {
		for _, e := range k.entries() {
			out = append(out, e.Arch(goarch).Funcs...)
		}
	}
	return out
}

// simdName is the function a bulk conversion calls first: it converts
// with the assembly the CPU has and returns how many values it did.
func simdName(k Kernel) string { return "simd" + k.IR.Name }

// convRunName drives one ISA's function of a conversion over a call.
func convRunName(k Kernel) string { return "conv" + k.IR.Name }

// convParams are a conversion's slices: dst, src.
func convParams(k *ir.Kernel) []jen.Code {
	var out []jen.Code
	for _, a := range k.Arrays {
		if a.Elem.Half() {
			out = append(out, jen.Id(a.Name).Index().Uint16())
		} else {
			out = append(out, jen.Id(a.Name).Index().Float32())
		}
	}
	return out
}

// convCode writes, for each conversion, its simd function for goarch
// (nil goarch funcs: it converts nothing) and the run function its ISAs
// share.
func (p *Package) convCode(goarch string) []jen.Code {
	var out []jen.Code
	for _, k := range p.convKernels() {
		var funcs []target.Func
		for _, e := range k.entries() {
			funcs = append(funcs, e.Arch(goarch).Funcs...)
		}
		doc := jen.Comment(simdName(k) + " converts src into dst (of src's length) with the").Line().
			Comment("assembly the CPU has and returns how many values it converted: all,").Line().
			Comment("or none without assembly.").Line()
		if len(funcs) == 0 {
			out = append(out, jen.Add(doc).Func().Id(simdName(k)).Params(convParams(k.IR)...).Int().Block(jen.Return(jen.Lit(0))))
			continue
		}
		var cases []jen.Code
		for _, fn := range funcs {
			call := jen.Return(jen.Id(convRunName(k)).Call(kernel(fn), jen.Id("dst"), jen.Id("src")))
			if checked(fn.ISA) {
				cases = append(cases, jen.Case(jen.Id(fn.ISA.Flag(k.IR))).Block(call))
			} else {
				cases = append(cases, jen.Default().Block(call))
			}
		}
		body := []jen.Code{jen.Switch().Block(cases...)}
		if checked(funcs[len(funcs)-1].ISA) {
			body = append(body, jen.Return(jen.Lit(0)))
		}
		out = append(out, jen.Add(doc).Func().Id(simdName(k)).Params(convParams(k.IR)...).Int().Block(body...))

		sig := target.Func{Kernel: k.IR}
		params := append([]jen.Code{jen.Id("kern").Func().Add(asmParams(sig))}, convParams(k.IR)...)
		n := jen.Id("n")
		out = append(out, jen.Comment(convRunName(k)+" runs kern over src and dst: rows of convChunk values,").Line().
			Comment("then one row of the rest.").Line().
			Func().Id(convRunName(k)).Params(params...).Int().Block(
			jen.Add(n).Op(":=").Len(jen.Id("src")),
			jen.If(jen.Id("rows").Op(":=").Add(n).Op("/").Id("convChunk"), jen.Id("rows").Op(">").Lit(0)).Block(
				jen.Id("kern").Call(jen.Op("&").Id("dst").Index(jen.Lit(0)), jen.Op("&").Id("src").Index(jen.Lit(0)), jen.Id("rows"), jen.Id("convChunk")),
			),
			jen.If(jen.Id("done").Op(":=").Add(n).Op("-").Add(n).Op("%").Id("convChunk"), jen.Id("done").Op("<").Add(n)).Block(
				jen.Id("kern").Call(jen.Op("&").Id("dst").Index(jen.Id("done")), jen.Op("&").Id("src").Index(jen.Id("done")), jen.Lit(1), jen.Add(n).Op("-").Id("done")),
			),
			jen.Return(n),
		))
	}
	return out
}

// convChunkDecl declares convChunk, where some conversion runs assembly.
func (p *Package) convChunkDecl(goarch string) jen.Code {
	if len(p.convFuncs(goarch)) == 0 {
		return nil
	}
	return jen.Comment("convChunk is the row length of the conversions' assembly calls: rows of").Line().
		Comment("convChunk values, then one of the rest, so that offsets within a row stay small.").Line().
		Const().Id("convChunk").Op("=").Add(pow2(convChunk))
}
