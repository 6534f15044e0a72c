package lowertest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// RowSuite is the shape of the Rows cases of a lowering.
type RowSuite struct {
	Sizes []int // run-time h of the functions that take it
	Rows  []int // row counts of each call

	// Long run-time sizes, for the kernels named in LongKernels, with
	// LongRows rows; fixed sizes above 4096 also take LongRows.
	LongKernels map[string]bool
	LongSizes   []int
	LongRows    []int

	// Guarded kernels also get rows of every kind among normal ones, per-row
	// inputs of every special value and random mixes: at the run-time sizes
	// KindSizes, and at every fixed size when KindFixed.
	KindSizes []int
	KindFixed bool

	// InPlaceRows are the row counts also called in place; nil: all.
	InPlaceRows []int

	// Runs reports whether a function can run here; nil: all can.
	Runs func(target.Func) bool
}

// Cases returns the Rows cases of funcs: for every size and row count a
// call on normal rows and one in place (dst is x); for guarded kernels
// rows that trip their guards at every position, rows of every kind among
// normal ones, per-row inputs of every special value, and random mixes
// (KindSizes, KindFixed).
// It fails t when the guard cases do not abandon rows at every position,
// and returns how many completed rows had a NaN input (a guard that lets
// a NaN through, on purpose).
func (s RowSuite) Cases(t testing.TB, funcs []target.Func) (cases []Case, nanKept int) {
	rng := rand.New(rand.NewPCG(7, 9))
	// The functions of one kernel (ISAs, fixed and run-time H, NT
	// variants) share the data of equal calls: ir.EvalShape runs once.
	type drawn struct {
		c   Case
		nan int
	}
	memo := map[string]drawn{}
	var none, first, middle, last, guarded int
	for _, f := range funcs {
		if s.Runs != nil && !s.Runs(f) {
			continue
		}
		k := f.Kernel
		guard := pass.HasGuard(k)
		inPlace := k.ArrayIndex("x") >= 0 && k.ArrayIndex("dst") >= 0
		add := func(h int, plans []RowPlan, inPl bool) {
			key := fmt.Sprintf("%p %d %v %v", k, h, plans, inPl)
			d, ok := memo[key]
			if !ok {
				d.c, d.nan = NewCase(rng, f, ir.Shape{H: h}, plans, inPl, nil)
				memo[key] = d
			}
			c, nan := d.c, d.nan
			c.Func, c.Shape = f, Shape(f, ir.Shape{H: h})
			cases = append(cases, c)
			if !guard {
				return
			}
			guarded++
			switch rows := len(plans); {
			case c.Done == rows:
				none++
			case c.Done == 0:
				first++
			case c.Done == rows-1:
				last++
			default:
				middle++
			}
			nanKept += nan
		}
		hs := []int{f.H}
		if f.H == 0 {
			hs = s.Sizes
			if s.LongKernels[k.Name] {
				hs = append(slices.Clone(hs), s.LongSizes...)
			}
		}
		for _, h := range hs {
			counts := s.Rows
			if h > 4096 {
				counts = s.LongRows
			}
			for _, rows := range counts {
				add(h, Plain(rows), false)
				here := inPlace && (s.InPlaceRows == nil || slices.Contains(s.InPlaceRows, rows))
				if here {
					add(h, Plain(rows), true)
				}
				if !guard {
					continue
				}
				// Rows that trip the guards, at the start, in the middle
				// and at the end; the same in place at other rows.
				for _, inPl := range []bool{false, true} {
					if p := tripping(rows, inPl); p != nil && (here || !inPl) {
						add(h, p, inPl)
					}
				}
			}
			if !guard || h > 4096 || (f.H == 0 && !slices.Contains(s.KindSizes, h)) || (f.H > 0 && !s.KindFixed) {
				continue
			}
			for kind := RowKind(1); kind < NumRowKinds; kind++ {
				add(h, With(3, 1, kind), false)
			}
			for a, arr := range k.Arrays {
				if arr.Role != ir.RowScalarIn {
					continue
				}
				for _, v := range GuardSpecials {
					p := Plain(3)
					p[1].Scalars = map[int]float32{a: v}
					add(h, p, false)
				}
			}
			for i := range 3 {
				add(h, MixedRows(rng, k, 8), i == 1 && inPlace)
			}
		}
	}
	t.Logf("%d cases; guarded: %d, none abandoned %d, the first %d, a middle one %d, the last %d; completed rows with a NaN input %d",
		len(cases), guarded, none, first, middle, last, nanKept)
	if guarded > 0 && (none == 0 || first == 0 || middle == 0 || last == 0) {
		t.Fatal("the guard cases do not abandon rows at every position")
	}
	return cases, nanKept
}

// tripping is a call of rows rows with rows that trip guards: too large
// (RowBig), constant zeros, or with a NaN, at positions that differ in
// place and not; nil where there is none.
func tripping(rows int, inPlace bool) []RowPlan {
	p := Plain(rows)
	switch {
	case rows == 1 && !inPlace:
		p[0].Kind = RowBig
	case rows == 1:
		return nil
	case rows == 2 && !inPlace:
		p[0].Kind, p[1].Kind = RowNaN, RowZero
	case rows == 2:
		p[1].Kind = RowBig
	case !inPlace:
		p[1].Kind, p[rows-1].Kind = RowNaN, RowBig
	default:
		p[rows/2].Kind, p[rows-1].Kind = RowNaN, RowZero
	}
	return p
}
