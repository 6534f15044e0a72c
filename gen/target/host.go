package target

import (
	"reflect"
	"runtime"

	"golang.org/x/sys/cpu"
)

// cpuVars are the x/sys/cpu variables a Feature may name.
var cpuVars = map[string]any{"X86": &cpu.X86, "ARM64": &cpu.ARM64}

// Runs reports whether this process can run the ISA, by the same test as
// the generated dispatch: its GOARCH, and every one of its Features.
func (d *Desc) Runs() bool { return d.Unavailable() == "" }

// Unavailable says why this process cannot run the ISA ("" when it can,
// by Runs's test).
func (d *Desc) Unavailable() string {
	if d.GOARCH != "" && d.GOARCH != runtime.GOARCH {
		return "not an " + d.GOARCH + " machine"
	}
	var missing []string
	for _, f := range d.Features {
		if !f.has() {
			missing = append(missing, f.Doc)
		}
	}
	if len(missing) > 0 {
		return "the CPU lacks " + andList(missing)
	}
	return ""
}

// has reads the feature's flag; a name x/sys/cpu lacks reads as absent
// (the table's test rejects one among an ISA's Features), and so does a
// probed feature: only the generated packages read CPUID, for storage
// formats, which Runs does not check.
func (f Feature) has() bool {
	v, ok := cpuVars[f.Var]
	if !ok {
		return false
	}
	field := reflect.ValueOf(v).Elem().FieldByName(f.Field)
	return field.IsValid() && field.Kind() == reflect.Bool && field.Bool()
}
