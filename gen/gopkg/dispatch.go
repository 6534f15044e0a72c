package gopkg

import (
	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/lower/golang"
	"github.com/normgen/normgen/gen/target"
)

// feature is the package-level variable holding whether the CPU can run an
// ISA, and how it is computed. x/sys/cpu's flags include the OS's support
// for the wider registers and honour GODEBUG=cpu.avx2=off and the like.
var feature = map[target.ISA]struct {
	name string
	expr jen.Code
	doc  string
}{
	target.AVX512: {"hasAVX512", jen.Qual("golang.org/x/sys/cpu", "X86").Dot("HasAVX512F"), "AVX-512F"},
	target.AVX2: {"hasAVX2", jen.Qual("golang.org/x/sys/cpu", "X86").Dot("HasAVX2").Op("&&").
		Qual("golang.org/x/sys/cpu", "X86").Dot("HasFMA"), "AVX2 and FMA"},
}

// GenericFile is <pkg>_generic.go: the pure-Go implementation of every
// kernel, compiled on every architecture (the fallback, and the tests'
// reference).
func GenericFile(p *Package) ([]byte, error) {
	f := p.newFile("")
	for _, k := range p.Kernels {
		f.Add(golang.Func(k.IR)).Line()
	}
	return render(f)
}

// ArchFile is <pkg>_<goarch>.go: the assembly declarations and the
// dispatch from each entry point's impl function to the best ISA the CPU
// has, falling back to pure Go.
func ArchFile(p *Package, goarch string) ([]byte, error) {
	f := p.newFile("!purego")
	var used []target.ISA
	for _, isa := range target.All {
		for _, k := range p.Kernels {
			if len(k.isas(goarch)) > 0 && contains(k.isas(goarch), isa) && !contains(used, isa) {
				used = append(used, isa)
			}
		}
	}
	var vars []jen.Code
	for _, isa := range used {
		if ft, ok := feature[isa]; ok {
			vars = append(vars, jen.Comment(ft.name+" reports "+ft.doc+", read once at start-up.").Line().Id(ft.name).Op("=").Add(ft.expr))
		}
	}
	if len(vars) > 0 {
		f.Var().Defs(vars...).Line()
	}
	for _, fn := range p.Funcs(goarch) {
		f.Comment("//go:noescape").Line().Func().Id(fn.Name()).Add(asmParams(fn)).Line()
	}
	for _, k := range p.Kernels {
		for _, h := range k.sizesAndAny() {
			f.Add(dispatchFunc(k, h, k.isas(goarch))).Line()
		}
	}
	f.Add(isaOfFunc(p, func(k Kernel) []target.ISA { return k.isas(goarch) }))
	return render(f)
}

// OtherFile is <pkg>_purego.go: pure Go dispatch under the purego tag and
// on architectures without assembly.
func OtherFile(p *Package) ([]byte, error) {
	f := p.newFile(p.otherConstraint())
	for _, k := range p.Kernels {
		for _, h := range k.sizesAndAny() {
			f.Add(dispatchFunc(k, h, nil)).Line()
		}
	}
	f.Add(isaOfFunc(p, func(Kernel) []target.ISA { return nil }))
	return render(f)
}

// asmParams is the Go parameter list matching target.Func.AsmSignature.
func asmParams(fn target.Func) jen.Code {
	names := make([]jen.Code, len(fn.Kernel.Arrays))
	for i, a := range fn.Kernel.Arrays {
		names[i] = jen.Id(a.Name)
	}
	params := []jen.Code{jen.List(names...).Op("*").Float32()}
	if fn.H == 0 {
		params = append(params, jen.List(jen.Id("rows"), jen.Id("h")).Int())
	} else {
		params = append(params, jen.Id("rows").Int())
	}
	return jen.Params(params...)
}

// dispatchFunc is the impl function of kernel k at size h: the first ISA of
// isas the CPU has, else pure Go. Slices are non-empty here: the entry
// point returned early on zero rows.
func dispatchFunc(k Kernel, h int, isas []target.ISA) jen.Code {
	arrays := k.IR.Arrays
	params := make([]jen.Code, 0, len(arrays)+1)
	goArgs := make([]jen.Code, 0, len(arrays)+2)
	asmArgs := make([]jen.Code, 0, len(arrays)+2)
	for i, a := range arrays {
		p := jen.Id(a.Name)
		if i == len(arrays)-1 {
			p = p.Index().Float32()
		}
		params = append(params, p)
		goArgs = append(goArgs, jen.Id(a.Name))
		asmArgs = append(asmArgs, jen.Op("&").Id(a.Name).Index(jen.Lit(0)))
	}
	hArg := jen.Lit(h)
	if h == 0 {
		params = append(params, jen.List(jen.Id("rows"), jen.Id("h")).Int())
		hArg = jen.Id("h")
		asmArgs = append(asmArgs, jen.Id("rows"), jen.Id("h"))
	} else {
		params = append(params, jen.Id("rows").Int())
		asmArgs = append(asmArgs, jen.Id("rows"))
	}
	goArgs = append(goArgs, jen.Id("rows"), hArg)
	goCall := jen.Id(goName(k.IR)).Call(goArgs...)

	var body jen.Code
	switch {
	case len(isas) == 0:
		body = goCall
	case len(isas) == 1 && feature[isas[0]].name == "":
		// Baseline on its architecture (NEON on arm64): no check needed.
		body = jen.Id(target.Func{Kernel: k.IR, H: h, ISA: isas[0]}.Name()).Call(asmArgs...)
	default:
		var cases []jen.Code
		for _, isa := range isas {
			call := jen.Id(target.Func{Kernel: k.IR, H: h, ISA: isa}.Name()).Call(asmArgs...)
			if ft, ok := feature[isa]; ok {
				cases = append(cases, jen.Case(jen.Id(ft.name)).Block(call))
			} else {
				cases = append(cases, jen.Default().Block(call))
			}
		}
		if _, hasDefault := feature[isas[len(isas)-1]]; hasDefault {
			cases = append(cases, jen.Default().Block(goCall))
		}
		body = jen.Switch().Block(cases...)
	}
	return jen.Func().Id(implName(k.IR, h)).Params(params...).Block(body)
}

// isaOfFunc writes isaOf, which names the implementation the dispatch picks
// for a kernel on this CPU; the generated tests log and check it.
func isaOfFunc(p *Package, isas func(Kernel) []target.ISA) jen.Code {
	var cases []jen.Code
	for _, k := range p.Kernels {
		var inner []jen.Code
		for _, isa := range isas(k) {
			ret := jen.Return(jen.Lit(isa.Name()))
			if ft, ok := feature[isa]; ok {
				inner = append(inner, jen.If(jen.Id(ft.name)).Block(ret))
			} else {
				inner = append(inner, ret)
			}
		}
		if len(inner) > 0 {
			cases = append(cases, jen.Case(jen.Lit(k.IR.Name)).Block(inner...))
		}
	}
	body := []jen.Code{jen.Return(jen.Lit(target.Go.Name()))}
	if len(cases) > 0 {
		body = append([]jen.Code{jen.Switch(jen.Id("kernel")).Block(cases...)}, body...)
	}
	return jen.Comment("isaOf names the implementation that kernel's entry points use on this CPU.").Line().
		Func().Id("isaOf").Params(jen.Id("kernel").String()).String().Block(body...)
}

func contains(s []target.ISA, isa target.ISA) bool {
	for _, x := range s {
		if x == isa {
			return true
		}
	}
	return false
}
