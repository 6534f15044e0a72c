package testkit

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// The helpers of the tests of the kernels over [N, C, L] tensors live in
// normgen's templates/testkit/tensor.go, where they compile and have tests
// of their own; the generator appends them verbatim to each
// <stem>_tensor_test.go, after the template's part (tTolerance,
// tPackageName, the tensorKernels table, the entry points taking eps, the
// ISA tables).

const tEpsilon32 = 1.0 / (1 << 24)

// tMargin floats of tSentinel surround every array: a kernel that writes
// outside its arrays changes them.
const tMargin = 16

var tSentinel = math.Float32frombits(0x7fc0dead) // a NaN no kernel computes

// tFloatsOf turns fuzzer bytes into float32 values, little-endian: NaN,
// Inf and subnormals included.
func tFloatsOf(data []byte) []float32 {
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

type tensorKernel struct {
	name        string
	axis        string // channels, batch or groups
	groups      int    // axis groups: channel groups per image, or
	groupSize   int    // the channels in each group
	noStat      bool   // no statistic: y = x*gain + bias (BatchNorm at inference)
	mean        bool
	eps         float64
	runtimeEps  bool // eps is an argument of the entry points, eps above
	scale       bool
	scaleOffset float64
	shift       bool
	saveStats   bool
	running     string // "", "pytorch" or "onnx"
	momentum    float64
	storage     string // dst and x: "f32", or "bf16" or "f16" (the entry points take uint16 bits; see tHalfCall)
	isas        []string
	sizes       []int // axis channels: the fixed channel counts
	// call runs the entry point for the fixed channel count c.c (fixed) or
	// the run-time one; parallel its Parallel form.
	call     func(c *tensorCall, fixed bool)
	parallel func(c *tensorCall, fixed bool)
}

// entries are a kernel's serial and Parallel entry points, by the suffix
// of their names.
func (k *tensorKernel) entries() []tEntry {
	return []tEntry{{"", k.call}, {"Parallel", k.parallel}}
}

type tEntry struct {
	suffix string
	run    func(c *tensorCall, fixed bool)
}

// tensorCall is one call's shape and arrays; absent arrays are nil.
type tensorCall struct {
	n, c, l                                          int
	dst, x, gamma, beta, mean, rstd, runMean, runVar []float32
	buffers                                          [][]float32 // each array inside margins of sentinels
	unaligned                                        bool        // arrays start 0..3 floats past an aligned address
}

// arrayName is the entry point's name for a tensorCall field: BatchNorm's
// per-channel affine is gain and bias.
func (k *tensorKernel) arrayName(field string) string {
	if k.axis == "batch" {
		switch field {
		case "gamma":
			return "gain"
		case "beta":
			return "bias"
		}
	}
	return field
}

// tGroup is one set of values normalized together: their indices in x,
// the channel of each (for the affine), and its index in the per-row
// statistics (mean, rstd; the channel for running statistics).
type tGroup struct {
	idx, ch []int
	stat    int
}

// groupsOf enumerates the normalized sets of an [n, c, l] tensor.
func (k *tensorKernel) groupsOf(n, c, l int) []tGroup {
	at := func(img, ch, p int) int { return (img*c+ch)*l + p }
	var out []tGroup
	// newGroup allocates a set's indices at once: sets of millions of
	// values would otherwise spend the test's time growing slices.
	newGroup := func(stat, size int) tGroup {
		return tGroup{idx: make([]int, 0, size), ch: make([]int, 0, size), stat: stat}
	}
	switch k.axis {
	case "channels": // each image's position over its channels
		for img := 0; img < n; img++ {
			for p := 0; p < l; p++ {
				g := newGroup(img*l+p, c)
				for ch := 0; ch < c; ch++ {
					g.idx, g.ch = append(g.idx, at(img, ch, p)), append(g.ch, ch)
				}
				out = append(out, g)
			}
		}
	case "batch": // each channel over the images and positions
		for ch := 0; ch < c; ch++ {
			g := newGroup(ch, n*l)
			for img := 0; img < n; img++ {
				for p := 0; p < l; p++ {
					g.idx, g.ch = append(g.idx, at(img, ch, p)), append(g.ch, ch)
				}
			}
			out = append(out, g)
		}
	case "groups": // each image's groups of channels over the positions
		groups := k.groupCount(c)
		per := c / groups
		for img := 0; img < n; img++ {
			for grp := 0; grp < groups; grp++ {
				g := newGroup(img*groups+grp, per*l)
				for ch := grp * per; ch < (grp+1)*per; ch++ {
					for p := 0; p < l; p++ {
						g.idx, g.ch = append(g.idx, at(img, ch, p)), append(g.ch, ch)
					}
				}
				out = append(out, g)
			}
		}
	}
	return out
}

// groupCount is the number of groups of c channels (axis groups).
func (k *tensorKernel) groupCount(c int) int {
	if k.groupSize > 0 {
		return c / k.groupSize
	}
	return k.groups
}

// statLen is the length of the per-row statistics arrays.
func (k *tensorKernel) statLen(n, c, l int) int {
	switch k.axis {
	case "channels":
		return n * l
	case "groups":
		return n * k.groupCount(c)
	}
	return c
}

// tReference is the oracle's result for one call.
type tReference struct {
	y, bound               []float64 // per element of x
	mean, rstd, cond, vari []float64 // per group (by stat index)
	runMean, runVar        []float64 // per channel, after the update
	runMeanB, runVarB      []float64 // their error bounds
}

// oracle evaluates the formulas in float64:
//
//	mu = mean(x) over the group (0 without mean); var = mean((x-mu)^2)
//	rstd = 1/sqrt(var + eps); y = (x-mu)*rstd*(gamma_c + offset) + beta_c
//	pytorch: run = (1-m)*run + m*batch, var unbiased: var*n/(n-1)
//	onnx:    run = m*run + (1-m)*batch, var biased
//
// With half storage, x is first rounded to the format in place (the values
// the kernel reads), and each bound is widened by exactly one rounding of
// the output to the format: u*(|y| + bound) for the unit roundoff u, plus
// half the least subnormal.
func (k *tensorKernel) oracle(in *tensorCall) tReference {
	n, c, l := in.n, in.c, in.l
	for i, v := range in.x {
		in.x[i] = k.round(v)
	}
	f, half := halfFormats[k.storage]
	sl := k.statLen(n, c, l)
	r := tReference{
		y: make([]float64, len(in.x)), bound: make([]float64, len(in.x)),
		mean: make([]float64, sl), rstd: make([]float64, sl), cond: make([]float64, sl), vari: make([]float64, sl),
	}
	if k.running != "" {
		r.runMean, r.runVar = make([]float64, c), make([]float64, c)
		r.runMeanB, r.runVarB = make([]float64, c), make([]float64, c)
	}
	for _, g := range k.groupsOf(n, c, l) {
		mu, maxAbs := 0.0, 0.0
		for _, i := range g.idx {
			if k.mean {
				mu += float64(in.x[i])
			}
			maxAbs = math.Max(maxAbs, math.Abs(float64(in.x[i])))
		}
		mu /= float64(len(g.idx))
		v := 0.0
		for _, i := range g.idx {
			d := float64(in.x[i]) - mu
			v += d * d
		}
		v /= float64(len(g.idx))
		sigma := math.Sqrt(v + k.eps)
		if k.noStat {
			sigma = 1 // y = x*gain + bias
		}
		cond := maxAbs / sigma
		r.mean[g.stat], r.rstd[g.stat], r.cond[g.stat], r.vari[g.stat] = mu, 1/sigma, cond, v
		for j, i := range g.idx {
			y, gain := (float64(in.x[i])-mu)/sigma, 1.0
			if k.scale {
				gain = float64(in.gamma[g.ch[j]]) + k.scaleOffset
				y *= gain
			}
			if k.shift {
				y += float64(in.beta[g.ch[j]])
			}
			r.y[i] = y
			if k.noStat {
				cond = math.Abs(float64(in.x[i])) // each element on its own
			}
			r.bound[i] = tTolerance * tEpsilon32 * (math.Abs(y) + math.Abs(gain)*(1+cond))
			if half {
				r.bound[i] += f.unit()*(math.Abs(y)+r.bound[i]) + f.leastSubnormal()/2
			}
		}
		if k.running != "" {
			cnt := float64(len(g.idx))
			m := k.momentum
			keep, take, batchVar := 1-m, m, v*cnt/(cnt-1)
			if k.running == "onnx" {
				keep, take, batchVar = m, 1-m, v
			}
			ch := g.stat
			oldM, oldV := float64(in.runMean[ch]), float64(in.runVar[ch])
			r.runMean[ch] = keep*oldM + take*mu
			r.runVar[ch] = keep*oldV + take*batchVar
			r.runMeanB[ch] = tTolerance * tEpsilon32 * (math.Abs(r.runMean[ch]) + math.Abs(keep*oldM) + take*(math.Abs(mu)+sigma*(1+cond)))
			r.runVarB[ch] = tTolerance * tEpsilon32 * (math.Abs(r.runVar[ch]) + math.Abs(keep*oldV) + 2*take*batchVar*(1+cond))
		}
	}
	return r
}

// tFamily fills x for one test case.
type tFamily struct {
	name     string
	constant bool // one value everywhere: exactly beta where there is a mean
	value    func(rng *rand.Rand) float32
}

var tFamilies = []tFamily{
	{name: "normal", value: func(rng *rand.Rand) float32 { return float32(rng.NormFloat64()) }},
	{name: "offset1e4", value: func(rng *rand.Rand) float32 { return float32(1e4 + rng.NormFloat64()) }},
	{name: "tiny", value: func(rng *rand.Rand) float32 { return float32(1e-15 * rng.NormFloat64()) }},
	{name: "huge", value: func(rng *rand.Rand) float32 { return float32(1e15 * rng.NormFloat64()) }},
	// Squares overflow float32: the assembly hands these rows to the float64 path.
	{name: "1e30", value: func(rng *rand.Rand) float32 { return float32(1e30 * rng.NormFloat64()) }},
	{name: "subnormal", value: func(rng *rand.Rand) float32 { return float32(1e-40 * rng.NormFloat64()) }},
	{name: "uniform+3", value: func(rng *rand.Rand) float32 { return float32(3 + rng.Float64()) }},
	{name: "constant", constant: true, value: func(*rand.Rand) float32 { return -1.1 }},
	{name: "zero", constant: true, value: func(*rand.Rand) float32 { return 0 }},
}

var tShortFamilies = map[string]bool{"normal": true, "offset1e4": true, "1e30": true, "constant": true}

// tArray allocates n floats inside margins of sentinels, at an offset of
// 0..3 floats from rng when unaligned.
func (c *tensorCall) tArray(n int, rng *rand.Rand) []float32 {
	off := 0
	if c.unaligned {
		off = rng.IntN(4)
	}
	buf := make([]float32, n+2*tMargin+off)
	for i := range buf {
		buf[i] = tSentinel
	}
	c.buffers = append(c.buffers, buf)
	return buf[tMargin+off : tMargin+off+n : tMargin+off+n]
}

// newCall allocates and fills a call's arrays at unaligned starts.
func (k *tensorKernel) newCall(n, c, l int, fam tFamily, rng *rand.Rand) *tensorCall {
	return k.makeCall(n, c, l, fam, rng, true)
}

// makeCall allocates and fills a call's arrays: x from the family,
// parameters around 1 and 0, running statistics around 0 and 1.
func (k *tensorKernel) makeCall(n, c, l int, fam tFamily, rng *rand.Rand, unaligned bool) *tensorCall {
	in := &tensorCall{n: n, c: c, l: l, unaligned: unaligned}
	in.x = in.tArray(n*c*l, rng)
	for i := range in.x {
		in.x[i] = k.round(fam.value(rng))
	}
	in.dst = in.tArray(n*c*l, rng)
	if k.scale {
		in.gamma = in.tArray(c, rng)
		for i := range in.gamma {
			in.gamma[i] = float32(1 + 0.5*rng.NormFloat64())
		}
	}
	if k.shift {
		in.beta = in.tArray(c, rng)
		for i := range in.beta {
			in.beta[i] = float32(rng.NormFloat64())
		}
	}
	if k.saveStats {
		if k.mean {
			in.mean = in.tArray(k.statLen(n, c, l), rng)
		}
		in.rstd = in.tArray(k.statLen(n, c, l), rng)
	}
	if k.running != "" {
		in.runMean, in.runVar = in.tArray(c, rng), in.tArray(c, rng)
		for i := 0; i < c; i++ {
			in.runMean[i] = float32(rng.NormFloat64())
			in.runVar[i] = float32(1 + rng.Float64())
		}
	}
	return in
}

// clone copies a call with fresh buffers (margins included).
func (c *tensorCall) clone() *tensorCall {
	d := &tensorCall{n: c.n, c: c.c, l: c.l, unaligned: c.unaligned}
	for _, buf := range c.buffers {
		d.buffers = append(d.buffers, append([]float32(nil), buf...))
	}
	remap := func(a []float32) []float32 {
		if a == nil {
			return nil
		}
		bi, off := c.locate(a)
		return d.buffers[bi][off : off+len(a) : off+len(a)]
	}
	d.dst, d.x, d.gamma, d.beta = remap(c.dst), remap(c.x), remap(c.gamma), remap(c.beta)
	d.mean, d.rstd, d.runMean, d.runVar = remap(c.mean), remap(c.rstd), remap(c.runMean), remap(c.runVar)
	return d
}

// locate returns the buffer holding a and a's offset in it.
func (c *tensorCall) locate(a []float32) (int, int) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	for bi, buf := range c.buffers {
		b := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		if p >= b && p+4*uintptr(len(a)) <= b+4*uintptr(len(buf)) {
			return bi, int(p-b) / 4
		}
	}
	panic("array outside its buffers")
}

// grown is a one element longer, into its buffer's tMargin.
func (c *tensorCall) grown(a []float32) []float32 {
	bi, off := c.locate(a)
	return c.buffers[bi][off : off+len(a)+1]
}

// checkMargins reports a write outside the arrays: what of each buffer
// the arrays do not cover must still hold the tSentinel.
func (c *tensorCall) checkMargins(arrays ...[]float32) error {
	used := make([][]bool, len(c.buffers))
	for bi, buf := range c.buffers {
		used[bi] = make([]bool, len(buf))
	}
	for _, a := range arrays {
		if a == nil {
			continue
		}
		bi, off := c.locate(a)
		for i := off; i < off+len(a); i++ {
			used[bi][i] = true
		}
	}
	for bi, buf := range c.buffers {
		for i, v := range buf {
			if !used[bi][i] && math.Float32bits(v) != math.Float32bits(tSentinel) {
				return fmt.Errorf("buffer %d element %d overwritten outside the arrays: %v", bi, i, v)
			}
		}
	}
	return nil
}

// tStatBound is a statistic's error bound b, or where b is NaN (a
// constant set with eps = 0: no spread to scale it by) the contract
// relative to the value, or to 1 for values below 1 (the constant
// families' values are of order 1; a running mean adds two of them).
func tStatBound(b, ref float64) float64 {
	if b != b {
		return tTolerance * tEpsilon32 * math.Max(math.Abs(ref), 1)
	}
	return b
}

// tensorWorst records the largest error seen per kernel, in units of the
// bound divided by tTolerance (see errorUnit); tensorWorstUlps, per half
// kernel, in ulps of its format at the oracle's value.
var tensorWorst, tensorWorstUlps = map[string]float64{}, map[string]float64{}

// verify checks a call's outputs against the oracle.
func (k *tensorKernel) verify(got, in *tensorCall, ref tReference, fam tFamily) error {
	for i, v := range got.dst {
		if fam.constant && k.mean && !k.noStat {
			if k.eps == 0 { // 0/0, as in PyTorch
				if v != v {
					continue
				}
				return fmt.Errorf("constant input with eps = 0: dst[%d] = %v, want NaN", i, v)
			}
			want := float32(0)
			if k.shift {
				ch := (i / in.l) % in.c
				want = k.round(in.beta[ch]) // beta as dst stores it
			}
			if v != want {
				return fmt.Errorf("constant input: dst[%d] = %v, want exactly %v", i, v, want)
			}
			continue
		}
		if math.IsNaN(ref.y[i]) { // 0/0: one value per set with eps = 0
			if v == v {
				return fmt.Errorf("dst[%d] = %v, oracle NaN", i, v)
			}
			continue
		}
		d := math.Abs(float64(v) - ref.y[i])
		if u := d / ref.bound[i] * tTolerance; u > tensorWorst[k.name] {
			tensorWorst[k.name] = u
		}
		if f, half := halfFormats[k.storage]; half && d/f.ulp(ref.y[i]) > tensorWorstUlps[k.name] {
			tensorWorstUlps[k.name] = d / f.ulp(ref.y[i])
		}
		if !(d <= ref.bound[i]) {
			return fmt.Errorf("dst[%d] = %v, oracle %v: error %.3g > bound %.3g", i, v, ref.y[i], d, ref.bound[i])
		}
	}
	for s, v := range got.mean {
		sigma := 1 / ref.rstd[s]
		if d := math.Abs(float64(v) - ref.mean[s]); !(d <= tStatBound(tTolerance*tEpsilon32*(math.Abs(ref.mean[s])+sigma*(1+ref.cond[s])), ref.mean[s])) && v != float32(ref.mean[s]) {
			return fmt.Errorf("mean[%d] = %v, oracle %v", s, v, ref.mean[s])
		}
	}
	for s, v := range got.rstd {
		if d := math.Abs(float64(v) - ref.rstd[s]); !(d <= tStatBound(tTolerance*tEpsilon32*ref.rstd[s]*(1+ref.cond[s]), ref.rstd[s])) && v != float32(ref.rstd[s]) {
			return fmt.Errorf("rstd[%d] = %v, oracle %v", s, v, ref.rstd[s])
		}
	}
	for ch := range got.runMean {
		if d := math.Abs(float64(got.runMean[ch]) - ref.runMean[ch]); !(d <= tStatBound(ref.runMeanB[ch], ref.runMean[ch])) {
			return fmt.Errorf("runMean[%d] = %v, oracle %v: error %.3g > bound %.3g", ch, got.runMean[ch], ref.runMean[ch], d, ref.runMeanB[ch])
		}
		if math.Abs(ref.runVar[ch]) > math.MaxFloat32 && math.IsInf(float64(got.runVar[ch]), 0) {
			continue // beyond float32: Inf is the float32 result
		}
		if d := math.Abs(float64(got.runVar[ch]) - ref.runVar[ch]); !(d <= tStatBound(ref.runVarB[ch], ref.runVar[ch])) {
			return fmt.Errorf("runVar[%d] = %v, oracle %v: error %.3g > bound %.3g", ch, got.runVar[ch], ref.runVar[ch], d, ref.runVarB[ch])
		}
	}
	return nil
}

// tShape is one tensor shape of a test, with whether it uses the fixed
// channel count's entry point.
type tShape struct {
	n, c, l int
	fixed   bool
}

func (s tShape) String() string {
	kind := "Any"
	if s.fixed {
		kind = "fixed"
	}
	return fmt.Sprintf("%s[N=%d C=%d L=%d]", kind, s.n, s.c, s.l)
}

// shapes lists the shapes each kernel is tested at: spatial sizes with
// every kind of vector tail, channel counts around the vector widths.
func (k *tensorKernel) shapes() []tShape {
	ls := []int{1, 3, 7, 16, 17, 49, 100}
	ns := []int{1, 2}
	if testing.Short() {
		ls, ns = []int{3, 17}, []int{2}
	}
	var cs []int
	switch k.axis {
	case "channels":
		cs = []int{1, 3, 17}
	case "batch":
		cs, ns = []int{1, 3, 8}, append(ns, 4)
	case "groups":
		cs = []int{k.groups, 2 * k.groups}
		if k.groupSize > 0 {
			cs = []int{k.groupSize, 3 * k.groupSize, 8 * k.groupSize}
		}
	}
	if testing.Short() {
		cs = cs[len(cs)-1:]
	}
	var out []tShape
	add := func(n, c, l int, fixed bool) {
		if k.axis == "batch" && !k.noStat && n*l == 1 {
			return // refused: no batch variance
		}
		out = append(out, tShape{n, c, l, fixed})
	}
	for _, c := range k.sizes {
		for _, l := range ls {
			add(1, c, l, true)
		}
		add(2, c, 17, false)
	}
	for _, c := range cs {
		for _, n := range ns {
			for _, l := range ls {
				add(n, c, l, false)
			}
		}
	}
	return out
}

// TestTensorEquivalence runs each tensor kernel on every family of inputs
// and shape, from unaligned starts, in place (on the first family) and
// not, against the float64 oracle, and checks the margins around every
// array for stray writes.
func TestTensorEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	defer func() {
		for _, k := range tensorKernels {
			t.Logf("%s (%s): max error %.2f %s", k.name, isaOf(k.name), tensorWorst[k.name], errorUnit(k.storage, tTolerance))
			if u, ok := tensorWorstUlps[k.name]; ok {
				t.Logf("%s (%s): max error %.3f ulps of %s", k.name, isaOf(k.name), u, k.storage)
			}
		}
	}()
	for _, k := range tensorKernels {
		for _, s := range k.shapes() {
			for fi, fam := range tFamilies {
				if testing.Short() && !tShortFamilies[fam.name] || !k.holds(fam.value) {
					continue
				}
				for _, inPlace := range []bool{false, true} {
					if inPlace && fi > 0 {
						continue
					}
					in := k.newCall(s.n, s.c, s.l, fam, rng)
					ref := k.oracle(in)
					got := in.clone()
					if inPlace {
						got.dst = got.x
					}
					k.call(got, s.fixed)
					name := fmt.Sprintf("%s %v family=%s in-place=%v", k.name, s, fam.name, inPlace)
					if err := got.checkMargins(got.dst, got.x, got.gamma, got.beta, got.mean, got.rstd, got.runMean, got.runVar); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if err := k.verify(got, in, ref, fam); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				}
			}
		}
	}
}

// TestTensorLongReductions runs the kernels whose vector lanes each sum a
// whole set of values (a position's channels; a channel's batch over
// [N, C]) on sets of 262181 values, against the oracle: the rounding of a
// sequential sum grows with its length, and the contract must hold
// regardless. The segment forms (a channel's batch over [N, C, L]) are
// checked at that length too.
func TestTensorLongReductions(t *testing.T) {
	if testing.Short() {
		t.Skip("long reductions: not in -short")
	}
	const long = 4<<16 + 37
	rng := rand.New(rand.NewPCG(29, 30))
	for _, k := range tensorKernels {
		var shapes []tShape
		switch k.axis {
		case "channels":
			shapes = []tShape{{1, long, 4, false}}
		case "batch":
			shapes = []tShape{{long, 4, 1, false}, {1, 4, long, false}}
		}
		for _, s := range shapes {
			for _, fam := range []tFamily{tFamilies[0], tFamilies[3]} {
				if !k.holds(fam.value) {
					continue
				}
				in := k.newCall(s.n, s.c, s.l, fam, rng)
				ref := k.oracle(in)
				got := in.clone()
				k.call(got, s.fixed)
				if err := k.verify(got, in, ref, fam); err != nil {
					t.Fatalf("%s %v family=%s: %v", k.name, s, fam.name, err)
				}
			}
		}
	}
}

// tLongFamily fills the sets of a long-set test: value(rng, i, pos) is
// element i of a set (in the set's own order: its first element is the
// kernel's pivot) whose one special position is pos (drawn per set).
type tLongFamily struct {
	name  string
	value func(rng *rand.Rand, i, pos int) float32
}

// tLongFamilies are the sets whose float32 sums go wrong in long
// sequential chains or around a badly placed pivot: one full-mantissa
// value repeated after a zero, a first value far from the rest, one
// dominant element anywhere, and natural data (ReLU activations).
var tLongFamilies = []tLongFamily{
	{name: "tenths", value: func(_ *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return 0
		}
		return 0.1
	}},
	{name: "first1e7", value: func(rng *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return 1e7
		}
		return float32(rng.NormFloat64())
	}},
	{name: "first1e18", value: func(rng *rand.Rand, i, _ int) float32 {
		if i == 0 {
			return -1e18
		}
		return float32(rng.NormFloat64())
	}},
	{name: "dominant", value: func(rng *rand.Rand, i, pos int) float32 {
		if i == pos {
			return 1e4
		}
		return float32(rng.NormFloat64())
	}},
	{name: "relu", value: func(rng *rand.Rand, _, _ int) float32 { return float32(max(0, rng.NormFloat64())) }},
}

// longShapes are the shapes of TestTensorLongSets for k, each tensor
// 2^22 values: sets of 2^22 (a 2048x2048 image's channel, a channel over
// a batch), 2^20 channels at a position, 2^17 for each of 32 groups;
// 2^14 values under -short (emulators: chunks and totals on every
// instruction set).
func (k *tensorKernel) longShapes() []tShape {
	long := 1 << 22
	if os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
		// Under an emulator: sets of 2^20 still take every summation level
		// (chunks of 64, totals of 64 chunks, the super-total above them).
		long = 1 << 20
	}
	if testing.Short() {
		long = 1 << 14
	}
	switch k.axis {
	case "channels": // a position's channels: one lane per position
		return []tShape{{1, long / 4, 4, false}}
	case "batch": // one long segment, many short ones, [N, C] (a lane per channel)
		return []tShape{{1, 1, long, false}, {long / 64, 1, 64, false}, {long / 2, 2, 1, false}}
	}
	if k.groupSize > 0 { // one group: an image's channels (InstanceNorm: one channel)
		return []tShape{{1, k.groupSize, long / k.groupSize, false}}
	}
	return []tShape{{1, k.groups, long / k.groups, false}} // a channel per group
}

// TestTensorLongSets runs each tensor kernel on the long-set families at
// its longShapes against the float64 oracle, and logs the largest error
// per family in units of the contract's scale.
func TestTensorLongSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	seen := map[string]bool{}
	for _, k := range tensorKernels {
		if k.noStat {
			continue // nothing is summed
		}
		if seen[k.name] {
			continue // a run-time eps kernel's other eps values: eps does not enter the sums
		}
		seen[k.name] = true
		if k.storage != "f32" && os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
			// Under an emulator, the float32 kernels' long sets test the
			// same sums; the half loads and stores are checked by the
			// equivalence test, as the row kernels' long rows do.
			continue
		}
		for _, s := range k.longShapes() {
			for _, fam := range tLongFamilies {
				if !k.holds(func(rng *rand.Rand) float32 { return fam.value(rng, 0, 0) }) {
					continue
				}
				in := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
				for _, g := range k.groupsOf(s.n, s.c, s.l) {
					pos := rng.IntN(len(g.idx))
					for j, i := range g.idx {
						in.x[i] = fam.value(rng, j, pos)
					}
				}
				ref := k.oracle(in)
				got := in.clone()
				k.call(got, s.fixed)
				saved := tensorWorst[k.name]
				tensorWorst[k.name] = 0
				err := k.verify(got, in, ref, tFamily{name: fam.name})
				t.Logf("%s (%s) %v family=%s: max error %.2f %s", k.name, isaOf(k.name), s, fam.name, tensorWorst[k.name], errorUnit(k.storage, tTolerance))
				tensorWorst[k.name] = max(saved, tensorWorst[k.name])
				if err != nil {
					t.Errorf("%s %v family=%s: %v", k.name, s, fam.name, err)
				}
				if err := got.checkMargins(got.dst, got.x, got.gamma, got.beta, got.mean, got.rstd, got.runMean, got.runVar); err != nil {
					t.Fatalf("%s %v family=%s: %v", k.name, s, fam.name, err)
				}
			}
		}
	}
}

// TestTensorNonFinite checks that a NaN in x makes exactly its own group's
// outputs NaN (and, for a BatchNorm, its channel's running statistics),
// leaving every other group finite and correct.
func TestTensorNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, k := range tensorKernels {
		s := k.shapes()[len(k.shapes())-1]
		in := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
		groups := k.groupsOf(s.n, s.c, s.l)
		bad := groups[len(groups)/2]
		badAt := bad.idx[len(bad.idx)/3]
		in.x[badAt] = float32(math.NaN())
		ref := k.oracle(in)
		got := in.clone()
		k.call(got, s.fixed)
		for _, g := range groups {
			for _, i := range g.idx {
				v := got.dst[i]
				if g.stat == bad.stat && (!k.noStat || i == badAt) {
					if !math.IsNaN(float64(v)) {
						t.Fatalf("%s %v: NaN in group %d, dst[%d] = %v, want NaN", k.name, s, bad.stat, i, v)
					}
				} else if d := math.Abs(float64(v) - ref.y[i]); !(d <= ref.bound[i]) && i != badAt {
					t.Fatalf("%s %v: NaN in group %d leaked into dst[%d] = %v (oracle %v)", k.name, s, bad.stat, i, v, ref.y[i])
				}
			}
		}
		if k.running != "" && !math.IsNaN(float64(got.runMean[bad.stat])) {
			t.Fatalf("%s %v: running mean of the channel with a NaN = %v, want NaN", k.name, s, got.runMean[bad.stat])
		}
	}
}

// TestTensorWrongLengths checks that every entry point rejects each wrong
// argument with a message naming the kernel, before touching any memory.
func TestTensorWrongLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, k := range tensorKernels {
		s := k.shapes()[len(k.shapes())-1]
		qualified := tPackageName + "." + k.name
		type mutation struct {
			what, want string
			change     func(c *tensorCall)
		}
		muts := []mutation{
			{"len(x) one short", "len(x)", func(c *tensorCall) { c.x = c.x[:len(c.x)-1] }},
			{"len(dst) one short", "len(dst)", func(c *tensorCall) { c.dst = c.dst[:len(c.dst)-1] }},
			{"spatial = 0", "spatial = 0", func(c *tensorCall) { c.l = 0 }},
			{"channels = 0", "channels = 0", func(c *tensorCall) { c.c = 0 }},
			{"channels*spatial overflowing", "overflows", func(c *tensorCall) {
				m := max(1, k.groups, k.groupSize) // keep channels a multiple of the group count or size
				big := 1 << (bits.UintSize/2 + 8)  // the product overflows int on 32- and 64-bit GOARCHes
				c.c, c.l = big-big%m, big
			}},
		}
		fields := []struct {
			name string
			of   func(c *tensorCall) *[]float32
		}{
			{"gamma", func(c *tensorCall) *[]float32 { return &c.gamma }}, {"beta", func(c *tensorCall) *[]float32 { return &c.beta }},
			{"mean", func(c *tensorCall) *[]float32 { return &c.mean }}, {"rstd", func(c *tensorCall) *[]float32 { return &c.rstd }},
			{"runMean", func(c *tensorCall) *[]float32 { return &c.runMean }}, {"runVar", func(c *tensorCall) *[]float32 { return &c.runVar }},
		}
		probe := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
		for _, fd := range fields {
			if *fd.of(probe) == nil {
				continue
			}
			arr := k.arrayName(fd.name)
			muts = append(muts, mutation{"len(" + arr + ") one long", "len(" + arr + ")", func(c *tensorCall) {
				p := fd.of(c)
				*p = c.grown(*p)
			}})
		}
		if k.groups > 1 {
			muts = append(muts, mutation{"channels not a multiple of the groups", "groups", func(c *tensorCall) { c.c++ }})
		}
		if k.groupSize > 1 {
			muts = append(muts, mutation{"channels not a multiple of the group size", "group size", func(c *tensorCall) { c.c++ }})
		}
		if k.axis == "batch" && !k.noStat {
			muts = append(muts, mutation{"N*L = 1", "N*L = 1", func(c *tensorCall) {
				c.l = 1
				c.x, c.dst = c.x[:c.c], c.dst[:c.c]
			}})
		}
		for _, m := range muts {
			for _, e := range k.entries() {
				c := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
				m.change(c)
				before := c.clone()
				fixed := s.fixed && !strings.HasPrefix(m.what, "channels") && !strings.Contains(m.what, "group")
				what := fmt.Sprintf("%s%s %v with %s", k.name, e.suffix, s, m.what)
				msg := expectPanic(t, what, func() { e.run(c, fixed) })
				if !strings.HasPrefix(msg, qualified) || !strings.Contains(msg, e.suffix+": ") || !strings.Contains(msg, m.want) {
					t.Fatalf("%s: panic message %q does not name the entry point and %q", what, msg, m.want)
				}
				for bi := range c.buffers {
					for e := range c.buffers[bi] {
						if math.Float32bits(c.buffers[bi][e]) != math.Float32bits(before.buffers[bi][e]) {
							t.Fatalf("%s: memory changed before the panic (running statistics included)", what)
						}
					}
				}
			}
		}
	}
}

// TestTensorOverlap checks that dst overlapping x other than exactly, or
// a parameter inside dst, panics.
func TestTensorOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, k := range tensorKernels {
		s := k.shapes()[len(k.shapes())-1]
		for _, e := range k.entries() {
			for _, shift := range []int{1, -1} {
				c := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
				buf := make([]float32, len(c.x)+2)
				copy(buf[1:], c.x)
				c.x = buf[1 : 1+len(c.x)]
				c.dst = buf[1+shift : 1+shift+len(c.x)]
				msg := expectPanic(t, fmt.Sprintf("%s%s with dst = x shifted by %d", k.name, e.suffix, shift), func() { e.run(c, s.fixed) })
				if !strings.Contains(msg, "overlap") {
					t.Fatalf("%s%s: panic message %q does not say overlap", k.name, e.suffix, msg)
				}
			}
			if k.scale && k.storage == "f32" { // a half dst is not the float32 record's memory
				c := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
				c.gamma = c.dst[:len(c.gamma)]
				msg := expectPanic(t, k.name+e.suffix+" with gamma inside dst", func() { e.run(c, s.fixed) })
				if !strings.Contains(msg, "overlap") {
					t.Fatalf("%s%s: panic message %q does not say overlap", k.name, e.suffix, msg)
				}
			}
		}
	}
}

// parallelShapes are the shapes TestTensorParallel splits: several
// images for the per-image forms; for axis batch, [N, C] with 70 channels
// (four blocks of 16 and a tail of 6, each split between two), and
// segments of 33 values.
func (k *tensorKernel) parallelShapes() []tShape {
	var out []tShape
	switch k.axis {
	case "channels":
		for _, c := range k.sizes {
			out = append(out, tShape{5, c, 9, true})
		}
		out = append(out, tShape{5, 17, 9, false})
	case "batch":
		out = []tShape{{3, 70, 1, false}, {2, 7, 33, false}, {1, 40, 3, false}}
	case "groups":
		c := 2 * k.groups
		if k.groupSize > 0 {
			c = 3 * k.groupSize
		}
		out = []tShape{{5, c, 7, false}}
	}
	return out
}

// tMixed fills every third set of values with values near 1e30, whose
// squares overflow float32 (the assembly hands those sets to the float64
// path), and puts a NaN in one set: the sets of the same vector block
// then take different paths, and the split must not change which.
func (k *tensorKernel) tMixed(in *tensorCall, rng *rand.Rand) {
	groups := k.groupsOf(in.n, in.c, in.l)
	for gi, g := range groups {
		if gi%3 == 1 {
			for _, i := range g.idx {
				in.x[i] = float32(1e30 * rng.NormFloat64())
			}
		}
	}
	bad := groups[len(groups)/2]
	in.x[bad.idx[len(bad.idx)/2]] = float32(math.NaN())
}

// tSameBits reports the first value, margins included, where two calls
// made from clones of one call differ in any bit.
func tSameBits(got, want *tensorCall) error {
	if len(got.buffers) != len(want.buffers) {
		return fmt.Errorf("%d buffers, want %d", len(got.buffers), len(want.buffers))
	}
	for bi := range got.buffers {
		for e, v := range got.buffers[bi] {
			if w := want.buffers[bi][e]; math.Float32bits(v) != math.Float32bits(w) {
				return fmt.Errorf("buffer %d element %d = %v (%#08x), the serial call's = %v (%#08x)", bi, e, v, math.Float32bits(v), w, math.Float32bits(w))
			}
		}
	}
	return nil
}

// TestTensorParallel checks that every Parallel entry point gives the
// serial entry point's results bit for bit, in every array and around
// them, at shapes it splits into several pieces (any input splits here)
// on 2, 3 and 8 goroutines, in place and not, on ordinary inputs, on
// inputs that all take the float64 path and on a mix of both.
func TestTensorParallel(t *testing.T) {
	defer func(saved int) { parallelMinBytes = saved }(parallelMinBytes)
	parallelMinBytes = 1
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(35, 36))
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, k := range tensorKernels {
			for _, s := range k.parallelShapes() {
				for _, fam := range []string{"normal", "1e30", "mixed"} {
					for _, inPlace := range []bool{false, true} {
						var in *tensorCall
						switch fam {
						case "1e30":
							in = k.newCall(s.n, s.c, s.l, tFamilies[4], rng)
						default:
							in = k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
							if fam == "mixed" {
								k.tMixed(in, rng)
							}
						}
						want, got := in.clone(), in.clone()
						if inPlace {
							want.dst, got.dst = want.x, got.x
						}
						k.call(want, s.fixed)
						k.parallel(got, s.fixed)
						if err := tSameBits(got, want); err != nil {
							t.Fatalf("%sParallel %v family=%s in-place=%v GOMAXPROCS=%d: %v", k.name, s, fam, inPlace, procs, err)
						}
					}
				}
			}
		}
	}
}

// TestTensorConcurrent calls the entry points, serial and Parallel (split
// into goroutines of their own), from many goroutines at once, sharing
// the scale and shift (read-only), each on its own tensor, and checks
// each result against a sequential call. Run it under -race.
func TestTensorConcurrent(t *testing.T) {
	const workers = 8
	defer func(saved int) { parallelMinBytes = saved }(parallelMinBytes)
	parallelMinBytes = 1
	rng := rand.New(rand.NewPCG(37, 38))
	for _, k := range tensorKernels {
		s := k.parallelShapes()[0]
		shared := k.newCall(s.n, s.c, s.l, tFamilies[0], rng)
		var ins, wants []*tensorCall
		for w := 0; w < workers; w++ {
			in := shared.clone()
			for i := range in.x {
				in.x[i] = float32(rng.NormFloat64())
			}
			want := in.clone()
			k.call(want, s.fixed)

			ins, wants = append(ins, in), append(wants, want)
		}
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			go func() {
				e := k.entries()[w%2]
				for range 10 {
					// A fresh copy each time (running statistics change with
					// every call), with the parameters every goroutine shares.
					got := ins[w].clone()
					got.gamma, got.beta = shared.gamma, shared.beta
					e.run(got, s.fixed)
					for _, p := range [][2][]float32{{got.dst, wants[w].dst}, {got.mean, wants[w].mean}, {got.rstd, wants[w].rstd},
						{got.runMean, wants[w].runMean}, {got.runVar, wants[w].runVar}} {
						for j := range p[0] {
							if math.Float32bits(p[0][j]) != math.Float32bits(p[1][j]) {
								errs <- fmt.Errorf("%s%s %v goroutine %d: element %d = %v, sequential call gave %v", k.name, e.suffix, s, w, j, p[0][j], p[1][j])
								return
							}
						}
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTensorDispatch logs the implementation each tensor kernel uses; with
// NORMGEN_REQUIRE_ISA set, it fails unless every kernel generated for that
// instruction set uses it or a form of it (named after it).
func TestTensorDispatch(t *testing.T) {
	want := os.Getenv("NORMGEN_REQUIRE_ISA")
	for _, k := range tensorKernels {
		got := isaOf(k.name)
		t.Logf("normgen dispatch: %s (kernel %s)", got, k.name)
		for _, isa := range k.isas {
			if want != "" && isa == want && !strings.HasPrefix(got, want) {
				t.Errorf("kernel %s dispatches to %s, want %s", k.name, got, want)
			}
		}
	}
}

func tensorKernelNamed(name string) *tensorKernel {
	for _, k := range tensorKernels {
		if k.name == name {
			return k
		}
	}
	panic("no kernel " + name)
}

// fuzzTensor checks a kernel on tensors made from the fuzzer's bytes: the
// shape from the first bytes, x from the rest (NaN, Inf, subnormals
// included). Groups holding a non-finite value must come out all NaN, the
// others within the contract where it applies (max|x| * count < 1e38);
// nothing outside the arrays may change.
func fuzzTensor(f *testing.F, name string, fixedC int) {
	k := tensorKernelNamed(name)
	f.Add([]byte{1, 3, 5, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64})
	f.Add([]byte{2, 1, 17, 0, 0, 192, 127, 0, 0, 128, 63})
	f.Add([]byte{1, 2, 2, 0, 0, 128, 127, 0, 0, 128, 191})
	f.Add([]byte{3, 4, 9, 1, 0, 0, 0, 2, 0, 0, 128})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		n, c, l := 1+int(data[0]%3), 1+int(data[1]%8), 1+int(data[2]%40)
		if fixedC > 0 {
			c = fixedC
		}
		if k.groups > 0 {
			c = k.groups * (1 + int(data[1]%2))
		}
		if k.groupSize > 0 {
			c = k.groupSize * (1 + int(data[1]%4))
		}
		if k.axis == "batch" && !k.noStat && n*l == 1 {
			l = 2
		}
		vals := tFloatsOf(data[3:])
		if len(vals) == 0 {
			return
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), 7))
		in := k.newCall(n, c, l, tFamilies[0], rng)
		for i := range in.x {
			in.x[i] = vals[i%len(vals)]
		}
		ref := k.oracle(in)
		got := in.clone()
		k.call(got, fixedC > 0)
		if err := got.checkMargins(got.dst, got.x, got.gamma, got.beta, got.mean, got.rstd, got.runMean, got.runVar); err != nil {
			t.Fatal(err)
		}
		for _, g := range k.groupsOf(n, c, l) {
			finite, maxAbs := true, 0.0
			for _, i := range g.idx {
				v := float64(in.x[i])
				finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
				maxAbs = math.Max(maxAbs, math.Abs(v))
			}
			for _, i := range g.idx {
				v := float64(got.dst[i])
				switch {
				case !finite && k.mean && !k.noStat:
					if !math.IsNaN(v) {
						t.Fatalf("group %d holds a non-finite value: dst[%d] = %v, want NaN", g.stat, i, v)
					}
				case finite && maxAbs*float64(len(g.idx)) < 1e38:
					if d := math.Abs(v - ref.y[i]); !(d <= ref.bound[i]) {
						t.Fatalf("dst[%d] = %v, oracle %v: error %.3g > bound %.3g", i, v, ref.y[i], d, ref.bound[i])
					}
				}
			}
		}
	})
}

// benchTensor times a kernel on an [n, c, l] tensor next to a copy of the
// same bytes, so that every figure has its bound from the same run. A half
// kernel runs on uint16 arrays encoded once (timeHalf), and the copy
// copies as many uint16s.
func benchTensor(b *testing.B, name string, shapes ...tShape) {
	k := tensorKernelNamed(name)
	rng := rand.New(rand.NewPCG(8, 9))
	elem := 4
	if _, ok := halfFormats[k.storage]; ok {
		elem = 2
	}
	for _, s := range shapes {
		in := k.makeCall(s.n, s.c, s.l, tFamilies[0], rng, false) // aligned, as large slices are in practice
		label := fmt.Sprintf("N=%d,C=%d,L=%d(%dKiB)", s.n, s.c, s.l, elem*len(in.x)>>10)
		b.Run(label+"/copy", func(b *testing.B) {
			b.SetBytes(int64(elem * len(in.x)))
			if elem == 2 {
				src, dst := copyBuffers(2 * len(in.x))
				b.ResetTimer()
				for range b.N {
					copy(dst, src)
				}
				return
			}
			for range b.N {
				copy(in.dst, in.x)
			}
		})
		b.Run(label+"/"+isaOf(k.name), func(b *testing.B) {
			b.SetBytes(int64(elem * len(in.x)))
			if elem == 2 {
				timeHalf(b, func() { k.call(in, s.fixed) })
				return
			}
			for range b.N {
				k.call(in, s.fixed)
			}
		})
	}
}

// TestTensorEpsChecks checks that every tensor entry point taking eps
// panics, naming itself and the value, on NaN, an infinity, a negative or
// a subnormal eps, and not on 0, the smallest normal or the largest float32.
func TestTensorEpsChecks(t *testing.T) {
	if len(tEpsEntryPoints) == 0 {
		t.Skip("no tensor kernel takes eps at run time")
	}
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -1e-5, math.SmallestNonzeroFloat32, 1e-39}
	good := []float32{0, 0x1p-126, 1e-5, 1000, math.MaxFloat32}
	for name, call := range tEpsEntryPoints {
		for _, eps := range bad {
			msg := expectPanic(t, fmt.Sprintf("%s with eps = %v", name, eps), func() { call(eps) })
			if !strings.HasPrefix(msg, tPackageName+"."+name+":") || !strings.Contains(msg, fmt.Sprintf("eps = %v", eps)) {
				t.Fatalf("%s with eps = %v: panic message %q does not name the entry point and the value", name, eps, msg)
			}
		}
		for _, eps := range good {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s with eps = %v: %v", name, eps, r)
					}
				}()
				call(eps)
			}()
		}
	}
}

// TestTensorImplementation checks that the package's Implementation names
// the best instruction set any kernel dispatches to on this CPU, and with
// NORMGEN_REQUIRE_ISA set that one. In a package with kernels over rows
// too, TestImplementation checks it.
func TestTensorImplementation(t *testing.T) {
	if tHasRows {
		t.Skip("checked by TestImplementation, beside the kernels over rows")
	}
	got := implementationFunc()
	t.Logf("%s() = %q", implementationName, got)
	used := map[string]bool{}
	for _, k := range tensorKernels {
		used[isaOf(k.name)] = true
	}
	want := ""
	for _, isa := range tIsaOrder {
		if used[isa] {
			want = tIsaTitles[isa]
			break
		}
	}
	if got != want {
		t.Errorf("%s() = %q, want %q (the kernels dispatch to %v)", implementationName, got, want, used)
	}
	if req := os.Getenv("NORMGEN_REQUIRE_ISA"); req != "" && !strings.HasPrefix(tTitleISA(got), req) {
		generated := false
		for _, k := range tensorKernels {
			for _, isa := range k.isas {
				generated = generated || isa == req
			}
		}
		if generated {
			t.Errorf("NORMGEN_REQUIRE_ISA=%s: %s() = %q, want %q", req, implementationName, got, tIsaTitles[req])
		}
	}
}

// round is v as the kernel's dst or x holds it.
func (k *tensorKernel) round(v float32) float32 {
	if f, ok := halfFormats[k.storage]; ok {
		return float32(f.decode(f.encode(float64(v))))
	}
	return v
}

// holds reports whether the kernel's storage keeps a family's values
// finite (f16 overflows at 65520): a sample of 64 of them, drawn with a
// fixed seed.
func (k *tensorKernel) holds(value func(rng *rand.Rand) float32) bool {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 64 {
		v := value(rng)
		if !math.IsInf(float64(v), 0) && math.IsInf(float64(k.round(v)), 0) {
			return false
		}
	}
	return true
}

// tHalfCall runs call on the call's dst and x in the half format storage:
// it encodes them into uint16 arrays inside margins of halfSentinel,
// runs call, checks the margins and decodes the arrays back into the
// call's float32 record. dst and x that overlap (in place, or shifted on
// purpose) get uint16 arrays that overlap in the same way.
func tHalfCall(storage string, c *tensorCall, call func(dst, x []uint16)) {
	f := halfFormats[storage]
	sentinel := halfSentinel[storage]
	addr := func(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }
	arrays := [][]float32{c.dst, c.x}
	half := make([][]uint16, len(arrays))
	var lo, hi uintptr // the range of the overlapping pair, or of dst alone
	var bufs [][]uint16
	place := func(i int, buf []uint16, base uintptr) {
		off := tMargin + int(addr(arrays[i])-base)/4
		half[i] = buf[off : off+len(arrays[i]) : off+len(arrays[i])]
		for j, v := range arrays[i] {
			half[i][j] = f.encode(float64(v))
		}
	}
	newBuf := func(n int) []uint16 {
		buf := make([]uint16, n+2*tMargin)
		for j := range buf {
			buf[j] = sentinel
		}
		bufs = append(bufs, buf)
		return buf
	}
	dst, x := arrays[0], arrays[1]
	switch {
	case dst == nil || x == nil:
		for i, a := range arrays {
			if a != nil {
				place(i, newBuf(len(a)), addr(a))
			}
		}
	case addr(dst) < addr(x)+4*uintptr(len(x)) && addr(x) < addr(dst)+4*uintptr(len(dst)):
		lo, hi = min(addr(dst), addr(x)), max(addr(dst)+4*uintptr(len(dst)), addr(x)+4*uintptr(len(x)))
		buf := newBuf(int(hi-lo) / 4)
		place(1, buf, lo)
		place(0, buf, lo)
	default:
		place(0, newBuf(len(dst)), addr(dst))
		place(1, newBuf(len(x)), addr(x))
	}
	halfRepeat(func() { call(half[0], half[1]) })
	for _, buf := range bufs {
		for j, b := range buf {
			if (j < tMargin || j >= len(buf)-tMargin) && b != sentinel {
				panic(fmt.Sprintf("wrote outside the %s arrays: margin index %d = %#04x", storage, j, b))
			}
		}
	}
	for j, b := range half[0] {
		dst[j] = float32(f.decode(b))
	}
}

// tTitleISA is the name of the instruction set whose title is title.
func tTitleISA(title string) string {
	for name, t := range tIsaTitles {
		if t == title {
			return name
		}
	}
	return ""
}
