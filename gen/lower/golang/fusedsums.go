package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/gen/pass"
	"github.com/normgen/normgen/gen/target"
)

// colSum is a column sum that the float32 form of a row kernel adds to
// in one of its loops: name[i] += v for each element i of each row, the
// rows in order, one float32 chain per column.
type colSum struct {
	lp   *ir.Loop
	v    ir.V
	name string
}

// FusedName is the function FusedFunc writes for k.
func FusedName(k *ir.Kernel) string {
	return target.Func{Kernel: k, ISA: target.Go}.Name() + "Sums"
}

// FusedFunc is the float32 form of the row kernel k (Blocked, over
// contiguous rows) that also adds, for every element of every row, the
// value cols[j].V of k.Body[loop] to cols[j].Out[i], a []float32 of h
// values taken as its first parameters: column sums computed with the
// row's own terms, which saves the loads of another pass over the rows.
// The row outputs are k's pure-Go function's bits; a row the guard
// rejects has added its float32 terms before the float64 form recomputes
// its outputs. Each row runs in a function of its own (FusedName +
// "Row") that calls nothing, and which returns false where the guard
// rejects the row: with the call of the float64 form in its loops'
// function, Go's register allocation made the rows about a tenth slower.
func FusedFunc(k *ir.Kernel, loop int, cols []algo.FusedCol) jen.Code {
	lp, ok := k.Body[loop].(*ir.Loop)
	if !ok || !Blocked(k) || k.Layout != ir.Rows || len(cols) == 0 {
		panic(fmt.Sprintf("golang: kernel %s has no column sums in statement %d", k.Name, loop))
	}
	var sums []colSum
	var names []string
	for _, c := range cols {
		if int(c.V) >= len(lp.Ops) || !lp.Ops[c.V].Code.MakesValue() || k.ArrayIndex(c.Out) >= 0 {
			panic(fmt.Sprintf("golang: kernel %s has no column sum %s of v%d in statement %d", k.Name, c.Out, c.V, loop))
		}
		sums = append(sums, colSum{lp: lp, v: c.V, name: c.Out})
		names = append(names, c.Out)
	}
	fn := FusedName(k)
	list := strings.Join(names, ", ")
	doc := jen.Commentf("%s is the pure-Go %s that also adds each element's", fn, k.Name).Line().
		Commentf("terms of %s to their element i, row after row: %s.", list, k.Doc)
	if pass.HasGuard(k) {
		fb, _ := Fallback(k)
		doc = doc.Line().Commentf("A row whose statistics leave float32's range takes %s (its terms added).", fb)
	}
	return rowForm(k, sums, fn, doc)
}

// RowFunc is Func for a row kernel whose guard hands rows to the float64
// form (a backward's Rows kernel): the float32 form's rows in a function
// of their own (<name>Row) that calls nothing, as FusedFunc's.
func RowFunc(k *ir.Kernel) jen.Code {
	if !Blocked(k) || k.Layout != ir.Rows || !pass.HasGuard(k) || k.Fallback != nil || k.Streaming != nil {
		return Func(k)
	}
	name := target.Func{Kernel: k, ISA: target.Go}.Name()
	fb, _ := Fallback(k)
	doc := jen.Commentf("%s is the pure-Go %s: %s.", name, k.Name, k.Doc).Line().
		Comment("Float32 arithmetic, its sums in float32 blocks added in float64.").Line().
		Commentf("A row whose statistics leave float32's range takes %s.", fb)
	return jen.Add(rowForm(k, nil, name, doc)).Line().Line().Add(float64Func(k, Float64Name(k)))
}

// rowForm is the float32 form of k named fn, with the column sums cols
// (none: nil), each row computed by fn + "Row", which calls nothing and
// returns false where a guard rejects the row; fn then calls the float64
// form. With that call inside the loops' function, Go's register
// allocation made the rows about a tenth slower.
func rowForm(k *ir.Kernel, cols []colSum, fn string, doc *jen.Statement) jen.Code {
	l := newLowering(k)
	l.f32 = true
	l.rowFunc = true
	l.colSums = cols
	rowFn := fn + "Row"
	var first []jen.Code
	for _, c := range cols {
		first = append(first, jen.Id(c.name))
	}
	body, _ := l.blockedBody()
	body = append(body, jen.Return(jen.True()))
	params := append(append([]jen.Code{}, first...), ArrayParams(k.Arrays, l.arrayName)...)
	params = append(params, jen.List(jen.Id("r"), jen.Id("h")).Int())
	var argIds []jen.Code
	if names := target.ArgNames(k); len(names) > 0 {
		for _, n := range names {
			argIds = append(argIds, jen.Id(n))
		}
		params = append(params, jen.List(argIds...).Float32())
	}
	rowDoc := jen.Commentf("%s is row r of %s; false where a guard rejects the row.", rowFn, fn)
	row := rowDoc.Line().Func().Id(rowFn).Params(params...).Bool().Block(body...)

	// The outer loop: each row, then the float64 form for a rejected one.
	call := append([]jen.Code{}, first...)
	for i := range k.Arrays {
		call = append(call, jen.Id(l.arrayName(i)))
	}
	call = append(call, jen.Id("r"), jen.Id("h"))
	call = append(call, argIds...)
	var loopBody []jen.Code
	if pass.HasGuard(k) {
		fb, arrays := Fallback(k)
		var args []jen.Code
		for _, i := range arrays {
			a := k.Arrays[i]
			switch {
			case a.Role == ir.RowIn || a.Role == ir.RowOut:
				args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r").Op("*").Id("h"), jen.Empty()))
			case a.Role.PerRow():
				args = append(args, jen.Id(l.arrayName(i)).Index(jen.Id("r"), jen.Empty()))
			default:
				args = append(args, jen.Id(l.arrayName(i)))
			}
		}
		args = append(args, jen.Lit(1), jen.Id("h"))
		args = append(args, argIds...)
		loopBody = append(loopBody, jen.If(jen.Op("!").Id(rowFn).Call(call...)).Block(jen.Id(fb).Call(args...)))
	} else {
		loopBody = append(loopBody, jen.Id(rowFn).Call(call...))
	}
	outer := append(append([]jen.Code{}, first...), l.params()...)
	f := doc.Line().Func().Id(fn).Params(outer...).Block(
		jen.For(jen.Id("r").Op(":=").Lit(0), jen.Id("r").Op("<").Id("rows"), jen.Id("r").Op("++")).Block(loopBody...))
	return jen.Add(f).Line().Line().Add(row)
}
