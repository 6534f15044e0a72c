// Package normgen wires the packages normgen generates for the benchmark
// into the harness: one package per instruction set (bench/specs/<isa>.yaml
// generated into bench/gen/nb<isa> by scripts/bench.sh), so that every
// instruction set the CPU can run is timed in the same process. Each
// package's wiring is build-tagged normgen_<isa>: the script sets the tag
// of each package it generated.
package normgen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/normgen/normgen/bench/peers"
	"github.com/normgen/normgen/benchkit"
	"github.com/normgen/normgen/gen/target"
)

// ISAs are the instruction sets of the benchmark specs, best first: every
// ISA normgen has but the forms of another (target.Desc.Base), whose code
// is in their base's package (its targets name the base).
var ISAs = func() []string {
	var out []string
	for _, i := range target.All {
		if i.Desc().Base == "" {
			out = append(out, i.Name())
		}
	}
	return out
}()

// Impls is normgen's generated kernels, one implementation per instruction
// set built in, best first; then, for the residual ops, the same
// packages unfused (an add loop, then the plain kernel).
func Impls() []benchkit.Impl {
	var out, unfused []benchkit.Impl
	for _, isa := range ISAs {
		if p, ok := packages[isa]; ok {
			out = append(out, peers.Extend(p.impl(), p.backward, p.halfKernel))
			unfused = append(unfused, peers.Extend(p.unfused(), nil, nil))
		}
	}
	return append(out, unfused...)
}

// Missing explains which instruction sets this binary was built without.
func Missing() []string {
	var out []string
	for _, isa := range ISAs {
		if _, ok := packages[isa]; !ok && runnable(isa) == "" {
			out = append(out, fmt.Sprintf("normgen-%s: not built in (scripts/bench.sh generates bench/gen/nb%s and sets -tags normgen_%s)", isa, isa, isa))
		}
	}
	return out
}

// pkg is one generated package's entry points.
type pkg struct {
	isa    string
	ln     map[int]func(dst, x, gamma, beta []float32)
	lnAny  func(dst, x, gamma, beta []float32, h int)
	rms    map[int]func(dst, x, gamma []float32)
	rmsAny func(dst, x, gamma []float32, h int)
	// bn is training-mode BatchNorm of x[N, channels, spatial] (axis:
	// batch, save_stats: true): per channel, the batch mean and biased
	// variance; it writes dst and each channel's mean and rstd.
	bn func(dst, mean, rstd, x, gain, bias []float32, channels, spatial int)
	// The fused residual kernels (store_sum: true): sum = alpha*x + f and
	// dst = the norm of sum, in one call.
	addRMS            map[int]func(dst, sum, x, f, gamma []float32)
	addRMSAny         func(dst, sum, x, f, gamma []float32, h int)
	addLN, deep       map[int]func(dst, sum, x, f, gamma, beta []float32)
	addLNAny, deepAny func(dst, sum, x, f, gamma, beta []float32, h int)
	// Their Parallel forms, for the thread-scaling table.
	lnPar  map[int]func(dst, x, gamma, beta []float32)
	rmsPar map[int]func(dst, x, gamma []float32)
	bnPar  func(dst, mean, rstd, x, gain, bias []float32, channels, spatial int)
	// The backward passes of LayerNormStats and RMSNormStats (backward:
	// true), and of BatchNorm over x[N, channels, spatial] (nil until the
	// generator has it).
	lnBwd     map[int]func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32)
	lnBwdAny  func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32, h int)
	rmsBwd    map[int]func(dx, dgamma, dy, x, rstd, gamma []float32)
	rmsBwdAny func(dx, dgamma, dy, x, rstd, gamma []float32, h int)
	bnBwd     func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32, channels, spatial int)
	// half holds the half-storage kernels by format (bf16, f16).
	half map[string]halfKernels
}

// halfKernels are a package's kernels over rows of one half format.
type halfKernels struct {
	ln        map[int]func(dst, x []uint16, gamma, beta []float32)
	lnAny     func(dst, x []uint16, gamma, beta []float32, h int)
	rms       map[int]func(dst, x []uint16, gamma []float32)
	rmsAny    func(dst, x []uint16, gamma []float32, h int)
	addRMS    map[int]func(dst, sum, x, f []uint16, gamma []float32)
	addRMSAny func(dst, sum, x, f []uint16, gamma []float32, h int)
}

var packages = map[string]pkg{}

func register(p pkg) { packages[p.isa] = p }

// about describes an instruction set in the report, as the ISA table
// names it.
func about(isa string) string {
	i, err := target.Parse(isa)
	if err != nil {
		return isa
	}
	if i.Assembly() {
		s := i.Desc().Title + " assembly"
		for _, f := range target.All {
			if d := f.Desc(); d.Base == isa {
				var more []string
				for _, ft := range d.Features[len(i.Desc().Features):] {
					more = append(more, ft.Doc)
				}
				s += fmt.Sprintf(" (and its form %s, for the kernels stored in %s, where the CPU has %s)", d.Name, storages(d), strings.Join(more, " and "))
			}
		}
		return s
	}
	return "pure Go (the generated fallback)"
}

// storages names the storage formats of d.
func storages(d *target.Desc) string {
	var names []string
	for _, st := range d.Storages {
		names = append(names, st.Elem.String())
	}
	return strings.Join(names, ", ")
}

func (p pkg) impl() benchkit.Impl {
	im := p.plain()
	plain := im
	im.About += fmt.Sprintf(" The residual ops: the fused kernels AddRMSNorm<H>, AddLayerNorm<H> and DeepNorm<H> (residual: store_sum: true; DeepNorm's alpha from deepnorm: {encoder_layers: %d}), Any for other sizes.", benchkit.DeepNormLayers)
	im.PrepareArgs = func(s benchkit.Shape) (benchkit.KernelFunc, string) {
		if _, ok := s.Op.Residual(); !ok {
			return benchkit.PrepareKernel(plain, s)
		}
		if why := runnable(p.isa); why != "" {
			return nil, why
		}
		if s.Epsilon() != s.Op.Eps() {
			return nil, "bench/specs declare the standard kernels only"
		}
		return p.fused(s.Op, s.H)
	}
	return im
}

// fused is the generated residual kernel of op at h.
func (p pkg) fused(op benchkit.Op, h int) (benchkit.KernelFunc, string) {
	switch op {
	case benchkit.AddRMSNorm:
		if p.addRMSAny == nil {
			return nil, "this package has no AddRMSNorm"
		}
		f, ok := p.addRMS[h]
		if !ok {
			f = func(dst, sum, x, f, gamma []float32) { p.addRMSAny(dst, sum, x, f, gamma, h) }
		}
		return func(a *benchkit.Args) { f(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma) }, ""
	case benchkit.AddLayerNorm, benchkit.DeepNorm:
		fixed, anyH := p.addLN, p.addLNAny
		if op == benchkit.DeepNorm {
			fixed, anyH = p.deep, p.deepAny
		}
		if anyH == nil {
			return nil, "this package has no " + op.String()
		}
		f, ok := fixed[h]
		if !ok {
			f = func(dst, sum, x, f, gamma, beta []float32) { anyH(dst, sum, x, f, gamma, beta, h) }
		}
		return func(a *benchkit.Args) { f(a.Out[0], a.Out[1], a.In[0], a.In[1], a.Gamma, a.Beta) }, ""
	}
	return nil, "not a residual op"
}

// backward is the package's backward kernel for a backward shape.
func (p pkg) backward(s benchkit.Shape) (benchkit.KernelFunc, string) {
	if why := runnable(p.isa); why != "" {
		return nil, why
	}
	h := s.H
	switch s.Kernel {
	case peers.LayerNormBackward:
		f, ok := p.lnBwd[h]
		if !ok {
			if p.lnBwdAny == nil {
				return nil, "this package has no LayerNorm backward"
			}
			f = func(dx, dgamma, dbeta, dy, x, mean, rstd, gamma []float32) {
				p.lnBwdAny(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, h)
			}
		}
		return func(a *benchkit.Args) {
			f(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.StatIn[0], a.StatIn[1], a.Gamma)
		}, ""
	case peers.RMSNormBackward:
		f, ok := p.rmsBwd[h]
		if !ok {
			if p.rmsBwdAny == nil {
				return nil, "this package has no RMSNorm backward"
			}
			f = func(dx, dgamma, dy, x, rstd, gamma []float32) { p.rmsBwdAny(dx, dgamma, dy, x, rstd, gamma, h) }
		}
		return func(a *benchkit.Args) { f(a.Out[0], a.Stats[0], a.In[0], a.In[1], a.StatIn[0], a.Gamma) }, ""
	case peers.BatchNormBackward:
		if p.bnBwd == nil {
			return nil, "normgen's BatchNorm has no backward yet"
		}
		c, l := h, 1
		if s.Channels > 0 {
			c, l = s.Channels, s.Spatial
		}
		return func(a *benchkit.Args) {
			p.bnBwd(a.Out[0], a.Stats[0], a.Stats[1], a.In[0], a.In[1], a.StatIn[0], a.StatIn[1], a.Gamma, c, l)
		}, ""
	}
	return nil, "not a backward op"
}

// halfKernel is the package's kernel for a half-storage shape.
func (p pkg) halfKernel(s benchkit.Shape) (benchkit.KernelFunc, string) {
	if why := runnable(p.isa); why != "" {
		return nil, why
	}
	k, ok := p.half[s.Storage]
	if !ok {
		return nil, "normgen has no " + s.Storage + " kernels for " + p.isa
	}
	h := s.H
	switch s.Op {
	case benchkit.LayerNorm:
		f, ok := k.ln[h]
		if !ok {
			f = func(dst, x []uint16, gamma, beta []float32) { k.lnAny(dst, x, gamma, beta, h) }
		}
		return func(a *benchkit.Args) { f(a.Out16[0], a.In16[0], a.Gamma, a.Beta) }, ""
	case benchkit.RMSNorm:
		f, ok := k.rms[h]
		if !ok {
			f = func(dst, x []uint16, gamma []float32) { k.rmsAny(dst, x, gamma, h) }
		}
		return func(a *benchkit.Args) { f(a.Out16[0], a.In16[0], a.Gamma) }, ""
	case benchkit.AddRMSNorm:
		f, ok := k.addRMS[h]
		if !ok {
			f = func(dst, sum, x, fr []uint16, gamma []float32) { k.addRMSAny(dst, sum, x, fr, gamma, h) }
		}
		return func(a *benchkit.Args) { f(a.Out16[0], a.Out16[1], a.In16[0], a.In16[1], a.Gamma) }, ""
	}
	return nil, "no " + s.Storage + " " + s.Op.String()
}

// unfused is the residual ops as a user without the fused kernels writes
// them: an add loop into sum (the fastest built in for this instruction
// set, peers.Add), then the package's plain RMSNorm or LayerNorm of sum.
func (p pkg) unfused() benchkit.Impl {
	add, addAbout := peers.Add(p.isa)
	plain := p.plain()
	fused := peers.AddThen(add, plain.Prepare)
	return benchkit.Impl{
		Name: "normgen-" + p.isa + "-unfused",
		About: fmt.Sprintf("the residual ops unfused: %s, then normgen-%s's plain RMSNorm<H> or LayerNorm<H> of sum (two passes over memory where the fused kernel makes one); the other ops: n/a.",
			addAbout, p.isa),
		PrepareArgs: func(s benchkit.Shape) (benchkit.KernelFunc, string) {
			n, ok := s.Op.Residual()
			if !ok {
				return nil, "the residual ops only"
			}
			return fused(s, float32(n.Alpha), s.Op.Base())
		},
	}
}

// plain is the package's kernels of x and dst only.
func (p pkg) plain() benchkit.Impl {
	return benchkit.Impl{
		Name: "normgen-" + p.isa,
		About: fmt.Sprintf("normgen's generated %s, from bench/specs/%s.yaml (targets: [%s]): the fixed-size entry points LayerNorm<H> and RMSNorm<H> (H = 768, 4096, 8192), LayerNormAny/RMSNormAny for other sizes; BatchNorm (axis: batch, save_stats: true, no running statistics) for BatchNorm, spatial = 1 for [N, C] (its form vectorized across channels), spatial = L for [N, C, L], writing each channel's mean and rstd.",
			about(p.isa), p.isa, p.isa),
		Prepare: func(s benchkit.Shape) (benchkit.Func, string) {
			op, h := s.Op, s.H
			if why := runnable(p.isa); why != "" {
				return nil, why
			}
			if op == benchkit.BatchNorm && p.bn == nil {
				return nil, "this package has no BatchNorm"
			}
			if c, l, ok := peers.NCL(s); ok && s.Epsilon() == op.Eps() {
				return p.batchNorm(c, l), ""
			}
			if s.Epsilon() != op.Eps() || s.Ref != nil {
				return nil, "bench/specs declare the standard kernels only"
			}
			switch op {
			case benchkit.LayerNorm:
				if f, ok := p.ln[h]; ok {
					return f, ""
				}
				return func(dst, x, gamma, beta []float32) { p.lnAny(dst, x, gamma, beta, h) }, ""
			case benchkit.RMSNorm:
				if f, ok := p.rms[h]; ok {
					return func(dst, x, gamma, _ []float32) { f(dst, x, gamma) }, ""
				}
				return func(dst, x, gamma, _ []float32) { p.rmsAny(dst, x, gamma, h) }, ""
			case benchkit.BatchNorm:
				return p.batchNorm(h, 1), ""
			}
			return nil, "normgen has no " + op.String() + " kernel yet"
		},
	}
}

// batchNorm is BatchNorm over x[N, c, l] with its mean and rstd arrays
// allocated once; the first call also checks them (peers.StatsCheckedOnce).
// gamma and beta may be longer than c (see peers.BatchNormNCL).
func (p pkg) batchNorm(c, l int) benchkit.Func {
	mean, rstd := make([]float32, c), make([]float32, c)
	eps := benchkit.BatchNorm.Eps()
	f := func(dst, x, gamma, beta []float32) { p.bn(dst, mean, rstd, x, gamma[:c], beta[:c], c, l) }
	return peers.StatsCheckedOnce(f, c, l, eps, func() ([]float32, []float32, []float32) { return mean, rstd, nil })
}

// runnable says why this CPU cannot run isa ("" when it can), by the rule
// the generated dispatch follows: a package generated for one instruction
// set alone would otherwise silently run its pure-Go fallback.
func runnable(isa string) string {
	i, err := target.Parse(isa)
	if err != nil {
		return "unknown instruction set"
	}
	return i.Desc().Unavailable()
}

// Notes describes the generated packages.
func Notes() []string { return nil }

// ScaleCases are the thread-scaling cases of the best instruction set
// built in that this CPU runs, for the ops asked: LayerNorm and RMSNorm at each fixed size
// in sizes, BatchNorm over [N, C] with C in sizes and over each [N, C, L]
// of ncl, every x about bytes long (the rows rounded down, at least one).
func ScaleCases(ops []benchkit.Op, sizes []int, bytes int64, ncl [][3]int) []benchkit.ScaleCase {
	var p pkg
	found := false
	for _, isa := range ISAs {
		if q, ok := packages[isa]; ok && runnable(isa) == "" {
			p, found = q, true
			break
		}
	}
	if !found {
		return nil
	}
	impl := "normgen-" + p.isa
	floats := func(n int, v float32) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = v + float32(i%7)/8
		}
		return s
	}
	var out []benchkit.ScaleCase
	add := func(label string, n int, serial, parallel func(dst, x []float32)) {
		x, dst := floats(n, 1), floats(n, 0) // written now: the pages are faulted in before timing
		out = append(out, benchkit.ScaleCase{Label: label, Impl: impl, X: x, Dst: dst,
			Serial: func() { serial(dst, x) }, Parallel: func() { parallel(dst, x) }})
	}
	size := func(n int) string { return fmt.Sprintf("%d MiB", n*4>>20) }
	for _, h := range sizes {
		rows := max(1, int(bytes/4)/h)
		g, b := floats(h, 1), floats(h, 0)
		if f, ok := p.ln[h]; ok && p.lnPar[h] != nil && slices.Contains(ops, benchkit.LayerNorm) {
			fp := p.lnPar[h]
			add(fmt.Sprintf("LayerNorm H=%d, %s", h, size(rows*h)), rows*h,
				func(dst, x []float32) { f(dst, x, g, b) }, func(dst, x []float32) { fp(dst, x, g, b) })
		}
		if f, ok := p.rms[h]; ok && p.rmsPar[h] != nil && slices.Contains(ops, benchkit.RMSNorm) {
			fp := p.rmsPar[h]
			add(fmt.Sprintf("RMSNorm H=%d, %s", h, size(rows*h)), rows*h,
				func(dst, x []float32) { f(dst, x, g) }, func(dst, x []float32) { fp(dst, x, g) })
		}
	}
	if p.bn == nil || p.bnPar == nil || !slices.Contains(ops, benchkit.BatchNorm) {
		return out
	}
	bn := func(n, c, l int, label string) {
		g, b, mean, rstd := floats(c, 1), floats(c, 0), make([]float32, c), make([]float32, c)
		add(label, n*c*l,
			func(dst, x []float32) { p.bn(dst, mean, rstd, x, g, b, c, l) },
			func(dst, x []float32) { p.bnPar(dst, mean, rstd, x, g, b, c, l) })
	}
	for _, c := range sizes {
		n := max(2, int(bytes/4)/c)
		bn(n, c, 1, fmt.Sprintf("BatchNorm [N,C] C=%d, %s", c, size(n*c)))
	}
	for _, d := range ncl {
		n, c, l := d[0], d[1], d[2]
		bn(n, c, l, fmt.Sprintf("BatchNorm [N,C,L] N=%d C=%d L=%d, %s", n, c, l, size(n*c*l)))
	}
	return out
}
