package benchkit

import (
	"fmt"
	"math"
)

// Tensor is a kernel over an [N, C, L] tensor (N images, C channels, L
// spatial positions, channels first) as a normgen spec describes it: the
// fields of spec.Kernel that define its math for the axes other than
// "last". Each value is normalized within its set:
//
//	channels: the C values of one image's position (ConvNeXt's LayerNorm)
//	batch:    one channel's N*L values (BatchNorm in training; with
//	          Statistic "none", the affine alone: BatchNorm at inference)
//	groups:   one image's group of channels, all positions (GroupNorm,
//	          InstanceNorm with GroupSize 1)
//
// y = (x-mu)*rstd*(gamma_c+ScaleOffset) + beta_c with mu the set's mean
// (when Mean), rstd = 1/sqrt(mean((x-mu)^2)+Epsilon) (1 with "none"), and
// gamma, beta one value per channel c (named gain and bias on axis batch).
// SaveStats writes each set's mean (when Mean) and rstd; Running updates
// each channel's running mean and variance (axis batch).
type Tensor struct {
	Axis              string // "channels", "batch" or "groups"
	Groups, GroupSize int    // axis groups: the number of groups, or the channels in each
	Mean              bool
	Statistic         string // "variance", "rms", "none"; "" is variance with Mean, rms without
	Epsilon           float64
	Scale             bool
	ScaleOffset       float64
	Shift             bool
	SaveStats         bool
	// Running is "pytorch" (running = (1-m)*running + m*batch, unbiased
	// variance) or "onnx" (running = m*running + (1-m)*batch, biased), or
	// empty: no running statistics. Momentum is m.
	Running  string
	Momentum float64
}

func (t Tensor) norm() Norm { return Norm{Mean: t.Mean, Statistic: t.Statistic} }

// Arrays names the kernel's arrays by kind, each in the order of normgen's
// generated entry points, whose signature is outputs (dst, then the
// per-set statistics), then x, then the parameters, then the per-channel
// running statistics (read and updated), then channels and spatial (or
// spatial alone for a fixed channel count).
func (t Tensor) Arrays() (outputs, stats, state, inputs, params []string) {
	outputs, inputs = []string{"dst"}, []string{"x"}
	if t.SaveStats && t.norm().statistic() != "none" {
		if t.Mean {
			stats = append(stats, "mean")
		}
		stats = append(stats, "rstd")
	}
	scale, shift := "gamma", "beta"
	if t.Axis == "batch" {
		scale, shift = "gain", "bias"
	}
	if t.Scale {
		params = append(params, scale)
	}
	if t.Shift {
		params = append(params, shift)
	}
	if t.Running != "" {
		state = []string{"runMean", "runVar"}
	}
	return outputs, stats, state, inputs, params
}

// groupSize is the channels of one group of axis groups.
func (t Tensor) groupSize(c int) int {
	if t.GroupSize > 0 {
		return t.GroupSize
	}
	if t.Groups > 0 {
		return c / t.Groups
	}
	return 1
}

// Fits reports why c channels do not suit the kernel ("" when they do).
func (t Tensor) Fits(c int) string {
	if t.Axis == "groups" {
		if t.Groups > 0 && c%t.Groups != 0 {
			return fmt.Sprintf("C = %d is not a multiple of the %d groups", c, t.Groups)
		}
		if t.GroupSize > 0 && c%t.GroupSize != 0 {
			return fmt.Sprintf("C = %d is not a multiple of the group size %d", c, t.GroupSize)
		}
	}
	return ""
}

// sets describes the normalization sets of x[n, c, l]: how many, the
// values in each, and the index in x of a set's j-th value.
func (t Tensor) sets(n, c, l int) (count, size int, at func(set, j int) int) {
	switch t.Axis {
	case "channels":
		return n * l, c, func(s, j int) int { return (s/l)*c*l + j*l + s%l }
	case "batch":
		return c, n * l, func(s, j int) int { return (j/l)*c*l + s*l + j%l }
	}
	gs := t.groupSize(c)
	g := c / gs
	return n * g, gs * l, func(s, j int) int { return (s/g)*c*l + (s%g)*gs*l + j }
}

// Oracle computes, in float64 and two passes, the kernel's outputs on
// x[N, a.Channels, a.Spatial]: dst, then the per-set statistics, then the
// running statistics after the update from their values in a.State. The
// constants are rounded to float32 first, as the generated code holds them.
func (t Tensor) Oracle(a *Args, h int) (out, stats [][]float64) {
	x, c, l := a.In[0], a.Channels, a.Spatial
	n := len(x) / (c * l)
	count, size, at := t.sets(n, c, l)
	stat := t.norm().statistic()
	eps := float64(float32(t.Epsilon))
	offset := float64(float32(t.ScaleOffset))
	dst := make([]float64, len(x))
	mus, rstds, vars := make([]float64, count), make([]float64, count), make([]float64, count)
	for s := range count {
		mu := 0.0
		if t.Mean {
			for j := range size {
				mu += float64(x[at(s, j)])
			}
			mu /= float64(size)
		}
		rstd, v := 1.0, 0.0
		if stat != "none" {
			for j := range size {
				d := float64(x[at(s, j)]) - mu
				v += d * d
			}
			v /= float64(size)
			rstd = 1 / math.Sqrt(v+eps)
		}
		mus[s], rstds[s], vars[s] = mu, rstd, v
		for j := range size {
			i := at(s, j)
			ch := (i / l) % c
			y := (float64(x[i]) - mu) * rstd
			if t.Scale {
				y *= float64(a.Gamma[ch]) + offset
			}
			if t.Shift {
				y += float64(a.Beta[ch])
			}
			dst[i] = y
		}
	}
	out = [][]float64{dst}
	if t.SaveStats && stat != "none" {
		if t.Mean {
			stats = append(stats, mus)
		}
		stats = append(stats, rstds)
	}
	if t.Running != "" {
		m := float64(float32(t.Momentum))
		keep, take := 1-m, m // pytorch: m weights the batch
		if t.Running == "onnx" {
			keep, take = m, 1-m
		}
		rm, rv := make([]float64, c), make([]float64, c)
		for ch := range c {
			v := vars[ch]
			if t.Running == "pytorch" {
				v *= float64(size) / float64(size-1)
			}
			rm[ch] = keep*float64(a.State[0][ch]) + take*mus[ch]
			rv[ch] = keep*float64(a.State[1][ch]) + take*v
		}
		stats = append(stats, rm, rv)
	}
	return out, stats
}

// TensorKernel is one tensor kernel of a spec and the channel counts to
// time it at.
type TensorKernel struct {
	Name   string // the spec's kernel name
	Tensor Tensor
	// Channels are the C values timed: the spec's hidden sizes (axis
	// channels), else DefaultChannels (rounded up to a multiple of the
	// groups).
	Channels []int
}

// DefaultChannels are the channel counts a tensor kernel without hidden
// sizes is timed at: a ResNet's first and third stage widths.
var DefaultChannels = []int{64, 256}

// TensorSpatial is the number of positions L of a tensor shape, by level:
// 8x8 in cache, ResNet's 56x56 from memory.
var TensorSpatial = map[Level]int{L2: 64, DRAM: 56 * 56}

// Shapes returns the kernel's shapes: for every channel count C, x[N, C,
// L] with L from TensorSpatial and N making x about l2Bytes (level L2),
// then about dramBytes (level DRAM), at least one image. A zero size
// leaves that level out.
func (k TensorKernel) Shapes(l2Bytes, dramBytes int64) []Shape {
	op := RMSNorm
	if k.Tensor.Mean {
		op = LayerNorm
	}
	outputs, stats, state, inputs, _ := k.Tensor.Arrays()
	var out []Shape
	for _, level := range []Level{L2, DRAM} {
		size := l2Bytes
		if level == DRAM {
			size = dramBytes
		}
		if size <= 0 {
			continue
		}
		for _, c := range k.Channels {
			l := TensorSpatial[level]
			n := rowsFor(size, c*l)
			count, _, _ := k.Tensor.sets(n, c, l)
			s := Shape{
				Op: op, H: c * l, Rows: n, Level: level, Kernel: k.Name, Eps: float32(k.Tensor.Epsilon),
				Inputs: inputs, Outputs: outputs, Stats: stats, State: state, Oracle: k.Tensor.Oracle,
				Channels: c, Spatial: l, StatLen: count,
			}
			out = append(out, s)
		}
	}
	return out
}
