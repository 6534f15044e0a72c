package benchkit

import (
	"fmt"
	"math"
)

// Norm is a row normalization kernel as a normgen spec describes it: the
// fields of spec.Kernel that define its math. The program `normgen bench`
// writes describes each kernel of the user's spec with one, and checks the
// generated code against Reference before timing it.
//
// Per row of H values (the names are those of the generated entry points):
//
//	s    = Alpha*x + f                       (Residual; else s = x)
//	mu   = mean(s)                           (Mean; else mu = 0)
//	rstd = 1/sqrt(mean((s-mu)^2) + Epsilon)   (Statistic variance or rms)
//	       1/sqrt(sum(s^2) + Epsilon)         (l2: no 1/H)
//	       1                                  (none: the affine alone)
//	dst  = (s-mu)*rstd*(gamma+ScaleOffset) + beta
//
// with the factor only when Scale and beta only when Shift; with
// AffinePerRow the scale and shift are gain and bias, one value per row,
// instead of gamma and beta, one per element. sum = s when StoreSum; mean =
// mu (when Mean) and rstd per row when SaveStats (never with none, which
// has no statistic).
type Norm struct {
	Mean bool // subtract the row mean (LayerNorm); else divide by the RMS (RMSNorm)
	// Statistic is what the row is divided by: "variance" (with Mean), "rms",
	// "l2" (the sum of squares, WeightNorm's ||s||^2) or "none" (nothing:
	// the affine alone); "" is variance with Mean and rms without.
	Statistic    string
	Epsilon      float64 // added inside the square root
	Scale        bool    // multiply by gamma (gain) + ScaleOffset
	ScaleOffset  float64 // Gemma's (1 + gamma): 1
	Shift        bool    // add beta (bias)
	AffinePerRow bool    // the scale and shift are gain and bias, one value per row
	Residual     bool    // normalize s = Alpha*x + f, f a second row input
	Alpha        float64 // the residual stream's factor (DeepNorm's derived alpha); 0 means 1
	StoreSum     bool    // also write s (with Residual)
	SaveStats    bool    // also write each row's mean (when Mean) and rstd
}

// statistic is n.Statistic with the default filled in; it panics on a
// value that is not in Statistics.
func (n Norm) statistic() string {
	switch n.Statistic {
	case "":
		if n.Mean {
			return "variance"
		}
		return "rms"
	case "variance", "rms", "l2", "none":
		return n.Statistic
	}
	panic(fmt.Sprintf("benchkit: Norm.Statistic %q; allowed: variance, rms, l2, none or empty", n.Statistic))
}

// saves reports whether the kernel writes per-row statistics.
func (n Norm) saves() bool { return n.SaveStats && n.statistic() != "none" }

// Arrays names the kernel's arrays by kind, each in the order of normgen's
// generated entry points, whose signature is outputs (row outputs, then
// per-row outputs), then row inputs, then parameters: for example
// AddLayerNorm768(dst, sum, x, f, gamma, beta). The parameters are gamma
// and beta (H values each, Args.Gamma and Args.Beta), or with AffinePerRow
// gain and bias (one value per row, Args.Gain and Args.Bias).
func (n Norm) Arrays() (outputs, stats, inputs, params []string) {
	outputs, inputs = []string{"dst"}, []string{"x"}
	if n.Residual {
		inputs = append(inputs, "f")
		if n.StoreSum {
			outputs = append(outputs, "sum")
		}
	}
	if n.saves() {
		if n.Mean {
			stats = append(stats, "mean")
		}
		stats = append(stats, "rstd")
	}
	scale, shift := "gamma", "beta"
	if n.AffinePerRow {
		scale, shift = "gain", "bias"
	}
	if n.Scale {
		params = append(params, scale)
	}
	if n.Shift {
		params = append(params, shift)
	}
	return outputs, stats, inputs, params
}

// NormOut is what Reference computes; an output the kernel does not have is
// nil.
type NormOut struct {
	Dst, Sum   []float64 // rows*H values each
	Mean, Rstd []float64 // one value per row
}

// Reference computes the kernel in float64, two passes (mean, then squared
// deviations), on len(x)/h rows. f is the residual input (ignored without
// Residual); gamma and beta are ignored without Scale and Shift, and hold H
// values each, or with AffinePerRow one per row (gain and bias). The
// constants are rounded to float32 first, as the generated code holds them.
func (n Norm) Reference(x, f, gamma, beta []float32, h int) NormOut {
	rows := len(x) / h
	stat := n.statistic()
	out := NormOut{Dst: make([]float64, rows*h)}
	if n.Residual && n.StoreSum {
		out.Sum = make([]float64, rows*h)
	}
	if n.saves() {
		if n.Mean {
			out.Mean = make([]float64, rows)
		}
		out.Rstd = make([]float64, rows)
	}
	eps := float64(float32(n.Epsilon))
	alpha := 1.0
	if n.Alpha != 0 {
		alpha = float64(float32(n.Alpha))
	}
	offset := float64(float32(n.ScaleOffset))
	s := make([]float64, h)
	for r := range rows {
		row := r * h
		for i := range s {
			v := float64(x[row+i])
			if n.Residual {
				v = alpha*v + float64(f[row+i])
			}
			s[i] = v
		}
		mu := 0.0
		if n.Mean {
			for _, v := range s {
				mu += v
			}
			mu /= float64(h)
		}
		rstd := 1.0
		if stat != "none" {
			ss := 0.0
			for _, v := range s {
				ss += (v - mu) * (v - mu)
			}
			if stat != "l2" {
				ss /= float64(h)
			}
			rstd = 1 / math.Sqrt(ss+eps)
		}
		// The per-row scale and shift, or those of element i.
		param := func(p []float32, i int) float64 {
			if n.AffinePerRow {
				return float64(p[r])
			}
			return float64(p[i])
		}
		for i, v := range s {
			y := (v - mu) * rstd
			if n.Scale {
				y *= param(gamma, i) + offset
			}
			if n.Shift {
				y += param(beta, i)
			}
			out.Dst[row+i] = y
		}
		if out.Sum != nil {
			copy(out.Sum[row:row+h], s)
		}
		if out.Mean != nil {
			out.Mean[r] = mu
		}
		if out.Rstd != nil {
			out.Rstd[r] = rstd
		}
	}
	return out
}

// Oracle is Reference as Shape.Oracle: a's arrays are in the order of
// Arrays, the parameters in a.Gain and a.Bias with AffinePerRow.
func (n Norm) Oracle(a *Args, h int) (out, stats [][]float64) {
	var f []float32
	if n.Residual {
		f = a.In[1]
	}
	scale, shift := a.Gamma, a.Beta
	if n.AffinePerRow {
		scale, shift = a.Gain, a.Bias
	}
	ref := n.Reference(a.In[0], f, scale, shift, h)
	out = [][]float64{ref.Dst}
	if ref.Sum != nil {
		out = append(out, ref.Sum)
	}
	if ref.Mean != nil {
		stats = append(stats, ref.Mean)
	}
	if ref.Rstd != nil {
		stats = append(stats, ref.Rstd)
	}
	return out, stats
}

// NormKernel is one kernel of a spec and the hidden sizes to time it at.
type NormKernel struct {
	Name   string // the spec's kernel name: the entry points are Name<H>
	Norm   Norm
	Hidden []int
}

// Sizes of x that the standard shapes use: about 128 KiB, which stays in
// a core's L2 cache, and 32 MiB, which comes from DRAM.
const (
	L2Bytes   = 128 << 10
	DRAMBytes = 32 << 20
)

// Shapes returns the kernel's shapes: for every hidden size, one with x of
// about l2Bytes (level L2) and one with x of about dramBytes (level DRAM),
// the L2 ones first. A zero size leaves that level out.
func (k NormKernel) Shapes(l2Bytes, dramBytes int64) []Shape {
	op := RMSNorm
	if k.Norm.Mean {
		op = LayerNorm
	}
	outputs, stats, inputs, _ := k.Norm.Arrays()
	var out []Shape
	for _, level := range []Level{L2, DRAM} {
		size := l2Bytes
		if level == DRAM {
			size = dramBytes
		}
		if size <= 0 {
			continue
		}
		for _, h := range k.Hidden {
			out = append(out, Shape{
				Op: op, H: h, Rows: rowsFor(size, h), Level: level,
				Kernel: k.Name, Eps: float32(k.Norm.Epsilon),
				Inputs: inputs, Outputs: outputs, Stats: stats, Oracle: k.Norm.Oracle,
				AffinePerRow: k.Norm.AffinePerRow,
			})
		}
	}
	return out
}

// rowsFor is the number of rows of h values nearest size bytes, at least 1.
func rowsFor(size int64, h int) int {
	return max(int(math.Round(float64(size)/float64(4*h))), 1)
}

// Key names a kernel's entry point for one hidden size in FuncImpl's map.
func Key(kernel string, h int) string { return fmt.Sprintf("%s/%d", kernel, h) }

// FuncImpl is an implementation made of entry points, one per kernel and
// hidden size, keyed by Key(s.Kernel, s.H) (s.Label() when s.Kernel is
// empty; Key(s.Kernel, s.Channels) for a tensor shape). A shape whose key is absent is n/a, for the reason missing.
func FuncImpl(name, about string, funcs map[string]KernelFunc, missing string) Impl {
	return Impl{Name: name, About: about, PrepareArgs: func(s Shape) (KernelFunc, string) {
		if f, ok := funcs[s.key()]; ok {
			return f, ""
		}
		return nil, missing
	}}
}

// Wrong lists the implementations and shapes that failed the reference
// check, one line each.
func (rep *Report) Wrong() []string {
	var out []string
	for _, sr := range rep.Shapes {
		for _, r := range sr.Results {
			if r.Status == Wrong {
				out = append(out, fmt.Sprintf("%s at %s: %s", r.Impl, sr.Shape, r.Note))
			}
		}
	}
	return out
}
