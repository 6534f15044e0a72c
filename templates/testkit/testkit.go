// Package testkit holds the static helpers of normgen's generated tests as
// ordinary Go, compiled and tested here: the float64 oracles, the accuracy
// contract's bounds, the fenced arrays that catch stray writes, the input
// families and the test functions that run them.
//
// rows.go and tensor.go are appended, from their imports on, to the
// generated <stem>_test.go and <stem>_tensor_test.go, half.go (and
// halfrows.go with half kernels over rows) to <stem>_half_test.go, and
// shared.go once per package, to the first of those three it has (see
// package templates); the generator then qualifies their unexported names
// per spec like every other generated identifier. This file is not copied: it
// stands in for what the templates and the rest of a generated package
// declare, so that the helpers compile here and the unit tests can run them
// on reference kernels.
package testkit

// As the templates declare them.
const (
	tolerance    = 64
	bwdTolerance = 64
	tbTolerance  = 64
	tTolerance   = 64
	packageName  = "testkit"
	tPackageName = "testkit"
)

// The templates' kernel tables; the unit tests fill them.
var (
	kernels       []*kernel
	tensorKernels []*tensorKernel
	bwdKernels    []*bwdKernel
	tbKernels     []*tbKernel
)

// As the generated wrappers declare them: the implementation a kernel
// dispatches to, and the input size from which the Parallel entry points
// split their work.
func isaOf(kernel string) string { return "purego" }

var parallelMinBytes = 256 << 10

// asmImpls stands in for the generated per-architecture test files: no
// assembly here.
func asmImpls(kernel string, h int, anySize bool, eps float32) []impl { return nil }

// The templates' tables of the entry points taking eps (none here), and
// of the instruction sets; the unit tests fill them.
var (
	epsEntryPoints  = map[string]func(eps float32){}
	tEpsEntryPoints = map[string]func(eps float32){}
	isaOrder        = []string{"avx512", "avx2", "neon", "purego"}
	isaTitles       = map[string]string{"avx512": "AVX-512", "avx2": "AVX2+FMA", "neon": "NEON", "purego": "pure Go"}
	tIsaOrder       = isaOrder
	tIsaTitles      = isaTitles
)

// tHasRows: as the tensor template declares it, whether the rows' tests
// check Implementation.
const tHasRows = false

// As the generated package declares its Implementation: isaOf above
// dispatches every kernel to pure Go.
var implementationFunc, implementationName = func() string { return "pure Go" }, "Implementation"

// halfConversions stands in for the generated <stem>_half_test.go's table
// of the package's bulk conversions; the unit tests fill it.
var halfConversions []halfConv

// asmHalfConversions stands in for the generated per-architecture test
// files: no assembly here.
func asmHalfConversions() []halfConv { return nil }
