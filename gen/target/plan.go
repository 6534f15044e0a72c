package target

import "github.com/normgen/normgen/gen/ir"

// Entry is the implementations behind one entry point: kernel at size H
// (0: chosen at run time).
type Entry struct {
	Kernel *ir.Kernel
	H      int
	// Funcs are the assembly implementations in dispatch order, each
	// ISA's function followed by its NT variant where it has one.
	Funcs []Func
}

// Plan is the implementation matrix of one kernel: an Entry per size,
// the fixed sizes in order then 0, each with a Func per ISA of isas
// (assembly ISAs, in dispatch order) and variant. Every generated file
// that lists implementations (assembly, declarations, dispatch, tests)
// reads it.
func Plan(k *ir.Kernel, sizes []int, isas []ISA) []Entry {
	var out []Entry
	for _, h := range append(append([]int(nil), sizes...), 0) {
		e := Entry{Kernel: k, H: h}
		for _, isa := range isas {
			if !isa.Assembly() || !isa.Lowers(k) {
				continue
			}
			e.Funcs = append(e.Funcs, Func{Kernel: k, H: h, ISA: isa})
			// Half storage has no streaming variants (yet): its outputs
			// are half the bytes, and the shifted sweep's edges are float32.
			if isa.NonTemporal(k.Layout, h) && KernelElem(k) == ir.F32 {
				e.Funcs = append(e.Funcs, Func{Kernel: k.StreamingForm(), H: h, ISA: isa, NT: true})
			}
		}
		out = append(out, e)
	}
	return out
}

// Arch is the entry with only the functions of one architecture.
func (e Entry) Arch(goarch string) Entry {
	out := Entry{Kernel: e.Kernel, H: e.H}
	for _, f := range e.Funcs {
		if f.ISA.GOARCH() == goarch {
			out.Funcs = append(out.Funcs, f)
		}
	}
	return out
}

// ISAs lists the ISAs of the entry's functions, in dispatch order.
func (e Entry) ISAs() []ISA {
	var out []ISA
	for _, f := range e.Funcs {
		if !contains(out, f.ISA) {
			out = append(out, f.ISA)
		}
	}
	return out
}

// Variants are isa's functions of the entry: the plain one and, where
// the ISA streams at this size, the NT one (nt.NT false: none).
func (e Entry) Variants(isa ISA) (plain, nt Func) {
	for _, f := range e.Funcs {
		if f.ISA == isa {
			if f.NT {
				nt = f
			} else {
				plain = f
			}
		}
	}
	return plain, nt
}

// Form is the first of the entry's functions that lowers form (a kernel,
// or its streaming form), and whether there is one.
func (e Entry) Form(form *ir.Kernel) (Func, bool) {
	for _, f := range e.Funcs {
		if f.Kernel == form {
			return f, true
		}
	}
	return Func{}, false
}
