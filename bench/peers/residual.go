package peers

import (
	"fmt"

	"github.com/normgen/normgen/benchkit"
)

// The fused residual ops (benchkit.AddRMSNorm, AddLayerNorm, DeepNorm):
// sum = alpha*x + f written, dst = the norm of sum. A peer either does it
// in two steps (an add loop, then its own plain norm of sum) or fuses the
// add into its first pass by hand.

// Residual is the kernel of a residual op for one shape: alpha is the op's
// factor on x, base its plain norm (RMSNorm or LayerNorm).
type Residual func(s benchkit.Shape, alpha float32, base benchkit.Op) (benchkit.KernelFunc, string)

// withResidual gives im the residual ops, by fused; every other op stays
// with im.Prepare.
func withResidual(im benchkit.Impl, fused Residual) benchkit.Impl {
	plain := im
	im.PrepareArgs = func(s benchkit.Shape) (benchkit.KernelFunc, string) {
		if n, ok := s.Op.Residual(); ok {
			return fused(s, float32(n.Alpha), s.Op.Base())
		}
		return benchkit.PrepareKernel(plain, s)
	}
	return im
}

// AddThen is the unfused form of the residual ops: add(sum, x, f, alpha),
// then prepare's plain norm (for the op's base, same H and epsilon) of sum
// into dst: two passes over memory where a fused kernel makes one.
func AddThen(add func(sum, x, f []float32, alpha float32), prepare func(benchkit.Shape) (benchkit.Func, string)) Residual {
	return func(s benchkit.Shape, alpha float32, base benchkit.Op) (benchkit.KernelFunc, string) {
		bs := benchkit.OpShape(base, s.H, s.Rows, s.Level)
		if bs.Epsilon() != s.Epsilon() {
			return nil, fmt.Sprintf("%s's epsilon %g differs from %s's %g", base, bs.Epsilon(), s.Op, s.Epsilon())
		}
		norm, why := prepare(bs)
		if norm == nil {
			return nil, why
		}
		return func(a *benchkit.Args) {
			x, f, dst, sum := a.In[0], a.In[1], a.Out[0], a.Out[1]
			add(sum, x, f, alpha)
			norm(dst, sum, a.Gamma, a.Beta)
		}, ""
	}
}

// naiveAdd is the add loop a user writes: sum[i] = alpha*x[i] + f[i].
func naiveAdd(sum, x, f []float32, alpha float32) {
	x, f = x[:len(sum)], f[:len(sum)]
	for i := range sum {
		sum[i] = alpha*x[i] + f[i]
	}
}

// Add returns the fastest add loop built in for an instruction set's
// unfused peer (isa as normgen names it: avx512, avx2, purego...) and
// says what it is: archsimd's Float32x16 or Float32x8 FMA loop where built
// in and the CPU has it, the naive Go loop otherwise (and for purego, whose
// peer is pure Go).
func Add(isa string) (func(sum, x, f []float32, alpha float32), string) {
	if a, about := simdAdd(isa); a != nil {
		return a, about
	}
	return naiveAdd, "a Go loop sum[i] = alpha*x[i] + f[i]"
}

// simdAdd is set by the archsimd peer's file.
var simdAdd = func(string) (func(sum, x, f []float32, alpha float32), string) { return nil, "" }
