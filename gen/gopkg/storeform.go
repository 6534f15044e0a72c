package gopkg

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/lower/arm64"
	"github.com/normgen/normgen/gen/target"
)

// The NEON store forms (gen/lower/arm64's storeform.go): a function whose
// main loops run faster on Neoverse N2, V1 and V2 with every register
// pair stored by STP has a second form, named with arm64.PairsSuffix. The
// dispatch reads the core's part number once (MIDR_EL1, where Linux
// emulates the read) and passes every kernel through neonForm.

const (
	pairsVar  = "neonSTP"
	pairsCore = "neonPairsCore"
	formFunc  = "neonForm"
	// forcedFunc is the tests' neonForm with the form forced.
	forcedFunc = "neonForced"
)

// hasPairs reports whether fn has an STP form.
func hasPairs(fn target.Func) bool {
	if fn.ISA != target.NEON {
		return false
	}
	ok, err := arm64.StoreForms(fn)
	return ok && err == nil // a lowering error fails the .s file itself
}

func pairsName(fn target.Func) string { return fn.Name() + arm64.PairsSuffix }

// kernel is the kernel the dispatch runs for fn: fn, or the form of this
// core.
func kernel(fn target.Func) jen.Code {
	if !hasPairs(fn) {
		return jen.Id(fn.Name())
	}
	return jen.Id(formFunc).Call(jen.Id(pairsVar), jen.Id(fn.Name()), jen.Id(pairsName(fn)))
}

// forced is the kernel of fn's test in one form: forced through neonForm.
func forced(fn target.Func, stp bool) *jen.Statement {
	return jen.Id(forcedFunc).Call(jen.Lit(stp), jen.Id(fn.Name()), jen.Id(pairsName(fn)))
}

// anyPairs reports whether some function of funcs has an STP form.
func anyPairs(funcs []target.Func) bool {
	for _, fn := range funcs {
		if hasPairs(fn) {
			return true
		}
	}
	return false
}

// pairsCode declares neonSTP, the MIDR probe, the part numbers and
// neonForm, for an arm64 file whose functions have STP forms.
func pairsCode() []jen.Code {
	midr := jen.Id("midr")
	return []jen.Code{
		jen.Comment(pairsVar+" reports a core whose Neoverse model runs the STP forms faster,").Line().
			Comment("read once at start-up; without HWCAP_CPUID the MIDR read would fault.").Line().
			Var().Id(pairsVar).Op("=").Qual("golang.org/x/sys/cpu", "ARM64").Dot("HasCPUID").Op("&&").Id(pairsCore).Call(jen.Id(arm64.MIDRFunc).Call()),
		jen.Comment(arm64.MIDRFunc + " returns MIDR_EL1; only where cpu.ARM64.HasCPUID.").Line().
			Func().Id(arm64.MIDRFunc).Params().Uint64(),
		jen.Comment(pairsCore+" reports whether MIDR value midr is an Arm Neoverse N2 (part").Line().
			Comment("0xd49), V1 (0xd40) or V2 (0xd4f). N1, the Cortex-A76/A77/A78 class and").Line().
			Comment("unknown cores keep the first form, whose STP pairs never slow N1.").Line().
			Func().Id(pairsCore).Params(midr.Clone().Uint64()).Bool().Block(
			jen.If(midr.Clone().Op(">>").Lit(24).Op("&").Op("0xff").Op("!=").Op("0x41")).Block(jen.Return(jen.False())),
			jen.Switch(midr.Clone().Op(">>").Lit(4).Op("&").Op("0xfff")).Block(
				jen.Case(jen.Id("0xd49"), jen.Id("0xd40"), jen.Id("0xd4f")).Block(jen.Return(jen.True())),
			),
			jen.Return(jen.False()),
		),
		jen.Comment(formFunc+" is a kernel's STP form where stp, else its first form.").Line().
			Func().Id(formFunc).Types(jen.Id("F").Any()).Params(jen.Id("stp").Bool(), jen.List(jen.Id("first"), jen.Id("pairs")).Id("F")).Id("F").Block(
			jen.If(jen.Id("stp")).Block(jen.Return(jen.Id("pairs"))),
			jen.Return(jen.Id("first")),
		),
	}
}

// pairsTestCode declares neonForced and TestNeonStoreForm.
func pairsTestCode() []jen.Code {
	ptr := func(x string) jen.Code { return jen.Qual("reflect", "ValueOf").Call(jen.Id(x)).Dot("Pointer").Call() }
	t := jen.Id("t")
	return []jen.Code{
		jen.Comment(forcedFunc+" is "+formFunc+" with the form forced to stp; it panics, failing the").Line().
			Comment("test that runs it, unless that is the form it returns.").Line().
			Func().Id(forcedFunc).Types(jen.Id("F").Any()).Params(jen.Id("stp").Bool(), jen.List(jen.Id("first"), jen.Id("pairs")).Id("F")).Id("F").Block(
			jen.List(jen.Id("f"), jen.Id("want")).Op(":=").List(jen.Id(formFunc).Call(jen.Id("stp"), jen.Id("first"), jen.Id("pairs")), jen.Id("first")),
			jen.If(jen.Id("stp")).Block(jen.Id("want").Op("=").Id("pairs")),
			jen.If(jen.Add(ptr("f")).Op("!=").Add(ptr("want"))).Block(
				jen.Panic(jen.Lit(formFunc+" did not return the forced store form")),
			),
			jen.Return(jen.Id("f")),
		),
		jen.Comment("TestNeonStoreForm checks the part numbers that get the STP forms (N1,").Line().
			Comment("A76, A78, N2, V1, V2, qemu's max, another implementer) and the choice").Line().
			Comment("on this core.").Line().
			Func().Id("TestNeonStoreForm").Params(t.Clone().Op("*").Qual("testing", "T")).Block(
			jen.For(jen.List(jen.Id("midr"), jen.Id("want")).Op(":=").Range().Map(jen.Uint64()).Bool().Values(jen.DictFunc(func(d jen.Dict) {
				for _, c := range []struct {
					v    int
					want bool
				}{
					{0x414fd0c1, false},
					{0x414fd0b1, false},
					{0x410fd410, false},
					{0x410fd490, true},
					{0x411fd401, true},
					{0x410fd4f0, true},
					{0x000f0510, false},
					{0x4e0fd490, false},
				} {
					d[jen.Id(fmt.Sprintf("%#x", c.v))] = jen.Lit(c.want)
				}
			}))).Block(
				jen.If(jen.Id(pairsCore).Call(jen.Id("midr")).Op("!=").Id("want")).Block(
					t.Clone().Dot("Errorf").Call(jen.Lit(pairsCore+"(%#x) = %v, want %v"), jen.Id("midr"), jen.Op("!").Id("want"), jen.Id("want")),
				),
			),
			jen.If(jen.Op("!").Qual("golang.org/x/sys/cpu", "ARM64").Dot("HasCPUID")).Block(
				jen.If(jen.Id(pairsVar)).Block(t.Clone().Dot("Error").Call(jen.Lit(pairsVar+" set without HWCAP_CPUID"))),
				jen.Return(),
			),
			jen.Id("midr").Op(":=").Id(arm64.MIDRFunc).Call(),
			t.Clone().Dot("Logf").Call(jen.Lit("MIDR_EL1 %#x: STP forms %v"), jen.Id("midr"), jen.Id(pairsVar)),
			jen.If(jen.Id(pairsVar).Op("!=").Id(pairsCore).Call(jen.Id("midr"))).Block(
				t.Clone().Dot("Errorf").Call(jen.Lit(pairsVar+" = %v on MIDR %#x"), jen.Id(pairsVar), jen.Id("midr")),
			),
		),
	}
}
