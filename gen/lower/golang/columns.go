package golang

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
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

// colStreams are the most lines of row arrays one step of a tile's loop
// reads or writes (see columnsWalk).
const colStreams = 8

// rowArraysIn is the number of row arrays loop lp reads or writes.
func (l *lowering) rowArraysIn(lp *ir.Loop) int {
	n := 0
	for a, arr := range l.k.Arrays {
		if arr.Role != ir.Param && loopUses(lp, a) {
			n++
		}
	}
	return n
}

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
	k = mergeGuards(impliedGuards(columnsLinear(k)))
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
		fused bool       // the mean and variance in one pass (columnsFused)
		pre   []jen.Code // per-column code before stmts, defining local
		local map[ir.S]bool
	}
	fu := columnsFusion(k)
	var items []item
	var body []jen.Code
	// With the one pass, only the statements the fusion leaves read 1/h.
	if l.invLen != "" && (onePassArray(fu) < 0 || fu.leaves(k, l.readsInvLen)) {
		body = append(body, jen.Id(l.invLen).Op(":=").Lit(1).Op("/").Float32().Call(jen.Id("h")))
	}
	// The items of the fused passes, for the lines of one chunk.
	var fusedItems []item
	hoisted := map[string]bool{} // the float32 values computed once a call
	for si, st := range k.Body {
		if fu != nil && fu.skip[si] {
			if si == fu.at {
				items = append(items, item{fused: true})
			}
			switch st := st.(type) {
			case *ir.Loop:
				fusedItems = append(fusedItems, item{loop: st})
			case *ir.Scalar:
				if len(fusedItems) == 0 || fusedItems[len(fusedItems)-1].loop != nil {
					fusedItems = append(fusedItems, item{})
				}
				fusedItems[len(fusedItems)-1].stmts = append(fusedItems[len(fusedItems)-1].stmts, st)
			}
			continue
		}
		switch st := st.(type) {
		case *ir.Loop:
			items = append(items, item{loop: st})
		case *ir.Scalar:
			if hoist[si] {
				if c := l.scalar(st); c != nil {
					body = append(body, c)
					hoisted[l.k.ScalarName(st.Dst)] = true
				}
				continue
			}
			// The statements after the fused passes join them: in one
			// loop with the passes' last statements, or their values.
			if len(items) == 0 || items[len(items)-1].loop != nil {
				items = append(items, item{})
			}
			items[len(items)-1].stmts = append(items[len(items)-1].stmts, st)
		}
	}
	// A run of statements after a loop that only stores per-column
	// outputs (the saved mean and rstd) joins the statements before that
	// loop, after their guards: no loop reads an output and no output may
	// overlap an input, so the values need no array and no pass of their
	// own over the tile.
	defined := map[ir.S]bool{}
	for it := range items {
		for _, st := range items[it].stmts {
			defined[st.Dst] = true
		}
		if it < 2 || items[it].loop != nil || items[it-1].loop == nil || items[it-2].loop != nil {
			continue
		}
		moves := true
		for _, st := range items[it].stmts {
			if st.Code != ir.SStore || k.Arrays[st.Array].Role != ir.RowScalarOut || !defined[st.Args[0]] {
				moves = false
			}
		}
		if moves {
			items[it-2].stmts = append(items[it-2].stmts, items[it].stmts...)
			items[it].stmts = nil
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
		if item.fused {
			keep(fu.pivot, it)
			def[fu.shift], def[fu.correction], def[fu.variance] = it, it, it
			if !kept[fu.shift] { // the second pass reads it
				kept[fu.shift] = true
				keptOrder = append(keptOrder, fu.shift)
			}
		}
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
	longOnly := map[int]bool{} // accumulators of the fused passes the one pass replaces
	for _, item := range append(items, fusedItems...) {
		if item.loop != nil {
			accs = append(accs, loopAccs(item.loop)...)
		}
	}
	if onePassArray(fu) >= 0 {
		for _, item := range fusedItems {
			if item.loop != nil {
				for _, a := range loopAccs(item.loop) {
					longOnly[a] = true
				}
			}
		}
	}
	for _, a := range accs {
		n := l.k.AccName(a)
		body = append(body,
			jen.Var().Id(n+"Chunks").Index(jen.Lit(colTile)).Float32(),
			jen.Var().Id(n+"Totals").Index(jen.Lit(colTile)).Float64())
	}
	if fu != nil {
		body = append(body,
			jen.Var().List(jen.Id("runMeans"), jen.Id("runM2s")).Index(jen.Lit(colTile)).Float64())
	}
	// The arrays of the kept values: one per set of values a loop reads.
	l.cols = &colArrays{names: map[ir.S]string{}, direct: map[ir.S]int{}}
	// A kept value loaded from an input (a column's parameter, or its
	// first value: the pivot) is read from that input where a loop needs
	// it, not copied: unless a store may have overwritten it by then (x
	// and dst may be one array).
	lastUse, firstStore := map[ir.S]int{}, len(items)
	for it, item := range items {
		for _, st := range item.stmts {
			for _, a := range st.Args {
				lastUse[a] = it
			}
		}
		if item.loop != nil {
			for _, op := range item.loop.Ops {
				if op.Code == ir.VSplat {
					lastUse[op.Scalar] = it
				}
				if op.Code == ir.VStore && it < firstStore {
					firstStore = it
				}
			}
		}
		if item.fused && fu != nil {
			lastUse[fu.pivot] = it
		}
	}
	for _, st := range k.Body {
		if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SLoad && kept[st.Dst] {
			switch k.Arrays[st.Array].Role {
			case ir.RowScalarIn:
				l.cols.direct[st.Dst] = st.Array
			case ir.RowIn:
				if lastUse[st.Dst] < firstStore {
					l.cols.direct[st.Dst] = st.Array
				}
			}
		}
	}
	// The fused passes' own loops run only without the one pass.
	grouped := append([]item(nil), items...)
	if onePassArray(fu) < 0 {
		grouped = append(grouped, fusedItems...)
	}
	for _, item := range grouped {
		if item.loop != nil {
			l.colGroup(item.loop, kept)
		}
	}
	if fu != nil {
		withBlock := map[ir.S]bool{fu.pivotShift: true, fu.pivot: true}
		l.colGroup(fu.a, withBlock)
		l.colGroup(withShift(fu.b, fu.shift, fu.pivotShift), withBlock)
		l.colGroup(fu.fusedLoop(fu.pivotShift, false), withBlock)
		l.colGroupOf([]ir.S{fu.pivotShift})
	}
	var rest []ir.S
	for _, s := range keptOrder {
		if _, ok := l.cols.names[s]; !ok {
			rest = append(rest, s)
		}
	}
	l.colGroupOf(rest)
	if len(l.cols.order) > 0 {
		var names []jen.Code
		for _, s := range l.cols.order {
			names = append(names, jen.Id(l.cols.names[s]))
		}
		body = append(body, jen.Var().List(names...).Index(jen.Lit(colTile)).Float32())
	}
	if guarded {
		body = append(body, jen.Var().Id("rejected").Index(jen.Lit(colTile)).Bool())
	}

	tile := []jen.Code{jen.Id("n").Op(":=").Min(jen.Lit(colTile), jen.Id("rows").Op("-").Id("r0"))}
	var totals []jen.Code
	for _, a := range accs {
		chunks := jen.Clear(jen.Id(l.k.AccName(a)+"Chunks").Index(jen.Empty(), jen.Id("n")))
		if longOnly[a] {
			totals = append(totals, chunks)
		} else {
			tile = append(tile, chunks)
		}
		totals = append(totals, jen.Clear(jen.Id(l.k.AccName(a)+"Totals").Index(jen.Empty(), jen.Id("n"))))
	}
	if len(totals) > 0 {
		// The totals take a chunk's sum only past the first chunk of lines;
		// without a fused pass's loop (the one pass) neither does its chunk.
		tile = append(tile, jen.If(jen.Id("h").Op(">").Lit(blockLen)).Block(totals...))
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
	stmtsItem := func(stmts []*ir.Scalar, pre []jen.Code, local map[ir.S]bool) item {
		return item{stmts: stmts, pre: pre, local: local}
	}
	// emit is the code of item it; emitCols, that of a run of per-column
	// statements, the loop over the tile's columns (colFunc: indexing the
	// tile's parts of the arrays).
	var emit func(item item, it int) []jen.Code
	var emitCols func(item item, colFunc bool) []jen.Code
	emit = func(item item, it int) (tile []jen.Code) {
		if item.fused {
			// Up to a chunk of lines, the two passes as they are.
			var short []jen.Code
			seen := guardSeen // each branch from the same start
			if one := l.columnsOnePass(fu); one != nil {
				pre, local := l.columnsFusedValues(fu, kept, item.stmts, true)
				short = append([]jen.Code{jen.Block(one...), jen.Id("perLine").Op(":=").Lit(1).Op("/").Float64().Call(jen.Id("h"))},
					emit(stmtsItem(item.stmts, pre, local), it)...)
			} else {
				last := len(fusedItems) - 1
				for _, sub := range fusedItems[:last] {
					short = append(short, emit(sub, it)...)
				}
				short = append(short, emit(stmtsItem(append(append([]*ir.Scalar(nil), fusedItems[last].stmts...), item.stmts...), nil, nil), it)...)
			}
			guardSeen = seen
			pre, local := l.columnsFusedValues(fu, kept, item.stmts, false)
			long := append([]jen.Code{jen.Block(l.columnsFused(fu)...)}, emit(stmtsItem(item.stmts, pre, local), it)...)
			return []jen.Code{jen.If(jen.Id("h").Op(">").Lit(blockLen)).Block(long...).Else().Block(short...)}
		}
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
			return tile
		}
		// The statements as a function of their own (colFunc) where every
		// name they read is one it can take, else inline.
		seen := guardSeen
		if call := l.columnsColFunc(emitCols(item, true), hoisted); call != nil {
			return append(tile, call)
		}
		guardSeen = seen
		return append(tile, emitCols(item, false)...)
	}
	emitCols = func(item item, colFunc bool) []jen.Code {
		l.colFunc = colFunc
		defer func() { l.colFunc = false }()
		var col []jen.Code
		if guardSeen {
			col = append(col, jen.If(jen.Id("rejected").Index(jen.Id("c"))).Block(jen.Continue()))
		}
		usesR := false
		var reads []jen.Code
		read := map[ir.S]bool{}
		// Values this loop defines; a kept value from elsewhere is read
		// from its array.
		local := map[ir.S]bool{}
		for s := range item.local {
			local[s] = true
		}
		stmts := append([]jen.Code(nil), item.pre...)
		for _, st := range item.stmts {
			for _, a := range st.Args {
				if kept[a] && !local[a] && !read[a] {
					read[a] = true
					reads = append(reads, jen.Id(l.k.ScalarName(a)).Op(":=").Add(l.colRead(a)))
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
				if _, ok := l.cols.direct[st.Dst]; ok && st.Code == ir.SLoad {
					continue
				}
				usesR = true
				fallthrough
			default:
				if c := l.scalar(st); c != nil {
					stmts = append(stmts, c)
				}
			}
			if st.Code != ir.SStore && kept[st.Dst] {
				stmts = append(stmts, l.colWrites(st.Dst, jen.Id(l.k.ScalarName(st.Dst)))...)
			}
			if st.Code != ir.SStore {
				local[st.Dst] = true
			}
		}
		if len(stmts) == 0 {
			return nil
		}
		if usesR && colFunc {
			// The function takes the tile's part of each array.
			col = append(col, jen.Id("r").Op(":=").Id("c"))
		} else if usesR {
			col = append(col, jen.Id("r").Op(":=").Id("r0").Op("+").Id("c"))
		}
		col = append(append(col, reads...), stmts...)
		return []jen.Code{jen.For(jen.Id("c").Op(":=").Range().Id("n")).Block(col...)}
	}
	for it, item := range items {
		tile = append(tile, emit(item, it)...)
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
	out := doc.Line().Func().Id(name).Params(l.params()...).Block(body...)
	for _, h := range l.helpers {
		out = out.Line().Line().Add(h.code)
	}
	return out
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
	run, walk := l.columnsWalk(lp, kept, false)
	run = append([]jen.Code{jen.Id("w").Op(":=").Id("hi").Op("-").Id("lo")}, run...)
	accs := loopAccs(lp)
	for _, a := range accs {
		n := k.AccName(a)
		run = append(run, jen.Id(n+"Total").Op(":=").Id(n+"Totals").Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
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

// columnsWalk is loop lp over lines of the run [lo, hi) of w columns:
// run declares the slices of the run it reads (<value>Run of the kept
// values it splats, <acc>Chunk of its sums), walk(from, end) is the code
// for the lines [from, end), each chunk taking their terms in line order.
func (l *lowering) columnsWalk(lp *ir.Loop, kept map[ir.S]bool, wide bool) (run []jen.Code, walk func(from, end jen.Code) []jen.Code) {
	k := l.k
	// wide: the sums in float64, into <acc>Total of <acc>Totals.
	chunk, chunks := "Chunk", "Chunks"
	if wide {
		chunk, chunks = "Total", "Totals"
	}
	cols := l.colGroup(lp, kept)
	splat := map[ir.S]bool{}
	for _, s := range cols {
		splat[s] = true
	}
	for _, s := range cols {
		if a, ok := l.cols.direct[s]; ok {
			run = append(run, jen.Id(l.colName(s)+"Run").Op(":=").Id(l.arrayName(a)).Index(jen.Id("r0").Op("+").Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
		} else {
			run = append(run, jen.Id(l.colName(s)+"Run").Op(":=").Id(l.cols.names[s]).Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
		}
	}
	accs := loopAccs(lp)
	for _, a := range accs {
		n := k.AccName(a)
		run = append(run, jen.Id(n+chunk).Op(":=").Id(n+chunks).Index(jen.Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w")))
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
		// The arguments of the group's function: its lines, then the
		// per-column slices and the values it splats.
		type param struct {
			name string
			typ  *jen.Statement
			arg  jen.Code
			cut  bool // a slice, cut to w in the function
		}
		var params []param
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
					v := jen.Id(l.arrayName(a)).Index(idx.Clone())
					code = append(code, jen.Id(name).Op(":=").Add(v))
					params = append(params, param{name, jen.Float32(), v, false})
					continue
				}
				v := jen.Id(l.arrayName(a)).Index(
					line.Clone().Op("*").Id("stride").Op("+").Id("r0").Op("+").Id("lo"), jen.Empty()).Index(jen.Empty(), jen.Id("w"))
				code = append(code, jen.Id(name).Op(":=").Add(v))
				params = append(params, param{name, jen.Index().Float32(), v, true})
			}
		}
		var col []jen.Code
		for _, s := range cols {
			n := l.colName(s)
			col = append(col, jen.Id(n+"Col").Op(":=").Id(n+"Run").Index(jen.Id("c")))
		}
		for _, a := range accs {
			n := k.AccName(a)
			col = append(col, jen.Id(n+"Acc").Op(":=").Id(n+chunk).Index(jen.Id("c")))
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
					if wide {
						t = jen.Float64().Call(t)
					}
					col = append(col, jen.Id(k.AccName(a)+"Acc").Op("+=").Add(t))
				}
			}
		}
		l.perColumn = nil
		for _, a := range accs {
			n := k.AccName(a)
			col = append(col, jen.Id(n+chunk).Index(jen.Id("c")).Op("=").Id(n+"Acc"))
		}
		loop := jen.For(jen.Id("c").Op(":=").Range().Id("w")).Block(col...)
		if n == 1 {
			return append(code, loop)
		}
		// A group of lines is a function of its own: the loop over the
		// columns then holds its lines, per-column values and index in
		// registers, where inside the kernel's body the compiler spills
		// some of them (the index too) to the stack on every trip.
		for _, s := range cols {
			params = append(params, param{l.colName(s) + "Run", jen.Index().Float32(), jen.Id(l.colName(s) + "Run"), true})
		}
		for _, a := range accs {
			typ := jen.Index().Float32()
			if wide {
				typ = jen.Index().Float64()
			}
			params = append(params, param{k.AccName(a) + chunk, typ, jen.Id(k.AccName(a) + chunk), true})
		}
		for _, v := range l.loopValues(lp, splat) {
			params = append(params, param{v, jen.Float32(), jen.Id(v), false})
		}
		var decl, args, cut []jen.Code
		for _, p := range params {
			decl = append(decl, jen.Id(p.name).Add(p.typ))
			args = append(args, p.arg)
			if p.cut {
				cut = append(cut, jen.Id(p.name).Op("=").Id(p.name).Index(jen.Empty(), jen.Id("w")))
			}
		}
		decl = append(decl, jen.Id("w").Int())
		args = append(args, jen.Id("w"))
		fn := l.columnsHelper("Lines", decl, append(cut, loop), nil)
		return []jen.Code{jen.Id(fn).Call(args...)}
	}
	// A group reads as many streams as it has lines times row arrays:
	// with a stride that is a multiple of 4 KiB, every one of them maps to
	// the same set of the L1 cache, whose ways (8 to 12) more than 8
	// streams overflow, so a loop of three row arrays (the backward's
	// output) takes its lines two at a time.
	size := colLines
	if streams := l.rowArraysIn(lp); streams*size > colStreams {
		size = max(2, colStreams/streams)
	}
	// The lines [from, end): groups of size lines, then one at a time.
	walk = func(from, end jen.Code) []jen.Code {
		return []jen.Code{
			jen.Id("i").Op(":=").Add(from),
			jen.For(jen.Empty(), jen.Id("i").Op("+").Lit(size).Op("<=").Add(end), jen.Id("i").Op("+=").Lit(size)).Block(lines(size)...),
			jen.For(jen.Empty(), jen.Id("i").Op("<").Add(end), jen.Id("i").Op("++")).Block(lines(1)...),
		}
	}
	return run, walk
}

// colName names the per-column value s in the tiled form: its name, or
// blockShift for the fused statistics' shift (no scalar of the kernel).
func (l *lowering) colName(s ir.S) string {
	if int(s) >= l.k.NumScalars {
		return "blockShift"
	}
	return l.k.ScalarName(s)
}

// colArrays are the arrays of a tiled Columns form's per-column values:
// each value a loop reads is in one array of the tile, [c] its value of
// column c, written once per column. A loop reads each with a load
// scaled by 4, where [c][i] of a per-loop array of values needs an
// address computed first (Go folds no scale of 8 or 12 into a float
// load).
type colArrays struct {
	names  map[ir.S]string // the array of each value: its name
	direct map[ir.S]int    // the values read from an input array: its index
	order  []ir.S          // the values with an array, in the order made
}

// colGroup are lp's per-column values (those in kept it splats), each
// given its array where it has none yet.
func (l *lowering) colGroup(lp *ir.Loop, kept map[ir.S]bool) []ir.S {
	var cols []ir.S
	seen := map[ir.S]bool{}
	for _, op := range lp.Ops {
		if op.Code == ir.VSplat && kept[op.Scalar] && !seen[op.Scalar] {
			seen[op.Scalar] = true
			cols = append(cols, op.Scalar)
		}
	}
	l.colGroupOf(cols)
	return cols
}

// colGroupOf gives each of the values cols not read from an input its
// array, where it has none yet.
func (l *lowering) colGroupOf(cols []ir.S) {
	used := map[string]bool{}
	for _, n := range l.cols.names {
		used[n] = true
	}
	for _, s := range cols {
		if _, ok := l.cols.direct[s]; ok {
			continue
		}
		if _, ok := l.cols.names[s]; ok {
			continue
		}
		name := l.colName(s) + "Cols"
		for i := 2; l.taken[name] || used[name]; i++ {
			name = fmt.Sprintf("%sCols%d", l.colName(s), i)
		}
		used[name] = true
		l.cols.names[s] = name
		l.cols.order = append(l.cols.order, s)
	}
}

// colRead is column c's value s of the tile.
func (l *lowering) colRead(s ir.S) *jen.Statement {
	if a, ok := l.cols.direct[s]; ok && l.colFunc {
		return jen.Id(l.arrayName(a)).Index(jen.Id("c"))
	} else if ok {
		return jen.Id(l.arrayName(a)).Index(jen.Id("r0").Op("+").Id("c"))
	}
	name, ok := l.cols.names[s]
	if !ok {
		panic(fmt.Sprintf("golang: %s: no array holds %s", l.k.Name, l.colName(s)))
	}
	return jen.Id(name).Index(jen.Id("c"))
}

// colWrites stores v as column c's value s of the tile, where an array
// holds it.
func (l *lowering) colWrites(s ir.S, v jen.Code) []jen.Code {
	if name, ok := l.cols.names[s]; ok {
		return []jen.Code{jen.Id(name).Index(jen.Id("c")).Op("=").Add(v)}
	}
	return nil
}

// columnsHelper is the name of a function of the tiled form's kernel
// with parameters decl, body and result (nil: none), added to l.helpers
// where new: kind "Lines" for a group of lines, "Cols" for a run of
// per-column statements.
func (l *lowering) columnsHelper(kind string, decl, body []jen.Code, result jen.Code) string {
	sig := jen.Params(decl...)
	if result != nil {
		sig = sig.Add(result)
	}
	src := kind + fmt.Sprintf("%#v", sig.Block(body...))
	nth := 1
	for _, h := range l.helpers {
		if h.src == src {
			return h.name
		}
		if h.kind == kind {
			nth++
		}
	}
	name := fmt.Sprintf("%s%s%d", target.Func{Kernel: l.k, ISA: target.Go}.Name(), kind, nth)
	kernel := target.Func{Kernel: l.k, ISA: target.Go}.Name()
	doc := jen.Commentf("%s is a group of lines of a loop of %s over a run of w columns,", name, kernel).Line().
		Comment("a function of its own to keep the loop's slices and index in registers.")
	if kind == "Cols" {
		doc = jen.Commentf("%s is a run of per-column statements of %s over the tile's n columns,", name, kernel).Line().
			Comment("a function of its own to keep the loop's slices and index in registers and cut its bounds checks.")
	}
	out := doc.Line().Func().Id(name).Params(decl...)
	if result != nil {
		out = out.Add(result)
	}
	l.helpers = append(l.helpers, columnsHelperFunc{src, kind, name, out.Block(body...)})
	return name
}

// columnsHelperFunc is a function of the tiled form: its code, and its
// source to find it again.
type columnsHelperFunc struct {
	src, kind, name string
	code            jen.Code
}

// loopValues are the variables the loop lp's code reads besides its
// lines and per-column values (splat): the kernel's hoisted values.
func (l *lowering) loopValues(lp *ir.Loop, splat map[ir.S]bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, op := range lp.Ops {
		if op.Code != ir.VSplat || splat[op.Scalar] {
			continue
		}
		v := fmt.Sprintf("%#v", l.value(op.Scalar))
		if token.IsIdentifier(v) && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// lineName is the local holding array a's part of the current line.
func (l *lowering) lineName(a int) string { return l.arrayName(a) + "Line" }

// columnsFusion is the fusion of k's mean and variance passes for the
// tiled form (see fusion; here each later chunk is shifted by the mean of
// the chunk before rather than the mean so far), nil where k has none or a guard comes first:
// the fused code runs on the whole tile.
func columnsFusion(k *ir.Kernel) *fusion {
	fu := fuse(k)
	if fu == nil {
		return nil
	}
	for _, st := range k.Body[:fu.at] {
		if st, ok := st.(*ir.Scalar); ok && st.Code == ir.SGuard {
			return nil
		}
	}
	return fu
}

// columnsFused is the tiled form of fusion's one pass, per column as
// fusedStats per row: the first chunk of lines takes the two passes
// around the pivot, each later chunk one pass around the mean of the
// chunk before, its sums joined to runMean and runM2 in float64 by the
// parallel-variance update; then the shift, correction and variance the
// later items read. Fewer than blockLen lines are the first chunk alone.
func (l *lowering) columnsFused(fu *fusion) []jen.Code {
	k := l.k
	id := jen.Id
	f64 := func(c jen.Code) *jen.Statement { return jen.Float64().Call(c) }
	at := func(name string) *jen.Statement { return id(name).Index(id("c")) }
	cols := func(body ...jen.Code) jen.Code { return jen.For(id("c").Op(":=").Range().Id("w")).Block(body...) }
	withBlock := map[ir.S]bool{fu.pivotShift: true, fu.pivot: true}
	runA, walkA := l.columnsWalk(fu.a, withBlock, false)
	// The first chunk's deviations in float64: its shift, the mean of its
	// lines, can be far from most of them (an outlier among them), whose
	// squares then would each lose a float32 rounding of that distance.
	runB, walkB := l.columnsWalk(withShift(fu.b, fu.shift, fu.pivotShift), withBlock, true)
	runF, walkF := l.columnsWalk(fu.fusedLoop(fu.pivotShift, false), withBlock, false)
	code := []jen.Code{jen.List(id("lo"), id("hi")).Op(":=").Lit(0).Op(",").Id("n"), id("w").Op(":=").Id("hi").Op("-").Id("lo")}
	seen := map[string]bool{}
	for _, c := range append(append(runA, runB...), runF...) {
		if src := fmt.Sprintf("%#v", c); !seen[src] {
			seen[src] = true
			code = append(code, c)
		}
	}
	code = append(code,
		id("runMean").Op(":=").Id("runMeans").Index(id("lo"), jen.Empty()).Index(jen.Empty(), id("w")),
		id("runM2").Op(":=").Id("runM2s").Index(id("lo"), jen.Empty()).Index(jen.Empty(), id("w")))
	pivotChunk := k.AccName(loopAccs(fu.a)[0]) + "Chunk"
	blockShift := func() *jen.Statement { return l.colRead(fu.pivotShift) }
	setBlockShift := func(v jen.Code) []jen.Code { return l.colWrites(fu.pivotShift, v) }
	dev, sq := k.AccName(fu.devAcc)+"Chunk", k.AccName(fu.sqAcc)+"Chunk"
	sums := []jen.Code{jen.List(id("blockDev"), id("blockSq")).Op(":=").List(f64(at(dev)), f64(at(sq)))}
	clearSums := jen.List(at(dev), at(sq)).Op("=").List(jen.Lit(0), jen.Lit(0))

	// The first chunk: the two passes on its lines.
	code = append(code, jen.Comment("The first chunk of lines: the two passes around the pivot."),
		id("i1").Op(":=").Min(jen.Lit(blockLen), id("h")),
		jen.Block(walkA(jen.Lit(0), id("i1"))...),
		cols(append(setBlockShift(jen.Add(l.colRead(fu.pivot)).Op("+").Add(at(pivotChunk)).Op("/").Float32().Call(id("i1"))),
			at(pivotChunk).Op("=").Lit(0))...),
		jen.Block(walkB(jen.Lit(0), id("i1"))...),
		cols(append(append([]jen.Code{jen.List(id("blockDev"), id("blockSq")).Op(":=").List(at(k.AccName(fu.devAcc)+"Total"), at(k.AccName(fu.sqAcc)+"Total"))},
			at("runMean").Op("=").Add(f64(blockShift())).Op("+").Id("blockDev").Op("/").Float64().Call(id("i1")),
			at("runM2").Op("=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Float64().Call(id("i1"))),
			setBlockShift(jen.Float32().Call(at("runMean")))...)...))

	// Each later chunk: one pass around the mean of the chunk before, its
	// likeliest mean: a chunk far from the mean so far (an outlier before
	// it) still sums deviations that are small beside its own spread, and
	// a chunk far from the one before adds as much to M2 as it can lose.
	later := []jen.Code{
		id("i1").Op(":=").Min(id("i0").Op("+").Lit(blockLen), id("h")),
		jen.List(id("na"), id("nb")).Op(":=").List(f64(id("i0")), f64(id("i1").Op("-").Id("i0"))),
		id("nab").Op(":=").Id("na").Op("+").Id("nb"),
		jen.Block(walkF(id("i0"), id("i1"))...),
		cols(append(append(sums,
			id("blockMean").Op(":=").Add(f64(blockShift())).Op("+").Id("blockDev").Op("/").Id("nb"),
			id("delta").Op(":=").Id("blockMean").Op("-").Add(at("runMean")),
			at("runMean").Op("+=").Id("delta").Op("*").Id("nb").Op("/").Id("nab"),
			at("runM2").Op("+=").Id("blockSq").Op("-").Id("blockDev").Op("*").Id("blockDev").Op("/").Id("nb").
				Op("+").Float64().Call(id("delta").Op("*").Id("delta").Op("*").Parens(id("na").Op("*").Id("nb").Op("/").Id("nab"))),
			clearSums), setBlockShift(jen.Float32().Call(id("blockMean")))...)...),
	}
	code = append(code, jen.Comment("Each later chunk: one pass around the mean of the chunk before, joined in float64."),
		jen.For(id("i0").Op(":=").Lit(blockLen), id("i0").Op("<").Id("h"), id("i0").Op("+=").Lit(blockLen)).Block(later...))

	return code
}

// columnsFusedValues is the per-column code of the fused passes' values
// (shift, correction, variance) for the loop of the statements tail
// after them: locals where kept or tail reads them, stored where kept.
// With perLine, runM2s holds the variance itself (columnsOnePass).
func (l *lowering) columnsFusedValues(fu *fusion, kept map[ir.S]bool, tail []*ir.Scalar, perLine bool) ([]jen.Code, map[ir.S]bool) {
	k := l.k
	reads := map[ir.S]bool{}
	for _, st := range tail {
		for _, a := range st.Args {
			reads[a] = true
		}
	}
	need := func(s ir.S) bool { return kept[s] || reads[s] }
	at := func(name string) *jen.Statement { return jen.Id(name).Index(jen.Id("c")) }
	local := map[ir.S]bool{}
	var code []jen.Code
	value := func(s ir.S, v jen.Code) {
		n := k.ScalarName(s)
		code = append(code, jen.Id(n).Op(":=").Add(v))
		local[s] = true
		if kept[s] {
			code = append(code, l.colWrites(s, jen.Id(n))...)
		}
	}
	shift := k.ScalarName(fu.shift)
	mean := at("runMeans")
	if perLine {
		if l.taken["mean64"] || l.taken["variance64"] {
			panic(fmt.Sprintf("golang: %s: a value named mean64 or variance64", k.Name))
		}
		code = onePassValues()
		mean = jen.Id("mean64")
	}
	if need(fu.shift) || need(fu.correction) {
		value(fu.shift, jen.Float32().Call(mean.Clone()))
	}
	if need(fu.correction) {
		value(fu.correction, jen.Float32().Call(mean.Clone().Op("-").Float64().Call(jen.Id(shift))))
	}
	if need(fu.variance) && perLine {
		value(fu.variance, jen.Float32().Call(jen.Id("variance64")))
	} else if need(fu.variance) {
		value(fu.variance, jen.Float32().Call(at("runM2s").Op("/").Float64().Call(jen.Id("h"))))
	}
	return code, local
}

// A per-column linear form of a loop's stored value: sum of atom*coef
// plus a constant, each coefficient a polynomial in per-column scalars.
// An atom is a load, or a load less a per-column value: the subtraction
// that keeps the deviation exact where the values sit far from zero.
type (
	mono struct {
		neg bool
		f   []ir.S
	}
	poly    []mono
	linTerm struct {
		atom ir.V
		coef poly
	}
	linForm struct {
		terms []linTerm
		konst poly
	}
)

func (p poly) neg() poly {
	out := make(poly, len(p))
	for i, m := range p {
		out[i] = mono{!m.neg, m.f}
	}
	return out
}

func (p poly) times(q poly) poly {
	var out poly
	for _, a := range p {
		for _, b := range q {
			out = append(out, mono{a.neg != b.neg, append(append([]ir.S(nil), a.f...), b.f...)})
		}
	}
	return out
}

func (f linForm) plus(g linForm) linForm {
	out := linForm{konst: append(append(poly(nil), f.konst...), g.konst...)}
	out.terms = append(out.terms, f.terms...)
	for _, t := range g.terms {
		merged := false
		for i := range out.terms {
			if out.terms[i].atom == t.atom {
				out.terms[i].coef = append(append(poly(nil), out.terms[i].coef...), t.coef...)
				merged = true
			}
		}
		if !merged {
			out.terms = append(out.terms, t)
		}
	}
	return out
}

func (f linForm) scaled(p poly) linForm {
	out := linForm{konst: f.konst.times(p)}
	for _, t := range f.terms {
		out.terms = append(out.terms, linTerm{t.atom, t.coef.times(p)})
	}
	return out
}

// linearOf is op v's linear form, counting the adds and the products of
// per-element values it takes; ok is false where v is not linear in its
// atoms or one of its operands is read elsewhere.
func linearOf(lp *ir.Loop, uses []int, v ir.V, scalarDef func(ir.S) bool) (f linForm, adds, muls int, ok bool) {
	op := lp.Ops[v]
	atom := func() (linForm, int, int, bool) {
		return linForm{terms: []linTerm{{v, poly{{}}}}}, 0, 0, true
	}
	isLoad := func(a ir.V) bool { return lp.Ops[a].Code == ir.VLoad }
	isSplat := func(a ir.V) bool { return lp.Ops[a].Code == ir.VSplat && scalarDef(lp.Ops[a].Scalar) }
	switch op.Code {
	case ir.VSplat:
		if !isSplat(v) {
			return f, 0, 0, false
		}
		return linForm{konst: poly{{f: []ir.S{op.Scalar}}}}, 0, 0, true
	case ir.VLoad:
		return atom()
	case ir.VSub:
		if isLoad(op.Args[0]) && isSplat(op.Args[1]) {
			return atom()
		}
	}
	if op.Code != ir.VAdd && op.Code != ir.VSub && op.Code != ir.VMul && op.Code != ir.VFMA {
		return f, 0, 0, false
	}
	var fs [3]linForm
	for i, a := range op.Args {
		if lp.Ops[a].Code != ir.VSplat && uses[a] > 1 {
			return f, 0, 0, false
		}
		g, ad, mu, ok := linearOf(lp, uses, a, scalarDef)
		if !ok {
			return f, 0, 0, false
		}
		fs[i], adds, muls = g, adds+ad, muls+mu
	}
	switch op.Code {
	case ir.VAdd:
		return fs[0].plus(fs[1]), adds + 1, muls, true
	case ir.VSub:
		return fs[0].plus(fs[1].scaled(poly{{neg: true}})), adds + 1, muls, true
	}
	// A product (of an FMA too: the pure-Go form rounds it twice).
	var prod linForm
	switch {
	case len(fs[1].terms) == 0:
		prod = fs[0].scaled(fs[1].konst)
	case len(fs[0].terms) == 0:
		prod = fs[1].scaled(fs[0].konst)
	default:
		return f, 0, 0, false
	}
	if op.Code == ir.VFMA {
		return prod.plus(fs[2]), adds + 1, muls + 1, true
	}
	return prod, adds, muls + 1, true
}

// columnsLinear is k with each loop's stored value that is linear in its
// atoms (see linForm) with per-column coefficients rewritten as
// atom*coef + ... + offset, where that takes fewer float adds per
// element: the coefficients are products of per-column values, computed
// once per column. BatchNorm's output ((x-shift)-correction)*scale + bias
// becomes (x-shift)*scale + offset with offset = bias - correction*scale;
// the backward's input gradient ((x-mean)*c + (dy*g - m))*rstd keeps its
// form (as many adds, see linearLoop). A
// coefficient each of whose terms is a few float32 roundings of its
// part of the sum moves each term by a few units of its own magnitude,
// inside the contract's sum of magnitudes; the deviation from the
// per-column value is still taken first. Only a kernel with guards is
// rewritten: a coefficient out of float32's range (a product the
// original never formed) sends its column to the float64 form.
func columnsLinear(k *ir.Kernel) *ir.Kernel {
	if !pass.HasGuard(k) {
		return k
	}
	taken := valueNames(k)
	defined := map[ir.S]bool{}
	for _, a := range k.Arrays {
		taken[a.Name] = true
	}
	name := func(base string) string {
		n := base
		for i := 2; taken[n]; i++ {
			n = base + strconv.Itoa(i)
		}
		taken[n] = true
		return n
	}
	nk := *k
	nk.Body = nil
	changed := false
	section := 0 // where the per-column statements before the next loop begin
	for _, st := range k.Body {
		lp, ok := st.(*ir.Loop)
		if !ok {
			s := st.(*ir.Scalar)
			if s.Dst >= 0 && s.Code != ir.SStore && s.Code != ir.SGuard {
				defined[s.Dst] = true
			}
			nk.Body = append(nk.Body, st)
			continue
		}
		stmts, nl := linearLoop(&nk, lp, func(s ir.S) bool { return defined[s] }, name)
		if nl != lp {
			changed = true
		}
		nk.Body = append(deferInOutStores(&nk, nk.Body, section, stmts), nl)
		section = len(nk.Body)
	}
	if !changed {
		return k
	}
	return &nk
}

// deferInOutStores is body with stmts appended after body[section:], a
// run of per-column statements; where stmts guard, the run's stores to
// arrays read and then written (BatchNorm's running statistics) move
// after them: a column the new guards send to the float64 form must find
// those arrays unchanged, as that form updates them again. A store stays
// where a later statement of the run loads its array.
func deferInOutStores(k *ir.Kernel, body []ir.Stmt, section int, stmts []ir.Stmt) []ir.Stmt {
	guards := false
	for _, st := range stmts {
		guards = guards || st.(*ir.Scalar).Code == ir.SGuard
	}
	if !guards {
		return append(body, stmts...)
	}
	run := body[section:]
	loadedAfter := func(i int, array int) bool {
		for _, st := range run[i+1:] {
			if s := st.(*ir.Scalar); s.Code == ir.SLoad && s.Array == array {
				return true
			}
		}
		return false
	}
	out := append([]ir.Stmt(nil), body[:section]...)
	var stores []ir.Stmt
	for i, st := range run {
		s := st.(*ir.Scalar)
		if s.Code == ir.SStore && k.Arrays[s.Array].Role == ir.RowScalarInOut && !loadedAfter(i, s.Array) {
			stores = append(stores, st)
			continue
		}
		out = append(out, st)
	}
	return append(append(out, stmts...), stores...)
}

// linearLoop is lp with its linear stored values rewritten (see
// columnsLinear), and the per-column statements that go before it; lp
// itself and none where nothing is gained. New scalars are numbered from
// k.NumScalars on, which it advances.
func linearLoop(k *ir.Kernel, lp *ir.Loop, defined func(ir.S) bool, name func(string) string) ([]ir.Stmt, *ir.Loop) {
	uses := make([]int, len(lp.Ops))
	for _, op := range lp.Ops {
		for _, a := range op.Args {
			uses[a]++
		}
	}
	var stmts []ir.Stmt
	newScalar := func(code ir.ScalarCode, n string, args ...ir.S) ir.S {
		s := ir.S(k.NumScalars)
		k.NumScalars++
		stmts = append(stmts, &ir.Scalar{Code: code, Dst: s, Args: args, Name: name(n)})
		return s
	}
	// value is p as one scalar, negated where neg; ok false where p has
	// a term of no factor beside others.
	value := func(p poly, base string) (s ir.S, neg, unit, ok bool) {
		if len(p) == 1 && len(p[0].f) == 0 {
			return 0, p[0].neg, true, true
		}
		all := true
		for _, m := range p {
			if len(m.f) == 0 {
				return 0, false, false, false
			}
			all = all && m.neg
		}
		if all {
			p, neg = p.neg(), true
		}
		// The positive terms first.
		sort.SliceStable(p, func(i, j int) bool { return !p[i].neg && p[j].neg })
		product := func(m mono) ir.S {
			s := m.f[0]
			for _, f := range m.f[1:] {
				s = newScalar(ir.SMul, base+"Part", s, f)
			}
			return s
		}
		if len(p) == 1 {
			if len(p[0].f) == 1 {
				return p[0].f[0], neg, false, true
			}
			s = product(p[0])
			stmts[len(stmts)-1].(*ir.Scalar).Name = name(base)
			return s, neg, false, true
		}
		s = product(p[0])
		for _, m := range p[1:] {
			code := ir.SAdd
			if m.neg {
				code = ir.SSub
			}
			s = newScalar(code, base+"Part", s, product(m))
		}
		stmts[len(stmts)-1].(*ir.Scalar).Name = name(base)
		return s, neg, false, true
	}
	ops := append([]ir.VecOp(nil), lp.Ops...)
	var guards []ir.S
	for si, op := range lp.Ops {
		if op.Code != ir.VStore {
			continue
		}
		f, adds, muls, ok := linearOf(lp, uses, op.Args[0], defined)
		if !ok || len(f.terms) == 0 {
			continue
		}
		newAdds, newMuls := len(f.terms)-1, 0
		if len(f.konst) > 0 {
			newAdds++
		}
		for _, t := range f.terms {
			if len(t.coef) != 1 || len(t.coef[0].f) > 0 {
				newMuls++
			}
		}
		// Fewer adds (the pipes a scalar loop waits on). As many adds and
		// fewer products is not taken: a coefficient folds per-column
		// values into one product that may underflow where theirs did
		// not (rstd^2 of a column of spread 1e30), and the guards see
		// only overflow.
		if newAdds >= adds || newMuls > muls {
			continue
		}
		mark := len(stmts)
		scalars0 := k.NumScalars
		var e ir.V = -1
		var pending []struct {
			v   ir.V
			neg bool
		}
		failed := false
		term := func(v ir.V, neg bool) {
			switch {
			case e < 0 && !neg:
				e = v
			case e < 0:
				pending = append(pending, struct {
					v   ir.V
					neg bool
				}{v, neg})
			default:
				code := ir.VAdd
				if neg {
					code = ir.VSub
				}
				ops = append(ops, ir.VecOp{Code: code, Args: []ir.V{e, v}})
				e = ir.V(len(ops) - 1)
			}
		}
		splat := func(s ir.S) ir.V {
			ops = append(ops, ir.VecOp{Code: ir.VSplat, Scalar: s})
			return ir.V(len(ops) - 1)
		}
		for _, t := range f.terms {
			base := "coef"
			if a := lp.Ops[t.atom]; a.Code == ir.VLoad {
				base = k.Arrays[a.Array].Name + "Coef"
			} else if a.Code == ir.VSub {
				base = k.Arrays[lp.Ops[a.Args[0]].Array].Name + "Coef"
			}
			s, neg, unit, ok := value(t.coef, base)
			if !ok {
				failed = true
				break
			}
			v := t.atom
			if !unit {
				if int(s) >= scalars0 {
					guards = append(guards, s)
				}
				ops = append(ops, ir.VecOp{Code: ir.VMul, Args: []ir.V{v, splat(s)}})
				v = ir.V(len(ops) - 1)
			}
			term(v, neg)
		}
		if !failed && len(f.konst) > 0 {
			s, neg, _, ok := value(f.konst, "offset")
			if ok {
				if int(s) >= scalars0 {
					guards = append(guards, s)
				}
				term(splat(s), neg)
			}
			failed = !ok
		}
		for _, p := range pending {
			if e < 0 {
				failed = true
				break
			}
			term(p.v, p.neg)
		}
		if failed {
			// Nothing of this store's rewrite is kept.
			ops = ops[:len(lp.Ops)]
			stmts, k.NumScalars = stmts[:mark], scalars0
			guards = nil
			continue
		}
		ops[si].Args = []ir.V{e}
	}
	if len(stmts) == 0 {
		return nil, lp
	}
	for _, g := range guards {
		stmts = append(stmts, &ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{g}, Lo: -math.MaxFloat32, Hi: math.MaxFloat32})
	}
	return stmts, &ir.Loop{Ops: liveOps(ops)}
}

// impliedGuards is k without the guards that a later guard implies. A
// guard over float32's whole range on s is implied by a later one on a
// value computed from s by adds, subtracts, products, square roots or as
// a dividend: IEEE arithmetic carries an infinity or a NaN through each,
// so the later guard rejects every column the earlier one would, and the
// column goes to the float64 form all the same (the same bits). Only per-
// column arithmetic and stores of pure outputs (which that form writes
// again) may lie between the two: a loop (whose stores may overwrite an
// input) or a store to an array read and then written keeps every guard
// before it.
func impliedGuards(k *ir.Kernel) *ir.Kernel {
	whole := func(st *ir.Scalar) bool {
		return st.Lo == -math.MaxFloat32 && st.Hi == math.MaxFloat32
	}
	covered := map[ir.S]bool{}
	drop := map[int]bool{}
	for i := len(k.Body) - 1; i >= 0; i-- {
		st, ok := k.Body[i].(*ir.Scalar)
		if !ok {
			clear(covered)
			continue
		}
		switch st.Code {
		case ir.SGuard:
			if !whole(st) {
				continue
			}
			if covered[st.Args[0]] {
				drop[i] = true
			}
			covered[st.Args[0]] = true
		case ir.SStore:
			if k.Arrays[st.Array].Role != ir.RowScalarOut {
				clear(covered)
			}
		case ir.SAdd, ir.SSub, ir.SMul, ir.SSqrt:
			if covered[st.Dst] {
				for _, a := range st.Args {
					covered[a] = true
				}
			}
		case ir.SDiv:
			if covered[st.Dst] {
				covered[st.Args[0]] = true
			}
		}
	}
	nk := *k
	nk.Body = nil
	for i, st := range k.Body {
		if !drop[i] {
			nk.Body = append(nk.Body, st)
		}
	}
	return &nk
}

// mergeGuards is k with each run of two or more guards over float32's
// whole range, with only per-column arithmetic and stores of pure outputs
// between them, made one guard on their values' sum, where the last one
// was: the sum is finite only where every value is (see impliedGuards),
// so each column those guards rejected is rejected still, and a column
// whose values are finite but sum past float32's range (one of them
// above 2^127) goes to the float64 form too, which meets the contract. A guard costs two compares and two branches a column.
func mergeGuards(k *ir.Kernel) *ir.Kernel {
	whole := func(st *ir.Scalar) bool {
		return st.Lo == -math.MaxFloat32 && st.Hi == math.MaxFloat32
	}
	var runs [][]int
	var run []int
	flush := func() {
		if len(run) > 1 {
			runs = append(runs, run)
		}
		run = nil
	}
	for i, st := range k.Body {
		s, ok := st.(*ir.Scalar)
		switch {
		case !ok, s.Code == ir.SStore && k.Arrays[s.Array].Role != ir.RowScalarOut:
			flush()
		case s.Code == ir.SGuard && whole(s):
			run = append(run, i)
		}
	}
	flush()
	if len(runs) == 0 {
		return k
	}
	taken := valueNames(k)
	for _, a := range k.Arrays {
		taken[a.Name] = true
	}
	nk := *k
	nk.Body = nil
	merged := map[int][]int{} // the last guard of a run: the run
	skip := map[int]bool{}
	for _, r := range runs {
		merged[r[len(r)-1]] = r
		for _, i := range r {
			skip[i] = true
		}
	}
	for i, st := range k.Body {
		r, last := merged[i]
		if !last {
			if !skip[i] {
				nk.Body = append(nk.Body, st)
			}
			continue
		}
		sum := k.Body[r[0]].(*ir.Scalar).Args[0]
		for _, g := range r[1:] {
			name := "guardSum"
			for n := 2; taken[name]; n++ {
				name = "guardSum" + strconv.Itoa(n)
			}
			taken[name] = true
			next := ir.S(nk.NumScalars)
			nk.NumScalars++
			nk.Body = append(nk.Body, &ir.Scalar{Code: ir.SAdd, Dst: next, Args: []ir.S{sum, k.Body[g].(*ir.Scalar).Args[0]}, Name: name})
			sum = next
		}
		nk.Body = append(nk.Body, &ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{sum}, Lo: -math.MaxFloat32, Hi: math.MaxFloat32})
	}
	return &nk
}

// liveOps is ops without the values no store or sum reads, in order, each
// store after the values it reads.
func liveOps(ops []ir.VecOp) []ir.VecOp {
	live := make([]bool, len(ops))
	var mark func(v ir.V)
	mark = func(v ir.V) {
		if live[v] {
			return
		}
		live[v] = true
		for _, a := range ops[v].Args {
			mark(a)
		}
	}
	for i, op := range ops {
		if !op.Code.MakesValue() {
			mark(ir.V(i))
		}
	}
	// A store's new value sits after it: stores and sums move to the end,
	// each value in its original order.
	var order []int
	for i, op := range ops {
		if live[i] && op.Code.MakesValue() {
			order = append(order, i)
		}
	}
	for i, op := range ops {
		if !op.Code.MakesValue() {
			order = append(order, i)
		}
	}
	remap := make([]ir.V, len(ops))
	var out []ir.VecOp
	for _, i := range order {
		op := ops[i]
		op.Args = append([]ir.V(nil), op.Args...)
		for j, a := range op.Args {
			op.Args[j] = remap[a]
		}
		remap[i] = ir.V(len(out))
		out = append(out, op)
	}
	return out
}

// onePassBound is the largest (mean/sigma)^2 a column of at most blockLen
// lines is summed around 0 for: its float64 sums of x and x^2 (each
// square exact) then give the variance within about
// 3*blockLen*2^-53*(1 + onePassBound) of itself, a quarter of float32's
// rounding (docs/accuracy.md).
const onePassBound = 1 << 20

// columnsOnePass is the fused passes of a tile of at most blockLen lines:
// one pass summing each column's x and x^2 in float64 around 0, left as
// the sums in runMeans and runM2s, from which the per-column statements
// take the mean and variance (onePassValues, no divide a column). A
// column whose mean is too far from 0 for its spread gets a NaN variance,
// which the variance's guard sends to the float64 form. Nil where the first pass sums
// anything but one array's values less the pivot.
func (l *lowering) columnsOnePass(fu *fusion) []jen.Code {
	array := onePassArray(fu)
	if array < 0 {
		return nil
	}
	id := jen.Id
	x := l.arrayName(array)
	at := func(name string) *jen.Statement { return id(name).Index(id("c")) }
	line := func(e int) *jen.Statement {
		i := jen.Id("i")
		if e > 0 {
			i = jen.Parens(jen.Id("i").Op("+").Lit(e))
		}
		return id(x).Index(i.Op("*").Id("stride").Op("+").Id("r0"), jen.Empty()).Index(jen.Empty(), id("w"))
	}
	// One function takes colLines lines, another one line.
	helper := func(lines int) string {
		var decl, cut, body []jen.Code
		for e := range lines {
			n := fmt.Sprintf("line%d", e)
			decl = append(decl, id(n).Index().Float32())
			cut = append(cut, id(n).Op("=").Id(n).Index(jen.Empty(), id("w")))
		}
		decl = append(decl, id("sum").Index().Float64(), id("sumSq").Index().Float64(), id("w").Int())
		cut = append(cut, id("sum").Op("=").Id("sum").Index(jen.Empty(), id("w")),
			id("sumSq").Op("=").Id("sumSq").Index(jen.Empty(), id("w")))
		body = append(body, jen.List(id("s"), id("q")).Op(":=").List(at("sum"), at("sumSq")))
		for e := range lines {
			v := fmt.Sprintf("v%d", e)
			body = append(body, id(v).Op(":=").Float64().Call(id(fmt.Sprintf("line%d", e)).Index(id("c"))),
				id("s").Op("+=").Id(v),
				id("q").Op("+=").Float64().Call(id(v).Op("*").Id(v)))
		}
		body = append(body, jen.List(at("sum"), at("sumSq")).Op("=").List(id("s"), id("q")))
		return l.columnsHelper("Lines", decl, append(cut, jen.For(id("c").Op(":=").Range().Id("w")).Block(body...)), nil)
	}
	four, one := helper(colLines), helper(1)
	var group []jen.Code
	for e := range colLines {
		group = append(group, line(e))
	}
	return []jen.Code{
		jen.Comment("At most a chunk of lines: one pass summing x and x^2 in float64."),
		id("w").Op(":=").Id("n"),
		id("sum").Op(":=").Id("runMeans").Index(jen.Empty(), id("w")),
		id("sumSq").Op(":=").Id("runM2s").Index(jen.Empty(), id("w")),
		jen.Clear(id("sum")),
		jen.Clear(id("sumSq")),
		id("i").Op(":=").Lit(0),
		jen.For(jen.Empty(), id("i").Op("+").Lit(colLines).Op("<=").Id("h"), id("i").Op("+=").Lit(colLines)).Block(
			id(four).Call(append(group, id("sum"), id("sumSq"), id("w"))...)),
		jen.For(jen.Empty(), id("i").Op("<").Id("h"), id("i").Op("++")).Block(
			id(one).Call(line(0), id("sum"), id("sumSq"), id("w"))),
	}
}

// onePassValues is the code of column c's mean and variance in float64
// from the one pass's sums (columnsOnePass), named mean64 and variance64,
// at the head of the per-column statements that read them: one loop over
// the columns, not two with the values stored and loaded between.
func onePassValues() []jen.Code {
	id := jen.Id
	at := func(name string) *jen.Statement { return id(name).Index(id("c")) }
	return []jen.Code{
		id("mean64").Op(":=").Float64().Call(at("runMeans").Op("*").Id("perLine")),
		// Products rounded: no compiler fuses them into the subtraction.
		id("variance64").Op(":=").Float64().Call(at("runM2s").Op("*").Id("perLine")).Op("-").Float64().Call(id("mean64").Op("*").Id("mean64")),
		jen.If(jen.Op("!").Parens(id("mean64").Op("*").Id("mean64").Op("<=").Lit(onePassBound).Op("*").Id("variance64"))).Block(
			id("variance64").Op("=").Qual("math", "NaN").Call()),
	}
}

// onePassArray is the array whose values fusion fu's first pass sums
// less the pivot, -1 where it sums anything else (see columnsOnePass).
func onePassArray(fu *fusion) int {
	if fu == nil {
		return -1
	}
	array, loads, subs := -1, 0, 0
	for _, op := range fu.a.Ops {
		switch op.Code {
		case ir.VLoad:
			array, loads = op.Array, loads+1
		case ir.VSub:
			subs++
		case ir.VSplat, ir.VAcc:
		default:
			return -1
		}
	}
	if loads != 1 || subs != 1 {
		return -1
	}
	return array
}

// columnsColFunc is a call of a function of its own holding loop, a run
// of per-column statements over the tile's n columns written to index
// the tile's parts of the arrays (colFunc), added to l.helpers where new;
// nil where loop is empty or reads a name the function cannot take.
// Inside the kernel's body the compiler spills the loop's index and
// slices on every trip and checks each array's bounds; in a function of
// its own every slice is cut to n, and the index and slices stay in
// registers. hoisted are the kernel's float32 values computed once a
// call; the function returns how many columns its guards rejected.
func (l *lowering) columnsColFunc(loop []jen.Code, hoisted map[string]bool) jen.Code {
	if len(loop) == 0 {
		return nil
	}
	src := "package p\n" + fmt.Sprintf("%#v", jen.Func().Id("f").Params().Block(loop...))
	file, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		panic(fmt.Sprintf("golang: %s: per-column statements: %v\n%s", l.k.Name, err, src))
	}
	// The names loop reads that it does not declare, in order of use.
	declared := map[string]bool{}
	var free []string
	seen := map[string]bool{}
	ast.Inspect(file.Decls[0].(*ast.FuncDecl).Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr: // a package's name: math.Sqrt
			return false
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					declared[e.(*ast.Ident).Name] = true
				}
			}
		case *ast.RangeStmt:
			declared[n.Key.(*ast.Ident).Name] = true
		case *ast.Ident:
			if !declared[n.Name] && !seen[n.Name] && !goBuiltin[n.Name] {
				seen[n.Name] = true
				free = append(free, n.Name)
			}
		}
		return true
	})
	type param struct {
		typ *jen.Statement
		arg jen.Code
		cut bool
	}
	known := map[string]param{
		"runMeans": {jen.Index().Float64(), jen.Id("runMeans").Index(jen.Empty(), jen.Id("n")), true},
		"runM2s":   {jen.Index().Float64(), jen.Id("runM2s").Index(jen.Empty(), jen.Id("n")), true},
		"rejected": {jen.Index().Bool(), jen.Id("rejected").Index(jen.Empty(), jen.Id("n")), true},
		"h":        {jen.Int(), jen.Id("h"), false},
		"perLine":  {jen.Float64(), jen.Id("perLine"), false},
	}
	for i, a := range l.k.Arrays {
		if a.Role != ir.Param {
			n := l.arrayName(i)
			known[n] = param{jen.Index().Float32(), jen.Id(n).Index(jen.Id("r0"), jen.Empty()).Index(jen.Empty(), jen.Id("n")), true}
		}
	}
	for _, n := range l.cols.names {
		known[n] = param{jen.Index().Float32(), jen.Id(n).Index(jen.Empty(), jen.Id("n")), true}
	}
	for a := range l.k.NumAccs {
		n := l.k.AccName(a) + "Chunks"
		known[n] = param{jen.Index().Float32(), jen.Id(n).Index(jen.Empty(), jen.Id("n")), true}
	}
	for _, n := range append(target.ArgNames(l.k), l.invLen) {
		hoisted[n] = true
	}
	var decl, args, cut []jen.Code
	counts := false
	for _, n := range free {
		p, ok := known[n]
		switch {
		case n == "rejects":
			counts = true
			continue
		case n == "n": // the tile's width, the last parameter
			continue
		case !ok && hoisted[n]:
			p = param{jen.Float32(), jen.Id(n), false}
		case !ok:
			return nil
		}
		decl = append(decl, jen.Id(n).Add(p.typ))
		args = append(args, p.arg)
		if p.cut {
			cut = append(cut, jen.Id(n).Op("=").Id(n).Index(jen.Empty(), jen.Id("n")))
		}
	}
	decl = append(decl, jen.Id("n").Int())
	args = append(args, jen.Id("n"))
	body := cut
	if counts {
		body = append(append(append(body, jen.Id("rejects").Op(":=").Lit(0)), loop...), jen.Return(jen.Id("rejects")))
		fn := l.columnsHelper("Cols", decl, body, jen.Int())
		return jen.Id("rejects").Op("+=").Id(fn).Call(args...)
	}
	fn := l.columnsHelper("Cols", decl, append(body, loop...), nil)
	return jen.Id(fn).Call(args...)
}

// goBuiltin are the predeclared names generated code reads.
var goBuiltin = map[string]bool{
	"true": true, "false": true, "float32": true, "float64": true, "int": true, "bool": true,
	"min": true, "max": true, "len": true, "clear": true, "math": true,
}
