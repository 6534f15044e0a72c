package target

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/normgen/normgen/gen/ir"
)

// TestTable checks the invariants every lowering and writer relies on.
func TestTable(t *testing.T) {
	names, prefixes := map[string]bool{}, map[string]bool{}
	flags := map[string]bool{}
	for _, i := range All {
		d := i.Desc()
		if d.Name == "" || d.Prefix == "" || d.Title == "" {
			t.Errorf("%d: empty name, prefix or title: %+v", i, d)
		}
		if names[d.Name] || prefixes[d.Prefix] {
			t.Errorf("%s: name or prefix %q used twice", d.Name, d.Prefix)
		}
		names[d.Name], prefixes[d.Prefix] = true, true
		if d.Lanes < 1 {
			t.Errorf("%s: %d lanes", d.Name, d.Lanes)
		}
		if d.GOARCH == "" {
			if len(d.Features) > 0 || d.Streaming || d.VectorRegs != 0 {
				t.Errorf("%s: pure Go with assembly capabilities: %+v", d.Name, d)
			}
			continue
		}
		if d.Lanes*4 != d.VectorBytes || d.VectorRegs < 16 {
			t.Errorf("%s: %d lanes in %d-byte vectors, %d registers", d.Name, d.Lanes, d.VectorBytes, d.VectorRegs)
		}
		if (len(d.Features) > 0) != (d.Flag != "") || flags[d.Flag] && d.Flag != "" {
			t.Errorf("%s: flag %q with %d features (flags are one per checked ISA)", d.Name, d.Flag, len(d.Features))
		}
		flags[d.Flag] = true
		for _, f := range d.Features {
			v, ok := cpuVars[f.Var]
			if !ok {
				t.Errorf("%s: feature %s.%s: no such x/sys/cpu variable", d.Name, f.Var, f.Field)
				continue
			}
			fv := reflect.ValueOf(v).Elem().FieldByName(f.Field)
			if !fv.IsValid() || fv.Kind() != reflect.Bool || f.Doc == "" {
				t.Errorf("%s: feature %s.%s: not a bool flag of x/sys/cpu, or undocumented", d.Name, f.Var, f.Field)
			}
		}
	}
	if All[len(All)-1] != Go || Go.Assembly() {
		t.Errorf("pure Go must be the last ISA and not assembly")
	}
	// Within an architecture, a baseline ISA (no features) can only come
	// last: the dispatch's default case.
	seenBaseline := map[string]bool{}
	for _, i := range All {
		d := i.Desc()
		if seenBaseline[d.GOARCH] {
			t.Errorf("%s follows the baseline ISA of %s in dispatch order", d.Name, d.GOARCH)
		}
		if d.GOARCH != "" && len(d.Features) == 0 {
			seenBaseline[d.GOARCH] = true
		}
	}
	for _, arch := range Archs() {
		if arch == "" || seenArch(arch) == 0 {
			t.Errorf("Archs() holds %q", arch)
		}
	}
}

// TestAVX512Features: the AVX-512 lowering uses VL, DQ and BW forms; a
// CPU with F alone must not take it.
func TestAVX512Features(t *testing.T) {
	var got []string
	for _, f := range AVX512.Desc().Features {
		got = append(got, f.Field)
	}
	want := []string{"HasAVX512F", "HasAVX512VL", "HasAVX512DQ", "HasAVX512BW"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AVX512 features %v, want %v", got, want)
	}
	if doc := AVX2.Desc().FeatureDoc(); doc != "AVX2 and FMA" {
		t.Errorf("AVX2 FeatureDoc = %q", doc)
	}
}

// TestRuns: the host check follows the same flags as the dispatch.
func TestRuns(t *testing.T) {
	if !Go.Desc().Runs() {
		t.Error("pure Go does not run")
	}
	want := cpu.X86.HasAVX2 && cpu.X86.HasFMA && AVX2.GOARCH() == runtime.GOARCH
	if got := AVX2.Desc().Runs(); got != want {
		t.Errorf("AVX2 Runs() = %v, want %v", got, want)
	}
	if AVX2.GOARCH() != runtime.GOARCH && !strings.Contains(AVX2.Desc().Unavailable(), "amd64") {
		t.Errorf("AVX2 Unavailable() = %q off amd64", AVX2.Desc().Unavailable())
	}
}

func TestParse(t *testing.T) {
	for _, i := range All {
		got, err := Parse(i.Name())
		if err != nil || got != i {
			t.Errorf("Parse(%q) = %v, %v", i.Name(), got, err)
		}
	}
	for _, bad := range []string{"", "AVX512", "sse", "go"} {
		_, err := Parse(bad)
		if err == nil || !strings.Contains(err.Error(), "allowed: "+strings.Join(Names(), ", ")) {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	got, err := Assemblies([]string{"purego", "neon", "avx512"})
	if err != nil || !reflect.DeepEqual(got, []ISA{AVX512BF16, AVX512, NEON}) {
		t.Errorf("Assemblies = %v, %v", got, err)
	}
	// A form is generated for its base, or alone when named.
	if got, _ := Assemblies([]string{"avx512bf16", "avx2"}); !reflect.DeepEqual(got, []ISA{AVX512BF16, AVX2}) {
		t.Errorf("Assemblies(avx512bf16, avx2) = %v", got)
	}
	if got, _ := Assemblies(nil); !reflect.DeepEqual(got, []ISA{AVX512BF16, AVX512, AVX2, NEON}) {
		t.Errorf("Assemblies(nil) = %v", got)
	}
	if _, err := Assemblies([]string{"avx2", "sve"}); err == nil {
		t.Error("Assemblies accepted sve")
	}
}

func kernel(l ir.Layout) *ir.Kernel {
	return &ir.Kernel{Name: "K", Layout: l, Arrays: []ir.Array{{Name: "dst", Role: ir.RowOut}, {Name: "x", Role: ir.RowIn}}}
}

// TestPlan checks the enumeration: sizes then run time, ISAs in dispatch
// order, each followed by its NT variant where its streaming rule allows.
func TestPlan(t *testing.T) {
	k := kernel(ir.Rows)
	plan := Plan(k, []int{64, 72}, []ISA{AVX512, AVX2, NEON})
	var got []string
	for _, e := range plan {
		for _, f := range e.Funcs {
			if f.H != e.H || f.Kernel != k {
				t.Errorf("%s in entry H=%d", f.Name(), e.H)
			}
			got = append(got, f.Name())
		}
	}
	want := []string{
		"avx512K64", "avx512K64NT", "avx2K64", "avx2K64NT", "neonK64",
		"avx512K72", "avx2K72", "avx2K72NT", "neonK72", // 72 % 16 != 0
		"avx512KAny", "avx512KAnyNT", "avx2KAny", "avx2KAnyNT", "neonKAny",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan\n got %v\nwant %v", got, want)
	}
	amd := plan[1].Arch("amd64")
	if isas := amd.ISAs(); !reflect.DeepEqual(isas, []ISA{AVX512, AVX2}) {
		t.Errorf("amd64 ISAs %v", isas)
	}
	if plain, nt := amd.Variants(AVX512); plain.Name() != "avx512K72" || nt.NT {
		t.Errorf("avx512 variants at 72: %v %v", plain.Name(), nt.NT)
	}
	if _, nt := amd.Variants(AVX2); !nt.NT || nt.Name() != "avx2K72NT" {
		t.Errorf("avx2 NT variant at 72: %+v", nt)
	}
	// No NT outside the Rows layout, and pure Go never in the plan.
	for _, e := range Plan(kernel(ir.Columns), []int{64}, []ISA{AVX512, Go}) {
		if len(e.Funcs) != 1 || e.Funcs[0].NT || e.Funcs[0].ISA != AVX512 {
			t.Errorf("Columns entry H=%d: %v", e.H, e.Funcs)
		}
	}
	if p := Plan(k, nil, nil); len(p) != 1 || p[0].H != 0 || len(p[0].Funcs) != 0 {
		t.Errorf("pure-Go-only plan: %+v", p)
	}
}

// seenArch counts the ISAs of the table on arch.
func seenArch(arch string) int {
	n := 0
	for _, i := range All {
		if i.GOARCH() == arch {
			n++
		}
	}
	return n
}

func TestLabel(t *testing.T) {
	f := Func{Kernel: kernel(ir.Rows), H: 8, ISA: AVX2, NT: true}
	if f.Label() != "avx2-nt" || f.Name() != "avx2K8NT" {
		t.Errorf("Label %q Name %q", f.Label(), f.Name())
	}
}

// TestWidestLanes: the Parallel entry points of Columns kernels split at
// multiples of WidestLanes, which must be a multiple of every ISA's lanes.
func TestWidestLanes(t *testing.T) {
	w := WidestLanes()
	for _, i := range All {
		if d := i.Desc(); w%d.Lanes != 0 || d.Lanes > w {
			t.Errorf("%s: %d lanes, widest %d", d.Name, d.Lanes, w)
		}
	}
	if w != AVX512.Desc().Lanes {
		t.Errorf("WidestLanes() = %d, want AVX-512's %d", w, AVX512.Desc().Lanes)
	}
}
