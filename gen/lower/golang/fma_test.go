package golang

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"testing"

	"github.com/dave/jennifer/jen"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// TestProductsRounded: in the pure-Go forms (float32, and the float64
// forms beside them) no product enters a sum (+, -, +=, -=) without a
// conversion, written in the sum or in the statement defining a local. Go may fuse such a product
// into an FMA (arm64, ppc64, s390x, riscv64, amd64 with GOAMD64=v3) by the
// shape of the code around it, and forms promised the same bits (the
// backward's fused Rows kernel and Parallel's Rows and Params kernels; a
// row's output pass alone or paired with the next row's) then differ.
func TestProductsRounded(t *testing.T) {
	type form struct {
		name string
		k    *ir.Kernel
		code func(k *ir.Kernel) string
	}
	var forms []form
	add := func(name string, k *ir.Kernel, err error) {
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, form{name, k, func(k *ir.Kernel) string { return render(t, k) }})
	}
	for _, sk := range []spec.Kernel{
		{Name: "LN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true},
		{Name: "AddLN", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, Residual: &spec.Residual{Alpha: 1, StoreSum: true}},
		{Name: "RMS", Epsilon: 1e-6, Scale: true},
	} {
		k, err := algo.Build(sk)
		add(sk.Name, k, err)
	}
	for _, sk := range []spec.Kernel{
		{Name: "RMS", Axis: "last", Epsilon: 1e-6, Scale: true, SaveStats: true, Backward: true},
		{Name: "LN", Axis: "last", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, SaveStats: true, Backward: true},
	} {
		bw, err := algo.NewBackward(sk)
		if err != nil || bw.Fused == nil {
			t.Fatalf("%s backward: no fused sums (%v)", sk.Name, err)
		}
		add(sk.Name+" backward Params", bw.Params, nil)
		forms = append(forms,
			form{sk.Name + " backward Rows", bw.GoRowsKernel(), func(k *ir.Kernel) string { return renderCode(t, k, RowFunc(k)) }},
			form{sk.Name + " backward fused", bw.GoRowsKernel(), func(k *ir.Kernel) string {
				return renderCode(t, k, jen.Add(FusedFunc(k, bw.Fused.Loop, bw.Fused.Cols)).Line().Add(float64Func(k, Float64Name(k))))
			}})
	}
	bn, err := algo.BatchColumns(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
		AffinePerRow: true, SaveStats: true, Running: &spec.Running{Convention: "pytorch", Momentum: 0.1}})
	add("BatchNorm columns", bn, err)
	for _, f := range forms {
		if bad := unroundedProducts(t, f.code(f.k)); len(bad) > 0 {
			t.Errorf("%s: products enter sums unrounded: %q", f.name, bad)
		}
	}
}

// unroundedProducts are the float products of src that are an operand of
// a sum (float32 or float64: the float64 forms' and statistics' bits too),
// as written or through a local assigned the product (Go fuses across
// statements).
func unroundedProducts(t *testing.T, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("p", fset, []*ast.File{file}, info); err != nil {
		t.Fatal(err)
	}
	is32 := func(e ast.Expr) bool {
		b, ok := info.Types[e].Type.(*types.Basic)
		return ok && (b.Kind() == types.Float32 || b.Kind() == types.Float64)
	}
	unparen := func(e ast.Expr) ast.Expr {
		for {
			p, ok := e.(*ast.ParenExpr)
			if !ok {
				return e
			}
			e = p.X
		}
	}
	isProduct := func(e ast.Expr) bool {
		b, ok := unparen(e).(*ast.BinaryExpr)
		return ok && b.Op == token.MUL && is32(b)
	}
	// Locals assigned a product.
	products := map[types.Object]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == len(a.Rhs) && (a.Tok == token.DEFINE || a.Tok == token.ASSIGN) {
			for i, l := range a.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || !isProduct(a.Rhs[i]) {
					continue
				}
				if o := info.Defs[id]; o != nil {
					products[o] = true
				} else if o := info.Uses[id]; o != nil {
					products[o] = true
				}
			}
		}
		return true
	})
	var bad []string
	check := func(e ast.Expr) {
		e = unparen(e)
		if id, ok := e.(*ast.Ident); ok && products[info.Uses[id]] {
			bad = append(bad, fmt.Sprint(fset.Position(id.Pos()).Line, ": ", id.Name, " (a product)"))
		}
		if isProduct(e) {
			bad = append(bad, fmt.Sprint(fset.Position(e.Pos()).Line, ": ", types.ExprString(e)))
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.ADD || n.Op == token.SUB) && is32(n) {
				check(n.X)
				check(n.Y)
			}
		case *ast.AssignStmt:
			if n.Tok == token.ADD_ASSIGN || n.Tok == token.SUB_ASSIGN {
				for _, r := range n.Rhs {
					if is32(r) {
						check(r)
					}
				}
			}
		}
		return true
	})
	return bad
}
