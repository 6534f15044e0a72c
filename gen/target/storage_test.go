package target

import (
	"reflect"
	"strings"
	"testing"

	"github.com/normgen/normgen/gen/ir"
)

// The storages of the table: half formats only, each once per ISA; extra
// features only on checked ISAs, each with its own flag, every feature a
// bool of x/sys/cpu.
func TestStorages(t *testing.T) {
	flags := map[string]bool{}
	for _, i := range All {
		d := i.Desc()
		if d.Flag != "" {
			flags[d.Flag] = true
		}
	}
	for _, i := range All {
		d := i.Desc()
		seen := map[ir.Elem]bool{}
		for _, s := range d.Storages {
			if !s.Elem.Half() || seen[s.Elem] || !i.Assembly() {
				t.Errorf("%s: storage %v listed twice, not half, or on pure Go", d.Name, s.Elem)
			}
			seen[s.Elem] = true
			if (len(s.Features) > 0) != (s.Flag != "") || len(s.Features) > 0 && (len(d.Features) == 0 || flags[s.Flag]) {
				t.Errorf("%s %v: flag %q with %d features, on an ISA with %d", d.Name, s.Elem, s.Flag, len(s.Features), len(d.Features))
			}
			flags[s.Flag] = true
			for j, f := range s.Features {
				if f.Probed() {
					// A CPUID bit says nothing of the OS's support: an
					// x/sys/cpu flag that does must come before it.
					if f.Var != "" || f.Field != "" || f.Doc == "" || f.CPUID.Reg < EAX || f.CPUID.Reg > EDX || f.CPUID.Bit > 31 ||
						j == 0 || s.Features[j-1].Probed() || d.GOARCH != "amd64" {
						t.Errorf("%s %v: probed feature %+v (%+v)", d.Name, s.Elem, f, *f.CPUID)
					}
					continue
				}
				v, ok := cpuVars[f.Var]
				if fv := reflect.ValueOf(v).Elem().FieldByName(f.Field); !ok || !fv.IsValid() || fv.Kind() != reflect.Bool {
					t.Errorf("%s %v: feature %s.%s is not an x/sys/cpu flag", d.Name, s.Elem, f.Var, f.Field)
				}
			}
		}
	}
}

// A kernel is planned only on the ISAs that convert its storage, and
// without NT variants; pure Go lowers every storage.
func TestPlanStorage(t *testing.T) {
	k := &ir.Kernel{Name: "K", Arrays: []ir.Array{
		{Name: "dst", Role: ir.RowOut, Elem: ir.F16}, {Name: "x", Role: ir.RowIn, Elem: ir.F16}, {Name: "gamma", Role: ir.Param}}}
	if KernelElem(k) != ir.F16 {
		t.Fatalf("KernelElem = %v", KernelElem(k))
	}
	for _, e := range Plan(k, []int{64}, All) {
		for _, f := range e.Funcs {
			if _, ok := f.ISA.Storage(ir.F16); !ok || f.NT {
				t.Errorf("%s planned for f16 storage (NT %v)", f.Label(), f.NT)
			}
		}
		if len(e.Funcs) == 0 {
			t.Errorf("f16 kernel planned on no ISA")
		}
	}
	if !Go.Lowers(k) || NEON.Lowers(k) != func() bool { _, ok := NEON.Storage(ir.F16); return ok }() {
		t.Error("Lowers disagrees with the table")
	}
	// Half storage in every layout, where the ISA has the format.
	cols := *k
	cols.Layout = ir.Columns
	for _, i := range All {
		if i.Lowers(&cols) != i.Lowers(k) {
			t.Errorf("%s: Lowers of a half columns kernel = %v, of rows %v", i, i.Lowers(&cols), i.Lowers(k))
		}
	}
	if got, want := (Func{Kernel: k, H: 64, ISA: AVX512}).AsmSignature(), "func(dst, x *uint16, gamma *float32, rows int) int"; got != want {
		t.Errorf("AsmSignature = %q, want %q", got, want)
	}
	if AVX512.Flag(k) != AVX512.Desc().Flag || len(AVX512.Features(k)) < len(AVX512.Desc().Features) {
		t.Errorf("AVX512 f16 flag %q, features %v", AVX512.Flag(k), AVX512.Features(k))
	}
}

// The dispatch decision as a function of the CPU's features: a CPU with
// AVX2 and FMA but without F16C runs bf16 kernels in AVX2 and f16 ones in
// pure Go; with F16C (and AVX), f16 too in AVX2; AVX-512 takes both; a
// CPU with AVX-512 but AVX2 turned off (GODEBUG) still takes AVX-512.
func TestDispatchByFeatures(t *testing.T) {
	kern := func(e ir.Elem) *ir.Kernel {
		return &ir.Kernel{Name: "K", Arrays: []ir.Array{{Name: "dst", Role: ir.RowOut, Elem: e}, {Name: "x", Role: ir.RowIn, Elem: e}}}
	}
	cpu := func(docs ...string) func(Feature) bool {
		return func(f Feature) bool {
			for _, d := range docs {
				if d == f.Doc {
					return true
				}
			}
			return false
		}
	}
	avx512 := []string{"AVX512F", "AVX512VL", "AVX512DQ", "AVX512BW"}
	amd := []ISA{AVX512BF16, AVX512, AVX2}
	for _, c := range []struct {
		name           string
		has            []string
		f32, bf16, f16 ISA
	}{
		{"none", nil, Go, Go, Go},
		{"AVX2 FMA, no AVX flag, no F16C", []string{"AVX2", "FMA"}, AVX2, AVX2, Go},
		{"AVX2 FMA AVX, no F16C", []string{"AVX", "AVX2", "FMA"}, AVX2, AVX2, Go},
		{"AVX2 FMA F16C, AVX off", []string{"AVX2", "FMA", "F16C"}, AVX2, AVX2, Go},
		{"AVX2 FMA AVX F16C", []string{"AVX", "AVX2", "FMA", "F16C"}, AVX2, AVX2, AVX2},
		{"AVX2 without FMA", []string{"AVX", "AVX2", "F16C"}, Go, Go, Go},
		{"AVX-512, AVX2 off", avx512, AVX512, AVX512, AVX512},
		{"AVX-512 with BF16", append(avx512, "AVX512_BF16", "AVX", "AVX2", "FMA", "F16C"), AVX512, AVX512BF16, AVX512},
		{"BF16 without BW", []string{"AVX512F", "AVX512VL", "AVX512DQ", "AVX512_BF16", "AVX2", "FMA"}, AVX2, AVX2, Go},
		{"AVX-512 without BW", []string{"AVX512F", "AVX512VL", "AVX512DQ", "AVX", "AVX2", "FMA"}, AVX2, AVX2, Go},
	} {
		has := cpu(c.has...)
		for _, w := range []struct {
			e    ir.Elem
			want ISA
		}{{ir.F32, c.f32}, {ir.BF16, c.bf16}, {ir.F16, c.f16}} {
			if got := Dispatch(kern(w.e), amd, has); got != w.want {
				t.Errorf("%s: %v kernel dispatches to %v, want %v", c.name, w.e, got, w.want)
			}
		}
	}
	// Restricted targets: an f16 kernel generated for AVX2 alone.
	if got := Dispatch(kern(ir.F16), []ISA{AVX2}, cpu(append(avx512, "AVX", "AVX2", "FMA")...)); got != Go {
		t.Errorf("f16 kernel for AVX2 alone, no F16C: %v", got)
	}
	f := AVX2.Features(kern(ir.F16))
	if len(f) != 4 || !f[3].Probed() || f[3].CPUID.Leaf != 1 || f[3].CPUID.Reg != ECX || f[3].CPUID.Bit != 29 || f[2].Field != "HasAVX" {
		t.Errorf("AVX2 f16 features %+v: want AVX2, FMA, AVX and CPUID.1:ECX[29]", f)
	}
	if AVX2.Flag(kern(ir.F16)) == AVX2.Flag(kern(ir.BF16)) {
		t.Error("AVX2 f16 and bf16 kernels share a flag")
	}
}

// The forms of an ISA (Base): named after it, on its architecture and
// vectors, lowering only kernels stored in their storages, dispatched
// before it, with its features and more.
func TestForms(t *testing.T) {
	for _, i := range All {
		d := i.Desc()
		if d.Base == "" {
			if d.StorageOnly {
				t.Errorf("%s: StorageOnly without a base", d.Name)
			}
			continue
		}
		b, err := Parse(d.Base)
		if err != nil || b == i || !strings.HasPrefix(d.Name, d.Base) || b.GOARCH() != d.GOARCH ||
			b.Desc().Lanes != d.Lanes || b < i || len(d.Features) <= len(b.Desc().Features) {
			t.Errorf("%s: base %q (%v)", d.Name, d.Base, err)
			continue
		}
		for j, f := range b.Desc().Features {
			if d.Features[j] != f {
				t.Errorf("%s lacks its base's feature %s", d.Name, f.Doc)
			}
		}
		f32 := &ir.Kernel{Name: "K", Arrays: []ir.Array{{Name: "dst", Role: ir.RowOut}, {Name: "x", Role: ir.RowIn}}}
		if d.StorageOnly && i.Lowers(f32) {
			t.Errorf("%s lowers float32 kernels", d.Name)
		}
	}
	if !AVX512BF16.Lowers(&ir.Kernel{Name: "K", Arrays: []ir.Array{{Name: "x", Role: ir.RowIn, Elem: ir.BF16}}}) ||
		AVX512BF16.Lowers(&ir.Kernel{Name: "K", Arrays: []ir.Array{{Name: "x", Role: ir.RowIn, Elem: ir.F16}}}) {
		t.Error("avx512bf16 must lower bf16 kernels and only those")
	}
}
