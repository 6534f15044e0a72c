package lowertest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// Case is one call of a lowered function and what it must do.
type Case struct {
	Func   target.Func
	Rows   int
	Shape  []int // the shape arguments, in target.ShapeArgs order
	Want   int   // the count the call returns
	Done   int   // the rows ir.EvalShape completed
	Arrays []Array
}

// Array is one array of a case.
type Array struct {
	Alias   int // the array whose memory this one shares, or -1
	Written bool
	// Early: written before the guards (what ir.Kernel.Fallback reads),
	// so also in the row a guard abandoned.
	Early bool
	In    []float32
	Owner []int32   // row of each element, -1 for none
	Want  []float32 // for written arrays

	// Elem is the array's storage: a half format is encoded as its bits,
	// In and Want rounded to it (In must hold values of the format).
	Elem ir.Elem
	// Bits, when set, are the half array's input bits instead of In's
	// (signaling NaNs, which widening quiets); In holds their values.
	Bits []uint16
	// Exact: every written element must match Want bit for bit, NaN
	// payloads included, rather than within the rounding of arithmetic.
	Exact bool
}

// narrow is v's bits in half format e.
func narrow(e ir.Elem, v float32) uint16 {
	if e == ir.F16 {
		return ir.NarrowF16(v)
	}
	return ir.NarrowBF16(v)
}

// Encode is the harness's cases.bin, in little-endian uint32s (a half
// array's elements as its bits, one per uint32): the arrays of the
// distinct calls (cases that share their Arrays, such as
// one kernel's functions on the same data, share them here too), then
// per case the function's name, rows, shape arguments, return and the
// index of its arrays.
func Encode(cases []Case) []byte {
	var b []byte
	put := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	index := map[*Array]int{}
	var data [][]Array
	for _, c := range cases {
		if _, ok := index[&c.Arrays[0]]; !ok {
			index[&c.Arrays[0]] = len(data)
			data = append(data, c.Arrays)
		}
	}
	put(uint32(len(data)))
	for _, arrays := range data {
		put(uint32(len(arrays)))
		for _, a := range arrays {
			put(uint32(int32(a.Alias)))
			put(uint32(B2i(a.Written) + B2i(a.Early))) // 2: early
			put(uint32(a.Elem))
			put(uint32(B2i(a.Exact)))
			put(uint32(len(a.In)))
			bits := func(i int, v float32) uint32 {
				switch {
				case !a.Elem.Half():
					return math.Float32bits(v)
				case a.Bits != nil:
					return uint32(a.Bits[i])
				}
				return uint32(narrow(a.Elem, v))
			}
			for i, v := range a.In {
				put(bits(i, v))
			}
			for _, o := range a.Owner {
				put(uint32(o))
			}
			if a.Written {
				for _, v := range a.Want {
					if a.Elem.Half() {
						put(uint32(narrow(a.Elem, v)))
					} else {
						put(math.Float32bits(v))
					}
				}
			}
		}
	}
	put(uint32(len(cases)))
	for _, c := range cases {
		name := c.Func.Name()
		put(uint32(len(name)))
		b = append(b, name...)
		put(uint32(c.Rows))
		put(uint32(len(c.Shape)))
		for _, v := range c.Shape {
			put(uint32(v))
		}
		put(uint32(c.Want))
		put(uint32(index[&c.Arrays[0]]))
	}
	return b
}

// B2i is 1 for true, 0 for false.
func B2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RowKind is how the x values of one row are drawn.
type RowKind int

const (
	RowNormal    RowKind = iota // 3 + 2*N(0,1)
	RowSmall                    // scaled by 1e-2: passes every guard
	RowTiny                     // scaled by 1e-6: var+eps below 4*eps
	RowSubnormal                // N(0,1)*1e-42: squares underflow to 0
	RowBig                      // scaled by 1e6: passes gen/algo's guards, not a tight one
	RowHuge                     // scaled by 1e12: var above 1e20
	RowOverflow                 // scaled by 1e25: squares overflow to Inf
	RowConst                    // one value repeated: var is exactly 0
	RowZero                     // zeros: var and mean square 0
	RowNaN                      // normal, one element NaN
	RowInf                      // normal, one element +Inf
	RowNegInf                   // normal, one element -Inf
	NumRowKinds
)

// RowPlan says how one row's inputs are drawn: x by kind, and the per-row
// scalar inputs from Scalars (array index -> value; others 1 in a guarded
// kernel, inside every synthetic guard's bounds).
type RowPlan struct {
	Kind    RowKind
	Scalars map[int]float32
}

// Plain is rows rows of normal data.
func Plain(rows int) []RowPlan { return make([]RowPlan, rows) }

// With is rows normal rows but for row r of kind.
func With(rows, r int, kind RowKind) []RowPlan {
	p := Plain(rows)
	p[r].Kind = kind
	return p
}

// MixedRows is rows rows, about one in three of a random kind, and about one
// in four of the per-row inputs of k one of GuardSpecials.
func MixedRows(rng *rand.Rand, k *ir.Kernel, rows int) []RowPlan {
	plans := Plain(rows)
	for r := range plans {
		if rng.IntN(3) == 0 {
			plans[r].Kind = RowKind(rng.IntN(int(NumRowKinds)))
		}
		for a, arr := range k.Arrays {
			if arr.Role == ir.RowScalarIn && rng.IntN(4) == 0 {
				if plans[r].Scalars == nil {
					plans[r].Scalars = map[int]float32{}
				}
				plans[r].Scalars[a] = GuardSpecials[rng.IntN(len(GuardSpecials))]
			}
		}
	}
	return plans
}

// FillRow draws one row of x.
func FillRow(rng *rand.Rand, kind RowKind, v []float32) {
	scale := map[RowKind]float64{RowSmall: 1e-2, RowTiny: 1e-6, RowBig: 1e6, RowHuge: 1e12, RowOverflow: 1e25}[kind]
	if scale == 0 {
		scale = 1
	}
	c := float32(3 + 2*rng.NormFloat64())
	for j := range v {
		switch kind {
		case RowSubnormal:
			v[j] = float32(1e-42 * rng.NormFloat64())
		case RowConst:
			v[j] = c
		case RowZero:
			v[j] = 0
		default:
			v[j] = float32(scale * (3 + 2*rng.NormFloat64()))
		}
	}
	special := map[RowKind]float64{RowNaN: math.NaN(), RowInf: math.Inf(1), RowNegInf: math.Inf(-1)}
	if x, ok := special[kind]; ok {
		v[rng.IntN(len(v))] = float32(x)
	}
}

// Shape is the shape arguments of f for a call of shape s.
func Shape(f target.Func, s ir.Shape) []int {
	var out []int
	for _, name := range target.ShapeArgs(f.Kernel.Layout, f.H) {
		out = append(out, map[string]int{
			"h": s.H, "stride": s.Stride, "segs": s.Segs, "seglen": s.SegLen,
			"segstride": s.SegStride, "rowstride": s.RowStride,
		}[name])
	}
	return out
}

// NewCase draws the inputs of one call of f over len(plans) rows of shape
// s, in place (dst sharing x's memory) or not, runs ir.EvalShape and
// returns the case. What a Columns function returns follows cols;
// nanKept counts the completed rows that had a NaN among their inputs.
func NewCase(rng *rand.Rand, f target.Func, s ir.Shape, plans []RowPlan, inPlace bool, cols ColumnRule) (c Case, nanKept int) {
	k, l, rows := f.Kernel, f.Kernel.Layout, len(plans)
	n := s.Len(l)
	guard := pass.HasGuard(k)
	arrays := make([][]float32, len(k.Arrays))
	c = Case{Func: f, Rows: rows, Shape: Shape(f, s), Arrays: make([]Array, len(k.Arrays))}
	nanRow := make([]bool, rows)
	for a, arr := range k.Arrays {
		size := 0
		for r := range rows {
			switch {
			case arr.Role.PerRow():
				size = rows
			case arr.Role == ir.Param:
				size = max(size, s.ParamIndex(l, r, n-1)+1, s.ParamIndex(l, r, 0)+1)
			default:
				size = max(size, s.Index(l, r, n-1)+1, s.Index(l, r, 0)+1)
			}
		}
		v, own := make([]float32, size), make([]int32, size)
		for i := range v {
			own[i] = -1
			switch {
			case arr.Role.Written() && arr.Role != ir.RowScalarInOut:
				v[i] = 12345 // overwritten, or the check fails
			case arr.Name == "gamma" || arr.Name == "gain":
				v[i] = float32(1 + 0.2*rng.NormFloat64())
			case arr.Name == "runVar":
				v[i] = float32(0.5 + rng.Float64())
			case arr.Name == "x":
				v[i] = float32(3 + 2*rng.NormFloat64())
			case arr.Role == ir.RowScalarIn && guard:
				v[i] = 1
			case arr.Role == ir.RowScalarIn:
				v[i] = float32(0.25 * rng.NormFloat64())
			default:
				v[i] = float32(rng.NormFloat64())
			}
			v[i] = arr.Elem.Round(v[i])
		}
		for r, p := range plans {
			switch {
			case arr.Role.PerRow():
				own[r] = int32(r)
				if x, ok := p.Scalars[a]; ok {
					v[r] = x
				}
				nanRow[r] = nanRow[r] || (!arr.Role.Written() && v[r] != v[r])
			case arr.Role != ir.Param:
				row := make([]float32, n)
				for i := range n {
					row[i] = v[s.Index(l, r, i)]
				}
				if arr.Name == "x" && p.Kind != RowNormal {
					FillRow(rng, p.Kind, row)
				}
				for i := range n {
					row[i] = arr.Elem.Round(row[i]) // a half array holds values of its format
					v[s.Index(l, r, i)] = row[i]
					own[s.Index(l, r, i)] = int32(r)
					nanRow[r] = nanRow[r] || (!arr.Role.Written() && row[i] != row[i])
				}
			}
		}
		arrays[a] = v
		c.Arrays[a] = Array{Alias: -1, Written: arr.Role.Written(), In: append([]float32(nil), v...), Owner: own, Elem: arr.Elem}
	}
	if inPlace {
		dst, x := k.ArrayIndex("dst"), k.ArrayIndex("x")
		arrays[dst] = arrays[x]
		c.Arrays[dst] = Array{Alias: x}
		c.Arrays[x].Written = true
	}
	if k.Fallback != nil {
		for _, a := range k.Fallback.Arrays {
			if a.Role == ir.RowIn {
				c.Arrays[k.ArrayIndex(a.Name)].Early = true
			}
		}
	}
	c.Done = ir.EvalShape(k, s, rows, arrays)
	c.Want = c.Done
	if l == ir.Columns {
		c.Want = cols(c.Done, rows)
	}
	for a := range c.Arrays {
		if c.Arrays[a].Written {
			c.Arrays[a].Want = arrays[a]
		}
	}
	for r := range c.Done {
		nanKept += B2i(nanRow[r])
	}
	return c, nanKept
}

// ColumnRule is the count a Columns function returns when ir.EvalShape
// completes done of rows: such a function runs whole blocks of rows, one
// per vector lane, and abandons the block of a row a guard abandons.
type ColumnRule func(done, rows int) int

// MaskedTail is the rule of a lowering that runs the last partial block
// under a mask: the rows of the blocks before the abandoned one, or all.
func MaskedTail(block int) ColumnRule {
	return func(done, rows int) int {
		if done == rows {
			return rows
		}
		return done - done%block
	}
}

// WholeBlocks is the rule of a lowering that leaves the last partial
// block to its caller: the rows of the whole blocks completed.
func WholeBlocks(block int) ColumnRule {
	return func(done, rows int) int { return done - done%block }
}
