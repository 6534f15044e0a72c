// Package ir is normgen's ISA-neutral description of a normalization kernel.
//
// A Kernel is the program run once per row: Loops that sweep the row's
// elements with vector operations, and scalar statements between them
// (horizontal sums, the mean, the reciprocal standard deviation, ...).
// Every instruction-set backend (AVX-512, AVX2, NEON, pure Go) is a lowering
// of this description; none of them knows which variant it is lowering.
package ir

import "fmt"

// Role says how an array parameter is indexed and whether it is written.
type Role int

const (
	// RowIn holds H values per row and is only read.
	RowIn Role = iota
	// RowOut holds H values per row and is written; a later loop of the same
	// row may read back what an earlier loop stored.
	RowOut
	// Param holds H values shared by every row (gamma, beta).
	Param
	// RowScalarIn holds one value per row (WeightNorm's g).
	RowScalarIn
	// RowScalarOut holds one value per row (saved mean, saved rstd).
	RowScalarOut
)

func (r Role) String() string {
	switch r {
	case RowIn:
		return "row input"
	case RowOut:
		return "row output"
	case Param:
		return "parameter"
	case RowScalarIn:
		return "per-row scalar input"
	case RowScalarOut:
		return "per-row scalar output"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Written reports whether the kernel stores into arrays of this role.
func (r Role) Written() bool { return r == RowOut || r == RowScalarOut }

// PerRow reports whether arrays of this role have one value per row rather than H.
func (r Role) PerRow() bool { return r == RowScalarIn || r == RowScalarOut }

// Array is one slice parameter of a kernel.
type Array struct {
	Name string // Go parameter name, e.g. "dst", "x", "gamma"
	Role Role
	Doc  string // one line for the generated documentation
}

// Kernel is the per-row program of one normalization.
//
// Scalars and accumulators hold at least float32 precision (the pure-Go
// lowering keeps them in float64); vector values are float32.
type Kernel struct {
	Name   string  // exported Go name, e.g. "LayerNorm"
	Doc    string  // the formula, for the generated documentation
	Arrays []Array // parameters in signature order
	Body   []Stmt  // run once per row, in order

	NumScalars int // scalar values S(0) .. S(NumScalars-1)
	NumAccs    int // accumulators 0 .. NumAccs-1
}

// Stmt is a statement of the per-row program: *Loop or *Scalar.
type Stmt interface{ stmt() }

// V names a vector value inside one Loop: the index of the op that made it.
type V int

// S names a scalar value of the per-row program; each is assigned once.
type S int

// VecCode is the operation of a VecOp.
type VecCode int

const (
	VLoad   VecCode = iota // Array: load the current elements
	VSplat                 // Scalar: broadcast a scalar to every lane
	VAdd                   // Args[0] + Args[1]
	VSub                   // Args[0] - Args[1]
	VMul                   // Args[0] * Args[1]
	VFMA                   // Args[0]*Args[1] + Args[2], one rounding
	VStore                 // Array <- Args[0]; makes no value
	VAcc                   // Acc += Args[0]; makes no value
	VAccMul                // Acc += Args[0]*Args[1] (fused); makes no value
)

var vecNames = [...]string{"load", "splat", "add", "sub", "mul", "fma", "store", "acc", "accmul"}

func (c VecCode) String() string { return vecNames[c] }

// MakesValue reports whether the op defines a vector value.
func (c VecCode) MakesValue() bool { return c != VStore && c != VAcc && c != VAccMul }

// VecOp is one lane-wise operation in a Loop. Its result, if any, is V(index).
type VecOp struct {
	Code   VecCode
	Args   []V
	Array  int // VLoad, VStore: index into Kernel.Arrays
	Scalar S   // VSplat
	Acc    int // VAcc, VAccMul
}

// Loop sweeps every element of the row. Accumulators it adds to start at
// zero when the loop starts; lanes past the end of the row never reach them.
type Loop struct {
	Ops []VecOp
}

// ScalarCode is the operation of a Scalar statement.
type ScalarCode int

const (
	SConst  ScalarCode = iota // Const
	SInvLen                   // 1/H for the row length H
	SSum                      // the horizontal sum of accumulator Acc after its loop
	SAdd                      // Args[0] + Args[1]
	SSub                      // Args[0] - Args[1]
	SMul                      // Args[0] * Args[1]
	SDiv                      // Args[0] / Args[1]
	SSqrt                     // sqrt(Args[0])
	SLoad                     // the current row's value of a RowScalarIn Array, or the first element of the current row of a RowIn Array
	SStore                    // Array's current row value <- Args[0]; Dst unused
	// SGuard abandons the row unless Lo <= Args[0] <= Hi (so also when it
	// is NaN): the kernel returns the number of rows completed before it,
	// and the caller computes that row another way (in float64) and resumes
	// after it. It must come before any store of the row. It is how a
	// float32 statistic that overflowed, lost its precision to underflow or
	// became NaN through an intermediate overflow is caught at the cost of
	// a compare per row; rows whose inputs hold a NaN take the float64
	// path too, and come out NaN there as well. Dst unused.
	SGuard
)

var scalarNames = [...]string{"const", "invlen", "sum", "add", "sub", "mul", "div", "sqrt", "load", "store", "guard"}

func (c ScalarCode) String() string { return scalarNames[c] }

// Scalar is one scalar statement of the per-row program.
type Scalar struct {
	Code  ScalarCode
	Dst   S
	Args  []S
	Const float32 // SConst
	Lo    float32 // SGuard
	Hi    float32 // SGuard
	Acc   int     // SSum
	Array int     // SLoad, SStore
}

func (*Loop) stmt()   {}
func (*Scalar) stmt() {}

// ArrayIndex returns the index of the named array, or -1.
func (k *Kernel) ArrayIndex(name string) int {
	for i, a := range k.Arrays {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// HasRole reports whether any array has the given role.
func (k *Kernel) HasRole(r Role) bool {
	for _, a := range k.Arrays {
		if a.Role == r {
			return true
		}
	}
	return false
}
