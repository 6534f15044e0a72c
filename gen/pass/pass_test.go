package pass

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/normgen/normgen/gen/ir"
)

// invKernel mixes row-invariant scalars (a constant, 1/n, their product,
// its square root) with row-dependent ones (a loaded scalar, a sum, and
// arithmetic mixing either with an invariant one), a guard and a store.
func invKernel(t *testing.T) *ir.Kernel {
	b := ir.NewBuilder("Inv", "test")
	dst := b.Array("dst", ir.RowOut, "")
	st := b.Array("st", ir.RowScalarOut, "")
	x := b.Array("x", ir.RowIn, "")
	g := b.Array("g", ir.RowScalarIn, "")
	c := b.Const(2)            // s0 invariant
	inv := b.InvLen()          // s1 invariant
	p := b.Sqrt(b.Mul(c, inv)) // s2, s3 invariant
	r := b.LoadRow(g)          // s4 per row
	q := b.Add(r, p)           // s5 per row
	b.Guard(q, -10, 10)        // statement 6
	acc := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) { l.Acc(acc, l.Load(x)) }) // statement 7
	sum := b.Mul(b.Sum(acc), p)                               // s6, s7 per row
	b.StoreRow(st, sum)
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Mul(l.Load(x), l.Splat(q))) })
	k, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRowInvariant(t *testing.T) {
	k := invKernel(t)
	want := []bool{true, true, true, true, false, false, false, false}
	if got := RowInvariant(k); !reflect.DeepEqual(got, want) {
		t.Errorf("RowInvariant = %v, want %v", got, want)
	}
	// The statements that define s0..s3 may move before the row loop;
	// none of the others, least of all the guard and the store.
	hoist := Hoistable(k, RowInvariant(k))
	var got []int
	for si, h := range hoist {
		if h {
			got = append(got, si)
		}
	}
	if want := []int{0, 1, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("Hoistable statements %v, want %v (body %d statements)", got, want, len(k.Body))
	}
}

func TestGuards(t *testing.T) {
	k := invKernel(t)
	if got := Guards(k); !reflect.DeepEqual(got, []int{6}) {
		t.Errorf("Guards = %v, want [6]", got)
	}
	if !HasGuard(k) {
		t.Error("HasGuard = false for a guarded kernel")
	}
	b := ir.NewBuilder("Plain", "test")
	dst := b.Array("dst", ir.RowOut, "")
	x := b.Array("x", ir.RowIn, "")
	b.Loop(func(l *ir.LoopBuilder) { l.Store(dst, l.Load(x)) })
	plain, err := b.Kernel()
	if err != nil {
		t.Fatal(err)
	}
	if HasGuard(plain) || Guards(plain) != nil {
		t.Error("a kernel without guards reports one")
	}
}

func TestSumLevels(t *testing.T) {
	for _, c := range []struct{ terms, want int }{
		{0, WithSupers}, {1, ChunkOnly}, {ir.SumChunk, ChunkOnly}, {ir.SumChunk + 1, WithTotals},
		{ir.SumChunk * ir.SumTotal, WithTotals}, {ir.SumChunk*ir.SumTotal + 1, WithSupers}, {1 << 20, WithSupers},
	} {
		if got := SumLevels(c.terms); got != c.want {
			t.Errorf("SumLevels(%d) = %d, want %d", c.terms, got, c.want)
		}
	}
	for _, c := range []struct{ folds, want int }{
		{0, ChunkOnly}, {1, WithTotals}, {ir.SumTotal, WithTotals}, {ir.SumTotal + 1, WithSupers},
	} {
		if got := FoldLevels(c.folds); got != c.want {
			t.Errorf("FoldLevels(%d) = %d, want %d", c.folds, got, c.want)
		}
	}
	// The levels agree with ir.BlockedSum: a lane of SuperTerms terms has
	// moved its totals into no super-total yet, one more term has.
	if SuperTerms != ir.SumChunk*ir.SumTotal || ChunkTerms != ir.SumChunk {
		t.Errorf("thresholds %d, %d do not follow ir.SumChunk and ir.SumTotal", ChunkTerms, SuperTerms)
	}
}

func TestRetry(t *testing.T) {
	// Pressure until the configuration is at most 2: 8, 4, 2 tried.
	var tried []int
	r, err := Retry(8, func(c int) (string, error) {
		tried = append(tried, c)
		if c > 2 {
			return "", Pressure(fmt.Errorf("%d does not fit", c))
		}
		return fmt.Sprint("fits at ", c), nil
	}, func(c int, _ string) (int, bool) { return c / 2, c > 1 })
	if err != nil || r != "fits at 2" || !reflect.DeepEqual(tried, []int{8, 4, 2}) {
		t.Errorf("Retry = %q, %v after %v", r, err, tried)
	}
	// Nothing fits: the last attempt's error, message unchanged.
	tried = nil
	_, err = Retry(4, func(c int) (int, error) {
		tried = append(tried, c)
		return c, Pressure(fmt.Errorf("%d does not fit", c))
	}, func(c int, _ int) (int, bool) { return c / 2, c > 1 })
	if !errors.Is(err, ErrPressure) || err.Error() != "1 does not fit" || !reflect.DeepEqual(tried, []int{4, 2, 1}) {
		t.Errorf("Retry error %v after %v", err, tried)
	}
	// Any other error stops at once.
	tried = nil
	other := errors.New("no lowering")
	_, err = Retry(4, func(c int) (int, error) { tried = append(tried, c); return 0, other },
		func(c int, _ int) (int, bool) { return c / 2, true })
	if err != other || len(tried) != 1 {
		t.Errorf("Retry error %v after %v, want %v after one attempt", err, tried, other)
	}
	if Pressure(nil) != nil {
		t.Error("Pressure(nil) is not nil")
	}
}
