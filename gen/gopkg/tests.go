package gopkg

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/templates"
)

// tolerance is the accuracy contract of every generated test, in units of
// 2^-24 (see the template's comment for the formula it scales).
const tolerance = 64

// TestFile is <pkg>_test.go, from templates/test.go.tmpl.
func TestFile(p *Package) ([]byte, error) {
	type array struct {
		Name string
		Role int
	}
	type kernel struct {
		Name, GoName, Args, Storage  string
		Pre, Post                    string // around a call with half storage: halfCall's
		Mean, Scale, Shift, Residual bool
		L2, AffinePerRow, NoStat     bool
		Eps, ScaleOffset, Alpha      string
		Sizes                        []int
		ISAs                         []string
		Arrays                       []array
		// RuntimeEps: the entry points take eps; EpsArg passes it on.
		RuntimeEps bool
		EpsArg     string
		EpsCalls   []EpsCall
		// Example: the kernel's first entry point and its call in the
		// Example function.
		Example
	}
	data := struct {
		Header, Package, Implementation string
		Tolerance                       int
		Kernels                         []kernel
		Titles                          map[string]string
		ISAOrder                        []string
	}{Header: p.Header, Package: p.Name, Implementation: p.ImplementationName(), Tolerance: tolerance, Titles: isaTitles(), ISAOrder: isaOrder()}
	for _, k := range p.Kernels {
		if k.Plan.Form.Tensor() {
			continue // in TensorTestFile
		}
		tk := kernel{
			Name: k.IR.Name, GoName: goName(k.IR),
			Mean: k.Spec.Mean, Scale: k.Spec.Scale, Shift: k.Spec.Shift, Residual: k.Spec.Residual != nil,
			L2: k.Plan.Statistic == "l2", AffinePerRow: k.Spec.AffinePerRow, NoStat: k.Plan.NoStat(),
			Eps: float(k.Spec.Epsilon), ScaleOffset: float(k.Spec.ScaleOffset), Alpha: "1",
			Sizes: k.Sizes, RuntimeEps: k.Spec.RuntimeEpsilon,
		}
		if tk.RuntimeEps {
			tk.EpsArg = ", eps"
		}
		tk.Example = example(k)
		tk.EpsCalls = epsCalls(k)
		if k.Spec.Residual != nil {
			tk.Alpha = float(k.Spec.Residual.Alpha)
		}
		for _, isa := range k.ISAs {
			tk.ISAs = append(tk.ISAs, isa.Name())
		}
		tk.ISAs = append(tk.ISAs, target.Go.Name())
		var args []string
		for i, a := range k.IR.Arrays {
			tk.Arrays = append(tk.Arrays, array{a.Name, int(a.Role)})
			args = append(args, fmt.Sprintf("%s[%d]", halfArg(a), i))
		}
		tk.Args = strings.Join(args, ", ")
		tk.Storage = target.KernelElem(k.IR).String()
		if target.KernelElem(k.IR).Half() {
			tk.Pre = fmt.Sprintf("halfCall(%q, %s, a, func(u [][]uint16) { ", tk.Storage, halfMask(k.IR))
			tk.Post = " })"
		}
		data.Kernels = append(data.Kernels, tk)
	}
	var buf bytes.Buffer
	if err := templates.Tests.Execute(&buf, data, p.sharedKit(rowsTests)...); err != nil {
		return nil, fmt.Errorf("gopkg: test template: %v", err)
	}
	return gofmt(p.Name+"_test.go", buf.Bytes())
}

// HasTensors reports whether the package has kernels over [N, C, L]
// tensors, which get <pkg>_tensor_test.go.
func (p *Package) HasTensors() bool {
	for _, k := range p.Kernels {
		if k.Plan.Form.Tensor() {
			return true
		}
	}
	return false
}

// HasRows reports whether the package has kernels over rows, which get
// <pkg>_test.go and asmImpls in the per-architecture test files.
func (p *Package) HasRows() bool {
	for _, k := range p.Kernels {
		if !k.Plan.Form.Tensor() {
			return true
		}
	}
	return false
}

// The test files that may carry the shared kit, in the order of
// preference of sharedKit.
const (
	halfTests = iota
	rowsTests
	tensorTests
)

// sharedKit is the kit to splice into the test file named by file (one of
// halfTests, rowsTests, tensorTests): templates.Shared in the first of
// those the package has, nothing in the others, so that the package
// declares the shared helpers once.
func (p *Package) sharedKit(file int) []templates.Kit {
	first := tensorTests
	switch {
	case len(p.Elems()) > 0:
		first = halfTests
	case p.HasRows():
		first = rowsTests
	}
	if file == first {
		return []templates.Kit{templates.Shared}
	}
	return nil
}

// TensorTestFile is <pkg>_tensor_test.go, from
// templates/tensor_test.go.tmpl: the tests of the tensor kernels.
func TensorTestFile(p *Package) ([]byte, error) {
	type shape struct {
		N, C, L int
		Fixed   bool
	}
	type kernel struct {
		RuntimeEps bool
		EpsArg     string
		EpsCalls   []EpsCall
		Example
		Name, Entry, Axis, Args    string
		Groups, GroupSize          int
		Running                    string
		NoStat                     bool
		Mean, Scale, Shift, Save   bool
		Eps, ScaleOffset, Momentum string
		SaveStats                  bool
		Sizes                      []int
		ISAs                       []string
		BenchShapes                []shape
		// Storage is the format of dst and x: f32, or a half format, whose
		// calls go through tHalfCall (Pre and Post around them).
		Storage, Pre, Post string
	}
	data := struct {
		Header, Package, Implementation string
		Tolerance                       int
		Kernels                         []kernel
		Rows                            bool // the rows' test file holds the shared tests
		Titles                          map[string]string
		ISAOrder                        []string
	}{Header: p.Header, Package: p.Name, Implementation: p.ImplementationName(), Tolerance: tolerance, Rows: p.HasRows(), Titles: isaTitles(), ISAOrder: isaOrder()}
	field := map[string]string{"gain": "gamma", "bias": "beta"}
	for _, k := range p.Kernels {
		if !k.Plan.Form.Tensor() {
			continue
		}
		sk := k.Spec
		tk := kernel{
			Name: sk.Name, Entry: entryName(k, 0), Axis: k.Plan.Form.Axis(), Groups: k.Plan.GroupCount, GroupSize: k.Plan.GroupSize, NoStat: k.Plan.NoStat(),
			Mean: sk.Mean, Scale: sk.Scale, Shift: sk.Shift, SaveStats: sk.SaveStats,
			Eps: float(sk.Epsilon), ScaleOffset: float(sk.ScaleOffset), Momentum: "0",
			Sizes: k.Sizes, RuntimeEps: sk.RuntimeEpsilon, Example: example(k),
		}
		if tk.RuntimeEps {
			tk.EpsArg = ", eps"
		}
		tk.EpsCalls = epsCalls(k)
		if r := sk.Running; r != nil {
			tk.Running, tk.Momentum = r.Convention, float(float64(float32(r.Momentum)))
		}
		for _, isa := range k.ISAs {
			tk.ISAs = append(tk.ISAs, isa.Name())
		}
		tk.ISAs = append(tk.ISAs, target.Go.Name())
		tk.Storage = target.KernelElem(k.IR).String()
		if target.KernelElem(k.IR).Half() {
			tk.Pre = fmt.Sprintf("tHalfCall(%q, c, func(hdst, hx []uint16) { ", tk.Storage)
			tk.Post = " })"
		}
		var args []string
		for _, a := range k.IR.Arrays {
			name := a.Name
			if f, ok := field[name]; ok {
				name = f
			}
			switch {
			case a.Elem.Half() && (name == "dst" || name == "x"):
				args = append(args, "h"+name)
			case a.Elem.Half():
				return nil, fmt.Errorf("gopkg: tensor kernel %s: half array %s is neither dst nor x", k.IR.Name, a.Name)
			default:
				args = append(args, "c."+name)
			}
		}
		tk.Args = strings.Join(args, ", ")
		// Benchmarks: a shape that stays in L2 and one that does not, at
		// sizes from the models these norms serve.
		switch k.Plan.Form {
		case algo.Positions:
			for _, c := range k.Sizes {
				tk.BenchShapes = append(tk.BenchShapes, shape{1, c, 196, true}, shape{1, c, 3136, true})
			}
			if len(k.Sizes) == 0 {
				tk.BenchShapes = []shape{{1, 96, 3136, false}}
			}
		case algo.Channels:
			tk.BenchShapes = []shape{{8, 64, 64, false}, {8, 64, 3136, false}, {256, 512, 1, false}}
		case algo.Groups:
			c := 4 * k.Plan.GroupCount
			if k.Plan.GroupSize > 0 {
				c = 64 * k.Plan.GroupSize
			}
			tk.BenchShapes = []shape{{1, c, 64, false}, {2, c, 3136, false}}
		}
		data.Kernels = append(data.Kernels, tk)
	}
	var buf bytes.Buffer
	if err := templates.TensorTests.Execute(&buf, data, p.sharedKit(tensorTests)...); err != nil {
		return nil, fmt.Errorf("gopkg: tensor test template: %v", err)
	}
	return gofmt(p.Name+"_tensor_test.go", buf.Bytes())
}

// float spells a float64 spec value as Go source, exactly.
func float(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ArchTestFile is <pkg>_<goarch>_test.go: asmImpls, the table of assembly
// implementations of the kernels over rows the generated tests run when
// the CPU has them, and asmHalfConversions, the conversions'.
func ArchTestFile(p *Package, goarch string) ([]byte, error) {
	f := p.newFile("!purego")
	if p.HasRows() {
		f.Add(asmImpls(p, goarch))
	}
	if anyPairs(p.Funcs(goarch)) {
		for _, c := range pairsTestCode() {
			f.Line().Add(c)
		}
	}
	if len(p.Elems()) > 0 {
		f.Line().Add(asmHalfConversions(p, goarch))
	}
	return render(f)
}

// asmImpls writes asmImpls, the assembly implementations of the kernels
// over rows on goarch, by kernel and row length.
func asmImpls(p *Package, goarch string) jen.Code {
	var cases []jen.Code
	for _, k := range p.Kernels {
		if k.Plan.Form.Tensor() {
			continue // tensor kernels are tested through their entry points
		}
		for _, e := range k.entries() {
			e = e.Arch(goarch)
			if len(e.Funcs) == 0 {
				continue
			}
			h := e.H
			cond := jen.Id("kernel").Op("==").Lit(k.IR.Name)
			if h == 0 {
				cond = cond.Op("&&").Id("anySize")
			} else {
				cond = cond.Op("&&").Op("!").Id("anySize").Op("&&").Id("h").Op("==").Lit(h)
			}
			var body []jen.Code
			for _, fn := range e.Funcs {
				isa := fn.ISA
				// A function with an STP form is run in each form, through
				// neonForm as the dispatch runs it.
				kerns := []jen.Code{jen.Id(fn.Name())}
				names := []string{fn.Label()}
				if hasPairs(fn) {
					kerns = []jen.Code{forced(fn, false), forced(fn, true)}
					names = append(names, fn.Label()+"-stp")
				}
				for j, kern := range kerns {
					name := names[j]
					args := []jen.Code{kern}
					for i, a := range k.IR.Arrays {
						args = append(args, jen.Id(halfArg(a)).Index(jen.Lit(i)))
					}
					args = append(args, jen.Id("rows"))
					if h == 0 {
						args = append(args, jen.Id("h"))
					}
					if len(k.IR.Args) > 0 {
						args = append(args, jen.Id("eps"))
					}
					call := jen.Id(runName(k, fn)).Call(args...)
					if e := target.KernelElem(k.IR); e.Half() {
						call = jen.Id("halfCall").Call(jen.Lit(e.String()), jen.Op(halfMask(k.IR)), jen.Id("a"),
							jen.Func().Params(jen.Id("u").Index().Index().Uint16()).Block(call))
					}
					add := jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("impl").Values(jen.Dict{
						jen.Id("name"): jen.Lit(name),
						jen.Id("asm"):  jen.True(),
						jen.Id("run"):  jen.Func().Params(jen.Id("a").Index().Index().Float32(), jen.Id("rows").Int()).Block(call),
					}))
					if checked(isa) {
						body = append(body, jen.If(jen.Id(isa.Flag(k.IR))).Block(add))
					} else {
						body = append(body, add)
					}
				}
			}
			cases = append(cases, jen.Case(cond).Block(body...))
		}
	}
	return jen.Comment("asmImpls lists the assembly implementations of a kernel at row length h that this CPU can run.").Line().
		Func().Id("asmImpls").Params(jen.Id("kernel").String(), jen.Id("h").Int(), jen.Id("anySize").Bool(), jen.Id("eps").Float32()).Index().Id("impl").Block(
		jen.Var().Id("out").Index().Id("impl"),
		jen.Switch().Block(cases...),
		jen.Return(jen.Id("out")),
	)
}

// asmHalfConversions writes asmHalfConversions, the bulk conversions'
// assembly on goarch that this CPU can run, one halfConv per format and
// ISA, for TestHalfConversions; each converts all of src.
func asmHalfConversions(p *Package, goarch string) jen.Code {
	var body []jen.Code
	convs := p.convKernels()
	for i := 0; i+1 < len(convs); i += 2 {
		narrow, widen := convs[i], convs[i+1] // convKernels' order
		e := target.KernelElem(narrow.IR)
		for _, isa := range narrow.isas(goarch) {
			tf := func(k Kernel) target.Func { return target.Func{Kernel: k.IR, ISA: isa} }
			// With an STP form, once in each form (neonForm).
			stps := []bool{false}
			if hasPairs(tf(narrow)) || hasPairs(tf(widen)) {
				stps = append(stps, true)
			}
			for _, stp := range stps {
				fn := func(k Kernel) jen.Code {
					kern := jen.Id(tf(k).Name())
					if hasPairs(tf(k)) {
						kern = forced(tf(k), stp)
					}
					return jen.Func().Params(convParams(k.IR)...).Block(jen.Id(convRunName(k)).Call(kern, jen.Id("dst"), jen.Id("src")))
				}
				name := isa.Name()
				if stp {
					name += "-stp"
				}
				add := jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("halfConv").Values(jen.Dict{
					jen.Id("storage"):    jen.Lit(e.String()),
					jen.Id("isa"):        jen.Lit(name),
					jen.Id("narrowName"): jen.Lit(narrow.IR.Name),
					jen.Id("widenName"):  jen.Lit(widen.IR.Name),
					jen.Id("narrow"):     fn(narrow),
					jen.Id("widen"):      fn(widen),
				}))
				if checked(isa) {
					add = jen.If(jen.Id(isa.Flag(narrow.IR))).Block(add)
				}
				body = append(body, add)
			}
		}
	}
	return jen.Comment("asmHalfConversions lists the bulk conversions' assembly that this CPU can run, by format and instruction set.").Line().
		Func().Id("asmHalfConversions").Params().Index().Id("halfConv").Block(
		append(append([]jen.Code{jen.Var().Id("out").Index().Id("halfConv")}, body...), jen.Return(jen.Id("out")))...)
}

// OtherTestFile is <pkg>_purego_test.go: no assembly implementations.
func OtherTestFile(p *Package) ([]byte, error) {
	f := p.newFile(p.otherConstraint())
	if p.HasRows() {
		f.Comment("asmImpls lists no implementations: this build has no assembly.").Line().
			Func().Id("asmImpls").Params(jen.String(), jen.Int(), jen.Bool(), jen.Float32()).Index().Id("impl").Block(jen.Return(jen.Nil()))
	}
	if len(p.Elems()) > 0 {
		f.Line().Comment("asmHalfConversions lists no conversions: this build has no assembly.").Line().
			Func().Id("asmHalfConversions").Params().Index().Id("halfConv").Block(jen.Return(jen.Nil()))
	}
	return render(f)
}

// EpsCall is a call of an entry point taking eps, with no rows: only the
// eps check can panic.
type EpsCall struct {
	Name string // the entry point
	Call string // its call, with eps last
}

// epsCalls lists the calls of kernel k's entry points with eps and no
// rows (TestEpsChecks): nil row arrays, and the parameters (per-channel
// arrays of a tensor) at their length.
func epsCalls(k Kernel) []EpsCall {
	if len(k.IR.Args) == 0 {
		return nil
	}
	var out []EpsCall
	add := func(name string, paramLen int, sizes ...string) {
		var args []string
		for _, a := range k.IR.Arrays {
			perChannel := k.Plan.Form == algo.Channels && a.Role.PerRow()
			if a.Role == ir.Param || perChannel {
				args = append(args, fmt.Sprintf("make([]float32, %d)", paramLen))
			} else {
				args = append(args, "nil")
			}
		}
		args = append(append(args, sizes...), "eps")
		out = append(out, EpsCall{name, name + "(" + strings.Join(args, ", ") + ")"})
	}
	if !k.Plan.Form.Tensor() {
		for _, h := range k.Sizes {
			add(entryName(k, h), h)
			add(entryName(k, h)+"Parallel", h)
		}
		add(entryName(k, 0), 0, "0")
		add(entryName(k, 0)+"Parallel", 0, "0")
		return out
	}
	for _, c := range k.Sizes {
		add(entryName(k, c), c, "1")
		add(entryName(k, c)+"Parallel", c, "1")
	}
	c := 4
	switch k.Plan.Form {
	case algo.Groups:
		c = max(k.Plan.GroupCount, 1) * max(k.Plan.GroupSize, 1)
	case algo.Channels:
		c = 3
	}
	add(entryName(k, 0), c, fmt.Sprint(c), "1")
	add(entryName(k, 0)+"Parallel", c, fmt.Sprint(c), "1")
	return out
}

// isaOrder lists the generated tests' ISA names in dispatch preference
// order.
func isaOrder() []string { return target.Names() }

// isaTitles maps the generated tests' ISA names to the titles
// Implementation returns.
func isaTitles() map[string]string {
	out := map[string]string{}
	for _, isa := range target.All {
		out[isa.Name()] = isa.Desc().Title
	}
	return out
}
