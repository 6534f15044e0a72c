// Package benchkit times normalization kernels against the cost of copying
// the same bytes, in one process and one run, and reports the result as a
// markdown table and an SVG plot.
//
// It imports only the standard library, so that any program can use it:
// bench/cmd/normbench (normgen against its peers), and the program that
// `normgen bench` writes, next to a copy of this package's source (Source),
// for a user's own spec.
//
// Method, for each shape (kernel, hidden size H, input size):
//   - every implementation is first run once and its output compared with a
//     float64 reference; one that is wrong (or panics) is reported, not timed;
//   - the process runs on one thread (GOMAXPROCS(1), the goroutine locked to
//     its OS thread, the garbage collector off while timing);
//   - timing proceeds in rounds; every round runs every implementation once,
//     the bound (Go's copy of x into dst) included, in an order rotated by
//     one each round, and each implementation's time is divided by the copy
//     time of the same round. Medians and quartiles are taken over rounds.
//   - samples are timed by the thread's CPU time (Linux), so that time spent
//     preempted by other processes does not count (Config.WallClock: not);
//   - a sample is at least Config.Sample long (several calls on the same,
//     cache-resident buffers); for inputs larger than the last-level cache,
//     every call uses the next of several buffer sets, so that each call
//     finds its x and dst in DRAM, not in a cache warmed by the call before.
package benchkit

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"time"
)

// Op is a normalization kernel the harness knows how to check.
type Op int

const (
	LayerNorm Op = iota // y = gamma*(x-mean)/sqrt(var+eps) + beta, per row
	RMSNorm             // y = gamma*x/sqrt(mean(x^2)+eps), per row
	// BatchNorm is training-mode batch normalization of x[N, C]: h = C
	// channels, rows = N; per channel, the mean and biased variance over the
	// N rows, y = gamma_c*(x-mean_c)/sqrt(var_c+eps) + beta_c. (Running
	// statistics are not part of the check.)
	BatchNorm
	// The fused residual ops read x and f, write sum = alpha*x + f and dst =
	// the norm of sum (store_sum): Pre-LN's add and norm in one call.
	AddRMSNorm   // RMSNorm of x + f
	AddLayerNorm // LayerNorm of x + f
	DeepNorm     // LayerNorm of DeepNormAlpha*x + f
)

// Ops lists every Op.
var Ops = []Op{LayerNorm, RMSNorm, BatchNorm, AddRMSNorm, AddLayerNorm, DeepNorm}

func (o Op) String() string {
	return [...]string{"LayerNorm", "RMSNorm", "BatchNorm", "AddRMSNorm", "AddLayerNorm", "DeepNorm"}[o]
}

// Eps is the epsilon of the kernels normgen's benchmark specs declare, and
// that every peer is asked to use.
func (o Op) Eps() float32 { return [...]float32{1e-5, 1e-6, 1e-5, 1e-6, 1e-5, 1e-5}[o] }

// HasShift says whether the op takes beta (Func's beta is nil otherwise).
func (o Op) HasShift() bool { return o != RMSNorm && o != AddRMSNorm }

// DeepNormLayers is the depth DeepNorm's alpha is derived from: an
// encoder-only stack of 18 layers, alpha = (2*18)^(1/4), as the benchmark
// spec declares it (residual: {deepnorm: {encoder_layers: 18}}).
const DeepNormLayers = 18

// DeepNormAlpha is DeepNorm's factor on x.
var DeepNormAlpha = math.Pow(2*DeepNormLayers, 0.25)

// Residual describes a fused residual op as a Norm (sum stored), with ok
// false for the other ops.
func (o Op) Residual() (n Norm, ok bool) {
	switch o {
	case AddRMSNorm:
		return Norm{Epsilon: float64(o.Eps()), Scale: true, Residual: true, Alpha: 1, StoreSum: true}, true
	case AddLayerNorm, DeepNorm:
		alpha := 1.0
		if o == DeepNorm {
			alpha = DeepNormAlpha
		}
		return Norm{Mean: true, Epsilon: float64(o.Eps()), Scale: true, Shift: true, Residual: true, Alpha: alpha, StoreSum: true}, true
	}
	return Norm{}, false
}

// Base is the norm a residual op applies to the sum (with the same
// epsilon): RMSNorm or LayerNorm; other ops are their own base.
func (o Op) Base() Op {
	switch o {
	case AddRMSNorm:
		return RMSNorm
	case AddLayerNorm, DeepNorm:
		return LayerNorm
	}
	return o
}

// Func normalizes every row of x (len(x)/h rows of h values) into dst
// (BatchNorm: every column). beta is nil for RMSNorm.
type Func func(dst, x, gamma, beta []float32)

// Args holds the arrays of one call of a kernel that reads or writes more
// than x and dst (a fused residual add, saved statistics): see KernelFunc.
type Args struct {
	// Out holds the row outputs (rows*H values each) in the order of the
	// shape's Outputs, Out[0] being dst; In the row inputs, In[0] being x;
	// Stats the per-row outputs (rows values each), in the order of the
	// shape's Stats.
	Out, In, Stats [][]float32
	// Gamma and Beta are the parameters, H values each. Beta is nil for an
	// Op without shift, unless the shape has an Oracle; both are nil for a
	// shape with AffinePerRow.
	Gamma, Beta []float32
	// Gain and Bias are the per-row parameters of a shape with
	// AffinePerRow, one value per row each (nil otherwise): the scale and
	// the shift of each row.
	Gain, Bias []float32
	// State holds the arrays a kernel reads and then updates (BatchNorm's
	// running mean and variance, one value per channel), in the order of
	// the shape's State.
	State [][]float32
	// Channels and Spatial are C and L of a tensor shape's x[N, C, L]
	// (Shape.Channels; 0 for row kernels). Gamma and Beta then hold C
	// values, one per channel.
	Channels, Spatial int
	// In16 and Out16 replace In and Out (which are then nil) for a shape
	// with a half Storage: the raw bits of each element.
	In16, Out16 [][]uint16
	// StatIn holds the per-row inputs (a backward pass's saved mean and
	// rstd), in the order of the shape's StatInputs.
	StatIn [][]float32

	scratch   [][]float32 // outputs of the bound beyond Out
	scratch16 [][]uint16
}

// KernelFunc computes one call of a kernel on a's arrays.
type KernelFunc func(a *Args)

// Impl is one implementation under test.
type Impl struct {
	Name  string // short label: a table column and a plot legend entry
	About string // one sentence: what it is
	// Prepare returns the function for the shape's kernel (s.Op with
	// s.Epsilon(), hidden size s.H, s.Rows rows), or nil with a reason when
	// this implementation does not provide that kernel (reported as "n/a",
	// not as an error). It is called once per shape, outside timing, so it
	// may allocate and set up state.
	Prepare func(s Shape) (Func, string)
	// PrepareArgs, when not nil, is used instead of Prepare: it returns a
	// function of all the shape's arrays (Args), as kernels with more
	// arrays than x and dst need. The same rules apply.
	PrepareArgs func(s Shape) (KernelFunc, string)
}

// Level names where a shape's data lives.
type Level string

const (
	L2   Level = "L2"
	DRAM Level = "DRAM"
)

// Shape is one benchmark case.
type Shape struct {
	Op    Op
	H     int
	Rows  int
	Level Level

	// Optional, for kernels other than the standard ones (a driver
	// benchmarking a user's own spec, say):
	Kernel string  // the name shown in tables and plots (default: Op)
	Eps    float32 // epsilon (default: Op.Eps())
	// Ref computes the float64 oracle the output is checked against
	// (default: Reference for Op with Epsilon). beta is nil when !Op.HasShift().
	Ref func(x, gamma, beta []float32, h int) []float64

	// Inputs and Outputs name the kernel's row arrays (rows*H values each)
	// and Stats its per-row outputs (rows values each), in the order of
	// Args: a fused residual kernel reads {"x", "f"} and may write
	// {"dst", "sum"} and {"mean", "rstd"}. nil Inputs means {"x"}, nil
	// Outputs {"dst"}. The implementations of a shape with more arrays
	// than x and dst need PrepareArgs.
	Inputs, Outputs, Stats []string
	// Oracle, when not nil, computes the float64 reference of every output
	// (out in the order of Outputs, stats in that of Stats) from a's inputs
	// and parameters; it must not write to a. It replaces Ref, and is
	// required when the shape has more arrays than x and dst.
	Oracle func(a *Args, h int) (out, stats [][]float64)
	// AffinePerRow gives the kernel per-row parameters: Args.Gain and
	// Args.Bias hold one value per row, and Args.Gamma and Args.Beta are
	// nil. It needs an Oracle and PrepareArgs.
	AffinePerRow bool

	// A tensor shape, x[N, C, L] with channels first (TensorKernel): Rows
	// is N and H is C*L (a row is one image); Channels and Spatial are C
	// and L, passed in Args; the parameters hold C values.
	Channels, Spatial int
	// StatLen is the number of values of each of Stats (0: Rows).
	StatLen int
	// State names the arrays the kernel reads and updates, Channels
	// values each (BatchNorm's running statistics); the oracle returns
	// their expected values after the call after the Stats.
	State []string

	// StatInputs names the kernel's per-row inputs (a backward pass's
	// saved mean and rstd), StatInputLen values each (0: Rows); Derive
	// computes them into a.StatIn from the row inputs (a.In) and the
	// parameters, once: every buffer set gets the same values, as it gets
	// the same inputs.
	StatInputs   []string
	StatInputLen int
	Derive       func(a *Args)
	// Storage is the format of the row arrays: F32 (float32, Args.In and
	// Args.Out), BF16 or F16 (raw bits, Args.In16 and Args.Out16). The
	// oracle sees the inputs widened to float32 in Args.In; outputs are
	// checked widened, within Tolerance plus one rounding to the format.
	Storage string
	// Tolerance replaces the package's Tolerance when not 0.
	Tolerance float64
	// RowsNote says why Rows differs from what the size asked for (shown
	// with the shape); empty when it does not.
	RowsNote string
}

func (s Shape) inputs() []string {
	if s.Inputs == nil {
		return []string{"x"}
	}
	return s.Inputs
}

func (s Shape) outputs() []string {
	if s.Outputs == nil {
		return []string{"dst"}
	}
	return s.Outputs
}

// moreArrays reports whether the shape has row arrays beyond x and dst.
func (s Shape) moreArrays() bool { return len(s.inputs()) != 1 || len(s.outputs()) != 1 }

// general reports whether the shape's kernels need Args: arrays beyond x
// and dst, parameters other than gamma and beta, or a tensor's dimensions.
func (s Shape) general() bool {
	return s.moreArrays() || len(s.Stats) != 0 || len(s.State) != 0 || s.AffinePerRow || s.Channels > 0 ||
		len(s.StatInputs) != 0 || s.Storage != F32
}

// statInputLen is the length of each of the shape's StatInputs.
func (s Shape) statInputLen() int {
	if s.StatInputLen > 0 {
		return s.StatInputLen
	}
	return s.Rows
}

// tolerance is the largest relative error the check accepts: the shape's
// Tolerance, widened by one rounding of the output to its storage format.
func (s Shape) tolerance() float64 {
	t := Tolerance
	if s.Tolerance != 0 {
		t = s.Tolerance
	}
	return t + unitRoundoff(s.Storage)
}

// XBytes is the size of x in bytes.
func (s Shape) XBytes() int64 { return int64(s.H) * int64(s.Rows) * elemBytes(s.Storage) }

// statLen is the length of each of the shape's Stats.
func (s Shape) statLen() int {
	if s.StatLen > 0 {
		return s.StatLen
	}
	return s.Rows
}

// key names the shape's kernel in FuncImpl's map: by C for a tensor shape.
func (s Shape) key() string {
	if s.Channels > 0 {
		return Key(s.Kernel, s.Channels)
	}
	return Key(s.Label(), s.H)
}

// copies is the number of row arrays the bound copies: every row input is
// copied into a row output of its own (a scratch buffer when the kernel
// writes fewer row arrays than it reads), and every row output is written.
func (s Shape) copies() int { return max(len(s.inputs()), len(s.outputs())) }

// Epsilon is the shape's epsilon.
func (s Shape) Epsilon() float32 {
	if s.Eps != 0 {
		return s.Eps
	}
	return s.Op.Eps()
}

// Label names the shape's kernel.
func (s Shape) Label() string {
	if s.Channels > 0 {
		return fmt.Sprintf("%s [N,C,L] C=%d L=%d", s.Kernel, s.Channels, s.Spatial)
	}
	if s.Kernel != "" {
		return s.Kernel
	}
	return s.Op.String()
}

// Bytes is the traffic the copy bound moves: x read plus dst written (for a
// kernel with more row arrays, each row input read and copied into a row
// output of its own).
func (s Shape) Bytes() int64 { return 2 * s.XBytes() * int64(s.copies()) }

func (s Shape) String() string {
	if s.RowsNote != "" {
		return fmt.Sprintf("%s H=%d %s (%d rows, %s; %s)", s.Label(), s.H, s.Level, s.Rows, sizeString(s.XBytes()), s.RowsNote)
	}
	return fmt.Sprintf("%s H=%d %s (%d rows, %s)", s.Label(), s.H, s.Level, s.Rows, sizeString(s.XBytes()))
}

// MinBatchRows is the fewest rows (the batch N) of a BatchNorm shape over
// [N, C]: training BatchNorm of one value per channel has no variance,
// and implementations reject it (as PyTorch raises), so a size that would
// give one row gets MinBatchRows, with BatchRowsNote.
const MinBatchRows = 2

// BatchRowsNote is the RowsNote of a BatchNorm shape raised to
// MinBatchRows rows.
const BatchRowsNote = "at least 2 rows: training BatchNorm of 1 row is rejected by design"

// Shapes returns, for every op and h (BatchNorm: C), one shape with x of about l2Bytes
// (level L2) and one with x of about dramBytes (level DRAM). A zero size
// leaves that level out. A BatchNorm shape has at least MinBatchRows rows
// (x then larger than asked).
func Shapes(ops []Op, hs []int, l2Bytes, dramBytes int64) []Shape {
	var out []Shape
	for _, op := range ops {
		for _, level := range []Level{L2, DRAM} {
			size := l2Bytes
			if level == DRAM {
				size = dramBytes
			}
			if size <= 0 {
				continue
			}
			for _, h := range hs {
				rows := rowsFor(size, h)
				if op == BatchNorm && rows < MinBatchRows {
					s := OpShape(op, h, MinBatchRows, level)
					s.RowsNote = BatchRowsNote
					out = append(out, s)
					continue
				}
				out = append(out, OpShape(op, h, rows, level))
			}
		}
	}
	return out
}

// OpShape is the shape of a standard op: for a residual op, with its
// arrays (x and f read, dst and sum written) and its oracle.
func OpShape(op Op, h, rows int, level Level) Shape {
	s := Shape{Op: op, H: h, Rows: rows, Level: level}
	if n, ok := op.Residual(); ok {
		outputs, stats, inputs, _ := n.Arrays()
		s.Inputs, s.Outputs, s.Stats, s.Oracle = inputs, outputs, stats, n.Oracle
	}
	return s
}

// Config sets how long and how carefully to time.
type Config struct {
	// Budget is the wall time spent timing one shape (after checking and
	// warming up); rounds stop when it is spent and MinRounds are done, or
	// at MaxRounds.
	Budget time.Duration
	// DRAMBudget replaces Budget for DRAM shapes, whose rounds are long
	// (0: Budget).
	DRAMBudget time.Duration
	MinRounds  int
	MaxRounds  int
	// Sample is the least duration of one timed sample: calls are repeated
	// on the same buffers until a sample is at least this long.
	Sample time.Duration
	// LLCBytes is the size of the last-level cache. DRAM shapes use enough
	// buffer sets that the bytes touched between two uses of one set exceed
	// it twice over. 0: read it from the machine.
	LLCBytes int64
	// WallClock times samples by the wall clock. By default (on Linux)
	// samples are timed by the CPU time of the benchmark's thread, so that
	// the time it spends preempted by other work on the machine does not
	// count; the report gives the share of wall time it was on the CPU.
	WallClock bool
	// Seed makes the input data reproducible.
	Seed uint64
	// Log, when not nil, receives progress lines.
	Log io.Writer
}

// DefaultConfig is a full run: about 5 minutes for the standard shapes and
// peers on a 2-core machine.
func DefaultConfig() Config {
	return Config{Budget: 8 * time.Second, DRAMBudget: 16 * time.Second, MinRounds: 15, MaxRounds: 20000, Sample: 200 * time.Microsecond, Seed: 1}
}

// QuickConfig is a short run, for checking the setup: figures are noisier.
func QuickConfig() Config {
	return Config{Budget: 1500 * time.Millisecond, DRAMBudget: 3 * time.Second, MinRounds: 5, MaxRounds: 2000, Sample: 100 * time.Microsecond, Seed: 1}
}

// Status of one implementation at one shape.
type Status string

const (
	OK    Status = "ok"
	NA    Status = "n/a"   // the implementation has no such kernel
	Wrong Status = "wrong" // output failed the reference check: not timed
)

// Result is one implementation at one shape.
type Result struct {
	Impl   string
	Status Status
	Note   string // why n/a or wrong
	MaxErr float64
	// Ratio to the copy of the same round, over rounds.
	Ratio Stats
	// NsPerCall over rounds.
	Ns Stats
}

// GBps is the copy-equivalent throughput at the median time: the bytes of x
// read plus dst written, per second.
func (r Result) GBps(s Shape) float64 {
	if r.Ns.Median <= 0 {
		return 0
	}
	return float64(s.Bytes()) / r.Ns.Median
}

// ShapeResult holds every implementation's result at one shape, the bound
// (the copy) first.
type ShapeResult struct {
	Shape  Shape
	Rounds int
	Sets   int // buffer sets cycled through
	Clock  string
	// OnCPU is the share of the timed wall time that the benchmark's thread
	// was running (1 when timing by the wall clock): below 1, other work
	// on the machine preempted it.
	OnCPU   float64
	Results []Result
}

// Report is a whole run.
type Report struct {
	Machine Machine
	Config  Config
	Impls   []Impl // in column order, without the bound
	Shapes  []ShapeResult
	Elapsed time.Duration
	// Scaling, when not nil, is a thread-scaling run reported with it.
	Scaling *Scaling
}

// Bound is Go's copy of x into dst: the time every figure is divided by.
// For a kernel with more row arrays (Shape.Inputs, Shape.Outputs), the
// bound copies each row input into a row output of its own.
const Bound = "copy"

// Run checks and times impls at every shape. The bound is added by Run.
func Run(cfg Config, shapes []Shape, impls []Impl) *Report {
	start := time.Now()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if cfg.LLCBytes == 0 {
		cfg.LLCBytes = LastLevelCache()
	}
	rep := &Report{Machine: ReadMachine(), Config: cfg, Impls: impls}
	rep.Machine.GOMAXPROCS = 1
	for _, s := range shapes {
		rep.Shapes = append(rep.Shapes, runShape(cfg, s, impls))
		runtime.GC()
	}
	rep.Elapsed = time.Since(start)
	return rep
}

func logf(cfg Config, format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, format, args...)
	}
}

type timed struct {
	name  string
	f     KernelFunc
	n     int // calls per sample
	ratio []float64
	ns    []float64
	res   *Result
}

// clock reads the time samples are measured in (ns) and says which it is.
func clock(cfg Config) (func() int64, string) {
	if _, ok := threadCPU(); ok && !cfg.WallClock {
		return func() int64 { t, _ := threadCPU(); return t }, "thread CPU time"
	}
	t0 := time.Now()
	return func() int64 { return int64(time.Since(t0)) }, "wall clock"
}

// buffers makes the shape's arrays: the reference inputs (set 0) and
// parameters from the seed, then as many sets of row arrays as asked, each
// with its own copy of the inputs. The parameters, small, are shared.
func buffers(cfg Config, s Shape, sets int) (args []*Args) {
	n := s.H * s.Rows
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(s.H)*1000003+uint64(s.Rows)))
	in0 := make([][]float32, len(s.inputs()))
	for i := range in0 {
		in0[i] = make([]float32, n)
	}
	// x, then gamma and beta, then any other input: the standard shapes
	// see the same data as before inputs other than x existed.
	FillInput(rng, in0[0], s.H)
	np := s.H
	if s.Channels > 0 {
		np = s.Channels
	}
	gamma, beta := make([]float32, np), make([]float32, np)
	for i := range gamma {
		gamma[i] = float32(0.5 + rng.Float64())
		beta[i] = float32(rng.NormFloat64() * 0.1)
	}
	for _, in := range in0[1:] {
		FillInput(rng, in, s.H)
	}
	if !s.Op.HasShift() && s.Oracle == nil {
		beta = nil
	}
	// Per-row parameters, drawn last, like gamma and beta: a scale of 0.5
	// to 1.5 (WeightNorm's g, a folded BatchNorm's gamma/sqrt(var+eps))
	// and a small shift.
	var gain, bias []float32
	if s.AffinePerRow {
		gamma, beta = nil, nil
		gain, bias = make([]float32, s.Rows), make([]float32, s.Rows)
		for i := range gain {
			gain[i] = float32(0.5 + rng.Float64())
			bias[i] = float32(rng.NormFloat64() * 0.1)
		}
	}
	// Running statistics: a mean near 0 and a variance near 1.
	var state0 [][]float32
	for j := range s.State {
		st := make([]float32, s.Channels)
		for i := range st {
			st[i] = float32(rng.NormFloat64() * 0.1)
			if j%2 == 1 {
				st[i] = float32(0.5 + rng.Float64())
			}
		}
		state0 = append(state0, st)
	}
	// Half storage: the inputs rounded to the format, and the float32
	// inputs replaced by their exact widening (what the oracle sees).
	var in16 [][]uint16
	if s.Storage != F32 {
		for _, x := range in0 {
			h := make([]uint16, n)
			for i, v := range x {
				h[i] = ToHalf(s.Storage, v)
				x[i] = FromHalf(s.Storage, h[i])
			}
			in16 = append(in16, h)
		}
	}
	var statIn0 [][]float32
	if s.Derive != nil {
		d := &Args{In: in0, Gamma: gamma, Beta: beta, Gain: gain, Bias: bias, Channels: s.Channels, Spatial: s.Spatial}
		for range s.StatInputs {
			d.StatIn = append(d.StatIn, make([]float32, s.statInputLen()))
		}
		s.Derive(d)
		statIn0 = d.StatIn
	}
	nOut := len(s.outputs())
	for i := 0; i < sets; i++ {
		a := &Args{Gamma: gamma, Beta: beta, Gain: gain, Bias: bias, Channels: s.Channels, Spatial: s.Spatial}
		for _, st := range state0 {
			a.State = append(a.State, slices.Clone(st))
		}
		for _, st := range statIn0 {
			a.StatIn = append(a.StatIn, slices.Clone(st))
		}
		if s.Storage != F32 {
			for _, x := range in16 {
				a.In16 = append(a.In16, slices.Clone(x))
			}
			for j := 0; j < s.copies(); j++ {
				out := slices.Clone(in16[0]) // the pages faulted in now, not in the first timed call
				if j < nOut {
					a.Out16 = append(a.Out16, out)
				} else {
					a.scratch16 = append(a.scratch16, out)
				}
			}
		}
		for _, x := range in0 {
			if s.Storage != F32 {
				break
			}
			if i > 0 {
				x = slices.Clone(x)
			}
			a.In = append(a.In, x)
		}
		for j := 0; j < s.copies() && s.Storage == F32; j++ {
			out := make([]float32, n)
			copy(out, in0[0]) // fault the pages in now, not in the first timed call
			if j < nOut {
				a.Out = append(a.Out, out)
			} else {
				a.scratch = append(a.scratch, out)
			}
		}
		for range s.Stats {
			st := make([]float32, s.statLen())
			copy(st, in0[0])
			a.Stats = append(a.Stats, st)
		}
		args = append(args, a)
	}
	return args
}

// reference computes the oracle's outputs on set 0's inputs.
func reference(s Shape, a *Args) (out, stats [][]float64) {
	in := &Args{In: a.In, Gamma: a.Gamma, Beta: a.Beta, Gain: a.Gain, Bias: a.Bias, Channels: a.Channels, Spatial: a.Spatial, StatIn: a.StatIn}
	if s.Storage != F32 {
		in.In = nil
		for _, h := range a.In16 {
			in.In = append(in.In, widen(s.Storage, h))
		}
	}
	for _, st := range a.State {
		in.State = append(in.State, slices.Clone(st))
	}
	switch {
	case s.Oracle != nil:
		out, stats = s.Oracle(in, s.H)
	case s.general():
		panic(fmt.Sprintf("benchkit: shape %s has arrays beyond x and dst (or per-row parameters) but no Oracle", s))
	case s.Ref != nil:
		out = [][]float64{s.Ref(a.In[0], a.Gamma, a.Beta, s.H)}
	default:
		out = [][]float64{ReferenceEps(s.Op, s.Epsilon(), a.In[0], a.Gamma, a.Beta, s.H)}
	}
	if len(out) != len(s.outputs()) || len(stats) != len(s.Stats)+len(s.State) {
		panic(fmt.Sprintf("benchkit: shape %s: the oracle gave %d row outputs and %d per-row outputs and states, want %d and %d",
			s, len(out), len(stats), len(s.outputs()), len(s.Stats)+len(s.State)))
	}
	return out, stats
}

func runShape(cfg Config, s Shape, impls []Impl) ShapeResult {
	logf(cfg, "%s\n", s)
	n := s.H * s.Rows
	sets := 1
	if s.Level == DRAM {
		// Between two uses of a set, the other sets' arrays are touched:
		// make that at least twice the last-level cache.
		per := elemBytes(s.Storage)*int64(n)*int64(len(s.inputs())+s.copies()) +
			4*(int64(s.statLen())*int64(len(s.Stats))+int64(s.statInputLen())*int64(len(s.StatInputs)))
		sets = 1 + int((2*cfg.LLCBytes+per-1)/per)
		sets = max(sets, 2)
	}
	args := buffers(cfg, s, sets)
	refOut, refStats := reference(s, args[0])

	sr := ShapeResult{Shape: s, Sets: sets}
	nIn, nOut := len(s.inputs()), len(s.outputs())
	copyF := func(a *Args) {
		for i, o := range a.Out16 {
			copy(o, a.In16[i%nIn])
		}
		for i, o := range a.scratch16 {
			copy(o, a.In16[(nOut+i)%nIn])
		}
		for i, o := range a.Out {
			copy(o, a.In[i%nIn])
		}
		for i, o := range a.scratch {
			copy(o, a.In[(nOut+i)%nIn])
		}
	}
	sr.Results = make([]Result, 1+len(impls))
	sr.Results[0] = Result{Impl: Bound, Status: OK}
	for i, im := range impls {
		sr.Results[i+1] = Result{Impl: im.Name}
	}
	ts := []*timed{{name: Bound, f: copyF, res: &sr.Results[0]}}
	names := s.arrayNames()
	for i, im := range impls {
		r := &sr.Results[i+1]
		f, why := prepare(im, s)
		if f == nil {
			r.Status, r.Note = NA, why
			logf(cfg, "  %-16s n/a: %s\n", im.Name, why)
			continue
		}
		maxErr, err := checkArgs(f, args[0], refOut, refStats, names, s.H)
		r.MaxErr = maxErr
		if err != nil {
			r.Status, r.Note = Wrong, err.Error()
			logf(cfg, "  %-16s WRONG: %v\n", im.Name, err)
			continue
		}
		r.Status = OK
		ts = append(ts, &timed{name: im.Name, f: f, res: r})
	}
	next := 0
	now, clockName := clock(cfg)
	sr.Clock = clockName
	var wallNs, clockNs int64
	call := func(t *timed) time.Duration {
		a := args[next%sets]
		next++
		t0 := time.Now()
		c0 := now()
		for i := 0; i < t.n; i++ {
			t.f(a)
		}
		c := now() - c0
		wallNs += int64(time.Since(t0))
		clockNs += c
		return time.Duration(c)
	}
	for _, t := range ts {
		t.n = 1
		if sets > 1 {
			continue // each call is one sample, on a cold set
		}
		// Calibrate: the number of calls making a sample at least cfg.Sample.
		call(t)
		for {
			d := call(t)
			if d >= cfg.Sample || t.n >= 1<<20 {
				break
			}
			t.n = int(math.Ceil(float64(t.n) * 1.2 * float64(cfg.Sample) / float64(max(d, time.Microsecond))))
		}
	}
	for _, t := range ts {
		call(t) // one discarded round: code, branch predictors and TLBs warm
	}
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	wallNs, clockNs = 0, 0
	budget := cfg.Budget
	if s.Level == DRAM && cfg.DRAMBudget > 0 {
		budget = cfg.DRAMBudget
	}
	t0 := time.Now()
	rounds := 0
	k := len(ts)
	times := make([]float64, k)
	for rounds < cfg.MaxRounds && (rounds < cfg.MinRounds || time.Since(t0) < budget) {
		for j := 0; j < k; j++ {
			i := (j + rounds) % k
			t := ts[i]
			times[i] = float64(call(t).Nanoseconds()) / float64(t.n)
		}
		for i, t := range ts {
			t.ns = append(t.ns, times[i])
			t.ratio = append(t.ratio, times[i]/times[0])
		}
		rounds++
	}
	sr.Rounds = rounds
	if wallNs > 0 {
		sr.OnCPU = float64(clockNs) / float64(wallNs)
	}
	for _, t := range ts {
		t.res.Ratio = Summarize(t.ratio)
		t.res.Ns = Summarize(t.ns)
		logf(cfg, "  %-16s %7.2fx  (%.2f-%.2f)  %7.1f GB/s\n", t.name, t.res.Ratio.Median, t.res.Ratio.P25, t.res.Ratio.P75, t.res.GBps(s))
	}
	logf(cfg, "  %d rounds, %d buffer set(s), %.1fs, %s, on CPU %.0f%% of the time\n", rounds, sets, time.Since(t0).Seconds(), clockName, 100*sr.OnCPU)
	return sr
}

// arrayNames names the shape's arrays for checkArgs.
func (s Shape) arrayNames() arrayNames {
	return arrayNames{out: s.outputs(), in: s.inputs(), stats: slices.Concat(s.Stats, s.State), statIn: s.StatInputs,
		storage: s.Storage, tol: s.tolerance()}
}

// widen is h widened to float32.
func widen(storage string, h []uint16) []float32 {
	out := make([]float32, len(h))
	for i, v := range h {
		out[i] = FromHalf(storage, v)
	}
	return out
}

// PrepareKernel returns im's kernel for s as Run calls it: from
// im.PrepareArgs when set, else from im.Prepare (n/a for a shape with
// arrays beyond x and dst), with a panic turned into a reason.
func PrepareKernel(im Impl, s Shape) (KernelFunc, string) { return prepare(im, s) }

// Verify prepares im for s and checks one call against the shape's float64
// reference on the harness's inputs (seeded), as Run does before timing:
// why is not empty when im has no such kernel.
func Verify(im Impl, s Shape, seed uint64) (maxErr float64, why string, err error) {
	args := buffers(Config{Seed: seed}, s, 1)
	refOut, refStats := reference(s, args[0])
	f, why := prepare(im, s)
	if f == nil {
		return 0, why, nil
	}
	maxErr, err = checkArgs(f, args[0], refOut, refStats, s.arrayNames(), s.H)
	return maxErr, "", err
}

// prepare calls im.PrepareArgs or im.Prepare, turning a panic into a reason.
func prepare(im Impl, s Shape) (f KernelFunc, why string) {
	defer func() {
		if e := recover(); e != nil {
			f, why = nil, fmt.Sprintf("prepare panicked: %v", e)
		}
	}()
	if im.PrepareArgs != nil {
		return im.PrepareArgs(s)
	}
	if s.general() {
		return nil, "takes x and dst only"
	}
	if im.Prepare == nil {
		return nil, "no kernels"
	}
	g, why := im.Prepare(s)
	if g == nil {
		return nil, why
	}
	return func(a *Args) { g(a.Out[0], a.In[0], a.Gamma, a.Beta) }, ""
}

// FillInput writes rows of h values with varied offsets and scales, so that
// mean and variance both matter: row r is c_r + s_r*N(0,1).
func FillInput(rng *rand.Rand, x []float32, h int) {
	for r := 0; r+h <= len(x); r += h {
		c := rng.NormFloat64() * 2
		s := 0.25 + 2*rng.Float64()
		for i := r; i < r+h; i++ {
			x[i] = float32(c + s*rng.NormFloat64())
		}
	}
}
