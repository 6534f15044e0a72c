package ir_test

import (
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// TestCheckShippedKernels: every kernel of every shipped spec builds into
// IR that Check accepts (algo.Build runs Check through the builder; this
// checks the result again, independently of how it was built).
func TestCheckShippedKernels(t *testing.T) {
	files, err := spec.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		for _, sk := range f.Kernels {
			k, err := algo.Build(sk)
			if err != nil {
				t.Fatalf("%s: %s: %v", f.Path, sk.Name, err)
			}
			if err := ir.Check(k); err != nil {
				t.Errorf("%s: %v", f.Path, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no shipped kernels")
	}
}
