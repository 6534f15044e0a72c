package peers

import (
	"strings"

	"github.com/normgen/normgen/benchkit"
)

// Half-storage ops: LayerNorm, RMSNorm and AddRMSNorm over rows held as
// bf16 or f16 bits ([]uint16), float32 parameters and arithmetic. Their
// names are the storage's prefix on the op's: BF16LayerNorm, F16RMSNorm.

// HalfOps lists them, by the names -ops takes.
var HalfOps = func() []string {
	var out []string
	for _, p := range []string{"BF16", "F16"} {
		for _, op := range []benchkit.Op{benchkit.LayerNorm, benchkit.RMSNorm, benchkit.AddRMSNorm} {
			out = append(out, p+op.String())
		}
	}
	return out
}()

// ParseHalf splits a half op's name into its storage and float32 op.
func ParseHalf(name string) (storage string, op benchkit.Op, ok bool) {
	for _, p := range []string{"BF16", "F16"} {
		rest, found := strings.CutPrefix(name, p)
		if !found {
			continue
		}
		for _, o := range []benchkit.Op{benchkit.LayerNorm, benchkit.RMSNorm, benchkit.AddRMSNorm} {
			if rest == o.String() {
				return strings.ToLower(p), o, true
			}
		}
	}
	return "", 0, false
}

// HalfShape is op over rows of h values in the storage format, x about
// the same number of elements as the float32 shape of that level (so half
// the bytes): rows is the float32 shape's row count.
func HalfShape(storage string, op benchkit.Op, h, rows int, level benchkit.Level) benchkit.Shape {
	s := benchkit.OpShape(op, h, rows, level)
	s.Storage = storage
	s.Kernel = strings.ToUpper(storage) + op.String()
	if s.Oracle == nil {
		// The plain ops: Norm's oracle (the general form) with the op's
		// epsilon and affine terms.
		n := benchkit.Norm{Mean: op == benchkit.LayerNorm, Epsilon: float64(op.Eps()), Scale: true, Shift: op.HasShift()}
		outputs, stats, inputs, _ := n.Arrays()
		s.Inputs, s.Outputs, s.Stats, s.Oracle = inputs, outputs, stats, n.Oracle
	}
	return s
}

// naiveHalf is the half-storage ops as a user without half kernels writes
// them: widen the row arrays into float32 buffers, run the naive float32
// kernel, round the outputs back.
func naiveHalf(s benchkit.Shape) (benchkit.KernelFunc, string) {
	n := s.H * s.Rows
	base, why := benchkit.PrepareKernel(Naive, benchkit.OpShape(s.Op, s.H, s.Rows, s.Level))
	if base == nil {
		return nil, why
	}
	b := &benchkit.Args{}
	for range s.Inputs {
		b.In = append(b.In, make([]float32, n))
	}
	for range s.Outputs {
		b.Out = append(b.Out, make([]float32, n))
	}
	to, from := benchkit.HalfFuncs(s.Storage)
	return func(a *benchkit.Args) {
		for i, x := range a.In16 {
			in := b.In[i]
			for j, v := range x {
				in[j] = from(v)
			}
		}
		b.Gamma, b.Beta = a.Gamma, a.Beta
		base(b)
		for i, y := range b.Out {
			out := a.Out16[i]
			for j, v := range y {
				out[j] = to(v)
			}
		}
	}, ""
}
