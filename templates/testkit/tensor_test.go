package testkit

import (
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// refChannels is a reference channels-first LayerNorm in float64, rounded
// once: each image's position normalized over its channels.
func refChannels() *tensorKernel {
	k := &tensorKernel{name: "RefChannels", axis: "channels", mean: true, eps: 1e-5, scale: true, shift: true, isas: []string{"purego"}, sizes: []int{5}}
	check := func(c *tensorCall, fixed bool) {
		if fixed && c.c != 5 {
			panic("no fixed size")
		}
	}
	k.call = func(c *tensorCall, fixed bool) {
		check(c, fixed)
		for img := 0; img < c.n; img++ {
			refImage(k, c, img)
		}
	}
	// One goroutine per image.
	k.parallel = func(c *tensorCall, fixed bool) {
		check(c, fixed)
		var wg sync.WaitGroup
		for img := 0; img < c.n; img++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				refImage(k, c, img)
			}()
		}
		wg.Wait()
	}
	return k
}

// refImage is refChannels on image img.
func refImage(k *tensorKernel, c *tensorCall, img int) {
	for p := 0; p < c.l; p++ {
		at := func(ch int) int { return (img*c.c+ch)*c.l + p }
		mu, ss := 0.0, 0.0
		for ch := 0; ch < c.c; ch++ {
			mu += float64(c.x[at(ch)])
		}
		mu /= float64(c.c)
		for ch := 0; ch < c.c; ch++ {
			d := float64(c.x[at(ch)]) - mu
			ss += d * d
		}
		rstd := 1 / math.Sqrt(ss/float64(c.c)+k.eps)
		for ch := 0; ch < c.c; ch++ {
			c.dst[at(ch)] = float32((float64(c.x[at(ch)])-mu)*rstd*float64(c.gamma[ch]) + float64(c.beta[ch]))
		}
	}
}

// TestTensorSuite runs the generated tensor tests that check results on
// the reference kernel: a correct implementation passes them.
func TestTensorSuite(t *testing.T) {
	defer func(saved []*tensorKernel) { tensorKernels = saved }(tensorKernels)
	tensorKernels = []*tensorKernel{refChannels()}
	// A kernel with a run-time epsilon at eps 0: a constant set is 0/0.
	k := refChannels()
	k.name, k.eps, k.runtimeEps = "RefChannelsEps", 0, true
	tensorKernels = append(tensorKernels, k)
	defer func(saved map[string]func(float32)) { tEpsEntryPoints = saved }(tEpsEntryPoints)
	tEpsEntryPoints = map[string]func(float32){"RefChannelsEps5": func(eps float32) { refCheckEps("RefChannelsEps5", eps) }}
	t.Run("Equivalence", TestTensorEquivalence)
	t.Run("LongSets", TestTensorLongSets)
	t.Run("NonFinite", TestTensorNonFinite)
	t.Run("Dispatch", TestTensorDispatch)
	t.Run("Parallel", TestTensorParallel)
	t.Run("Concurrent", TestTensorConcurrent)
	t.Run("EpsChecks", TestTensorEpsChecks)
	t.Run("Implementation", TestTensorImplementation)
}

// TestStatBound checks that a statistic's bound stays as computed, and
// that a NaN one (a constant set with eps 0) becomes the contract
// relative to the value, or to 1 below 1.
func TestStatBound(t *testing.T) {
	if got := tStatBound(0.5, 100); got != 0.5 {
		t.Errorf("finite bound: %v", got)
	}
	if got, want := tStatBound(math.NaN(), 100), tTolerance*tEpsilon32*100; got != want {
		t.Errorf("NaN bound at 100: %v, want %v", got, want)
	}
	if got, want := tStatBound(math.NaN(), -0.25), tTolerance*tEpsilon32; got != want {
		t.Errorf("NaN bound at -0.25: %v, want %v", got, want)
	}
}

// TestSameBits checks that tSameBits accepts clones and catches a one-bit
// difference in an array and in a margin.
func TestSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	k := refChannels()
	in := k.newCall(2, 5, 3, tFamilies[0], rng)
	if err := tSameBits(in.clone(), in); err != nil {
		t.Fatalf("clones: %v", err)
	}
	got := in.clone()
	got.dst[4] = math.Float32frombits(math.Float32bits(got.dst[4]) ^ 1)
	if err := tSameBits(got, in); err == nil || !strings.Contains(err.Error(), "element") {
		t.Errorf("dst[4] one bit off: %v", err)
	}
	got = in.clone()
	got.buffers[0][0] = 0
	if err := tSameBits(got, in); err == nil {
		t.Error("a margin overwritten: no error")
	}
}

// TestGroupsPartition checks that the normalized sets of every axis
// cover each element of the tensor exactly once, with distinct statistic
// indices inside the statistics arrays, and the channel of each element.
func TestGroupsPartition(t *testing.T) {
	const n, c, l = 2, 6, 5
	for _, k := range []*tensorKernel{
		{axis: "channels"}, {axis: "batch"}, {axis: "groups", groups: 3}, {axis: "groups", groupSize: 2},
	} {
		seen := make([]int, n*c*l)
		stats := map[int]bool{}
		groups := k.groupsOf(n, c, l)
		for _, g := range groups {
			if stats[g.stat] || g.stat < 0 || g.stat >= k.statLen(n, c, l) {
				t.Errorf("%s: statistic index %d repeated or outside %d", k.axis, g.stat, k.statLen(n, c, l))
			}
			stats[g.stat] = true
			for j, i := range g.idx {
				seen[i]++
				if ch := (i / l) % c; ch != g.ch[j] {
					t.Errorf("%s: element %d has channel %d, set says %d", k.axis, i, ch, g.ch[j])
				}
			}
		}
		for i, s := range seen {
			if s != 1 {
				t.Fatalf("%s: element %d in %d sets", k.axis, i, s)
			}
		}
		if len(groups) != k.statLen(n, c, l) {
			t.Errorf("%s: %d sets, %d statistics", k.axis, len(groups), k.statLen(n, c, l))
		}
	}
}

// TestTensorOracle checks the oracle on a BatchNorm worked out by hand,
// with both running-statistics conventions.
func TestTensorOracle(t *testing.T) {
	// [N=2, C=1, L=1]: x = 1, 3: mean 2, biased variance 1, unbiased 2.
	for _, c := range []struct {
		running        string
		runMean, runVr float64
	}{
		{"pytorch", 0.9*0.5 + 0.1*2, 0.9*4 + 0.1*2},
		{"onnx", 0.1*0.5 + 0.9*2, 0.1*4 + 0.9*1},
	} {
		k := &tensorKernel{axis: "batch", mean: true, running: c.running, momentum: 0.1}
		in := &tensorCall{n: 2, c: 1, l: 1, x: []float32{1, 3}, runMean: []float32{0.5}, runVar: []float32{4}}
		r := k.oracle(in)
		if r.mean[0] != 2 || r.vari[0] != 1 || math.Abs(r.rstd[0]-1) > 0 {
			t.Errorf("%s: mean %v var %v rstd %v", c.running, r.mean[0], r.vari[0], r.rstd[0])
		}
		if math.Abs(r.y[0]+1) > 1e-15 || math.Abs(r.y[1]-1) > 1e-15 {
			t.Errorf("%s: y %v, want -1 1", c.running, r.y)
		}
		if math.Abs(r.runMean[0]-c.runMean) > 1e-15 || math.Abs(r.runVar[0]-c.runVr) > 1e-15 {
			t.Errorf("%s: running %v %v, want %v %v", c.running, r.runMean[0], r.runVar[0], c.runMean, c.runVr)
		}
	}
}

// TestTensorVerify checks that verify accepts the correctly rounded
// result and rejects an output or a running statistic off by twice its
// bound.
func TestTensorVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	k := &tensorKernel{name: "B", axis: "batch", mean: true, eps: 1e-5, scale: true, shift: true, saveStats: true, running: "pytorch", momentum: 0.1}
	in := k.newCall(3, 4, 7, tFamilies[0], rng)
	ref := k.oracle(in)
	exact := func() *tensorCall {
		got := in.clone()
		for i, y := range ref.y {
			got.dst[i] = float32(y)
		}
		for s := range got.mean {
			got.mean[s], got.rstd[s] = float32(ref.mean[s]), float32(ref.rstd[s])
		}
		for ch := range got.runMean {
			got.runMean[ch], got.runVar[ch] = float32(ref.runMean[ch]), float32(ref.runVar[ch])
		}
		return got
	}
	if err := k.verify(exact(), in, ref, tFamilies[0]); err != nil {
		t.Fatalf("correctly rounded: %v", err)
	}
	bad := exact()
	bad.dst[9] = float32(ref.y[9] + 2*ref.bound[9])
	if err := k.verify(bad, in, ref, tFamilies[0]); err == nil || !strings.Contains(err.Error(), "dst[9]") {
		t.Errorf("dst[9] off by twice its bound: %v", err)
	}
	bad = exact()
	bad.runVar[2] = float32(ref.runVar[2] + 2*ref.runVarB[2])
	if err := k.verify(bad, in, ref, tFamilies[0]); err == nil || !strings.Contains(err.Error(), "runVar[2]") {
		t.Errorf("runVar[2] off by twice its bound: %v", err)
	}
	bad = exact()
	bad.rstd[1] *= 1.01
	if err := k.verify(bad, in, ref, tFamilies[0]); err == nil || !strings.Contains(err.Error(), "rstd[1]") {
		t.Errorf("rstd[1] 1%% off: %v", err)
	}
}

// TestTensorFences checks the sentinel margins, clone's remapping into
// fresh buffers, and grown.
func TestTensorFences(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	k := &tensorKernel{axis: "channels", mean: true, scale: true, shift: true, saveStats: true}
	in := k.newCall(2, 3, 4, tFamilies[0], rng)
	arrays := func(c *tensorCall) [][]float32 {
		return [][]float32{c.dst, c.x, c.gamma, c.beta, c.mean, c.rstd, c.runMean, c.runVar}
	}
	if err := in.checkMargins(arrays(in)...); err != nil {
		t.Fatalf("fresh call: %v", err)
	}
	d := in.clone()
	d.x[0], d.gamma[0] = 42, 42
	if in.x[0] == 42 || in.gamma[0] == 42 || len(d.mean) != len(in.mean) || cap(d.x) != len(d.x) {
		t.Fatal("clone shares memory or changes shapes")
	}
	for i, a := range arrays(d) {
		if a == nil {
			continue
		}
		g := d.grown(a)
		if len(g) != len(a)+1 || &g[0] != &a[0] {
			t.Fatalf("grown: len %d from %d", len(g), len(a))
		}
		e := d.clone()
		ea := arrays(e)[i]
		e.grown(ea)[len(ea)] = 0 // the element just past the array
		if err := e.checkMargins(arrays(e)...); err == nil {
			t.Errorf("array %d: a write just past it went unseen", i)
		}
		if err := d.checkMargins(arrays(d)...); err != nil {
			t.Fatalf("a write into a clone reached the original: %v", err)
		}
	}
	// An array left out of the list counts as margin.
	if err := d.checkMargins(d.dst, d.x, d.beta, d.mean, d.rstd); err == nil {
		t.Errorf("gamma, holding values, passed as margin")
	}
}

// TestTensorShapes checks that no shape asks a BatchNorm for a batch
// variance of one value, and that every fixed channel count is tested.
func TestTensorShapes(t *testing.T) {
	for _, k := range []*tensorKernel{{axis: "batch", sizes: []int{4}}, {axis: "channels", sizes: []int{5}}, {axis: "groups", groupSize: 4}} {
		fixed := false
		for _, s := range k.shapes() {
			if k.axis == "batch" && s.n*s.l == 1 {
				t.Errorf("batch shape %v: one value per channel", s)
			}
			fixed = fixed || s.fixed
		}
		if len(k.sizes) > 0 && !fixed {
			t.Errorf("%s: no fixed-size shape", k.axis)
		}
	}
	got := tFloatsOf([]byte{0, 0, 0x80, 0xbf})
	if len(got) != 1 || got[0] != -1 {
		t.Errorf("tFloatsOf: %v", got)
	}
}

// TestTensorHalfCall: tHalfCall hands the kernel the values in the
// format, in place as one array, and decodes dst back; a write into a
// margin panics.
func TestTensorHalfCall(t *testing.T) {
	k := &tensorKernel{storage: "bf16"}
	rng := rand.New(rand.NewPCG(1, 1))
	c := k.makeCall(1, 2, 3, tFamilies[0], rng, true)
	for i := range c.x {
		if c.x[i] != k.round(c.x[i]) {
			t.Fatalf("x[%d] = %v is not a bf16 value", i, c.x[i])
		}
	}
	tHalfCall("bf16", c, func(dst, x []uint16) {
		for i := range x {
			dst[i] = x[i] ^ 0x8000 // -x, exactly
		}
	})
	for i := range c.x {
		if c.dst[i] != -c.x[i] {
			t.Fatalf("dst[%d] = %v, want %v", i, c.dst[i], -c.x[i])
		}
	}
	c.dst = c.x
	tHalfCall("bf16", c, func(dst, x []uint16) {
		if &dst[0] != &x[0] {
			t.Fatal("in place: dst and x are different arrays")
		}
	})
	msg := expectPanic(t, "a write past dst", func() {
		tHalfCall("bf16", c, func(dst, _ []uint16) { unsafe.Slice(&dst[0], len(dst)+1)[len(dst)] = 0 })
	})
	if !strings.Contains(msg, "outside") {
		t.Fatalf("panic %q", msg)
	}
}
