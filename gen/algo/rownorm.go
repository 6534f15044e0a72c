// Package algo holds normgen's algorithm descriptions: each turns a spec
// kernel into one ISA-neutral ir.Kernel. The spec's fields choose the pieces
// (centering, statistic, affine, residual, saved statistics); there is no
// per-variant code path for a backend to know about.
package algo

import (
	"fmt"
	"math"
	"strings"

	"github.com/normgen/normgen/gen/ir"
	"github.com/normgen/normgen/spec"
)

// Build returns the IR of a spec kernel.
func Build(k spec.Kernel) (*ir.Kernel, error) {
	switch k.Axis {
	case "last", "":
		return rowNorm(k)
	}
	return nil, fmt.Errorf("kernel %s: axis %q has no algorithm", k.Name, k.Axis)
}

// rowNorm normalizes each contiguous row:
//
//	s    = alpha*x + f                  (with a residual; else s = x)
//	mu   = K + sum(s-K)/H               (with mean, K = s_0; else mu = 0)
//	var  = sum((s-mu)^2)/H              (two passes: no E[x^2]-mu^2 cancellation)
//	rstd = 1/sqrt(var + eps)
//	y    = (s-mu)*rstd*(gamma+offset) + beta
//
// Arrays follow one order in every signature: outputs first, then inputs,
// then parameters, as in copy(dst, src).
func rowNorm(k spec.Kernel) (*ir.Kernel, error) {
	b := ir.NewBuilder(k.Name, formula(k))

	dst := b.Array("dst", ir.RowOut, "the normalized rows")
	sumOut := -1
	if k.Residual != nil && k.Residual.StoreSum {
		sumOut = b.Array("sum", ir.RowOut, "the residual sum alpha*x + f, the next layer's residual stream")
	}
	meanOut, rstdOut := -1, -1
	if k.SaveStats {
		if k.Mean {
			meanOut = b.Array("mean", ir.RowScalarOut, "each row's mean")
		}
		rstdOut = b.Array("rstd", ir.RowScalarOut, "each row's 1/sqrt(var+eps)")
	}
	x := b.Array("x", ir.RowIn, "the input rows")
	f := -1
	if k.Residual != nil {
		f = b.Array("f", ir.RowIn, "the sublayer output added to the residual stream")
	}
	gamma, beta := -1, -1
	if k.Scale {
		gamma = b.Array("gamma", ir.Param, "the per-element scale")
	}
	if k.Shift {
		beta = b.Array("beta", ir.Param, "the per-element shift")
	}

	// The mean is accumulated around a pivot K, the row's first value of s:
	// sums of s-K stay near the row's spread rather than its offset, so
	// |mean| >> std loses no accuracy, and a constant row gives s-K = 0
	// exactly, hence y = beta exactly. K is computed with the same float32
	// operations as the vector lanes, so that s_0 - K is exactly 0.
	var alpha ir.S = -1
	if f >= 0 && k.Residual.Alpha != 1 {
		alpha = b.Const(float32(k.Residual.Alpha))
	}
	var pivot ir.S = -1
	if k.Mean {
		pivot = b.LoadRow(x)
		if f >= 0 {
			if alpha >= 0 {
				pivot = b.Mul(alpha, pivot)
			}
			pivot = b.Add(pivot, b.LoadRow(f))
		}
	}

	// sumOf loads s for the current elements. With a residual it is
	// recomputed from x and f in every pass rather than stored in the first
	// one: nothing may be written before the guard, so that a row handed
	// back to the caller is untouched, and in-place calls stay correct.
	sumOf := func(l *ir.LoopBuilder) ir.V {
		s := l.Load(x)
		if f >= 0 {
			if alpha >= 0 {
				s = l.Mul(l.Splat(alpha), s)
			}
			s = l.Add(s, l.Load(f))
		}
		return s
	}
	// centered is s - K (with a mean) or s.
	centered := func(l *ir.LoopBuilder, s ir.V) ir.V {
		if pivot < 0 {
			return s
		}
		return l.Sub(s, l.Splat(pivot))
	}

	stat := b.NewAcc()
	b.Loop(func(l *ir.LoopBuilder) {
		s := sumOf(l)
		if k.Mean {
			l.Acc(stat, centered(l, s))
		} else {
			l.AccMul(stat, s, s)
		}
	})
	invLen := b.InvLen()
	meanSq := b.Mul(b.Sum(stat), invLen)
	// deviation is s - mean, computed as (s-K) - d with d = mean - K.
	var d ir.S = -1
	deviation := func(l *ir.LoopBuilder, s ir.V) ir.V {
		v := centered(l, s)
		if d >= 0 {
			v = l.Sub(v, l.Splat(d))
		}
		return v
	}
	if k.Mean {
		d = meanSq
		dev := b.NewAcc()
		b.Loop(func(l *ir.LoopBuilder) {
			t := deviation(l, sumOf(l))
			l.AccMul(dev, t, t)
		})
		meanSq = b.Mul(b.Sum(dev), invLen)
	}
	variance := b.Add(meanSq, b.Const(float32(k.Epsilon)))
	// A float32 sum of squares that overflowed (|s| beyond about 1e19) is
	// Inf; one of squares that underflowed (tiny rows with a tiny epsilon)
	// has lost its precision. Either way the row goes to the float64 path.
	b.Guard(variance, guardLo, math.MaxFloat32)
	rstd := b.Div(b.Const(1), b.Sqrt(variance))
	var offset ir.S = -1
	if k.Scale && k.ScaleOffset != 0 {
		offset = b.Const(float32(k.ScaleOffset))
	}
	b.Loop(func(l *ir.LoopBuilder) {
		s := sumOf(l)
		if sumOut >= 0 {
			l.Store(sumOut, s)
		}
		v := l.Mul(deviation(l, s), l.Splat(rstd))
		switch {
		case k.Scale:
			g := l.Load(gamma)
			if offset >= 0 {
				g = l.Add(g, l.Splat(offset))
			}
			if k.Shift {
				v = l.FMA(v, g, l.Load(beta))
			} else {
				v = l.Mul(v, g)
			}
		case k.Shift:
			v = l.Add(v, l.Load(beta))
		}
		l.Store(dst, v)
	})
	if meanOut >= 0 {
		b.StoreRow(meanOut, b.Add(pivot, d))
	}
	if rstdOut >= 0 {
		b.StoreRow(rstdOut, rstd)
	}
	return b.Kernel()
}

// guardLo is the smallest var+eps trusted from float32 sums: below it, the
// squares of the deviations are near or below float32's smallest normal
// (1.2e-38), and a row of 1<<20 of them would already lose 1e-7 of its sum.
const guardLo = 1e-25

// formula writes the kernel's math for its generated documentation.
func formula(k spec.Kernel) string {
	var sb strings.Builder
	in := "x"
	if k.Residual != nil {
		if k.Residual.Alpha == 1 {
			sb.WriteString("s = x + f; ")
		} else {
			fmt.Fprintf(&sb, "s = %g*x + f; ", float32(k.Residual.Alpha))
		}
		in = "s"
	}
	if k.Mean {
		fmt.Fprintf(&sb, "mu = mean(%s); rstd = 1/sqrt(mean((%s-mu)^2) + %g); y = (%s-mu)*rstd", in, in, k.Epsilon, in)
	} else {
		fmt.Fprintf(&sb, "rstd = 1/sqrt(mean(%s^2) + %g); y = %s*rstd", in, k.Epsilon, in)
	}
	if k.Scale {
		if k.ScaleOffset != 0 {
			fmt.Fprintf(&sb, "*(%g + gamma)", k.ScaleOffset)
		} else {
			sb.WriteString("*gamma")
		}
	}
	if k.Shift {
		sb.WriteString(" + beta")
	}
	return sb.String()
}
