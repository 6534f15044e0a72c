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
		return rowNorm(k, ir.Rows)
	case "channels":
		// One row per spatial position: its C channels, L values apart.
		return rowNorm(k, ir.Columns)
	case "batch", "groups":
		// One row per channel (batch: N segments of L values) or per group
		// of channels (groups: one segment per channel of the group).
		return rowNorm(k, ir.Segments)
	}
	return nil, fmt.Errorf("kernel %s: axis %q has no algorithm", k.Name, k.Axis)
}

// BatchColumns returns the IR of an axis batch kernel for tensors with
// one spatial position ([N, C]): channel c's values are then column c of
// an N×C matrix, which the Columns layout sweeps one lane per channel,
// where the Segments layout would sweep segments of one value. Its name is
// the kernel's followed by "Columns".
func BatchColumns(k spec.Kernel) (*ir.Kernel, error) {
	if k.Axis != "batch" {
		return nil, fmt.Errorf("kernel %s: axis %q has no columns form", k.Name, k.Axis)
	}
	k.Name += "Columns"
	return rowNorm(k, ir.Columns)
}

// rowNorm normalizes each contiguous row:
//
//	s    = alpha*x + f                  (with a residual; else s = x)
//	M    = K + sum(s-K)/H               (with mean, K = s_0: the first pass)
//	t    = s - M                        (the second pass: deviations)
//	c    = sum(t)/H                     (what the first pass got wrong)
//	var  = sum(t^2)/H - c^2             (the corrected two-pass variance;
//	                                     rms: mean(s^2); l2: sum(s^2))
//	mu   = M + c
//	rstd = 1/sqrt(var + eps)
//	y    = ((s-M) - c)*rstd*(gamma+offset) + beta
//
// Every sum follows the IR's blocked summation policy (ir.SumChunk).
//
// gamma and beta hold one value per element, or with AffinePerRow one per
// row (then named gain and bias). Arrays follow one order in every
// signature: outputs first, then inputs, then parameters, as in
// copy(dst, src).
func rowNorm(k spec.Kernel, layout ir.Layout) (*ir.Kernel, error) {
	if !storesSumFirst(k, layout) {
		return rowNormForm(k, layout, form{})
	}
	// The first loop stores s, which the later loops read instead of x
	// and f: one array less to read per pass. A row a guard abandons then
	// has its sum stored, and x may be gone (sum may be x's memory): the
	// fallback normalizes the stored sum, the kernel without its residual.
	plain := k
	plain.Name, plain.Residual = k.Name+"Sum", nil
	fb, err := rowNormForm(plain, layout, form{input: "sum"})
	if err != nil {
		return nil, err
	}
	// Streaming stores would send the sum to memory and read it back:
	// those functions recompute s from x and f in every loop.
	st, err := rowNormForm(k, layout, form{})
	if err != nil {
		return nil, err
	}
	return rowNormForm(k, layout, form{sumFirst: true, fallback: fb, streaming: st})
}

// storesSumFirst reports whether rowNorm's kernel for k stores the
// residual sum in its first loop: float32 rows with a stored sum and a
// statistic (more than one loop). Half storage recomputes s in float32
// in every loop: a sum rounded to the half format is not the s the
// statistics are of.
func storesSumFirst(k spec.Kernel, layout ir.Layout) bool {
	return k.Residual != nil && k.Residual.StoreSum && layout == ir.Rows &&
		(k.Storage == "" || k.Storage == "f32") && k.Stat() != "none"
}

// form is how rowNormForm builds one form of a kernel.
type form struct {
	input     string     // the name of the row input: x unless set
	sumFirst  bool       // store s in the first loop and read it back
	fallback  *ir.Kernel // with sumFirst: ir.Kernel.Fallback
	streaming *ir.Kernel // with sumFirst: ir.Kernel.Streaming
}

// rowNormForm is rowNorm in one form.
func rowNormForm(k spec.Kernel, layout ir.Layout, fm form) (*ir.Kernel, error) {
	input := fm.input
	if input == "" {
		input = "x"
	}
	b := ir.NewBuilder(k.Name, formula(k, input))
	b.SetLayout(layout)
	if fm.sumFirst {
		b.SetFallback(fm.fallback)
		b.SetStreaming(fm.streaming)
	}
	b.SetLayout(layout)
	statistic := k.Stat()
	if (statistic == "variance") != k.Mean {
		return nil, fmt.Errorf("kernel %s: statistic %q does not go with mean: %v", k.Name, statistic, k.Mean)
	}
	normalize := statistic != "none"

	dst := b.Array("dst", ir.RowOut, "the normalized rows")
	sumOut := -1
	if k.Residual != nil && k.Residual.StoreSum {
		sumOut = b.Array("sum", ir.RowOut, "the residual sum alpha*x + f, the next layer's residual stream")
	}
	meanOut, rstdOut := -1, -1
	if k.SaveStats && normalize {
		if k.Mean {
			meanOut = b.Array("mean", ir.RowScalarOut, "each row's mean")
		}
		rstdOut = b.Array("rstd", ir.RowScalarOut, "each row's 1/sqrt(statistic+eps)")
	}
	inputDoc := "the input rows"
	if fm.input != "" {
		inputDoc = "the rows to normalize"
	}
	x := b.Array(input, ir.RowIn, inputDoc)
	f := -1
	if k.Residual != nil {
		f = b.Array("f", ir.RowIn, "the sublayer output added to the residual stream")
	}
	gamma, beta := -1, -1
	switch {
	case k.Scale && k.AffinePerRow:
		gamma = b.Array("gain", ir.RowScalarIn, "each row's scale")
	case k.Scale:
		gamma = b.Array("gamma", ir.Param, "the per-element scale")
	}
	switch {
	case k.Shift && k.AffinePerRow:
		beta = b.Array("bias", ir.RowScalarIn, "each row's shift")
	case k.Shift:
		beta = b.Array("beta", ir.Param, "the per-element shift")
	}
	runMean, runVar := -1, -1
	if k.Running != nil {
		runMean = b.Array("runMean", ir.RowScalarInOut, "each channel's running mean, updated in place")
		runVar = b.Array("runVar", ir.RowScalarInOut, "each channel's running variance, updated in place")
	}

	if k.Storage != "" && k.Storage != "f32" {
		e, ok := ir.ParseElem(k.Storage)
		if !ok {
			return nil, fmt.Errorf("kernel %s: storage %q has no algorithm", k.Name, k.Storage)
		}
		for _, a := range []int{dst, sumOut, x, f} {
			if a >= 0 {
				b.SetElem(a, e)
			}
		}
	}

	var alpha ir.S = -1
	if f >= 0 && k.Residual.Alpha != 1 {
		alpha = b.Name(b.Const(float32(k.Residual.Alpha)), "alpha")
	}
	// sumOf loads s for the current elements. With a residual it is
	// computed from x and f: in every loop, or with sumFirst in the first
	// one, which stores it, and read back from sum in the later ones.
	// Otherwise nothing is written before the guard, so that a row handed
	// back to the caller is untouched.
	sumStored := false
	sumOf := func(l *ir.LoopBuilder) ir.V {
		if sumStored {
			return l.Name(l.Load(sumOut), "s")
		}
		in := "xi"
		if fm.input != "" {
			in = "s"
		}
		s := l.Name(l.Load(x), in)
		if f >= 0 {
			if alpha >= 0 {
				s = l.Mul(l.Splat(alpha), s)
			}
			s = l.Name(l.Add(s, l.Load(f)), "s")
		}
		if fm.sumFirst {
			l.Store(sumOut, s)
			sumStored = true
		}
		return s
	}

	// The mean is accumulated around a pivot K, the row's first value of s:
	// sums of s-K stay near the row's spread rather than its offset, so
	// |mean| >> std loses no accuracy, and a constant row gives s-K = 0
	// exactly, hence y = beta exactly. K is computed with the same float32
	// operations as the vector lanes, so that s_0 - K is exactly 0.
	// The first pass's estimate M = K + sum(s-K)/n then shifts the second
	// pass, whose deviations s-M are small even when K is an outlier
	// (x = [1e7, N(0,1)...]); their mean c is what M got wrong, and comes
	// out of the mean and of the variance: the corrected two-pass algorithm
	// of Chan, Golub and LeVeque, at the old algorithm's cost per element.
	var shift, correction ir.S = -1, -1
	if k.Mean {
		if f < 0 {
			shift = b.Name(b.LoadRow(x), "pivot")
		} else {
			shift = b.Name(b.LoadRow(x), "x0")
			if alpha >= 0 {
				shift = b.Name(b.Mul(alpha, shift), "alphaX0")
			}
			shift = b.Name(b.Add(shift, b.Name(b.LoadRow(f), "f0")), "pivot")
		}
	}
	// deviation is s - mean, computed as (s-shift) - correction; or s.
	deviation := func(l *ir.LoopBuilder, s ir.V) ir.V {
		if shift >= 0 {
			s = l.Sub(s, l.Splat(shift))
		}
		if correction >= 0 {
			s = l.Sub(s, l.Splat(correction))
		}
		return s
	}
	var invLen ir.S = -1
	// average names sum's mean name.
	average := func(sum ir.S, name string) ir.S {
		if statistic == "l2" {
			return sum
		}
		if invLen < 0 {
			invLen = b.Name(b.InvLen(), "invN")
		}
		return b.Name(b.Mul(sum, invLen), name)
	}
	var factor ir.S = -1 // what each deviation is multiplied by
	var running func()   // the running statistics' update, once the guards are past
	if normalize {
		var biased ir.S = -1 // the statistic: named stat
		stat := "variance"
		if k.Mean {
			acc := b.NewAcc()
			b.Loop(func(l *ir.LoopBuilder) { l.Acc(acc, deviation(l, sumOf(l))) })
			shift = b.Name(b.Add(shift, average(b.Name(b.Sum(acc), "pivotSum"), "pivotMean")), "shift")
			// The second pass: deviations t = s-M, their sum and squares.
			sum, squares := b.NewAcc(), b.NewAcc()
			b.Loop(func(l *ir.LoopBuilder) {
				t := l.Name(deviation(l, sumOf(l)), "dev")
				l.Acc(sum, t)
				l.AccMul(squares, t, t)
			})
			correction = average(b.Name(b.Sum(sum), "devSum"), "correction")
			meanSquare := average(b.Name(b.Sum(squares), "squareSum"), "meanSquare")
			biased = b.Name(b.Sub(meanSquare, b.Name(b.Mul(correction, correction), "correctionSq")), "variance")
		} else {
			squares := b.NewAcc()
			b.Loop(func(l *ir.LoopBuilder) {
				s := sumOf(l)
				l.AccMul(squares, s, s)
			})
			stat = "meanSquare"
			if statistic == "l2" {
				stat = "squareSum"
			}
			biased = average(b.Name(b.Sum(squares), "squareSum"), "meanSquare")
		}
		eps := func() ir.S {
			if k.RuntimeEpsilon {
				// The argument is eps; its float64 value reads epsilon.
				return b.Name(b.Arg("eps", "added to the statistic inside the square root"), "epsilon")
			}
			return b.Name(b.Const(float32(k.Epsilon)), "eps")
		}()
		variance := b.Name(b.Add(biased, eps), stat+"Eps")
		// A float32 sum of squares that overflowed (|s| beyond about 1e19)
		// is Inf; one of squares that underflowed (tiny rows with a tiny
		// epsilon) has lost its precision. Either way the row goes to the
		// float64 path.
		b.Guard(variance, guardLo, math.MaxFloat32)
		factor = b.Name(b.Div(b.Const(1), b.Name(b.Sqrt(variance), "std")), "rstd")
		if rstdOut >= 0 {
			defer b.StoreRow(rstdOut, factor)
		}
		var mean ir.S = -1
		if meanOut >= 0 || k.Running != nil {
			mean = b.Name(b.Add(shift, correction), "mean")
		}
		if meanOut >= 0 {
			defer b.StoreRow(meanOut, mean)
		}
		if r := k.Running; r != nil {
			// After the scale's guard below: a rejected row's float64
			// path updates them itself.
			running = func() { updateRunning(b, r, runMean, runVar, mean, biased, invLen) }
		}
	}
	var offset ir.S = -1
	if k.Scale && k.ScaleOffset != 0 {
		offset = b.Name(b.Const(float32(k.ScaleOffset)), "offset")
	}
	// A per-row scale folds into the factor: one scalar per row.
	var rowShift ir.S = -1
	if k.AffinePerRow {
		if k.Scale {
			gain := b.Name(b.LoadRow(gamma), "gain")
			if offset >= 0 {
				gain = b.Name(b.Add(gain, offset), "offsetGain")
			}
			if factor >= 0 {
				gain = b.Name(b.Mul(factor, gain), "scale")
				// rstd*gain beyond float32's range (a huge gain over a
				// narrow row) would give Inf or NaN where y is finite.
				b.Guard(gain, -math.MaxFloat32, math.MaxFloat32)
			}
			factor = gain
		}
		if k.Shift {
			rowShift = b.Name(b.LoadRow(beta), "bias")
		}
	}
	if running != nil {
		running()
	}
	b.Loop(func(l *ir.LoopBuilder) {
		s := sumOf(l)
		if sumOut >= 0 && !fm.sumFirst {
			l.Store(sumOut, s)
		}
		v := deviation(l, s)
		if factor >= 0 {
			v = l.Mul(v, l.Splat(factor))
		}
		var shift ir.V = -1
		switch {
		case rowShift >= 0:
			shift = l.Splat(rowShift)
		case k.Shift:
			shift = l.Load(beta)
		}
		if k.Scale && !k.AffinePerRow {
			g := l.Load(gamma)
			if offset >= 0 {
				g = l.Add(g, l.Splat(offset))
			}
			if shift >= 0 {
				v = l.FMA(v, g, shift)
				shift = -1
			} else {
				v = l.Mul(v, g)
			}
		}
		if shift >= 0 {
			v = l.Add(v, shift)
		}
		l.Store(dst, v)
	})
	return b.Kernel()
}

// updateRunning blends the batch mean and variance into the running
// statistics, after the guard: running = keep*running + take*batch.
// PyTorch weights the batch by the momentum and uses the unbiased variance,
// var*n/(n-1) = var/(1 - 1/n) (n = 1 is refused by the caller); ONNX
// weights the running value by the momentum and uses the biased variance.
func updateRunning(b *ir.Builder, r *spec.Running, runMean, runVar int, mean, biased, invLen ir.S) {
	m, rest := float32(r.Momentum), float32(1-r.Momentum)
	if r.Convention == "onnx" {
		m, rest = rest, m
	}
	keep, take, batchVar := b.Name(b.Const(rest), "keep"), b.Name(b.Const(m), "take"), biased
	if r.Convention != "onnx" {
		batchVar = b.Name(b.Div(biased, b.Name(b.Sub(b.Const(1), invLen), "unbias")), "unbiasedVariance")
	}
	// blend names its values after what: oldMean, keptMean, takenMean, newMean.
	blend := func(array int, batch ir.S, what string) {
		kept := b.Name(b.Mul(keep, b.Name(b.LoadRow(array), "old"+what)), "kept"+what)
		b.StoreRow(array, b.Name(b.Add(kept, b.Name(b.Mul(take, batch), "taken"+what)), "new"+what))
	}
	blend(runMean, mean, "Mean")
	blend(runVar, batchVar, "Var")
}

// guardLo is the smallest var+eps trusted from float32 sums: below it, the
// squares of the deviations are near or below float32's smallest normal
// (1.2e-38), and a row of 1<<20 of them would already lose 1e-7 of its sum.
const guardLo = 1e-25

// formula writes the kernel's math for its generated documentation, its
// constants as the float32 values the kernels compute with.
func formula(k spec.Kernel, in string) string {
	var sb strings.Builder
	if k.Residual != nil {
		if k.Residual.Alpha == 1 {
			sb.WriteString("s = x + f; ")
		} else {
			fmt.Fprintf(&sb, "s = %g*x + f; ", float32(k.Residual.Alpha))
		}
		in = "s"
	}
	eps := fmt.Sprintf("%g", float32(k.Epsilon))
	if k.RuntimeEpsilon {
		eps = "eps"
	}
	switch {
	case k.Mean:
		fmt.Fprintf(&sb, "mu = mean(%s); rstd = 1/sqrt(mean((%s-mu)^2) + %s); y = (%s-mu)*rstd", in, in, eps, in)
	case k.Stat() == "l2":
		fmt.Fprintf(&sb, "rstd = 1/sqrt(sum(%s^2) + %s); y = %s*rstd", in, eps, in)
	case k.Stat() == "none":
		fmt.Fprintf(&sb, "y = %s", in)
	default:
		fmt.Fprintf(&sb, "rstd = 1/sqrt(mean(%s^2) + %s); y = %s*rstd", in, eps, in)
	}
	scale, shift := "gamma", "beta"
	switch {
	case k.Axis == "batch":
		scale, shift = "gain[c]", "bias[c]"
	case k.Axis == "channels" || k.Axis == "groups":
		scale, shift = "gamma[c]", "beta[c]"
	case k.AffinePerRow:
		scale, shift = "gain[row]", "bias[row]"
	}
	if k.Scale {
		if k.ScaleOffset != 0 {
			fmt.Fprintf(&sb, "*(%g + %s)", float32(k.ScaleOffset), scale)
		} else {
			sb.WriteString("*" + scale)
		}
	}
	if k.Shift {
		sb.WriteString(" + " + shift)
	}
	return sb.String()
}
