package spec_test

import (
	"testing"

	"github.com/normgen/normgen/gen/target"
	"github.com/normgen/normgen/spec"
)

// TestTargetsMatchISAs keeps the spec's target names and the generator's
// ISA list one list: spec cannot import gen without a cycle risk.
func TestTargetsMatchISAs(t *testing.T) {
	if len(spec.Targets) != len(target.All) {
		t.Fatalf("spec.Targets %v, target.All %v", spec.Targets, target.All)
	}
	for i, isa := range target.All {
		if spec.Targets[i] != isa.Name() {
			t.Errorf("spec.Targets[%d] = %s, target.All[%d] = %s", i, spec.Targets[i], i, isa.Name())
		}
	}
}
