package ir

import (
	"strings"
	"testing"
)

// namedKernel is a small kernel with every kind of name: y = (x - pivot)
// * rstd, rstd = 1/sqrt(sum((x-pivot)^2) + eps), stored per row.
func namedKernel(t *testing.T, name func(b *Builder, l *LoopBuilder, what string) string) (*Kernel, error) {
	t.Helper()
	b := NewBuilder("K", "doc")
	dst := b.Array("dst", RowOut, "")
	rstdOut := b.Array("rstd", RowScalarOut, "")
	x := b.Array("x", RowIn, "")
	pivot := b.Name(b.LoadRow(x), name(b, nil, "pivot"))
	acc := b.NewAcc()
	b.Loop(func(l *LoopBuilder) {
		d := l.Name(l.Sub(l.Load(x), l.Splat(pivot)), name(b, l, "dev"))
		l.AccMul(acc, d, d)
	})
	sum := b.Name(b.Sum(acc), name(b, nil, "squareSum"))
	v := b.Name(b.Add(sum, b.Name(b.Const(1e-5), name(b, nil, "eps"))), name(b, nil, "varEps"))
	b.Guard(v, 1e-25, 1e38)
	rstd := b.Name(b.Div(b.Const(1), b.Sqrt(v)), name(b, nil, "rstd"))
	b.Loop(func(l *LoopBuilder) {
		l.Store(dst, l.Mul(l.Sub(l.Load(x), l.Splat(pivot)), l.Splat(rstd)))
	})
	b.StoreRow(rstdOut, rstd)
	return b.Kernel()
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		what, name string
		err        string // in Check's error; "" for none
	}{
		{"rstd", "rstd", ""}, // a value may share its array's name
		{"pivot", "k0", ""},
		{"pivot", "_pivot", ""},
		{"pivot", "", ""},
		{"pivot", "2x", "not an ASCII Go identifier"},
		{"pivot", "piv-ot", "not an ASCII Go identifier"},
		{"pivot", "πvot", "not an ASCII Go identifier"},
		{"pivot", "_", "not an ASCII Go identifier"},
		{"pivot", "range", "keyword"},
		{"eps", "len", "predeclared"},
		{"rstd", "float64", "predeclared"},
		{"pivot", "h", "reserved"},
		{"pivot", "segstride", "reserved"},
		{"pivot", "math", "reserved"},
		{"pivot", "s3", "unnamed value's"},
		{"dev", "v0", "unnamed value's"},
		{"squareSum", "acc12", "unnamed value's"},
		{"pivot", "xRow", "ends in Row"},
		{"varEps", "eps", "used twice"},
		{"dev", "pivot", "also a scalar's"},
	} {
		k, err := namedKernel(t, func(b *Builder, l *LoopBuilder, what string) string {
			if what == tc.what {
				return tc.name
			}
			return what
		})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s named %q: %v", tc.what, tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s named %q: error %v, want one saying %q", tc.what, tc.name, err, tc.err)
		case tc.err == "" && tc.name != "" && tc.what != "dev" && !strings.Contains(texts(k), tc.name+" = "):
			t.Errorf("%s named %q: the texts do not use the name:\n%s", tc.what, tc.name, texts(k))
		}
	}
}

// TestNamesTwiceInLoop: a vector name is unique within its loop.
func TestNamesTwiceInLoop(t *testing.T) {
	b := NewBuilder("K", "doc")
	dst := b.Array("dst", RowOut, "")
	x := b.Array("x", RowIn, "")
	b.Loop(func(l *LoopBuilder) {
		a := l.Name(l.Load(x), "a")
		l.Store(dst, l.Name(l.Add(a, a), "a"))
	})
	if _, err := b.Kernel(); err == nil || !strings.Contains(err.Error(), "used twice in the loop") {
		t.Errorf("got %v, want a name used twice in the loop", err)
	}
}

func texts(k *Kernel) string {
	var lines []string
	for _, st := range k.Body {
		switch st := st.(type) {
		case *Scalar:
			lines = append(lines, k.ScalarText(st, 0))
		case *Loop:
			lines = append(lines, "pass: "+k.LoopText(st))
		}
	}
	return strings.Join(lines, "\n")
}

// TestTexts pins the comment vocabulary: named values, unnamed constants
// by value, values used twice in a loop defined once, and parentheses
// only where the order of the operations needs them.
func TestTexts(t *testing.T) {
	k, err := namedKernel(t, func(b *Builder, l *LoopBuilder, what string) string { return what })
	if err != nil {
		t.Fatal(err)
	}
	want := `pivot = the row's first x
pass: dev = x - pivot; squareSum += dev*dev
squareSum = sum((x - pivot)*(x - pivot))
eps = 1e-05
varEps = squareSum + eps
guard: the row goes to the caller unless 1e-25 <= varEps <= 1e+38
the constant 1
s5 = sqrt(varEps)
rstd = 1 / s5
pass: dst = (x - pivot)*rstd
rstd[row] = rstd`
	if got := texts(k); got != want {
		t.Errorf("texts:\n%s\nwant:\n%s", got, want)
	}
	if got := k.ScalarText(k.Body[4].(*Scalar), 768); got != "varEps = squareSum + eps" {
		t.Errorf("got %q", got)
	}

	// a - (b + c) keeps its parentheses, (a - b) - c needs none; a
	// product's right operand that is itself a product keeps them.
	b := NewBuilder("P", "doc")
	dst := b.Array("dst", RowOut, "")
	x := b.Array("x", RowIn, "")
	g := b.Array("g", Param, "")
	n := b.Name(b.InvLen(), "invN")
	b.Loop(func(l *LoopBuilder) {
		xv, gv, nv := l.Load(x), l.Load(g), l.Splat(n)
		l.Store(dst, l.Sub(xv, l.Add(gv, nv)))
		l.Store(dst, l.Sub(l.Sub(xv, gv), nv))
		l.Store(dst, l.Mul(xv, l.Mul(gv, nv)))
		l.Store(dst, l.FMA(xv, gv, l.Add(xv, nv)))
	})
	p, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	want = "dst = x - (g + invN); dst = x - g - invN; dst = x*(g*invN); dst = x*g + (x + invN)"
	if got := p.LoopText(p.Body[1].(*Loop)); got != want {
		t.Errorf("LoopText:\n%s\nwant:\n%s", got, want)
	}
	if got := p.ScalarText(p.Body[0].(*Scalar), 768); got != "invN = 1/768" {
		t.Errorf("fixed 1/n: %q", got)
	}
}
