package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"

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
// value v of k.Body[loop] to name[i], a []float32 of h values taken as
// its first parameter: a column sum computed with the row's own terms,
// which saves the loads of another pass over the rows. The row outputs
// are k's pure-Go function's bits; a row the guard rejects has added its
// float32 terms before the float64 form recomputes its outputs.
func FusedFunc(k *ir.Kernel, loop int, v ir.V, name string) jen.Code {
	lp, ok := k.Body[loop].(*ir.Loop)
	if !ok || !Blocked(k) || k.Layout != ir.Rows || int(v) >= len(lp.Ops) || !lp.Ops[v].Code.MakesValue() || k.ArrayIndex(name) >= 0 {
		panic(fmt.Sprintf("golang: kernel %s has no column sum %s of v%d in statement %d", k.Name, name, v, loop))
	}
	l := newLowering(k)
	l.f32 = true
	l.col = &colSum{lp: lp, v: v, name: name}
	body := l.blockedBody()
	fn := FusedName(k)
	doc := jen.Commentf("%s is the pure-Go %s that also adds each element's", fn, k.Name).Line().
		Commentf("term of %s to %s[i], row after row: %s.", name, name, k.Doc)
	if pass.HasGuard(k) {
		fb, _ := Fallback(k)
		doc = doc.Line().Commentf("A row whose statistics leave float32's range takes %s (its terms added).", fb)
	}
	params := append([]jen.Code{jen.Id(name)}, l.params()...)
	return doc.Line().Func().Id(fn).Params(params...).Block(body...)
}
