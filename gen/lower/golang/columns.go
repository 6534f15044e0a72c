package golang

import (
	"sort"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// The float32 form of a Columns kernel (a backward's parameter
// gradients, BatchNorm over [N, C]): row r is column r of a matrix, so
// walking one row walks down a column, one cache line per element. This
// form walks the matrix line by line instead, over a tile of adjacent
// columns: each statement between the loops runs once per column of the
// tile (its values kept per column where a later one reads them), each
// loop once per line over the tile's columns, each sum a float32 chunk
// of at most blockLen lines per column added into that column's float64
// total. Every column's sum takes its terms in line order whatever the
// tiling or the caller's split of the columns, and every line is read in
// order. A column whose guard fails is left out of the tile's later
// loops and statements, and computed by the float64 form once the tile
// is done.

// colTile is the columns one pass over the lines takes: their chunks,
// totals and values stay in L1, and a tile's share of a line is 4 KiB of
// contiguous values per array, a whole line up to 1024 columns: a narrower
// share of a long line streams from memory at a fraction of a whole line's
// speed, and a matrix too large for the caches is read once per loop
// anyway.
const colTile = 1024

// colLines are the lines one step of a tile's loop takes: a column's
// values and chunks are loaded and stored once for all of them.
const colLines = 4

// ColumnTiles reports whether k gets the tiled float32 form: the Columns
// layout over float32 arrays.
func ColumnTiles(k *ir.Kernel) bool {
	if k.Layout != ir.Columns {
		return false
	}
	for _, a := range k.Arrays {
		if a.Elem != ir.F32 {
			return false
		}
	}
	return true
}

// columnsFunc is the tiled float32 form of k (see ColumnTiles).
func columnsFunc(k *ir.Kernel) jen.Code {
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	l := newLowering(k)
	l.f32 = true
	// A sum is a value of its column like any other.
	for s := range l.sums {
		delete(l.alias, s)
	}
	l.sums = map[ir.S]bool{}
	guarded := pass.HasGuard(k)
	hoist := pass.Hoistable(k, pass.RowInvariant(k))

	// The body as items: runs of per-column statements, and loops.
	type item struct {
		stmts []*ir.Scalar
		loop  *ir.Loop
	}
	var items []item
	var body []jen.Code
	if l.invLen != "" {
		body = append(body, jen.Id(l.invLen).Op(":=").Lit(1).Op("/").Float32().Call(jen.Id("h")))
	}
	for si, st := range k.Body {
		switch st := st.(type) {
		case *ir.Loop:
			items = append(items, item{loop: st})
		case *ir.Scalar:
			if hoist[si] {
				if c := l.scalar(st); c != nil {
					body = append(body, c)
				}
				continue
			}
			if len(items) == 0 || items[len(items)-1].loop != nil {
				items = append(items, item{})
			}
			items[len(items)-1].stmts = append(items[len(items)-1].stmts, st)
		}
	}
	// Where each per-column value is defined, and which are read by a
	// later item: those are kept in an array of the tile.
	def := map[ir.S]int{}
	kept := map[ir.S]bool{}
	var keptOrder []ir.S
	keep := func(s ir.S, at int) {
		if d, ok := def[s]; ok && d != at && !kept[s] {
			kept[s] = true
			keptOrder = append(keptOrder, s)
		}
	}
	for it, item := range items {
		for _, st := range item.stmts {
			for _, a := range st.Args {
				keep(a, it)
			}
			if st.Dst >= 0 && st.Code != ir.SStore && st.Code != ir.SGuard {
				def[st.Dst] = it
			}
		}
		if item.loop != nil {
			for _, op := range item.loop.Ops {
				if op.Code == ir.VSplat {
					keep(op.Scalar, it)
				}
			}
		}
	}
	sort.Slice(keptOrder, func(i, j int) bool { return keptOrder[i] < keptOrder[j] })
	var accs []int
	for _, item := range items {
		if item.loop != nil {
			accs = append(accs, loopAccs(item.loop)...)
		}
	}
	for _, a := range accs {
		n := l.k.AccName(a)
		body = append(body,
			jen.Var().Id(n+"Chunks").Index(jen.Lit(colTile)).Float32(),
			jen.Var().Id(n+"Totals").Index(jen.Lit(colTile)).Float64())
	}
	for _, s := range keptOrder {
		body = append(body, jen.Var().Id(l.k.ScalarName(s)+"Cols").Index(jen.Lit(colTile)).Float32())
	}
	if guarded {
		body = append(body, jen.Var().Id("rejected").Index(jen.Lit(colTile)).Bool())
	}

	tile := []jen.Code{jen.Id("n").Op(":=").Min(jen.Lit(colTile), jen.Id("rows").Op("-").Id("r0"))}
	for _, a := range accs {
		tile = append(tile,
			jen.Clear(jen.Id(l.k.AccName(a)+"Chunks").Index(jen.Empty(), jen.Id("n"))),
			jen.Clear(jen.Id(l.k.AccName(a)+"Totals").Index(jen.Empty(), jen.Id("n"))))
	}
	if guarded {
		// rejects counts the tile's rejected columns: while none is, the
		// runs are the whole tile and nothing goes to the float64 form,
		// without a scan of rejected per loop.
		tile = append(tile, jen.Clear(jen.Id("rejected").Index(jen.Empty(), jen.Id("n"))),
			jen.Id("rejects").Op(":=").Lit(0))
	} else {
		tile = append(tile, jen.Comment("The whole tile is one run of columns.").Line().
			List(jen.Id("lo"), jen.Id("hi")).Op(":=").Lit(0).Op(",").Id("n"))
	}
	guardSeen := false
	for it, item := range items {
		if item.loop != nil {
			run := l.columnsLoop(item.loop, kept)
			if guarded && !guardSeen {
				// No guard has run yet in the tile: one run.
				tile = append(tile, jen.Block(append([]jen.Code{
					jen.List(jen.Id("lo"), jen.Id("hi")).Op(":=").Lit(0).Op(",").Id("n")}, run...)...))
			} else if guarded {
				runs := []jen.Code{
					jen.If(jen.Id("rejected").Index(jen.Id("lo"))).Block(jen.Id("lo").Op("++"), jen.Continue()),
					jen.Id("hi").Op(":=").Id("n"),
					jen.If(jen.Id("rejects").Op(">").Lit(0)).Block(
						jen.Id("hi").Op("=").Id("lo").Op("+").Lit(1),
						jen.For(jen.Id("hi").Op("<").Id("n").Op("&&").Op("!").Id("rejected").Index(jen.Id("hi"))).Block(jen.Id("hi").Op("++"))),
				}
				runs = append(append(runs, run...), jen.Id("lo").Op("=").Id("hi"))
				tile = append(tile, jen.Comment("Runs of columns no guard rejected.").Line().
					For(jen.Id("lo").Op(":=").Lit(0), jen.Id("lo").Op("<").Id("n"), jen.Empty()).Block(runs...))
			} else {
				tile = append(tile, jen.Block(run...))
			}
			continue
		}
		var col []jen.Code
		if guardSeen {
			col = append(col, jen.If(jen.Id("rejected").Index(jen.Id("c"))).Block(jen.Continue()))
		}
		usesR := false
		var reads []jen.Code
		read := map[ir.S]bool{}
		var stmts []jen.Code
		for _, st := range item.stmts {
			for _, a := range st.Args {
				if kept[a] && def[a] != it && !read[a] {
					read[a] = true
					reads = append(reads, jen.Id(l.k.ScalarName(a)).Op(":=").Id(l.k.ScalarName(a)+"Cols").Index(jen.Id("c")))
				}
			}
			switch st.Code {
			case ir.SGuard:
				guardSeen = true
				v := l.value(st.Args[0])
				stmts = append(stmts, jen.If(jen.Op("!").Parens(jen.Add(v).Op(">=").Add(bound32(st.Lo)).Op("&&").Add(v).Op("<=").Add(bound32(st.Hi)))).Block(
					jen.Id("rejected").Index(jen.Id("c")).Op("=").True(),
					jen.Id("rejects").Op("++"),
					jen.Continue()))
				continue
			case ir.SSum:
				stmts = append(stmts, jen.Id(l.k.ScalarName(st.Dst)).Op(":=").Id(l.k.AccName(st.Acc)+"Chunks").Index(jen.Id("c")))
			case ir.SLoad, ir.SStore:
				usesR = true
				fallthrough
			default:
				if c := l.scalar(st); c != nil {
					stmts = append(stmts, c)
				}
			}
			if st.Code != ir.SStore && kept[st.Dst] {
				stmts = append(stmts, jen.Id(l.k.ScalarName(st.Dst)+"Cols").Index(jen.Id("c")).Op("=").Id(l.k.ScalarName(st.Dst)))
			}
		}
		if len(stmts) == 0 {
			continue
		}
		if usesR {
			col = append(col, jen.Id("r").Op(":=").Id("r0").Op("+").Id("c"))
		}
		col = append(append(col, reads...), stmts...)
		tile = append(tile, jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(col...))
	}
	if guarded {
		var args []jen.Code
		for i, a := range k.Arrays {
			if a.Role == ir.Param {
				args = append(args, jen.Id(l.arrayName(i)))
			} else {
				args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r0").Op("+").Id("c"), jen.Empty()))
			}
		}
		args = append(args, jen.Lit(1), jen.Id("h"), jen.Id("stride"))
		for _, n := range target.ArgNames(k) {
			args = append(args, jen.Id(n))
		}
		tile = append(tile, jen.If(jen.Id("rejects").Op(">").Lit(0)).Block(jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(
			jen.If(jen.Id("rejected").Index(jen.Id("c"))).Block(jen.Id(Float64Name(k)).Call(args...)))))
	}
	body = append(body, jen.For(
		jen.Id("r0").Op(":=").Lit(0), jen.Id("r0").Op("<").Id("rows"), jen.Id("r0").Op("+=").Lit(colTile),
	).Block(tile...))

	doc := jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc).Line().
		Commentf("Float32 arithmetic over tiles of %d columns read line by line, each", colTile).Line().
		Comment("column's sums in float32 chunks of its lines added in float64.")
	if guarded {
		doc = doc.Line().Commentf("A column whose statistics leave float32's range takes %s.", Float64Name(k))
	}
	return doc.Line().Func().Id(name).Params(l.params()...).Block(body...)
}

// columnsLoop is one loop of the tiled form over the run of columns
// [lo, hi) of the tile: per line, each row array's values of the run and
// each Param array's value of the line; kept are the per-column values,
// read from their arrays of the tile. Lines go colLines at a time: each
// column's per-column values and chunks are loaded once for them, and
// each chunk takes their terms one line after the other, so the sums are
// those of one line at a time.
func (l *lowering) columnsLoop(lp *ir.Loop, kept map[ir.S]bool) []jen.Code {
	k := l.k
	// Every slice of the run of length w, visibly to the compiler: no
	// bounds checks in the loops.
	run := []jen.Code{jen.Id("w").Op(":=").Id("hi").Op("-").Id("lo")}
	splat := map[ir.S]bool{}
	var cols []ir.S
	for _, op := range lp.Ops {
		if op.Code == ir.VSplat && kept[op.Scalar] && !splat[op.Scalar] {
			splat[op.Scalar] = true
			cols = append(cols, op.Scalar)
			n := k.ScalarName(op.Scalar)
			run = append(run, jen.Id(n+"Run").Op(":=").Id(n+"Cols").Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
		}
	}
	accs := loopAccs(lp)
	for _, a := range accs {
		n := k.AccName(a)
		run = append(run,
			jen.Id(n+"Chunk").Op(":=").Id(n+"Chunks").Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")),
			jen.Id(n+"Total").Op(":=").Id(n+"Totals").Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
	}
	uses := make([]int, len(lp.Ops))
	for _, op := range lp.Ops {
		for _, a := range op.Args {
			uses[a]++
		}
	}
	// The locals of line e of a group are suffixed with e, or lettered
	// where a number would make a name the kernel has (x0) or one that
	// reads as unnamed (v10).
	suffix := strconv.Itoa
	for i, op := range lp.Ops {
		n := vecName(lp, ir.V(i))
		if uses[i] > 1 && (l.taken[n+"0"] || l.taken[n+strconv.Itoa(colLines-1)] || op.Name == "") {
			suffix = func(e int) string { return string(rune('A' + e)) }
		}
	}
	// lines is the code for the lines i to i+n-1.
	lines := func(n int) []jen.Code {
		sfx := func(e int) string {
			if n == 1 {
				return ""
			}
			return suffix(e)
		}
		var code []jen.Code
		for e := range n {
			idx, line := jen.Id("i"), jen.Id("i")
			if e > 0 {
				idx, line = jen.Id("i").Op("+").Lit(e), jen.Parens(jen.Id("i").Op("+").Lit(e))
			}
			for a, arr := range k.Arrays {
				if !loopUses(lp, a) {
					continue
				}
				name := l.lineName(a) + sfx(e)
				if arr.Role == ir.Param {
					code = append(code, jen.Id(name).Op(":=").Id(l.arrayName(a)).Index(idx.Clone()))
					continue
				}
				code = append(code, jen.Id(name).Op(":=").Id(l.arrayName(a)).Index(
					line.Clone().Op("*").Id("stride").Op("+").Id("r0").Op("+").Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
			}
		}
		var col []jen.Code
		for _, s := range cols {
			n := k.ScalarName(s)
			col = append(col, jen.Id(n+"Col").Op(":=").Id(n+"Run").Index(jen.Id("c")))
		}
		for _, a := range accs {
			n := k.AccName(a)
			col = append(col, jen.Id(n+"Acc").Op(":=").Id(n+"Chunk").Index(jen.Id("c")))
		}
		l.perColumn = splat
		for e := range n {
			at := func(a int) *jen.Statement {
				if k.Arrays[a].Role == ir.Param {
					return jen.Id(l.lineName(a) + sfx(e))
				}
				return jen.Id(l.lineName(a) + sfx(e)).Index(jen.Id("c"))
			}
			ops, terms := l.elementOps(lp, uses, at, sfx(e))
			col = append(col, ops...)
			for _, a := range accs {
				for _, t := range terms[a] {
					col = append(col, jen.Id(k.AccName(a)+"Acc").Op("+=").Add(t))
				}
			}
		}
		l.perColumn = nil
		for _, a := range accs {
			n := k.AccName(a)
			col = append(col, jen.Id(n+"Chunk").Index(jen.Id("c")).Op("=").Id(n+"Acc"))
		}
		return append(code, jen.For(jen.Id("c").Op(":=").Range().Id("w")).Block(col...))
	}
	// The lines [from, end): groups of colLines, then one at a time.
	walk := func(from, end jen.Code) []jen.Code {
		return []jen.Code{
			jen.Id("i").Op(":=").Add(from),
			jen.For(jen.Empty(), jen.Id("i").Op("+").Lit(colLines).Op("<=").Add(end), jen.Id("i").Op("+=").Lit(colLines)).Block(lines(colLines)...),
			jen.For(jen.Empty(), jen.Id("i").Op("<").Add(end), jen.Id("i").Op("++")).Block(lines(1)...),
		}
	}
	if len(accs) == 0 {
		return append(run, walk(jen.Lit(0), jen.Id("h"))...)
	}
	var fold, last []jen.Code
	for _, a := range accs {
		n := k.AccName(a)
		fold = append(fold,
			jen.Id(n+"Total").Index(jen.Id("c")).Op("+=").Float64().Call(jen.Id(n+"Chunk").Index(jen.Id("c"))),
			jen.Id(n+"Chunk").Index(jen.Id("c")).Op("=").Lit(0))
		last = append(last,
			jen.Id(n+"Chunk").Index(jen.Id("c")).Op("=").Float32().Call(jen.Id(n+"Total").Index(jen.Id("c")).Op("+").Float64().Call(jen.Id(n+"Chunk").Index(jen.Id("c")))))
	}
	chunk := append([]jen.Code{jen.Id("i1").Op(":=").Min(jen.Id("i0").Op("+").Lit(blockLen), jen.Id("h"))},
		walk(jen.Id("i0"), jen.Id("i1"))...)
	chunk = append(chunk, jen.If(jen.Id("i1").Op("<").Id("h")).Block(
		jen.For(jen.Id("c").Op(":=").Range().Id("w")).Block(fold...),
	).Else().If(jen.Id("i0").Op(">").Lit(0)).Block(
		jen.For(jen.Id("c").Op(":=").Range().Id("w")).Block(last...),
	))
	return append(run, jen.Commentf("Chunks of %d lines, each column's chunk one float32 chain; the last", blockLen).Line().
		Comment("chunk leaves the column's sum rounded to float32 in its place (a").Line().
		Comment("single chunk, its chain already is).").Line().
		For(jen.Id("i0").Op(":=").Lit(0), jen.Id("i0").Op("<").Id("h"), jen.Id("i0").Op("+=").Lit(blockLen)).Block(chunk...))
}

// lineName is the local holding array a's part of the current line.
func (l *lowering) lineName(a int) string { return l.arrayName(a) + "Line" }
