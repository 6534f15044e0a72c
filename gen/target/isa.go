package target

import (
	"fmt"
	"strings"

	"github.com/normgen/normgen/gen/ir"
)

// ISA is one lowering target: an index into the descriptor table.
type ISA int

const (
	AVX512BF16 ISA = iota // AVX512 with AVX512_BF16: its bf16 kernels alone, narrowing by VCVTNEPS2BF16
	AVX512                // amd64, AVX-512 F+VL+DQ+BW, 512-bit vectors, masked tails
	AVX2                  // amd64, AVX2 + FMA, 256-bit vectors
	NEON                  // arm64 ASIMD, 128-bit vectors
	Go                    // pure Go: the fallback and the reference every ISA is tested against
)

// Feature is one CPU feature the dispatch checks: a flag of
// golang.org/x/sys/cpu, as the generated dispatch reads it
// (cpu.<Var>.<Field>), or, for one that x/sys/cpu does not report, a
// CPUID bit the generated package reads itself; and its name in
// documentation.
type Feature struct {
	Var   string // the package variable: "X86", "ARM64"
	Field string // its field: "HasAVX512F"
	Doc   string // "AVX512F"
	// CPUID, when set instead of Var and Field, is the bit that reports
	// the feature (amd64). It says nothing of the OS's support for the
	// registers the feature uses: list the x/sys/cpu flag that does
	// before it (HasAVX for YMM state).
	CPUID *CPUIDBit
}

// CPUIDBit is bit Bit of register Reg after CPUID with EAX = Leaf and
// ECX = Sub.
type CPUIDBit struct {
	Leaf, Sub uint32
	Reg       Reg
	Bit       uint
}

// Reg is a register CPUID writes, in the order of the generated probe's
// results.
type Reg int

const (
	EAX Reg = iota
	EBX
	ECX
	EDX
)

// Probed reports whether the generated package reads the feature with
// CPUID rather than from x/sys/cpu.
func (f Feature) Probed() bool { return f.CPUID != nil }

// Desc is everything the generator knows about an ISA; the lowering of
// each GOARCH is registered by package gen under Desc.GOARCH.
type Desc struct {
	Name   string // spec spelling, also the generated tests' and isaOf's name
	Prefix string // starts the unexported names of its functions
	Title  string // in documentation: "AVX-512"
	GOARCH string // architecture whose assembly holds it; "" for pure Go

	Lanes       int // float32 lanes per vector register
	VectorBytes int // vector register width
	VectorRegs  int // vector registers the lowering may allocate
	MaskRegs    int // mask (predicate) registers; 0: tails without masks

	// Features must all be reported by the CPU for the dispatch to
	// choose the ISA; empty: the baseline of its GOARCH, never checked.
	Features []Feature
	// Flag is the generated package-level variable holding the result of
	// the Features check ("" without Features).
	Flag string

	// Storages are the half-precision storage formats (ir.Elem) the
	// ISA's lowering converts, each with the CPU features its conversions
	// need beyond Features. A kernel storing in a format not listed is not
	// lowered to the ISA: its calls take the next ISA the CPU has, or
	// pure Go.
	Storages []Storage

	// Base, when set, names the ISA this one is a form of: a spec's
	// targets naming Base include it, and the generated tests' required
	// ISA (NORMGEN_REQUIRE_ISA) accepts it for Base. Its Name starts with
	// Base's.
	Base string
	// StorageOnly: the ISA lowers only kernels stored in one of its
	// Storages, none in float32 (those are Base's).
	StorageOnly bool
	// NarrowBF16 (amd64): bf16 stores round with VCVTNEPS2BF16
	// (AVX512_BF16) rather than the integer sequence.
	NarrowBF16 bool

	// Streaming: the ISA has NT (streaming-store) variants of ir.Rows
	// kernels whose rows all start at the same alignment as the first,
	// i.e. whose row length is a multiple of Lanes (checked at run time
	// when it is chosen then).
	Streaming bool
}

// Storage is one half-precision format an ISA converts.
type Storage struct {
	Elem ir.Elem
	// Features the conversions need beyond the ISA's own (AVX2's f16
	// conversions are F16C's); the dispatch checks them too, in Flag.
	Features []Feature
	Flag     string // the generated variable of the ISA's and these features ("" without)
}

var x86 = func(field, doc string) Feature { return Feature{Var: "X86", Field: field, Doc: doc} }

// f16c is F16C (VCVTPH2PS/VCVTPS2PH on XMM and YMM registers), which the
// pinned golang.org/x/sys/cpu does not report: CPUID.1:ECX bit 29.
var f16c = Feature{Doc: "F16C", CPUID: &CPUIDBit{Leaf: 1, Reg: ECX, Bit: 29}}

// table holds the descriptors, indexed by ISA, in dispatch preference
// order within an architecture.
var table = [...]Desc{
	// First: where the CPU has AVX512_BF16, its bf16 kernels take it
	// before AVX512's integer rounding. VCVTNEPS2BF16 flushes subnormal
	// inputs to zero, so the lowering checks each vector for them and
	// rounds those by the integer sequence (exact).
	AVX512BF16: {
		Name: "avx512bf16", Prefix: "avx512bf16", Title: "AVX-512 with AVX512_BF16", GOARCH: "amd64",
		Lanes: 16, VectorBytes: 64, VectorRegs: 32, MaskRegs: 8,
		Features: []Feature{x86("HasAVX512F", "AVX512F"), x86("HasAVX512VL", "AVX512VL"),
			x86("HasAVX512DQ", "AVX512DQ"), x86("HasAVX512BW", "AVX512BW"), x86("HasAVX512BF16", "AVX512_BF16")},
		Flag:        "hasAVX512BF16",
		Storages:    []Storage{{Elem: ir.BF16}},
		Base:        "avx512",
		StorageOnly: true,
		NarrowBF16:  true,
		Streaming:   true,
	},
	AVX512: {
		Name: "avx512", Prefix: "avx512", Title: "AVX-512", GOARCH: "amd64",
		Lanes: 16, VectorBytes: 64, VectorRegs: 32, MaskRegs: 8,
		// The lowering emits EVEX forms on 128/256-bit registers and
		// mask instructions beyond AVX512F: the whole server subset.
		Features: []Feature{x86("HasAVX512F", "AVX512F"), x86("HasAVX512VL", "AVX512VL"),
			x86("HasAVX512DQ", "AVX512DQ"), x86("HasAVX512BW", "AVX512BW")},
		Flag: "hasAVX512",
		// VCVTPH2PS/VCVTPS2PH are AVX512F; bf16 is integer shifts.
		Storages:  []Storage{{Elem: ir.BF16}, {Elem: ir.F16}},
		Streaming: true,
	},
	AVX2: {
		Name: "avx2", Prefix: "avx2", Title: "AVX2+FMA", GOARCH: "amd64",
		Lanes: 8, VectorBytes: 32, VectorRegs: 16,
		Features: []Feature{x86("HasAVX2", "AVX2"), x86("HasFMA", "FMA")},
		Flag:     "hasAVX2",
		// bf16 is integer shifts. f16 is F16C's VEX conversions: its CPUID
		// bit, with AVX for the OS's saving of the YMM registers (which
		// GODEBUG=cpu.avx=off also turns off).
		Storages: []Storage{{Elem: ir.BF16},
			{Elem: ir.F16, Features: []Feature{x86("HasAVX", "AVX"), f16c}, Flag: "hasAVX2F16C"}},
		Streaming: true,
	},
	NEON: {
		Name: "neon", Prefix: "neon", Title: "NEON", GOARCH: "arm64",
		Lanes: 4, VectorBytes: 16, VectorRegs: 32,
		// FCVTL/FCVTN are baseline ASIMD; bf16 is integer shifts.
		Storages: []Storage{{Elem: ir.BF16}, {Elem: ir.F16}},
	},
	Go: {Name: "purego", Prefix: "go", Title: "pure Go", Lanes: 1},
}

// All lists every ISA, in dispatch preference order within an architecture.
var All = func() []ISA {
	out := make([]ISA, len(table))
	for i := range table {
		out[i] = ISA(i)
	}
	return out
}()

// Desc is the ISA's descriptor.
func (i ISA) Desc() *Desc { return &table[i] }

// Name is the spelling used in specs and documentation.
func (i ISA) Name() string { return table[i].Name }

// GOARCH is the architecture whose assembly holds this ISA ("" for pure Go).
func (i ISA) GOARCH() string { return table[i].GOARCH }

// Assembly reports whether the ISA is lowered to assembly.
func (i ISA) Assembly() bool { return table[i].GOARCH != "" }

func (i ISA) String() string { return i.Name() }

// Names lists the spec spellings of every ISA, in All's order.
func Names() []string {
	out := make([]string, len(All))
	for j, i := range All {
		out[j] = i.Name()
	}
	return out
}

// Prefixes lists the function-name prefixes of the assembly ISAs.
func Prefixes() []string {
	var out []string
	for _, i := range All {
		if i.Assembly() {
			out = append(out, table[i].Prefix)
		}
	}
	return out
}

// Archs lists the architectures that have assembly ISAs, in All's order.
func Archs() []string {
	var out []string
	for _, i := range All {
		if a := i.GOARCH(); a != "" && !contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Parse reads an ISA's spec spelling.
func Parse(s string) (ISA, error) {
	for _, i := range All {
		if i.Name() == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown target %q; allowed: %s", s, strings.Join(Names(), ", "))
}

// Assemblies parses a kernel's targets (none: every ISA) and returns the
// assembly ISAs among them and the forms of those (Desc.Base), in
// dispatch order. Pure Go is always
// generated: it is the fallback and the tests' reference.
func Assemblies(names []string) ([]ISA, error) {
	want := map[string]bool{}
	for _, n := range names {
		if _, err := Parse(n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	var out []ISA
	for _, i := range All {
		if i.Assembly() && (len(names) == 0 || want[i.Name()] || want[table[i].Base]) {
			out = append(out, i)
		}
	}
	return out, nil
}

// KernelElem is the storage of k's row arrays: F32, or the one half
// format they share.
func KernelElem(k *ir.Kernel) ir.Elem {
	for _, a := range k.Arrays {
		if a.Elem != ir.F32 {
			return a.Elem
		}
	}
	return ir.F32
}

// Storage is the ISA's entry for format e, and whether it converts e
// (every ISA but a StorageOnly one holds float32).
func (i ISA) Storage(e ir.Elem) (Storage, bool) {
	if e == ir.F32 && !table[i].StorageOnly {
		return Storage{Elem: e}, true
	}
	for _, s := range table[i].Storages {
		if s.Elem == e {
			return s, true
		}
	}
	return Storage{}, false
}

// Lowers reports whether the ISA can implement kernel k (its storage),
// in every layout.
func (i ISA) Lowers(k *ir.Kernel) bool {
	if !i.Assembly() {
		return true
	}
	_, ok := i.Storage(KernelElem(k))
	return ok
}

// Flag is the generated variable the dispatch tests before running
// kernel k on the ISA: the ISA's, or that of the ISA with the features
// of k's storage ("" for a baseline ISA).
func (i ISA) Flag(k *ir.Kernel) string {
	if s, _ := i.Storage(KernelElem(k)); s.Flag != "" {
		return s.Flag
	}
	return table[i].Flag
}

// Features lists what the dispatch checks for kernel k on the ISA: the
// ISA's features and those of k's storage.
func (i ISA) Features(k *ir.Kernel) []Feature {
	s, _ := i.Storage(KernelElem(k))
	return append(append([]Feature(nil), table[i].Features...), s.Features...)
}

// Dispatch is the ISA the generated dispatch runs kernel k on, among
// isas (the kernel's on one architecture, in dispatch order), on a CPU that has the
// features has reports: the first that lowers k and whose Features(k)
// it all has, else pure Go. A baseline ISA (no features) is always had.
func Dispatch(k *ir.Kernel, isas []ISA, has func(Feature) bool) ISA {
	for _, i := range isas {
		if !i.Assembly() || !i.Lowers(k) {
			continue
		}
		ok := true
		for _, f := range i.Features(k) {
			ok = ok && has(f)
		}
		if ok {
			return i
		}
	}
	return Go
}

// NonTemporal reports whether the ISA has NT variants of kernels of layout
// l at row length h (0: chosen at run time), by its Streaming rule.
func (i ISA) NonTemporal(l ir.Layout, h int) bool {
	d := &table[i]
	return d.Streaming && l == ir.Rows && h%d.Lanes == 0
}

// FeatureDoc names the ISA's features for documentation: "AVX2 and FMA".
func (d *Desc) FeatureDoc() string {
	names := make([]string, len(d.Features))
	for j, f := range d.Features {
		names[j] = f.Doc
	}
	return andList(names)
}

// andList joins "a", "a and b", "a, b and c".
func andList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func contains[T comparable](s []T, x T) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// WidestLanes is the most float32 lanes of any ISA: a multiple of every
// ISA's Lanes (they are powers of two), so that blocks of that many rows
// start on a vector boundary on every ISA.
func WidestLanes() int {
	n := 1
	for _, d := range table {
		n = max(n, d.Lanes)
	}
	return n
}
