package gopkg

import (
	"math/bits"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/lower/amd64"
	"github.com/normgen/normgen/gen/lower/golang"
	"github.com/normgen/normgen/gen/target"
)

// featureVar declares the package-level variable holding whether the CPU
// can run isa (nil for a baseline ISA, never checked): its descriptor's
// Features, all of them. x/sys/cpu's flags include the OS's support for
// the wider registers and honour GODEBUG=cpu.avx2=off and the like.
func featureVar(isa target.ISA) jen.Code {
	d := isa.Desc()
	if len(d.Features) == 0 {
		return nil
	}
	expr := jen.Null()
	for i, f := range d.Features {
		if i > 0 {
			expr.Op("&&")
		}
		expr.Add(featureExpr(f))
	}
	return jen.Comment(d.Flag + " reports " + d.FeatureDoc() + ", read once at start-up.").Line().Id(d.Flag).Op("=").Add(expr)
}

// storageVars declares the variables of isa's storage formats that need
// features beyond the ISA's (target.Storage.Flag), for the package's
// kernels that store in them.
func (p *Package) storageVars(isa target.ISA) []jen.Code {
	var out []jen.Code
	seen := map[string]bool{}
	for _, k := range append(p.implKernels(), p.convKernels()...) {
		flag := isa.Flag(k.IR)
		if !contains(k.ISAs, isa) || flag == isa.Desc().Flag || seen[flag] {
			continue
		}
		seen[flag] = true
		var docs []string
		expr := jen.Null()
		for i, f := range isa.Features(k.IR) {
			if i > 0 {
				expr.Op("&&")
			}
			expr.Add(featureExpr(f))
			docs = append(docs, f.Doc)
		}
		out = append(out, jen.Comment(flag+" reports "+andList(docs)+", read once at start-up.").Line().Id(flag).Op("=").Add(expr))
	}
	return out
}

// featureExpr reads feature f: its x/sys/cpu flag, or its CPUID bit
// through the package's probe (cpuidBit).
func featureExpr(f target.Feature) jen.Code {
	if c := f.CPUID; c != nil {
		return jen.Id("cpuidBit").Call(jen.Lit(int(c.Leaf)), jen.Lit(int(c.Sub)), jen.Lit(int(c.Reg)), jen.Lit(int(c.Bit)))
	}
	return jen.Qual("golang.org/x/sys/cpu", f.Var).Dot(f.Field)
}

// Probed reports whether the dispatch on goarch reads a feature with
// CPUID: the architecture's assembly then holds the probe, cpuid.
func (p *Package) Probed(goarch string) bool {
	for _, isa := range p.isas(goarch) {
		for _, k := range append(p.implKernels(), p.convKernels()...) {
			if !contains(k.ISAs, isa) {
				continue
			}
			for _, f := range isa.Features(k.IR) {
				if f.Probed() {
					return true
				}
			}
		}
	}
	return false
}

// probeCode declares the CPUID probe (its assembly is the lowering's)
// and cpuidBit, which reads a feature x/sys/cpu does not report.
func probeCode() []jen.Code {
	u32 := func(names ...string) jen.Code {
		var ids []jen.Code
		for _, n := range names {
			ids = append(ids, jen.Id(n))
		}
		return jen.List(ids...).Uint32()
	}
	return []jen.Code{
		jen.Comment("cpuid is CPUID with EAX = leaf and ECX = sub: the registers it leaves.").Line().
			Func().Id("cpuid").Params(u32("leaf", "sub")).Params(u32("eax", "ebx", "ecx", "edx")),
		jen.Comment("cpuidBit reports bit of register reg (0-3: EAX, EBX, ECX, EDX) after CPUID").Line().
			Comment("leaf, sub; false where the CPU lacks the leaf. It reads the features").Line().
			Comment("x/sys/cpu does not report; the OS's support for their registers is").Line().
			Comment("x/sys/cpu's flag beside it.").Line().
			Func().Id("cpuidBit").Params(jen.List(jen.Id("leaf"), jen.Id("sub")).Uint32(), jen.List(jen.Id("reg"), jen.Id("bit")).Uint()).Bool().Block(
			jen.If(jen.List(jen.Id("top"), jen.Id("_"), jen.Id("_"), jen.Id("_")).Op(":=").Id("cpuid").Call(jen.Id("leaf").Op("&").Op("0x80000000"), jen.Lit(0)), jen.Id("leaf").Op(">").Id("top")).Block(
				jen.Return(jen.False()),
			),
			jen.Var().Id("r").Index(jen.Lit(4)).Uint32(),
			jen.List(jen.Id("r").Index(jen.Lit(0)), jen.Id("r").Index(jen.Lit(1)), jen.Id("r").Index(jen.Lit(2)), jen.Id("r").Index(jen.Lit(3))).Op("=").Id("cpuid").Call(jen.Id("leaf"), jen.Id("sub")),
			jen.Return(jen.Id("r").Index(jen.Id("reg")).Op(">>").Id("bit").Op("&").Lit(1).Op("!=").Lit(0)),
		),
	}
}

// checked reports whether the dispatch tests the CPU for isa.
func checked(isa target.ISA) bool { return len(isa.Desc().Features) > 0 }

// ntMinBytes is the generated constant of target.NTMinBytes.
const ntMinBytes = "ntMinBytes"

// GenericFile is <pkg>_generic.go: the pure-Go implementation of every
// kernel, compiled on every architecture (the fallback, and the tests'
// reference).
func GenericFile(p *Package) ([]byte, error) {
	f := p.newFile("")
	// Backward Rows kernels: golang.RowFunc of their pure-Go form.
	rows := map[*ir.Kernel]*ir.Kernel{}
	for _, k := range p.Kernels {
		if bw := k.Plan.Backward; bw != nil && !k.Plan.Form.Tensor() {
			rows[bw.Rows] = bw.GoRowsKernel()
		}
	}
	for _, k := range p.implKernels() {
		if g := rows[k.IR]; g != nil {
			f.Add(golang.RowFunc(g)).Line()
			continue
		}
		f.Add(golang.Func(k.IR)).Line()
	}
	for _, k := range p.Kernels {
		if bw := k.Plan.Backward; bw != nil && !k.Plan.Form.Tensor() && bw.Fused != nil {
			f.Add(golang.FusedFunc(bw.GoRowsKernel(), bw.Fused.Loop, bw.Fused.Cols)).Line()
		}
	}
	return render(f)
}

// ArchFile is <pkg>_<goarch>.go: the assembly declarations and the
// dispatch from each entry point's impl function to the best ISA the CPU
// has, falling back to pure Go.
func ArchFile(p *Package, goarch string) ([]byte, error) {
	f := p.newFile("!purego")
	var vars []jen.Code
	for _, isa := range p.isas(goarch) {
		if v := featureVar(isa); v != nil {
			vars = append(vars, v)
		}
		vars = append(vars, p.storageVars(isa)...)
	}
	if len(vars) > 0 {
		f.Var().Defs(vars...).Line()
	}
	if p.Probed(goarch) {
		for _, c := range probeCode() {
			f.Add(c).Line()
		}
	}
	if c := p.convChunkDecl(goarch); c != nil {
		f.Add(c).Line()
	}
	funcs := p.Funcs(goarch)
	if anyPairs(funcs) {
		for _, c := range pairsCode() {
			f.Add(c).Line()
		}
	}
	for _, fn := range funcs {
		if fn.NT {
			f.Comment(ntMinBytes + " is the size of a call's row outputs (all of them) from").Line().
				Comment("which the dispatch picks streaming stores: they pay for outputs larger").Line().
				Comment("than the caches keep, and cost dearly for outputs that would stay in L2.").Line().
				Const().Id(ntMinBytes).Op("=").Add(pow2(target.NTMinBytes)).Line()
			break
		}
	}
	for _, fn := range funcs {
		f.Comment("//go:noescape").Line().Func().Id(fn.Name()).Add(asmParams(fn)).Line()
		if hasPairs(fn) {
			f.Comment("//go:noescape").Line().Func().Id(pairsName(fn)).Add(asmParams(fn)).Line()
		}
	}
	for _, k := range p.implKernels() {
		for _, e := range k.entries() {
			e = e.Arch(goarch)
			f.Add(dispatchFunc(k, e)).Line()
			for _, fn := range e.Funcs {
				if first, _ := e.Form(fn.Kernel); first == fn {
					f.Add(runFunc(k, fn)).Line()
				}
			}
		}
	}
	for _, c := range p.convCode(goarch) {
		f.Add(c).Line()
	}
	f.Add(isaOfFunc(p, func(k Kernel) []target.ISA { return k.isas(goarch) })).Line()
	f.Add(implementationFunc(p.isas(goarch)))
	if p.hasFusedSums() {
		f.Line().Add(fusedSumsConst(false))
	}
	return render(f)
}

// pow2 spells n as 1<<k when it is a power of two.
func pow2(n int) *jen.Statement {
	if n > 0 && n&(n-1) == 0 {
		return jen.Lit(1).Op("<<").Lit(bits.TrailingZeros(uint(n)))
	}
	return jen.Lit(n)
}

// OtherFile is <pkg>_purego.go: pure Go dispatch under the purego tag and
// on architectures without assembly.
func OtherFile(p *Package) ([]byte, error) {
	f := p.newFile(p.otherConstraint())
	for _, k := range p.implKernels() {
		for _, e := range k.entries() {
			f.Add(dispatchFunc(k, e.Arch(""))).Line()
		}
	}
	for _, c := range p.convCode("") {
		f.Add(c).Line()
	}
	f.Add(isaOfFunc(p, func(Kernel) []target.ISA { return nil })).Line()
	f.Add(implementationFunc(nil))
	if p.hasFusedSums() {
		f.Line().Add(fusedSumsConst(true))
	}
	return render(f)
}

// asmParams is the Go parameter list matching target.Func.AsmSignature.
func asmParams(fn target.Func) jen.Code {
	var params []jen.Code
	arrays := fn.Kernel.Arrays
	for i, a := range arrays {
		p := jen.Id(a.Name)
		switch {
		case i+1 < len(arrays) && arrays[i+1].Elem.Half() == a.Elem.Half():
		case a.Elem.Half():
			p = p.Op("*").Uint16()
		default:
			p = p.Op("*").Float32()
		}
		params = append(params, p)
	}
	ints := []jen.Code{jen.Id("rows")}
	for _, a := range target.ShapeArgs(fn.Kernel.Layout, fn.H) {
		ints = append(ints, jen.Id(a))
	}
	params = append(params, jen.List(ints...).Int())
	if args := argIds(fn.Kernel); len(args) > 0 {
		params = append(params, jen.List(args...).Float32())
	}
	return jen.Params(params...).Int()
}

// argIds are the kernel's float32 arguments (ir.Kernel.Args), which follow
// the shape in every call.
func argIds(k *ir.Kernel) []jen.Code {
	var out []jen.Code
	for _, n := range target.ArgNames(k) {
		out = append(out, jen.Id(n))
	}
	return out
}

// shapeArgs passes on the shape arguments of a function of kernel k at
// size h; goShapeArgs those of its pure-Go function, with h spelled out
// when it is fixed, and the float32 arguments after them.
func shapeArgs(k *ir.Kernel, h int) []jen.Code {
	var out []jen.Code
	for _, a := range target.ShapeArgs(k.Layout, h) {
		out = append(out, jen.Id(a))
	}
	return out
}

func goShapeArgs(k *ir.Kernel, h int) []jen.Code {
	var out []jen.Code
	for _, a := range target.ShapeArgs(k.Layout, 0) {
		if a == "h" {
			out = append(out, hExpr(h))
		} else {
			out = append(out, jen.Id(a))
		}
	}
	return append(out, argIds(k)...)
}

// rowOutBytes declares the bytes of row outputs per row of kernel k at
// size h: a constant for a fixed h, a variable for h = 0.
func rowOutBytes(k *ir.Kernel, h int) jen.Code {
	var outs []string
	for _, a := range k.Arrays {
		if a.Role == ir.RowOut {
			outs = append(outs, a.Name)
		}
	}
	size := hExpr(h).Op("*").Lit(4)
	if len(outs) > 1 {
		size = jen.Lit(len(outs)).Op("*").Add(size)
	}
	doc := jen.Comment("Bytes of row outputs per row (" + strings.Join(outs, ", ") + ").")
	if h == 0 {
		return jen.Add(doc).Line().Id("rowOutBytes").Op(":=").Add(size)
	}
	return jen.Add(doc).Line().Const().Id("rowOutBytes").Op("=").Add(size)
}

// runName is the function that drives fn, an assembly kernel of k, over
// the rows (see runFunc): one per form of the kernel that fn's entry
// lowers, the streaming form's named so.
func runName(k Kernel, fn target.Func) string {
	if fn.Kernel != k.IR {
		return "run" + entryName(k, fn.H) + "Streaming"
	}
	return "run" + entryName(k, fn.H)
}

// dispatchFunc is the impl function of entry e of kernel k: the first of
// e's ISAs the CPU has, else pure Go. Slices are non-empty here: the
// entry point returned early on zero rows.
func dispatchFunc(k Kernel, e target.Entry) jen.Code {
	h := e.H
	params, args := sliceParams(k.IR, h)
	goArgs := append(append([]jen.Code{}, args...), jen.Id("rows"))
	goCall := jen.Id(goName(k.IR)).Call(append(goArgs, goShapeArgs(k.IR, h)...)...)
	isas := e.ISAs()
	if len(isas) == 0 {
		return jen.Func().Id(implName(k, h)).Params(params...).Block(goCall)
	}
	runOne := func(fn target.Func) jen.Code {
		call := append([]jen.Code{kernel(fn)}, args...)
		call = append(call, jen.Id("rows"))
		call = append(call, shapeArgs(k.IR, h)...)
		call = append(call, argIds(k.IR)...)
		return jen.Id(runName(k, fn)).Call(call...)
	}
	// runCall runs isa's kernel; with an NT variant, that one for row
	// outputs of ntMinBytes or more.
	var body []jen.Code
	runCall := func(isa target.ISA) jen.Code {
		plain, nt := e.Variants(isa)
		if !nt.NT {
			return runOne(plain)
		}
		cond := jen.Id("rows").Op("*").Id("rowOutBytes").Op(">=").Id(ntMinBytes)
		for _, f := range amd64.BodyFeatures(nt) {
			// A body of another ISA's instructions: its features too.
			cond.Op("&&").Add(featureExpr(f))
		}
		return jen.If(cond).Block(
			jen.Comment("Outputs larger than the caches keep: streaming stores."),
			runOne(nt),
		).Else().Block(runOne(plain))
	}
	for _, fn := range e.Funcs {
		if fn.NT {
			body = append(body, rowOutBytes(k.IR, h))
			break
		}
	}
	if len(isas) == 1 && !checked(isas[0]) {
		// Baseline on its architecture (NEON on arm64): no check needed.
		body = append(body, runCall(isas[0]))
	} else {
		var cases []jen.Code
		for _, isa := range isas {
			if checked(isa) {
				cases = append(cases, jen.Case(jen.Id(isa.Flag(k.IR))).Block(runCall(isa)))
			} else {
				cases = append(cases, jen.Default().Block(runCall(isa)))
			}
		}
		if checked(isas[len(isas)-1]) {
			cases = append(cases, jen.Default().Block(goCall))
		}
		body = append(body, jen.Switch().Block(cases...))
	}
	return jen.Func().Id(implName(k, h)).Params(params...).Block(body...)
}

// runFunc drives kern, an assembly kernel of k in fn's form (fn's
// entry's functions of that form), over the rows. The kernel returns
// early at a row whose float32 statistics left float32's range (ir.SGuard)
// without touching it, or only with the outputs its fallback reads
// stored (ir.Kernel.Fallback), or at a tail of rows it leaves to its
// caller; that row is computed in float64 by the pure-Go fallback
// (golang.Fallback), and the kernel resumes after it.
func runFunc(k Kernel, fn target.Func) jen.Code {
	h := fn.H
	arrays := k.IR.Arrays
	params, _ := sliceParams(k.IR, h)
	sig := target.Func{Kernel: k.IR, H: h}
	params = append([]jen.Code{jen.Id("kern").Func().Add(asmParams(sig))}, params...)
	var kernArgs, goArgs []jen.Code
	for i, a := range arrays {
		if f := rowOffset(k.IR, i, h, jen.Id("done")); f != nil {
			kernArgs = append(kernArgs, jen.Op("&").Id(a.Name).Index(f))
		} else {
			kernArgs = append(kernArgs, jen.Op("&").Id(a.Name).Index(jen.Lit(0)))
		}
	}
	goName, goArrays := golang.Fallback(fn.Kernel)
	for _, i := range goArrays {
		a := arrays[i]
		if f := rowOffset(k.IR, i, h, jen.Id("done")); f != nil {
			goArgs = append(goArgs, jen.Id(a.Name).Index(f, jen.Empty()))
		} else {
			goArgs = append(goArgs, jen.Id(a.Name))
		}
	}
	kernArgs = append(kernArgs, jen.Id("rows").Op("-").Id("done"))
	kernArgs = append(kernArgs, shapeArgs(k.IR, h)...)
	kernArgs = append(kernArgs, argIds(k.IR)...)
	if k.IR.Layout == ir.Columns {
		return columnsRunFunc(k, fn, goName, params, kernArgs, goArgs)
	}
	goArgs = append(goArgs, jen.Lit(1))
	goArgs = append(goArgs, goShapeArgs(k.IR, h)...)
	return jen.Func().Id(runName(k, fn)).Params(params...).Block(
		jen.For(jen.Id("done").Op(":=").Lit(0), jen.Id("done").Op("<").Id("rows"), jen.Empty()).Block(
			jen.Id("done").Op("+=").Id("kern").Call(kernArgs...),
			jen.If(jen.Id("done").Op("<").Id("rows")).Block(
				jen.Id(goName).Call(goArgs...),
				jen.Id("done").Op("++"),
			),
		),
	)
}

// rowOffset is the index of row r's first value in array a of kernel k
// at size h (see ir.Layout), or nil where it is the array's start for
// every row (parameters shared by all rows).
func rowOffset(k *ir.Kernel, a, h int, r *jen.Statement) *jen.Statement {
	role := k.Arrays[a].Role
	switch {
	case role.PerRow():
		return r
	case role == ir.Param && k.Layout == ir.Segments:
		return r.Op("*").Id("segs")
	case role == ir.Param:
		return nil
	case k.Layout == ir.Columns:
		return r
	case k.Layout == ir.Segments:
		return r.Op("*").Id("rowstride")
	}
	return r.Op("*").Add(hExpr(h))
}

// sliceParams is the parameter list of impl and run functions (the arrays
// as slices, rows, the shape: h when it is chosen at run time, ..., and
// the float32 arguments)
// and the arrays as call arguments.
func sliceParams(k *ir.Kernel, h int) (params, args []jen.Code) {
	params = golang.ArrayParams(k.Arrays, nil)
	for _, a := range k.Arrays {
		args = append(args, jen.Id(a.Name))
	}
	ints := append([]jen.Code{jen.Id("rows")}, shapeArgs(k, h)...)
	params = append(params, jen.List(ints...).Int())
	if a := argIds(k); len(a) > 0 {
		params = append(params, jen.List(a...).Float32())
	}
	return params, args
}

func hExpr(h int) *jen.Statement {
	if h == 0 {
		return jen.Id("h")
	}
	return jen.Lit(h)
}

// isaOfFunc writes isaOf, which names the implementation the dispatch picks
// for a kernel on this CPU; the generated tests log and check it.
func isaOfFunc(p *Package, isas func(Kernel) []target.ISA) jen.Code {
	var cases []jen.Code
	for _, k := range p.Kernels {
		var inner []jen.Code
		for _, isa := range isas(k) {
			ret := jen.Return(jen.Lit(isa.Name()))
			if checked(isa) {
				inner = append(inner, jen.If(jen.Id(isa.Flag(k.IR))).Block(ret))
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

// implementationFunc writes implementation: the title of the first of
// isas (the package's, in dispatch order) the CPU has, else pure Go's.
func implementationFunc(isas []target.ISA) jen.Code {
	var body []jen.Code
	for _, isa := range isas {
		ret := jen.Return(jen.Lit(isa.Desc().Title))
		if !checked(isa) {
			body = append(body, ret) // the baseline: nothing after it runs
			return implementationDecl(body)
		}
		body = append(body, jen.If(jen.Id(isa.Desc().Flag)).Block(ret))
	}
	return implementationDecl(append(body, jen.Return(jen.Lit(target.Go.Desc().Title))))
}

func implementationDecl(body []jen.Code) jen.Code {
	return jen.Comment("implementation is the title of the best instruction set a kernel of the package uses on this CPU.").Line().
		Func().Id("implementation").Params().String().Block(body...)
}

func contains(s []target.ISA, isa target.ISA) bool {
	for _, x := range s {
		if x == isa {
			return true
		}
	}
	return false
}

// hasColumns reports whether a kernel of the package runs in the
// Columns layout (BatchNorm over [N, C], ConvNeXt's LayerNorm, the
// parameter gradients of a backward), whose run loop needs columnBlock.
func (p *Package) hasColumns() bool {
	for _, k := range p.implKernels() {
		if k.IR.Layout == ir.Columns {
			return true
		}
	}
	return false
}

// columnBlock is the generated constant of target.WidestLanes.
const columnBlock = "columnBlock"

// columnsRunFunc is runFunc for the Columns layout, where a kernel
// abandons a whole vector block of rows at a failed guard: the pure-Go
// float64 form then finishes the block of columnBlock rows holding row
// done.
// Which rows take the float64 path so depends on their block's values
// alone, not on where the call started, and a Parallel entry point that
// splits at block boundaries gives the serial call's very bits.
func columnsRunFunc(k Kernel, fn target.Func, goName string, params, kernArgs, goArgs []jen.Code) jen.Code {
	goArgs = append(goArgs, jen.Id("n"))
	goArgs = append(goArgs, goShapeArgs(k.IR, fn.H)...)
	return jen.Func().Id(runName(k, fn)).Params(params...).Block(
		jen.For(jen.Id("done").Op(":=").Lit(0), jen.Id("done").Op("<").Id("rows"), jen.Empty()).Block(
			jen.Id("done").Op("+=").Id("kern").Call(kernArgs...),
			jen.If(jen.Id("done").Op("<").Id("rows")).Block(
				jen.Id("n").Op(":=").Min(jen.Id("rows"), jen.Id("done").Op("-").Id("done").Op("%").Id(columnBlock).Op("+").Id(columnBlock)).Op("-").Id("done"),
				jen.Id(goName).Call(goArgs...),
				jen.Id("done").Op("+=").Id("n"),
			),
		),
	)
}
