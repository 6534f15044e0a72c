package golang

import (
	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// The float32 form of a Columns kernel of sums (a backward's parameter
// gradients, their per-image totals): row r is column r of a matrix,
// so walking one row walks down a column, one cache line per element.
// This form walks the matrix line by line instead, over a tile of
// adjacent columns, each column with its own float32 chunk of at most
// blockLen lines, added into its float64 total: every column's sum takes
// its terms in line order whatever the tiling or the caller's split of
// the columns, every line is read in order, and no chain is longer than
// the summation policy allows.

// colTile is the columns one pass over the lines sums: their chunks and
// totals stay in L1, and a tile's share of a line is 2 KiB of contiguous
// values per array.
const colTile = 512

// ColumnSums reports whether k gets the tiled float32 form: the Columns
// layout, float32 arrays, no guard (a column's float32 sum has nothing
// to fall back to), and a body of row-invariant scalars, one summing
// loop, then scalars that take the sums to per-row stores.
func ColumnSums(k *ir.Kernel) bool {
	if k.Layout != ir.Columns || pass.HasGuard(k) {
		return false
	}
	for _, a := range k.Arrays {
		if a.Elem != ir.F32 {
			return false
		}
	}
	inv := pass.RowInvariant(k)
	loops := 0
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			if loops++; loops > 1 || len(loopAccs(st)) == 0 {
				return false
			}
			for _, op := range st.Ops {
				// Values of the row (one per column) would need a tile of them.
				if op.Code == ir.VSplat && !inv[op.Scalar] {
					return false
				}
			}
		case *ir.Scalar:
			if loops == 0 && st.Code != ir.SStore && !inv[st.Dst] {
				return false
			}
		}
	}
	return loops == 1
}

// columnsFunc is the tiled float32 form of k (see ColumnSums).
func columnsFunc(k *ir.Kernel) jen.Code {
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	l := newLowering(k)
	l.f32 = true
	var body, tile, epilogue []jen.Code
	if l.invLen != "" {
		body = append(body, jen.Id(l.invLen).Op(":=").Lit(1).Op("/").Float32().Call(jen.Id("h")))
	}
	var lp *ir.Loop
	for _, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			lp = st
		case *ir.Scalar:
			c := l.scalar(st)
			switch {
			case c == nil:
			case lp == nil:
				body = append(body, c)
			default:
				epilogue = append(epilogue, c)
			}
		}
	}
	accs := loopAccs(lp)
	for _, a := range accs {
		n := l.k.AccName(a)
		body = append(body,
			jen.Var().Id(n+"Chunks").Index(jen.Lit(colTile)).Float32(),
			jen.Var().Id(n+"Totals").Index(jen.Lit(colTile)).Float64())
	}
	tile = append(tile, jen.Id("n").Op(":=").Min(jen.Lit(colTile), jen.Id("rows").Op("-").Id("r0")))
	for _, a := range accs {
		n := l.k.AccName(a)
		tile = append(tile,
			jen.Id(n+"Chunk").Op(":=").Id(n+"Chunks").Index(jen.Empty(), jen.Id("n")),
			jen.Id(n+"Total").Op(":=").Id(n+"Totals").Index(jen.Empty(), jen.Id("n")),
			jen.Clear(jen.Id(n+"Total")))
	}

	// One line: the tile's values of each row array, the line's value of
	// each Param array.
	uses := make([]int, len(lp.Ops))
	for _, op := range lp.Ops {
		for _, a := range op.Args {
			uses[a]++
		}
	}
	var line []jen.Code
	for a, arr := range k.Arrays {
		if !loopUses(lp, a) {
			continue
		}
		if arr.Role == ir.Param {
			line = append(line, jen.Id(l.lineName(a)).Op(":=").Id(l.arrayName(a)).Index(jen.Id("i")))
			continue
		}
		line = append(line, jen.Id(l.lineName(a)).Op(":=").Id(l.arrayName(a)).Index(
			jen.Id("i").Op("*").Id("stride").Op("+").Id("r0"), jen.Empty()).Index(jen.Empty(), jen.Id("n")))
	}
	at := func(a int) *jen.Statement {
		if k.Arrays[a].Role == ir.Param {
			return jen.Id(l.lineName(a))
		}
		return jen.Id(l.lineName(a)).Index(jen.Id("c"))
	}
	code, terms := l.elementOps(lp, uses, at, "")
	for _, a := range accs {
		for _, t := range terms[a] {
			code = append(code, jen.Id(l.k.AccName(a)+"Chunk").Index(jen.Id("c")).Op("+=").Add(t))
		}
	}
	line = append(line, jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(code...))

	var fold []jen.Code
	for _, a := range accs {
		n := l.k.AccName(a)
		fold = append(fold,
			jen.Id(n+"Total").Index(jen.Id("c")).Op("+=").Float64().Call(jen.Id(n+"Chunk").Index(jen.Id("c"))),
			jen.Id(n+"Chunk").Index(jen.Id("c")).Op("=").Lit(0))
	}
	tile = append(tile,
		jen.Commentf("Chunks of %d lines, each column's chunk one float32 chain.", blockLen).Line().
			For(jen.Id("i0").Op(":=").Lit(0), jen.Id("i0").Op("<").Id("h"), jen.Id("i0").Op("+=").Lit(blockLen)).Block(
			jen.For(jen.Id("i").Op(":=").Id("i0"), jen.Id("i").Op("<").Min(jen.Id("i0").Op("+").Lit(blockLen), jen.Id("h")), jen.Id("i").Op("++")).Block(line...),
			jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(fold...),
		))

	// Per column: the sums' float64 totals, the stores.
	col := []jen.Code{jen.Id("r").Op(":=").Id("r0").Op("+").Id("c")}
	for _, a := range accs {
		n := l.k.AccName(a)
		col = append(col, jen.Id(n).Op(":=").Id(n+"Total").Index(jen.Id("c")))
	}
	col = append(col, epilogue...)
	tile = append(tile, jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(col...))
	body = append(body, jen.For(
		jen.Id("r0").Op(":=").Lit(0), jen.Id("r0").Op("<").Id("rows"), jen.Id("r0").Op("+=").Lit(colTile),
	).Block(tile...))

	doc := jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc).Line().
		Commentf("Float32 arithmetic over tiles of %d columns read line by line, each", colTile).Line().
		Comment("column's sum in float32 chunks of its lines added in float64.")
	return doc.Line().Func().Id(name).Params(l.params()...).Block(body...)
}

// lineName is the local holding array a's part of the current line.
func (l *lowering) lineName(a int) string { return l.arrayName(a) + "Line" }
