package target

import (
	"reflect"
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
			for _, f := range s.Features {
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
	if got, want := (Func{Kernel: k, H: 64, ISA: AVX512}).AsmSignature(), "func(dst, x *uint16, gamma *float32, rows int) int"; got != want {
		t.Errorf("AsmSignature = %q, want %q", got, want)
	}
	if AVX512.Flag(k) != AVX512.Desc().Flag || len(AVX512.Features(k)) < len(AVX512.Desc().Features) {
		t.Errorf("AVX512 f16 flag %q, features %v", AVX512.Flag(k), AVX512.Features(k))
	}
}
