package testkit

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The helpers of the tests of the backward entry points of the kernels
// over [N, C, L] tensors live in normgen's templates/testkit/
// tensorbackward.go; the generator appends them to each
// <stem>_tensor_backward_test.go, beside <stem>_tensor_test.go, whose
// helpers (families, fences) they share; expectPanic is shared.go's.

type tbKernel struct {
	name         string // the entry points' prefix, e.g. GroupNormBackward
	axis         string // batch, groups or channels
	groups       int    // axis groups: channel groups per image, or
	groupSize    int    // the channels in each group
	mean, noStat bool   // neither: rms
	eps          float64
	scale, shift bool
	scaleOffset  float64
	storage      string   // dy, x and dx: "f32", or "bf16" or "f16" (uint16 bits; the calls go through halfCall)
	sizes        []int    // fixed channel counts (axis channels)
	arrays       []string // in signature order
	outs         []bool
	// call runs the entry point (fixed: the one for c channels), and
	// parallel its Parallel form.
	call, parallel func(a [][]float32, c, l int, fixed bool)
}

// tbShape is one call: n images of c channels of l positions.
type tbShape struct {
	n, c, l int
	fixed   bool
}

func (s tbShape) String() string {
	return fmt.Sprintf("N=%d C=%d L=%d fixed=%v", s.n, s.c, s.l, s.fixed)
}

// tbSet is one normalized set: its elements, their statistics' index.
type tbSet struct {
	idx  []int
	stat int
}

func (k *tbKernel) groupCount(c int) int {
	if k.groupSize > 0 {
		return c / k.groupSize
	}
	return k.groups
}

// sets lists the normalized sets of a shape, as the forward forms them.
func (k *tbKernel) sets(s tbShape) []tbSet {
	var out []tbSet
	at := func(n, ch, l int) int { return (n*s.c+ch)*s.l + l }
	switch k.axis {
	case "batch":
		for ch := 0; ch < s.c; ch++ {
			set := tbSet{stat: ch}
			for n := 0; n < s.n; n++ {
				for l := 0; l < s.l; l++ {
					set.idx = append(set.idx, at(n, ch, l))
				}
			}
			out = append(out, set)
		}
	case "groups":
		g := k.groupCount(s.c)
		per := s.c / g
		for n := 0; n < s.n; n++ {
			for gi := 0; gi < g; gi++ {
				set := tbSet{stat: n*g + gi}
				for ch := gi * per; ch < (gi+1)*per; ch++ {
					for l := 0; l < s.l; l++ {
						set.idx = append(set.idx, at(n, ch, l))
					}
				}
				out = append(out, set)
			}
		}
	case "channels":
		for n := 0; n < s.n; n++ {
			for l := 0; l < s.l; l++ {
				set := tbSet{stat: n*s.l + l}
				for ch := 0; ch < s.c; ch++ {
					set.idx = append(set.idx, at(n, ch, l))
				}
				out = append(out, set)
			}
		}
	}
	return out
}

// length is the length of array name for shape s.
func (k *tbKernel) length(name string, s tbShape) int {
	switch name {
	case "dx", "dy", "x":
		return s.n * s.c * s.l
	case "mean", "rstd":
		switch k.axis {
		case "batch":
			return s.c
		case "groups":
			return s.n * k.groupCount(s.c)
		}
		return s.n * s.l
	}
	return s.c // the per-channel parameters and their gradients
}

func (k *tbKernel) index(name string) int {
	for i, n := range k.arrays {
		if n == name {
			return i
		}
	}
	return -1
}

// tbCall is one call's arrays, fenced by sentinels.
type tbCall struct {
	s       tbShape
	a       [][]float32
	buffers [][]float32
	offsets []int
}

func (c *tbCall) get(k *tbKernel, name string) []float32 {
	if i := k.index(name); i >= 0 {
		return c.a[i]
	}
	return nil
}

// newCall allocates a call's arrays at unaligned starts (aligned with
// rng nil, for benchmarks), fenced by sentinels.
func (k *tbKernel) newCall(s tbShape, rng *rand.Rand) *tbCall {
	c := &tbCall{s: s}
	for _, name := range k.arrays {
		n := k.length(name, s)
		off := tMargin
		if rng != nil {
			off += rng.IntN(4)
		}
		buf := make([]float32, off+n+tMargin)
		for i := range buf {
			buf[i] = tSentinel
		}
		c.buffers = append(c.buffers, buf)
		c.offsets = append(c.offsets, off)
		c.a = append(c.a, buf[off:off+n:off+n])
	}
	return c
}

func (c *tbCall) clone() *tbCall {
	d := &tbCall{s: c.s, offsets: c.offsets}
	for i, buf := range c.buffers {
		b := append([]float32(nil), buf...)
		d.buffers = append(d.buffers, b)
		d.a = append(d.a, b[c.offsets[i]:c.offsets[i]+len(c.a[i]):c.offsets[i]+len(c.a[i])])
	}
	return d
}

// checkMargins reports a write outside the arrays.
func (c *tbCall) checkMargins(k *tbKernel) error {
	for i, buf := range c.buffers {
		for j, v := range buf {
			if (j < c.offsets[i] || j >= c.offsets[i]+len(c.a[i])) && math.Float32bits(v) != math.Float32bits(tSentinel) {
				return fmt.Errorf("%s: stray write at %d", k.arrays[i], j-c.offsets[i])
			}
		}
	}
	return nil
}

// fill sets x from the family, dy normal, gamma around 1, and the saved
// statistics as the forward saves them.
func (k *tbKernel) fill(c *tbCall, fam tFamily, rng *rand.Rand) {
	for i, name := range k.arrays {
		if k.outs[i] {
			continue
		}
		for j := range c.a[i] {
			switch name {
			case "x":
				c.a[i][j] = fam.value(rng)
			case "gamma", "gain":
				c.a[i][j] = float32(1 + 0.5*rng.NormFloat64())
			case "dy":
				c.a[i][j] = float32(rng.NormFloat64())
			}
		}
	}
	k.quantize(c)
	k.setStats(c)
}

// quantize rounds dy and x to the storage format: the float32 record then
// holds exactly what the kernels read, and the oracle and the saved
// statistics see the decoded values.
func (k *tbKernel) quantize(c *tbCall) {
	f, ok := halfFormats[k.storage]
	if !ok {
		return
	}
	for _, name := range []string{"dy", "x"} {
		a := c.get(k, name)
		for j, v := range a {
			a[j] = float32(f.decode(f.encode(float64(v))))
		}
	}
}

// holds reports whether the storage keeps a family's values finite (f16
// overflows at 65520): a sample of 64, drawn with a fixed seed.
func (k *tbKernel) holds(fam tFamily) bool {
	f, ok := halfFormats[k.storage]
	if !ok {
		return true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 64 {
		v := float64(fam.value(rng))
		if !math.IsInf(v, 0) && math.IsInf(f.decode(f.encode(v)), 0) {
			return false
		}
	}
	return true
}

// stats64 is a set's mean (0 without) and 1/sqrt(statistic+eps) in float64.
func (k *tbKernel) stats64(x []float64, set tbSet) (mu, rs float64) {
	if k.noStat {
		return 0, 1
	}
	if k.mean {
		for _, j := range set.idx {
			mu += x[j]
		}
		mu /= float64(len(set.idx))
	}
	v := 0.0
	for _, j := range set.idx {
		v += (x[j] - mu) * (x[j] - mu)
	}
	return mu, 1 / math.Sqrt(v/float64(len(set.idx))+k.eps)
}

func (k *tbKernel) setStats(c *tbCall) {
	x := to64(c.get(k, "x"))
	mean, rstd := c.get(k, "mean"), c.get(k, "rstd")
	for _, set := range k.sets(c.s) {
		mu, rs := k.stats64(x, set)
		if mean != nil {
			mean[set.stat] = float32(mu)
		}
		if rstd != nil {
			rstd[set.stat] = float32(rs)
		}
	}
}

func to64(a []float32) []float64 {
	out := make([]float64, len(a))
	for i, v := range a {
		out[i] = float64(v)
	}
	return out
}

// tbReference is the oracle's gradients and, per value, the magnitude
// the contract scales its error by (as for the backward over rows).
type tbReference struct {
	want, mag map[string][]float64
}

// oracle evaluates the backward formulas (docs/math.md) in float64 with
// the statistics as given: per normalized set, xhat = (x - mean)*rstd,
// u = g*dy, dx = rstd*(u - mean(u) - xhat*mean(u*xhat)) (rms: without
// mean(u)); per channel dgamma = sum dy*xhat, dbeta = sum dy.
func (k *tbKernel) oracle(s tbShape, in map[string][]float64) tbReference {
	ref := tbReference{want: map[string][]float64{}, mag: map[string][]float64{}}
	for i, name := range k.arrays {
		if k.outs[i] {
			ref.want[name], ref.mag[name] = make([]float64, k.length(name, s)), make([]float64, k.length(name, s))
		}
	}
	dx, dxM := ref.want["dx"], ref.mag["dx"]
	dg, dgM := ref.want["dgamma"], ref.mag["dgamma"]
	if dg == nil {
		dg, dgM = ref.want["dgain"], ref.mag["dgain"]
	}
	db, dbM := ref.want["dbeta"], ref.mag["dbeta"]
	if db == nil {
		db, dbM = ref.want["dbias"], ref.mag["dbias"]
	}
	x, dy := in["x"], in["dy"]
	gamma := in["gamma"]
	if gamma == nil {
		gamma = in["gain"]
	}
	for _, set := range k.sets(s) {
		mu, rs := 0.0, 1.0
		if k.mean {
			mu = in["mean"][set.stat]
		}
		if !k.noStat {
			rs = in["rstd"][set.stat]
		}
		m := len(set.idx)
		xhat, xm, u, um := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
		var sumU, sumUM, sumUX, sumUXM float64
		for e, j := range set.idx {
			ch := j / s.l % s.c
			xhat[e] = (x[j] - mu) * rs
			xm[e] = (math.Abs(x[j]-mu) + 0x1p-126) * rs
			g := 1.0
			if k.scale {
				g = gamma[ch] + k.scaleOffset
			}
			u[e], um[e] = g*dy[j], math.Abs(g*dy[j])+0x1p-126
			sumU += u[e]
			sumUM += um[e]
			sumUX += u[e] * xhat[e]
			sumUXM += um[e] * xm[e]
		}
		inv := 1 / float64(m)
		for e, j := range set.idx {
			ch := j / s.l % s.c
			switch {
			case k.noStat:
				dx[j], dxM[j] = u[e], um[e]
			case k.mean:
				dx[j] = rs * (u[e] - sumU*inv - xhat[e]*inv*sumUX)
				dxM[j] = rs * (um[e] + sumUM*inv + xm[e]*inv*sumUXM)
			default:
				dx[j] = rs * (u[e] - xhat[e]*inv*sumUX)
				dxM[j] = rs * (um[e] + xm[e]*inv*sumUXM)
			}
			// dx is stored in float32: below its normal range, rounding
			// to a subnormal errs by an absolute 2^-150.
			dxM[j] += 0x1p-126
			if dg != nil {
				dg[ch] += dy[j] * xhat[e]
				dgM[ch] += math.Abs(dy[j])*xm[e] + 0x1p-126
			}
			if db != nil {
				db[ch] += dy[j]
				dbM[ch] += math.Abs(dy[j])
			}
		}
	}
	return ref
}

func (k *tbKernel) inputs(c *tbCall) map[string][]float64 {
	in := map[string][]float64{}
	for i, name := range k.arrays {
		if !k.outs[i] {
			in[name] = to64(c.a[i])
		}
	}
	return in
}

// tbWorst records per kernel the largest error seen, in units of 2^-24
// times the value's magnitude; with half storage, that of the float32
// parameter gradients, and tbWorstHalf the largest error of dx as a
// fraction of its widened bound, tbWorstUlps in ulps of the format (large
// where dx cancels to near zero, hence not the contract).
var tbWorst, tbWorstHalf, tbWorstUlps = map[string]float64{}, map[string]float64{}, map[string]float64{}

// bound is the contract's allowed error of output name at oracle value w
// of magnitude m. With half storage dx is stored in the format: its bound
// is widened by exactly one rounding of the output, u*(|w| + the float32
// bound) plus half the least subnormal (u the format's unit roundoff).
// The parameter gradients stay float32 sums of the decoded values.
func (k *tbKernel) bound(name string, w, m float64) float64 {
	b := tbTolerance * tEpsilon32 * m
	if hf, ok := halfFormats[k.storage]; ok && name == "dx" {
		b += hf.unit()*(math.Abs(w)+b) + hf.leastSubnormal()/2
	}
	return b
}

// overflows reports a stored dx v that is the infinity of w's sign where
// w within bound b reaches beyond the format's range (where it rounds to
// Inf).
func (k *tbKernel) overflows(name string, v float32, w, b float64) bool {
	hf, ok := halfFormats[k.storage]
	return ok && name == "dx" && math.IsInf(float64(v), 0) && math.Abs(w)+b >= hf.largest() && (v > 0) == (w > 0)
}

func (k *tbKernel) verify(got *tbCall, ref tbReference) error {
	hf, half := halfFormats[k.storage]
	for name, want := range ref.want {
		out := got.get(k, name)
		for j, v := range out {
			w, m := want[j], ref.mag[name][j]
			if math.IsNaN(w) || math.IsInf(w, 0) || math.IsInf(m, 0) {
				if math.IsNaN(w) != math.IsNaN(float64(v)) {
					return fmt.Errorf("%s[%d] = %v, oracle %v", name, j, v, w)
				}
				continue
			}
			d, b := math.Abs(float64(v)-w), k.bound(name, w, m)
			switch {
			case k.overflows(name, v, w, b):
				continue
			case half && name == "dx":
				tbWorstHalf[k.name] = max(tbWorstHalf[k.name], d/b)
				tbWorstUlps[k.name] = max(tbWorstUlps[k.name], d/hf.ulp(w))
			case m > 0:
				tbWorst[k.name] = max(tbWorst[k.name], d/(tEpsilon32*m))
			}
			if !(d <= b) {
				return fmt.Errorf("%s[%d] = %v, oracle %v: error %.3g > bound %.3g", name, j, v, w, d, b)
			}
		}
	}
	return nil
}

func (k *tbKernel) sameBits(a, b *tbCall) error {
	for i, name := range k.arrays {
		if !k.outs[i] {
			continue
		}
		for j := range a.a[i] {
			if math.Float32bits(a.a[i][j]) != math.Float32bits(b.a[i][j]) {
				return fmt.Errorf("%s[%d] = %v and %v", name, j, a.a[i][j], b.a[i][j])
			}
		}
	}
	return nil
}

// shapes are the calls every test runs: each fixed channel count, run-time
// counts that are and are not multiples of the vector widths, one
// position (BatchNorm's [N, C] form), and zero images.
func (k *tbKernel) shapes() []tbShape {
	unit := 1
	if k.axis == "groups" && k.groupSize == 0 {
		unit = k.groups
	} else if k.groupSize > 0 {
		unit = k.groupSize
	}
	var out []tbShape
	for _, c := range k.sizes {
		out = append(out, tbShape{2, c, 5, true}, tbShape{1, c, 19, true})
	}
	out = append(out,
		tbShape{2, 3 * unit, 7, false},
		tbShape{3, 2 * unit, 1, false},
		tbShape{2, 19 * unit, 33, false},
		tbShape{0, 2 * unit, 4, false},
	)
	if !testing.Short() {
		out = append(out, tbShape{5, 17 * unit, 1, false}, tbShape{4, 5 * unit, 64, false}, tbShape{1, unit, 1, false})
	}
	return out
}

func (k *tbKernel) run(c *tbCall, parallel bool) {
	if parallel {
		k.parallel(c.a, c.s.c, c.s.l, c.s.fixed)
		return
	}
	k.call(c.a, c.s.c, c.s.l, c.s.fixed)
}

// TestTensorBackwardEquivalence runs each backward entry point and its
// Parallel form on the input families and shapes, from unaligned starts,
// in place (dx = dy) on the first family, against the float64 oracle; it
// checks the fences, that a second call and the Parallel form give the
// same bits, and that zero images give zero parameter gradients.
func TestTensorBackwardEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	defer func(saved int) { parallelMinBytes = saved }(parallelMinBytes)
	parallelMinBytes = 1 << 10
	defer func() {
		for _, k := range tbKernels {
			what := "gradients"
			if k.storage != "f32" {
				what = "float32 parameter gradients"
				t.Logf("%s: max error of the %s dx %.3f of its bound (one rounding to %s beyond the float32 contract), %.2f ulps of %s", k.name, k.storage, tbWorstHalf[k.name], k.storage, tbWorstUlps[k.name], k.storage)
			}
			t.Logf("%s: max error of the %s %.2f units of 2^-24 times the magnitude (contract: %d)", k.name, what, tbWorst[k.name], tbTolerance)
		}
	}()
	for _, k := range tbKernels {
		if testing.Short() && underBochs && k.storage != "f32" {
			// The half kernels' arithmetic is the float32 kernels' code,
			// checked here on those; the tensor forward's half tests check
			// the same layouts' loads and stores.
			continue
		}
		for _, s := range k.shapes() {
			for fi, fam := range tFamilies {
				if testing.Short() && !tShortFamilies[fam.name] || !k.holds(fam) {
					continue
				}
				in := k.newCall(s, rng)
				k.fill(in, fam, rng)
				ref := k.oracle(s, k.inputs(in))
				first := in.clone()
				k.run(first, false)
				name := fmt.Sprintf("%s %v family=%s", k.name, s, fam.name)
				if err := first.checkMargins(k); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := k.verify(first, ref); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if s.n == 0 {
					for i, a := range first.a {
						for j, v := range a {
							if k.outs[i] && v != 0 {
								t.Fatalf("%s: %s[%d] = %v with no images, want 0", name, k.arrays[i], j, v)
							}
						}
					}
				}
				runs := map[string]func(c *tbCall){
					"again":    func(c *tbCall) { k.run(c, false) },
					"parallel": func(c *tbCall) { k.run(c, true) },
				}
				if fi == 0 {
					runs["in place"] = func(c *tbCall) {
						dx, dy := k.index("dx"), k.index("dy")
						copy(c.a[dx], c.a[dy])
						c.a[dy] = c.a[dx]
						k.run(c, false)
					}
				}
				for what, run := range runs {
					got := in.clone()
					run(got)
					if err := got.checkMargins(k); err != nil {
						t.Fatalf("%s %s: %v", name, what, err)
					}
					if err := k.sameBits(first, got); err != nil {
						t.Fatalf("%s: %s differs from the first call: %v", name, what, err)
					}
				}
			}
		}
	}
}

// TestTensorBackwardLongSets checks long sums (a BatchNorm channel over
// many values, a group over many positions, the parameter gradients over
// many images) with nearly equal terms, whose rounding a sequential sum
// would accumulate. With NORMGEN_LONG_ASM_ONLY set (under an emulator) it
// skips the half kernels: their sums are the float32 kernels', and the
// equivalence test checks their loads and stores.
func TestTensorBackwardLongSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, k := range tbKernels {
		if k.storage != "f32" && os.Getenv("NORMGEN_LONG_ASM_ONLY") != "" {
			continue
		}
		// 1<<16 values in all: BatchNorm's channel, or a group's
		// positions, or each channel's gradients over the images.
		c := max(k.groups, k.groupSize, 1)
		shapes := []tbShape{{2, c, 1 << 15 / c, false}, {1 << 16 / c, c, 1, false}}
		if testing.Short() {
			shapes = shapes[:1]
		}
		for _, s := range shapes {
			in := k.newCall(s, rng)
			k.fill(in, tFamilies[0], rng)
			dy := in.get(k, "dy")
			for j, v := range dy {
				dy[j] = 0.1 + 1e-3*v
			}
			k.quantize(in)
			ref := k.oracle(s, k.inputs(in))
			got := in.clone()
			k.run(got, false)
			if err := k.verify(got, ref); err != nil {
				t.Errorf("%s %v: %v", k.name, s, err)
			}
		}
	}
}

// forward64 is the forward pass in float64, for the finite differences.
func (k *tbKernel) forward64(s tbShape, x, gamma, beta []float64) []float64 {
	y := make([]float64, len(x))
	for _, set := range k.sets(s) {
		mu, rs := k.stats64(x, set)
		for _, j := range set.idx {
			ch := j / s.l % s.c
			g, b := 1.0, 0.0
			if k.scale {
				g = gamma[ch] + k.scaleOffset
			}
			if k.shift {
				b = beta[ch]
			}
			y[j] = (x[j]-mu)*rs*g + b
		}
	}
	return y
}

// finiteDifferences compares the oracle's gradients with central
// differences of the loss sum(dy*y) in float64.
func (k *tbKernel) finiteDifferences(s tbShape, rng *rand.Rand) error {
	vec := func(n int, mean float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = mean + rng.NormFloat64()
		}
		return v
	}
	n := s.n * s.c * s.l
	x, dy, gamma, beta := vec(n, 0.5), vec(n, 0), vec(s.c, 1), vec(s.c, 0)
	loss := func() float64 {
		l := 0.0
		for i, v := range k.forward64(s, x, gamma, beta) {
			l += dy[i] * v
		}
		return l
	}
	in := map[string][]float64{"x": x, "dy": dy, "gamma": gamma, "gain": gamma,
		"mean": make([]float64, k.length("mean", s)), "rstd": make([]float64, k.length("rstd", s))}
	for _, set := range k.sets(s) {
		in["mean"][set.stat], in["rstd"][set.stat] = k.stats64(x, set)
	}
	ref := k.oracle(s, in)
	type param struct {
		grad string
		v    []float64
	}
	params := []param{{"dx", x}}
	for _, name := range k.arrays {
		switch name {
		case "dgamma", "dgain":
			params = append(params, param{name, gamma})
		case "dbeta", "dbias":
			params = append(params, param{name, beta})
		}
	}
	for _, p := range params {
		for i := range p.v {
			saved := p.v[i]
			step := 1e-6 * max(1, math.Abs(saved))
			p.v[i] = saved + step
			up := loss()
			p.v[i] = saved - step
			down := loss()
			p.v[i] = saved
			fd, an := (up-down)/(2*step), ref.want[p.grad][i]
			if math.Abs(fd-an) > 1e-5*(1+math.Abs(an)) {
				return fmt.Errorf("%s[%d]: analytic %.9g, finite differences %.9g", p.grad, i, an, fd)
			}
		}
	}
	return nil
}

// TestTensorBackwardOracle checks the oracle against central finite
// differences of the float64 forward pass, at small shapes.
func TestTensorBackwardOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	for _, k := range tbKernels {
		unit := max(k.groups, k.groupSize, 1)
		for _, s := range []tbShape{{2, 2 * unit, 3, false}, {3, unit, 1, false}} {
			if err := k.finiteDifferences(s, rng); err != nil {
				t.Errorf("%s %v: %v", k.name, s, err)
			}
		}
	}
}

// TestTensorBackwardNonFinite puts a NaN or an Inf into one value of dy or
// x: the gradients follow the oracle's NaN positions, and the input
// gradients of every other normalized set stay finite.
func TestTensorBackwardNonFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 68))
	for _, k := range tbKernels {
		unit := max(k.groups, k.groupSize, 1)
		for _, s := range []tbShape{{2, 3 * unit, 5, false}, {3, 2 * unit, 1, false}} {
			for _, bad := range []float64{math.NaN(), math.Inf(1)} {
				for _, where := range []string{"dy", "x"} {
					in := k.newCall(s, rng)
					k.fill(in, tFamilies[0], rng)
					pos := rng.IntN(len(in.get(k, where)))
					in.get(k, where)[pos] = float32(bad)
					k.setStats(in)
					ref := k.oracle(s, k.inputs(in))
					var own map[int]bool
					for _, set := range k.sets(s) {
						for _, j := range set.idx {
							if j == pos {
								own = map[int]bool{}
								for _, e := range set.idx {
									own[e] = true
								}
							}
						}
					}
					for _, par := range []bool{false, true} {
						got := in.clone()
						k.run(got, par)
						for j, v := range got.get(k, "dx") {
							if !own[j] && (math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)) {
								t.Fatalf("%s %v: %v in %s[%d]: dx[%d] = %v outside its set", k.name, s, bad, where, pos, j, v)
							}
						}
						for name, want := range ref.want {
							for j, v := range got.get(k, name) {
								if math.IsNaN(want[j]) != math.IsNaN(float64(v)) {
									t.Fatalf("%s %v: %v in %s[%d]: %s[%d] = %v, oracle %v", k.name, s, bad, where, pos, name, j, v, want[j])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestTensorBackwardWrongLengths checks that a wrong length of any array
// panics with the entry point's name and a length, before touching memory.
func TestTensorBackwardWrongLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(69, 70))
	for _, k := range tbKernels {
		unit := max(k.groups, k.groupSize, 1)
		s := tbShape{2, 2 * unit, 3, false}
		if len(k.sizes) > 0 {
			s = tbShape{2, k.sizes[0], 3, true}
		}
		for i, name := range k.arrays {
			for _, delta := range []int{-1, 1} {
				c := k.newCall(s, rng)
				k.fill(c, tFamilies[0], rng)
				c.a[i] = c.buffers[i][c.offsets[i] : c.offsets[i]+len(c.a[i])+delta]
				before := c.clone()
				what := fmt.Sprintf("%s %v with len(%s) = %d", k.name, s, name, len(c.a[i]))
				msg := expectPanic(t, what, func() { k.run(c, false) })
				if !strings.HasPrefix(msg, tPackageName+"."+k.name) || !strings.Contains(msg, "len(") {
					t.Fatalf("%s: panic message %q does not name the entry point and a length", what, msg)
				}
				if name != "dy" && !strings.Contains(msg, "len("+name+")") && !strings.Contains(msg, "len(dy)") {
					t.Fatalf("%s: panic message %q does not name %s", what, msg, name)
				}
				for b := range c.buffers {
					for j := range c.buffers[b] {
						if math.Float32bits(c.buffers[b][j]) != math.Float32bits(before.buffers[b][j]) {
							t.Fatalf("%s: memory changed before the panic", what)
						}
					}
				}
			}
		}
	}
}

// TestTensorBackwardOverlap checks that every overlap but dx being the
// very same slice as dy panics: dx = x, dx shifted over dy, a parameter
// gradient inside dy, a parameter or statistic inside dx.
func TestTensorBackwardOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, k := range tbKernels {
		unit := max(k.groups, k.groupSize, 1)
		s := tbShape{2, 2 * unit, 3, false}
		if len(k.sizes) > 0 {
			s = tbShape{2, k.sizes[0], 3, true}
		}
		dx, dy, x := k.index("dx"), k.index("dy"), k.index("x")
		type alias struct {
			what string
			set  func(c *tbCall)
		}
		aliases := []alias{
			{"dx = x", func(c *tbCall) { c.a[dx] = c.a[x] }},
			{"dx = dy shifted by 1", func(c *tbCall) {
				buf := make([]float32, len(c.a[dy])+1)
				copy(buf, c.a[dy])
				c.a[dy], c.a[dx] = buf[:len(c.a[dy])], buf[1:]
			}},
		}
		for i, name := range k.arrays {
			switch {
			case name == "dx" || name == "dy" || name == "x":
			case k.storage != "f32":
				// A float32 array inside a half one: the test's float32
				// record cannot alias them (halfCall converts the half ones).
			case k.outs[i]:
				aliases = append(aliases, alias{name + " inside dy", func(c *tbCall) { c.a[i] = c.a[dy][:len(c.a[i])] }})
			default:
				aliases = append(aliases, alias{name + " inside dx", func(c *tbCall) { c.a[i] = c.a[dx][:len(c.a[i])] }})
			}
		}
		for _, a := range aliases {
			c := k.newCall(s, rng)
			k.fill(c, tFamilies[0], rng)
			a.set(c)
			msg := expectPanic(t, fmt.Sprintf("%s with %s", k.name, a.what), func() { k.run(c, false) })
			if !strings.Contains(msg, "overlap") {
				t.Fatalf("%s with %s: panic message %q does not say overlap", k.name, a.what, msg)
			}
		}
	}
}

func tbKernelNamed(name string) *tbKernel {
	for _, k := range tbKernels {
		if k.name == name {
			return k
		}
	}
	panic("no tensor backward kernel " + name)
}

// fuzzTensorBackward checks the entry point on x and dy made from the
// fuzzer's bytes against the oracle: no stray writes, the oracle's NaN
// positions, and the contract where the magnitudes are finite.
func fuzzTensorBackward(f *testing.F, name string) {
	k := tbKernelNamed(name)
	seed := func(vals ...float32) []byte {
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	f.Add(seed(1, 2, 3, 4, 5))
	f.Add(seed(float32(math.NaN()), 1, 2))
	f.Add(seed(float32(math.Inf(-1)), -1, 0.5))
	f.Add(seed(1e-40, -1e-41, 3e-39))
	f.Add(seed(1e4, 1e4+1, 1e4-1, 1e4))
	f.Add(seed(7, 7, 7, 7))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals := tFloatsOf(data)
		if len(vals) == 0 {
			return
		}
		unit := max(k.groups, k.groupSize, 1)
		s := tbShape{1 + int(data[0]%3), unit * (1 + int(data[0]/3%3)), 1 + int(data[0]/9%5), false}
		if len(k.sizes) > 0 {
			s.c, s.fixed = k.sizes[0], true
		}
		rng := rand.New(rand.NewPCG(uint64(len(data)), 9))
		in := k.newCall(s, rng)
		k.fill(in, tFamilies[0], rng)
		for i, name := range k.arrays {
			if name == "dy" || name == "x" {
				for j := range in.a[i] {
					in.a[i][j] = vals[(j+3*i)%len(vals)]
				}
			}
		}
		k.quantize(in)
		k.setStats(in)
		// Deviations x - mean, or output gradients, near float32's range
		// overflow in the kernels' float32 vector arithmetic (the float64
		// fallback's too): outside the contract.
		for _, v := range in.get(k, "dy") {
			if math.Abs(float64(v)) > 1e30 {
				return
			}
		}
		x, mean := in.get(k, "x"), in.get(k, "mean")
		for _, set := range k.sets(s) {
			for _, j := range set.idx {
				if mean != nil && math.Abs(float64(x[j])-float64(mean[set.stat])) > 1e38 {
					return
				}
			}
		}
		ref := k.oracle(s, k.inputs(in))
		got := in.clone()
		k.run(got, false)
		if err := got.checkMargins(k); err != nil {
			t.Fatal(err)
		}
		for name, w := range ref.want {
			for j, v := range got.get(k, name) {
				m := ref.mag[name][j]
				if math.IsNaN(w[j]) != math.IsNaN(float64(v)) && !(m > 1e30) {
					t.Fatalf("%s %v: %s[%d] = %v, oracle %v", k.name, s, name, j, v, w[j])
				}
				if math.IsNaN(w[j]) || math.IsInf(m, 0) || m > 1e30 {
					continue
				}
				b := k.bound(name, w[j], m)
				if k.overflows(name, v, w[j], b) {
					continue
				}
				if d := math.Abs(float64(v) - w[j]); !(d <= b) {
					t.Fatalf("%s %v: %s[%d] = %v, oracle %v", k.name, s, name, j, v, w[j])
				}
			}
		}
	})
}

// benchTensorBackward times the backward entry point (fixed: the one for
// c channels; c 0: the run-time one) on one image whose dy and x fill
// about 128 KiB (cache-resident) and on two whose dy and x fill 32 MiB
// (memory), each next to a copy of the bytes the kernel must read: dy
// and x, copied into two other arrays. With half storage those are
// uint16 arrays, encoded once (timeHalf).
func benchTensorBackward(b *testing.B, name string, c int) {
	k := tbKernelNamed(name)
	rng := rand.New(rand.NewPCG(8, 9))
	elem := 4
	if _, ok := halfFormats[k.storage]; ok {
		elem = 2
	}
	fixed := c > 0
	if !fixed {
		c = 64 // a channel count of the unit the axis groups by
		if k.groupSize > 0 {
			c = 64 * k.groupSize
		} else if k.axis == "groups" {
			c = 4 * k.groups
		}
	}
	for _, size := range []struct {
		name     string
		n, bytes int
	}{{"128KiB", 1, 128 << 10}, {"32MiB", 2, 32 << 20}} {
		s := tbShape{size.n, c, max(1, size.bytes/(2*elem*size.n*c)), fixed}
		in := k.newCall(s, nil)
		k.fill(in, tFamilies[0], rng)
		n := s.n * s.c * s.l
		label := fmt.Sprintf("%s/N=%d,C=%d,L=%d", size.name, s.n, s.c, s.l)
		b.Run(label+"/copy", func(b *testing.B) {
			src, dst := copyBuffers(2 * elem * n)
			b.SetBytes(int64(2 * elem * n))
			b.ResetTimer()
			for range b.N {
				copy(dst[:elem*n], src[:elem*n]) // dy
				copy(dst[elem*n:], src[elem*n:]) // x
			}
		})
		b.Run(label+"/entry", func(b *testing.B) {
			b.SetBytes(int64(2 * elem * n))
			if elem == 2 {
				timeHalf(b, func() { k.run(in, false) })
				return
			}
			for range b.N {
				k.run(in, false)
			}
		})
	}
}
