package benchkit

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Reference computes op in float64 (two passes, eps inside the sqrt) with
// the op's default epsilon: the oracle every implementation is checked
// against. beta may be nil.
func Reference(op Op, x, gamma, beta []float32, h int) []float64 {
	return ReferenceEps(op, op.Eps(), x, gamma, beta, h)
}

// ReferenceEps is Reference with the given epsilon.
func ReferenceEps(op Op, eps32 float32, x, gamma, beta []float32, h int) []float64 {
	if _, ok := op.Residual(); ok {
		panic(fmt.Sprintf("benchkit: %s reads f too: its reference is Norm.Reference (OpShape's Oracle)", op))
	}
	if op == BatchNorm {
		return referenceBatch(x, gamma, beta, h, float64(eps32))
	}
	out := make([]float64, len(x))
	eps := float64(eps32)
	for r := 0; r+h <= len(x); r += h {
		row := x[r : r+h]
		mean := 0.0
		if op == LayerNorm {
			for _, v := range row {
				mean += float64(v)
			}
			mean /= float64(h)
		}
		ss := 0.0
		for _, v := range row {
			d := float64(v) - mean
			ss += d * d
		}
		inv := 1 / math.Sqrt(ss/float64(h)+eps)
		for i, v := range row {
			y := (float64(v) - mean) * inv * float64(gamma[i])
			if beta != nil {
				y += float64(beta[i])
			}
			out[r+i] = y
		}
	}
	return out
}

// referenceBatch normalizes each of the h columns of x over its rows.
func referenceBatch(x, gamma, beta []float32, h int, eps float64) []float64 {
	out := make([]float64, len(x))
	rows := len(x) / h
	mean, ss := make([]float64, h), make([]float64, h)
	for r := 0; r < rows; r++ {
		for c, v := range x[r*h : r*h+h] {
			mean[c] += float64(v)
		}
	}
	for c := range mean {
		mean[c] /= float64(rows)
	}
	for r := 0; r < rows; r++ {
		for c, v := range x[r*h : r*h+h] {
			d := float64(v) - mean[c]
			ss[c] += d * d
		}
	}
	for c := range ss {
		ss[c] = 1 / math.Sqrt(ss[c]/float64(rows)+eps)
	}
	for r := 0; r < rows; r++ {
		for c, v := range x[r*h : r*h+h] {
			out[r*h+c] = (float64(v)-mean[c])*ss[c]*float64(gamma[c]) + float64(beta[c])
		}
	}
	return out
}

// Tolerance is the largest accepted |y - ref| / (1 + |ref|): float32
// kernels with any sound summation order stay far below it on the harness's
// inputs; a wrong epsilon, a missing affine term or E[x^2]-mean^2 on offset
// rows do not.
const Tolerance = 1e-4

// Check runs f once on x into dst (first filled with NaN, so that values it
// does not write are caught) and compares with ref. It returns the largest
// relative error seen, and an error when it exceeds Tolerance, when f
// panics, or when f modified x.
func Check(op Op, f Func, dst, x, gamma, beta []float32, ref []float64, h int) (maxErr float64, err error) {
	a := &Args{Out: [][]float32{dst}, In: [][]float32{x}, Gamma: gamma, Beta: beta}
	kf := func(a *Args) { f(a.Out[0], a.In[0], a.Gamma, a.Beta) }
	return checkArgs(kf, a, [][]float64{ref}, nil, arrayNames{}, h)
}

// arrayNames name a kernel's arrays in error messages.
// storage and tol are the shape's row format and tolerance (0: Tolerance).
type arrayNames struct {
	out, in, stats, statIn []string
	storage                string
	tol                    float64
}

func arrayName(names []string, i int, def string) string {
	if i < len(names) {
		return names[i]
	}
	return def
}

// checkArgs is Check for a kernel of any arrays: every row output (Out) and
// per-row output (Stats) is NaN-filled, compared with refOut and refStats,
// and every input (In, Gamma, Beta, Gain, Bias) must be left as it was.
// Each State array is compared with refStats after the Stats, then set
// back to what it held, so that every implementation starts from the same
// state.
func checkArgs(f KernelFunc, a *Args, refOut, refStats [][]float64, names arrayNames, h int) (maxErr float64, err error) {
	var state [][]float32
	for _, st := range a.State {
		state = append(state, slices.Clone(st))
	}
	defer func() {
		for i, st := range state {
			copy(a.State[i], st)
		}
		if e := recover(); e != nil {
			err = fmt.Errorf("panicked: %v", e)
		}
	}()
	tol := names.tol
	if tol == 0 {
		tol = Tolerance
	}
	nan := float32(math.NaN())
	for _, o := range append(slices.Clip(a.Out), a.Stats...) {
		for i := range o {
			o[i] = nan
		}
	}
	for _, o := range a.Out16 {
		for i := range o {
			o[i] = halfNaN(names.storage)
		}
	}
	type saved struct {
		name     string
		now, was []float32
	}
	var ins []saved
	for i, x := range a.In {
		ins = append(ins, saved{arrayName(names.in, i, "x"), x, slices.Clone(x)})
	}
	for i, x := range a.StatIn {
		ins = append(ins, saved{arrayName(names.statIn, i, "statistic"), x, slices.Clone(x)})
	}
	ins = append(ins, saved{"gamma", a.Gamma, slices.Clone(a.Gamma)}, saved{"beta", a.Beta, slices.Clone(a.Beta)},
		saved{"gain", a.Gain, slices.Clone(a.Gain)}, saved{"bias", a.Bias, slices.Clone(a.Bias)})
	var ins16 [][2][]uint16
	for _, x := range a.In16 {
		ins16 = append(ins16, [2][]uint16{x, slices.Clone(x)})
	}
	f(a)
	for i, in := range ins16 {
		if !slices.Equal(in[0], in[1]) {
			for _, in := range ins16 {
				copy(in[0], in[1])
			}
			return 0, fmt.Errorf("modified its input %s", arrayName(names.in, i, "x"))
		}
	}
	for _, in := range ins {
		for i := range in.now {
			if math.Float32bits(in.now[i]) != math.Float32bits(in.was[i]) {
				for _, in := range ins {
					copy(in.now, in.was)
				}
				return 0, fmt.Errorf("modified its input %s at %d", in.name, i)
			}
		}
	}
	// compare checks one output; per is the number of values per row.
	compare := func(what string, y []float32, ref []float64, per int) error {
		worst, e := relErr(y, ref)
		maxErr = max(maxErr, e)
		if e > tol {
			where := fmt.Sprintf("row %d", worst/per)
			if per > 1 {
				where += fmt.Sprintf(" col %d", worst%per)
			}
			if what != "" {
				where = what + " " + where
			}
			return fmt.Errorf("%s: got %g, want %g (relative error %.3g > %.3g)", where, y[worst], ref[worst], e, tol)
		}
		return nil
	}
	for i, y := range a.Out16 {
		if err := compare(arrayName(names.out, i, ""), widen(names.storage, y), refOut[i], h); err != nil {
			return maxErr, err
		}
	}
	for i, y := range a.Out {
		if err := compare(arrayName(names.out, i, ""), y, refOut[i], h); err != nil {
			return maxErr, err
		}
	}
	for i, y := range append(slices.Clip(a.Stats), a.State...) {
		if err := compare(arrayName(names.stats, i, "stat"), y, refStats[i], 1); err != nil {
			return maxErr, err
		}
	}
	return maxErr, nil
}

// relErr is the largest |y - ref| / (1 + |ref|) and where it is; NaN counts
// as +Inf.
func relErr(y []float32, ref []float64) (worst int, maxErr float64) {
	for i, v := range y {
		e := math.Abs(float64(v)-ref[i]) / (1 + math.Abs(ref[i]))
		if !(e <= maxErr) { // NaN too
			maxErr, worst = e, i
			if math.IsNaN(e) {
				return i, math.Inf(1)
			}
		}
	}
	return worst, maxErr
}

// Stats summarizes samples.
type Stats struct {
	N                          int
	Min, P25, Median, P75, Max float64
}

// Summarize computes the order statistics of v (which it does not modify).
func Summarize(v []float64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return Stats{N: len(s), Min: s[0], P25: quantile(s, 0.25), Median: quantile(s, 0.5), P75: quantile(s, 0.75), Max: s[len(s)-1]}
}

// quantile interpolates linearly between the order statistics of sorted s.
func quantile(s []float64, q float64) float64 {
	p := q * float64(len(s)-1)
	i := int(p)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (p-float64(i))*(s[i+1]-s[i])
}
