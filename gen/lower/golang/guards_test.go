package golang

import (
	"math"
	"math/rand"
	"testing"

	"github.com/normgen/normgen/gen/algo"
	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

func guardCount(k *ir.Kernel) int {
	n := 0
	for _, st := range k.Body {
		if s, ok := st.(*ir.Scalar); ok && s.Code == ir.SGuard {
			n++
		}
	}
	return n
}

// guardedColumns are the guarded Columns kernels: BatchNorm's backward
// first, then its forward with PyTorch's and ONNX's running statistics.
func guardedColumns(t *testing.T) []*ir.Kernel {
	t.Helper()
	bw, err := algo.NewBackward(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true, AffinePerRow: true, SaveStats: true, Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	kernels := []*ir.Kernel{bw.Columns}
	for _, conv := range []string{"pytorch", "onnx"} {
		k, err := algo.BatchColumns(spec.Kernel{Name: "BN", Axis: "batch", Mean: true, Epsilon: 1e-5, Scale: true, Shift: true,
			AffinePerRow: true, SaveStats: true, Running: &spec.Running{Convention: conv, Momentum: 0.1}})
		if err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, k)
	}
	return kernels
}

// TestImpliedGuardsSameColumns: the Columns kernels without their implied
// guards abandon exactly the columns the full kernels abandon, and give the
// same bits elsewhere; what a column's float64 form reads (every array read)
// is the same when it is abandoned. Columns are drawn from hostile values.
func TestImpliedGuardsSameColumns(t *testing.T) {
	kernels := guardedColumns(t)
	bw := kernels[0]
	// The backward keeps one guard per chain of values: mean(u*xhat)'s
	// coefficient and mean(u)'s.
	if got := guardCount(impliedGuards(columnsLinear(bw))); got != 2 {
		t.Errorf("backward: %d guards left, want 2 (of %d)", got, guardCount(columnsLinear(bw)))
	}
	for _, k0 := range kernels {
		full := columnsLinear(k0)
		pruned := impliedGuards(full)
		if guardCount(pruned) >= guardCount(full) {
			t.Errorf("%s: %d guards, none implied", k0.Name, guardCount(full))
		}
		if extra := sameColumns(t, full, pruned); extra != 0 {
			t.Errorf("%s: %d columns abandoned by the pruned kernel only", k0.Name, extra)
		}
	}
}

// TestMergeGuardsSameColumns: the backward's two guards become one, and the
// merged kernels abandon every column the full ones do, give the same bits
// elsewhere, and abandon few more (only where the guarded values sum past
// float32's range).
func TestMergeGuardsSameColumns(t *testing.T) {
	kernels := guardedColumns(t)
	if got := guardCount(mergeGuards(impliedGuards(columnsLinear(kernels[0])))); got != 1 {
		t.Errorf("backward: %d guards left, want 1", got)
	}
	for _, k0 := range kernels {
		full := columnsLinear(k0)
		extra := sameColumns(t, full, mergeGuards(impliedGuards(full)))
		t.Logf("%s: %d of 20000 columns abandoned by the merged kernel only", k0.Name, extra)
		if extra > 20 {
			t.Errorf("%s: %d of 20000 columns abandoned by the merged kernel only", k0.Name, extra)
		}
	}
}

// sameColumns evaluates full and pruned on single columns of hostile
// values, fails the test where pruned completes a column full abandons or
// where both complete with different bits (or abandon with different
// inputs for the float64 form), and returns the number of columns only
// pruned abandons.
func sameColumns(t *testing.T, full, pruned *ir.Kernel) (extra int) {
	t.Helper()
	pool := []float32{0, 1, -1, 0.5, 3, -7, 1e-30, -1e-30, 1e30, -1e30, 3e38, -3e38, 1e-45,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	r := rand.New(rand.NewSource(1))
	const h = 3
	abandoned := 0
	for trial := 0; trial < 20000; trial++ {
		arrays := make([][]float32, len(full.Arrays))
		for i, a := range full.Arrays {
			n := h
			if a.Role.PerRow() {
				n = 1
			}
			arrays[i] = make([]float32, n)
			for j := range arrays[i] {
				if r.Intn(4) == 0 {
					arrays[i][j] = pool[r.Intn(len(pool))]
				} else {
					arrays[i][j] = float32(r.NormFloat64())
				}
			}
		}
		copies := make([][]float32, len(arrays))
		for i := range arrays {
			copies[i] = append([]float32(nil), arrays[i]...)
		}
		a := ir.EvalShape(full, ir.Shape{H: h, Stride: 1}, 1, arrays, 0.1)
		b := ir.EvalShape(pruned, ir.Shape{H: h, Stride: 1}, 1, copies, 0.1)
		switch {
		case a == 0 && b == 1:
			t.Fatalf("%s trial %d: the full kernel abandons the column, the pruned one completes it", full.Name, trial)
		case a == 1 && b == 0:
			extra++
		}
		if a == 0 {
			abandoned++
		}
		for i, arr := range full.Arrays {
			// An abandoned column's outputs are the float64 form's to write.
			if (a == 0 || b == 0) && (arr.Role == ir.RowOut || arr.Role == ir.RowScalarOut) {
				continue
			}
			for j := range arrays[i] {
				if math.Float32bits(arrays[i][j]) != math.Float32bits(copies[i][j]) {
					t.Fatalf("%s trial %d: %s[%d] = %v, pruned %v", full.Name, trial, arr.Name, j, arrays[i][j], copies[i][j])
				}
			}
		}
	}
	if abandoned == 0 {
		t.Errorf("%s: no column abandoned: the hostile values reach no guard", full.Name)
	}
	return extra
}

// TestImpliedGuardsKept: a guard stays where the later value does not
// carry its infinity (a divisor) or where a read-then-written store or a
// loop lies between the two.
func TestImpliedGuardsKept(t *testing.T) {
	in := ir.Array{Name: "in", Role: ir.RowScalarIn, Elem: ir.F32}
	out := ir.Array{Name: "out", Role: ir.RowScalarOut, Elem: ir.F32}
	run := ir.Array{Name: "run", Role: ir.RowScalarInOut, Elem: ir.F32}
	guard := func(s ir.S) *ir.Scalar {
		return &ir.Scalar{Code: ir.SGuard, Dst: -1, Args: []ir.S{s}, Lo: -math.MaxFloat32, Hi: math.MaxFloat32}
	}
	build := func(code ir.ScalarCode, between ...ir.Stmt) *ir.Kernel {
		body := []ir.Stmt{
			&ir.Scalar{Code: ir.SLoad, Dst: 0, Array: 0},
			&ir.Scalar{Code: ir.SConst, Dst: 1, Const: 2},
			guard(0),
		}
		body = append(body, between...)
		body = append(body,
			&ir.Scalar{Code: code, Dst: 2, Args: []ir.S{1, 0}},
			guard(2),
			&ir.Scalar{Code: ir.SStore, Dst: -1, Args: []ir.S{2}, Array: 1})
		return &ir.Kernel{Name: "K", Layout: ir.Columns, Arrays: []ir.Array{in, out, run}, Body: body, NumScalars: 3}
	}
	for _, c := range []struct {
		name string
		k    *ir.Kernel
		want int
	}{
		{"product", build(ir.SMul), 1},
		{"sum", build(ir.SAdd), 1},
		{"divisor", build(ir.SDiv), 2},
		{"pure output stored between", build(ir.SMul, &ir.Scalar{Code: ir.SStore, Dst: -1, Args: []ir.S{0}, Array: 1}), 1},
		{"running value stored between", build(ir.SMul, &ir.Scalar{Code: ir.SStore, Dst: -1, Args: []ir.S{0}, Array: 2}), 2},
		{"loop between", build(ir.SMul, &ir.Loop{}), 2},
	} {
		if got := guardCount(impliedGuards(c.k)); got != c.want {
			t.Errorf("%s: %d guards left, want %d", c.name, got, c.want)
		}
	}
}
