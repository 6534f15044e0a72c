// Package ir is normgen's ISA-neutral description of a normalization kernel.
//
// A Kernel is the program run once per row: Loops that sweep the row's
// elements with vector operations, and scalar statements between them
// (horizontal sums, the mean, the reciprocal standard deviation, ...).
// Every instruction-set backend (AVX-512, AVX2, NEON, pure Go) is a lowering
// of this description; none of them knows which variant it is lowering.
package ir

import (
	"fmt"
	"math"
)

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
	// RowScalarInOut holds one value per row that is read (SLoad) and then
	// overwritten (SStore): BatchNorm's running statistics.
	RowScalarInOut
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
	case RowScalarInOut:
		return "per-row scalar input and output"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Written reports whether the kernel stores into arrays of this role.
func (r Role) Written() bool { return r == RowOut || r == RowScalarOut || r == RowScalarInOut }

// Read reports whether the kernel reads arrays of this role.
func (r Role) Read() bool { return r != RowScalarOut }

// PerRow reports whether arrays of this role have one value per row rather than H.
func (r Role) PerRow() bool { return r == RowScalarIn || r == RowScalarOut || r == RowScalarInOut }

// Layout says where a row's elements lie in memory, and so how a backend
// sweeps them. The per-row program is the same in every layout: a lowering
// maps "element i of row r" and "the current row's scalar" to addresses.
type Layout int

const (
	// Rows: row r's element i is at r*H + i (contiguous rows). Param arrays
	// hold element i's value.
	Rows Layout = iota
	// Columns: row r's element i is at i*Stride + r: the rows are the
	// columns of a matrix of H lines of Stride values, such as the C
	// channels at each spatial position of one [C, L] image (ConvNeXt's
	// channels-first LayerNorm). Vector lowerings put one row in each lane
	// and keep every scalar of the program as a vector of per-row values;
	// Param arrays hold element i's value (one per line), broadcast.
	Columns
	// Segments: a row is Segs segments of SegLen contiguous values; row r's
	// element i is at r*RowStride + (i/SegLen)*SegStride + i%SegLen, and the
	// row has Segs*SegLen elements (BatchNorm's channel c over N images of
	// L positions: RowStride L, SegStride C*L; GroupNorm's group over its
	// channels' positions: SegStride SegLen). Param arrays hold one value
	// per segment, row r's segment k at r*Segs + k, broadcast over the
	// segment.
	Segments
)

func (l Layout) String() string {
	switch l {
	case Rows:
		return "rows"
	case Columns:
		return "columns"
	case Segments:
		return "segments"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Shape is the extent of one call: how long its rows are and where their
// elements lie. Which fields count depends on the kernel's Layout.
type Shape struct {
	H      int // Rows, Columns: elements per row
	Stride int // Columns: values per matrix line (>= the rows of the call)

	Segs, SegLen         int // Segments: segments per row, values per segment
	SegStride, RowStride int // Segments: offsets between segments of a row, and between rows
}

// Len is the number of elements of each row: H, or Segs*SegLen.
func (s Shape) Len(l Layout) int {
	if l == Segments {
		return s.Segs * s.SegLen
	}
	return s.H
}

// Index is the offset of row r's element i in a row array.
func (s Shape) Index(l Layout, r, i int) int {
	switch l {
	case Columns:
		return i*s.Stride + r
	case Segments:
		return r*s.RowStride + (i/s.SegLen)*s.SegStride + i%s.SegLen
	}
	return r*s.H + i
}

// ParamIndex is the offset of row r's element i in a Param array.
func (s Shape) ParamIndex(l Layout, r, i int) int {
	if l == Segments {
		return r*s.Segs + i/s.SegLen
	}
	return i
}

// Array is one slice parameter of a kernel.
type Array struct {
	Name string // Go parameter name, e.g. "dst", "x", "gamma"
	Role Role
	Doc  string // one line for the generated documentation
	// Elem is the storage format of a row array (RowIn, RowOut); other
	// roles are always F32.
	Elem Elem
}

// Arg is one float32 scalar argument of a kernel, the same for every row.
type Arg struct {
	Name string // Go parameter name, e.g. "eps"
	Doc  string // one line for the generated documentation
}

// Kernel is the per-row program of one normalization.
//
// Scalars and accumulators hold at least float32 precision (the pure-Go
// lowering keeps them in float64); vector values are float32.
type Kernel struct {
	Name   string  // exported Go name, e.g. "LayerNorm"
	Doc    string  // the formula, for the generated documentation
	Layout Layout  // where each row's elements lie
	Arrays []Array // parameters in signature order
	// Args are the float32 arguments of every call, after the arrays and
	// the shape (a run-time epsilon); SArg reads them.
	Args []Arg
	Body []Stmt // run once per row, in order

	NumScalars int // scalar values S(0) .. S(NumScalars-1)
	NumAccs    int // accumulators 0 .. NumAccs-1

	// Fallback computes a row a guard abandoned after the kernel stored
	// row outputs before that guard (early stores): an output may be the
	// same memory as an input, so those inputs may be gone, and Fallback
	// reads the early-stored outputs instead, matched by name (a residual
	// kernel that stores its sum first normalizes the stored sum). Nil
	// when nothing is stored before a guard: the caller computes the row
	// from the kernel itself, in float64. See Check for the rules.
	Fallback *Kernel
	// Streaming is the form the kernel's non-temporal variants lower,
	// when it differs: the same arrays and results, nothing stored before
	// a guard, since an output streamed out by one loop would be read back
	// from memory by the next.
	Streaming *Kernel
}

// StreamingForm is the form of k that streaming-store functions lower.
func (k *Kernel) StreamingForm() *Kernel {
	if k.Streaming != nil {
		return k.Streaming
	}
	return k
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
	Array  int    // VLoad, VStore: index into Kernel.Arrays
	Scalar S      // VSplat
	Acc    int    // VAcc, VAccMul
	Name   string // the value's name, optional (see checkNames)
}

// Loop sweeps every element of the row. Accumulators it adds to start at
// zero when the loop starts; lanes past the end of the row never reach them.
// Every float32 accumulator adds its terms by the summation policy below.
type Loop struct {
	Ops []VecOp
}

// ScalarCode is the operation of a Scalar statement.
type ScalarCode int

const (
	SConst  ScalarCode = iota // Const
	SInvLen                   // 1/n for the row's element count n (H, or Segs*SegLen)
	SSum                      // the horizontal sum of accumulator Acc after its loop
	SAdd                      // Args[0] + Args[1]
	SSub                      // Args[0] - Args[1]
	SMul                      // Args[0] * Args[1]
	SDiv                      // Args[0] / Args[1]
	SSqrt                     // sqrt(Args[0])
	SLoad                     // the current row's value of a RowScalarIn or RowScalarInOut Array, or the first element of the current row of a RowIn Array
	SStore                    // Array's current row value <- Args[0] (RowScalarOut, RowScalarInOut); Dst unused
	// SGuard abandons the row unless Lo <= Args[0] <= Hi (so also when it
	// is NaN): the kernel returns the number of rows completed before it,
	// and the caller computes that row another way (in float64) and resumes
	// after it. It is how a
	// float32 statistic that overflowed, lost its precision to underflow or
	// became NaN through an intermediate overflow is caught at the cost of
	// a compare per row; rows whose inputs hold a NaN take the float64
	// path too, and come out NaN there as well. Only row outputs that
	// Kernel.Fallback reads may be stored before it (whole, by a Loop);
	// other outputs of an abandoned row are untouched. Dst unused.
	SGuard
	SArg // the value of the call's scalar argument Kernel.Args[Arg]
)

var scalarNames = [...]string{"const", "invlen", "sum", "add", "sub", "mul", "div", "sqrt", "load", "store", "guard", "arg"}

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
	Arg   int     // SArg: index into Kernel.Args
	Name  string  // Dst's name, optional (see checkNames)
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

// The summation policy: how every float32 accumulator (VAcc, VAccMul) of
// every layout and every vector lowering adds its terms, and how Eval
// adds them. A sequential float32 sum of n terms errs by up to n-1
// roundings, and for nearly equal terms (a row of 0.1s) that error is
// systematic, so it really grows like n: no chain may be long.
//
// A lowering gives an accumulator W lanes (its vector width times its
// unroll; Eval has one). Each lane adds its terms into a chunk, at most
// SumChunk of them in one chain; a full chunk is added into the lane's
// total and restarted, and every SumTotal chunks the total is added into
// the lane's super-total and restarted. The accumulator's value is then
// super-total + total + chunk, the lanes added pairwise. A lowering may add
// several lanes' chunks together before they enter a total (one chain
// step more), and may end a chunk early (at a segment's end, say); it may
// not make any chain longer. So no sequential chain is longer than
// SumChunk + SumTotal + n/(W*SumChunk*SumTotal) + log2(W) additions:
// 64+64+4+6 for a row of 2^20 elements over 64 lanes, instead of 2^14.
const (
	SumChunk = 64 // terms a lane adds in one chain before its total takes them
	SumTotal = 64 // chunks a total takes before the super-total takes it
)

// BlockedSum is one lane of an accumulator under the summation policy.
// The zero value is an empty sum.
type BlockedSum struct {
	chunk, total, super float32
	terms, chunks       int
}

// Add adds v.
func (b *BlockedSum) Add(v float32) { b.chunk += v; b.next() }

// AddMul adds x*y with one rounding (a fused multiply-add).
func (b *BlockedSum) AddMul(x, y float32) {
	b.chunk = float32(math.FMA(float64(x), float64(y), float64(b.chunk)))
	b.next()
}

// next counts one term and moves full chunks and totals up a level.
func (b *BlockedSum) next() {
	if b.terms++; b.terms < SumChunk {
		return
	}
	b.total += b.chunk
	b.chunk, b.terms = 0, 0
	if b.chunks++; b.chunks < SumTotal {
		return
	}
	b.super += b.total
	b.total, b.chunks = 0, 0
}

// Value is the sum so far: super-total + total + chunk.
func (b *BlockedSum) Value() float32 { return b.super + b.total + b.chunk }
