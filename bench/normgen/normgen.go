// Package normgen wires the packages normgen generates for the benchmark
// (one per instruction set, from the specs in bench/specs) into the harness.
package normgen

import "github.com/normgen/normgen/bench/harness"

// Impls is normgen's generated kernels, one implementation per instruction
// set the CPU can run.
func Impls() []harness.Impl { return impls }

// Missing explains what this binary was built without.
func Missing() []string { return missing }

// Notes describes the generated packages (normgen version, spec hash).
func Notes() []string { return notes }

var (
	impls   []harness.Impl
	missing = []string{"normgen: the generated packages are not wired in yet"}
	notes   []string
)
