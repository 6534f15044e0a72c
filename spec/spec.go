// Package spec defines normgen's spec format: a versioned YAML file naming
// the normalization kernels of one generated Go package. REFERENCE.md
// documents the format, normgen.schema.json is its JSON Schema (Schema),
// and docs/math.md gives the formula of every kernel the fields describe.
package spec

// Version is the spec format version this normgen reads.
const Version = 1

// File is one parsed and validated spec file.
type File struct {
	Path    string   // where it was read from, for messages
	Source  []byte   // the exact bytes read, hashed into generated headers
	Version int      // format version (must equal Version)
	Package string   // Go package name of the generated package
	Kernels []Kernel // at least one, distinct names
}

// Kernel is one normalization kernel: which statistics it computes over
// which axis, its affine and residual options, and the sizes to specialise.
type Kernel struct {
	Name string // exported Go name prefix of the kernel's entry points
	Doc  string // optional sentence added to the generated documentation

	// Axis is the normalized axis of a tensor (see Axes):
	//   "last":     each row of H contiguous values;
	//   "channels": the C channel values at each spatial position of an
	//               [N, C, L] tensor (ConvNeXt's channels-first LayerNorm);
	//               Hidden lists channel counts C;
	//   "batch":    each channel's values over N and L of an [N, C, L]
	//               tensor (BatchNorm in training; with Statistic "none",
	//               BatchNorm at inference), affine per channel;
	//   "groups":   each image's groups of channels over L (GroupNorm,
	//               InstanceNorm), affine per channel.
	Axis string
	// Groups is the number of channel groups of axis "groups" (GroupNorm);
	// GroupSize, instead, the number of channels in each (1: InstanceNorm).
	// Exactly one is set with axis "groups".
	Groups, GroupSize int
	// Running, with axis "batch", updates running statistics in the call.
	Running *Running
	// Mean subtracts the mean (LayerNorm); without it the statistic is the
	// root mean square (RMSNorm).
	Mean bool
	// Epsilon is added to the variance (or mean square) inside the sqrt; 0
	// with Statistic "none".
	Epsilon float64
	// RuntimeEpsilon (epsilon: runtime) makes epsilon the eps argument of
	// every entry point, checked at each call, instead of Epsilon.
	RuntimeEpsilon bool

	// Scale multiplies by gamma (one value per element of the axis) plus
	// ScaleOffset: Gemma's (1 + gamma) is ScaleOffset 1.
	Scale       bool
	ScaleOffset float64
	// Shift adds beta (one value per element of the axis).
	Shift bool

	// Residual, when set, normalizes s = Alpha*x + f instead of x.
	Residual *Residual

	// SaveStats writes each row's mean (when Mean) and rstd for a backward pass.
	SaveStats bool
	// Backward generates the backward pass beside the forward one: the
	// gradients of the inputs and the parameters (axis last only so far).
	// It implies SaveStats for the kernels with a statistic.
	Backward bool

	// Statistic is what the row is divided by, inside the sqrt with
	// Epsilon: "variance" (with Mean), "rms" (mean of squares), "l2" (sum
	// of squares: WeightNorm's ||v||) or "none" (no normalization: the
	// affine alone, BatchNorm at inference with folded statistics). Parse
	// fills in the default: variance with Mean and rms without; an empty
	// value (a Kernel built in code) means the same.
	Statistic string
	// AffinePerRow makes the scale and shift one value per row (WeightNorm's
	// g; InstanceNorm's and BatchNorm's per-channel parameters, one row per
	// image and channel) instead of one per element of the row.
	AffinePerRow bool

	// Hidden lists the fixed row lengths that get specialised entry points.
	Hidden []int
	// Storage is how the row arrays (x, f, dst, sum) hold their values:
	// "f32" (float32, the default; "" means the same), "bf16" or "f16"
	// (the bits in a uint16). Parameters and statistics stay float32, and
	// the arithmetic is float32 either way. Only with axis "last".
	Storage string

	// Targets lists the instruction sets to generate (default: all).
	Targets []string

	Pos Pos // where the kernel starts in the spec file
}

// Running is how a BatchNorm in training updates its running mean and
// variance from the batch statistics in the same call.
type Running struct {
	// Momentum is the spec's momentum value, as its Convention reads it.
	Momentum float64
	// Convention is "pytorch": running = (1-momentum)*running +
	// momentum*batch, with the unbiased batch variance (n/(n-1)); or
	// "onnx": running = momentum*running + (1-momentum)*batch, with the
	// biased batch variance.
	Convention string
}

// Residual describes the fused residual input.
type Residual struct {
	// Alpha scales the residual stream x: s = Alpha*x + f (1 for Post-LN and
	// Pre-LN). With DeepNorm it is derived from the layer counts.
	Alpha float64
	// DeepNorm, when set, is where Alpha came from.
	DeepNorm *DeepNorm
	// StoreSum also writes s, the Pre-LN residual stream, to its own output.
	StoreSum bool
}

// DeepNorm holds the layer counts DeepNorm's alpha is derived from (Wang
// et al. 2022): encoder-only or decoder-only, alpha = (2N)^(1/4); in an
// encoder-decoder model, the encoder's alpha = 0.81*(N^4*M)^(1/16) and the
// decoder's (3M)^(1/4), for N encoder and M decoder layers.
type DeepNorm struct {
	EncoderLayers int    // N; 0 when the model has no encoder
	DecoderLayers int    // M; 0 when the model has no decoder
	Side          string // "encoder" or "decoder": the stack this kernel is in
}

// Pos is a position in a spec file (1-based).
type Pos struct {
	Line, Col int
}
