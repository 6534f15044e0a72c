package testkit

import (
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
)

// The helpers that every generated test file of a package may use live in
// normgen's templates/testkit/shared.go; the generator appends them once
// per package, to the first of <stem>_half_test.go, <stem>_test.go and
// <stem>_tensor_test.go that it writes, so that the kits share one
// definition of the half formats.

// halfBench, set by timeHalf for one call, makes the next halfCall or
// tHalfCall run its kernel b.N times on the uint16 arrays it encoded, the
// timer reset after the encoding: the half kernels' benchmarks then time
// the kernel alone, not the test's conversions around it.
var halfBench *testing.B

// timeHalf runs run, whose kernel call goes through halfCall or
// tHalfCall, as a benchmark of that kernel call.
func timeHalf(b *testing.B, run func()) {
	halfBench = b
	defer func() { halfBench = nil }()
	run()
	if halfBench != nil {
		b.Fatal("the benchmarked call did not go through halfCall or tHalfCall")
	}
}

// copyBuffers are a benchmark's copy reference: n bytes to copy from,
// not zero (fresh zero pages would all read one cached page), and n to
// copy into, both written once so that no page fault is timed.
func copyBuffers(n int) (src, dst []byte) {
	src, dst = make([]byte, n), make([]byte, n)
	for i := range src {
		src[i], dst[i] = byte(i|1), byte(i)
	}
	return src, dst
}

// halfRepeat runs call once, or as halfBench asks (see timeHalf).
func halfRepeat(call func()) {
	b := halfBench
	if b == nil {
		call()
		return
	}
	halfBench = nil
	b.ResetTimer()
	for range b.N {
		call()
	}
	b.StopTimer()
}

// halfFormat is a binary floating-point storage format of 16 bits, as its
// definition gives it: a sign bit, expBits of biased exponent, manBits of
// fraction; exponent all ones is Inf (fraction 0) or NaN, all zeros a
// subnormal (or zero).
type halfFormat struct{ expBits, manBits int }

var halfFormats = map[string]halfFormat{"bf16": {8, 7}, "f16": {5, 10}}

func (f halfFormat) bias() int { return 1<<(f.expBits-1) - 1 }

// emulatedF16TiesAway is set under Bochs (NORMGEN_EMULATOR=bochs), whose
// VCVTPS2PH rounds float16 ties away from zero where the hardware rounds
// them to even: an assembly kernel's f16 store may there differ from the
// reference on an exact tie, by one ulp away from zero, and nowhere else.
var emulatedF16TiesAway = underBochs

// underBochs: the tests run under the Bochs emulator (NORMGEN_EMULATOR=bochs),
// some 70 times slower than the hardware; with -short they check the
// assembly on fewer inputs there (see TestEquivalence).
var underBochs = os.Getenv("NORMGEN_EMULATOR") == "bochs"

// underEmulator: under Bochs, or under qemu-user (the test command sets
// NORMGEN_LONG_ASM_ONLY there), where every float operation is a call into
// a software float library. The Parallel entry points, which split the
// rows among goroutines and run the same functions, are then left to the
// native runs (and to TestConcurrent).
var underEmulator = underBochs || os.Getenv("NORMGEN_LONG_ASM_ONLY") != ""

// tieAway is the neighbour of e (v rounded to nearest even) farther from
// zero when v lies exactly halfway between the two, else e.
func (f halfFormat) tieAway(v float64, e uint16) uint16 {
	d := f.decode(e)
	if d == v || math.IsInf(d, 0) {
		return e
	}
	other := e + 1 // the next magnitude, same sign
	if math.Abs(d) > math.Abs(v) {
		other = e - 1
	}
	o := f.decode(other)
	if math.IsNaN(o) || math.IsInf(o, 0) || math.Abs(v-o) != math.Abs(v-d) {
		return e
	}
	if math.Abs(o) > math.Abs(d) {
		return other
	}
	return e
}

// unit is the unit roundoff, half an ulp of 1: 2^-(manBits+1).
func (f halfFormat) unit() float64 { return math.Ldexp(1, -f.manBits-1) }

// leastSubnormal is 2^(1-bias-manBits).
func (f halfFormat) leastSubnormal() float64 { return math.Ldexp(1, 1-f.bias()-f.manBits) }

// largest is the largest finite value, (2 - 2^-manBits) * 2^bias.
func (f halfFormat) largest() float64 {
	return (2 - math.Ldexp(1, -f.manBits)) * math.Ldexp(1, f.bias())
}

// decode is the value of bits b (any NaN for a NaN).
func (f halfFormat) decode(b uint16) float64 {
	switch f {
	case halfFormat{8, 7}: // bf16
		return bf16Values()[b]
	case halfFormat{5, 10}: // f16
		return f16Values()[b]
	}
	return f.value(b)
}

// bf16Values and f16Values tabulate value over all bit patterns: the tests
// decode millions of values, which dominated their time under emulators.
var (
	bf16Values = sync.OnceValue(func() *[1 << 16]float64 { return halfFormats["bf16"].values() })
	f16Values  = sync.OnceValue(func() *[1 << 16]float64 { return halfFormats["f16"].values() })
)

func (f halfFormat) values() *[1 << 16]float64 {
	t := new([1 << 16]float64)
	for b := range t {
		t[b] = f.value(uint16(b))
	}
	return t
}

// value is decode's definition: the format's value of bits b.
func (f halfFormat) value(b uint16) float64 {
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	exp := int(b>>f.manBits) & (1<<f.expBits - 1)
	man := float64(int(b) & (1<<f.manBits - 1))
	switch exp {
	case 1<<f.expBits - 1:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * man * f.leastSubnormal()
	}
	return sign * (1 + man/math.Ldexp(1, f.manBits)) * math.Ldexp(1, exp-f.bias())
}

// encode rounds v to the format, to nearest, ties to even: to a multiple
// of the quantum of v's binade (of the subnormals' below the least normal),
// Inf when that reaches 2^(bias+1). NaN gives a quiet NaN.
func (f halfFormat) encode(v float64) uint16 {
	var sign uint16
	if math.Signbit(v) {
		sign = 0x8000
	}
	expMask := uint16(1<<f.expBits-1) << f.manBits
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return sign | expMask | 1<<(f.manBits-1)
	case a == 0:
		return sign
	}
	_, e := math.Frexp(a) // a = m * 2^e, m in [0.5, 1): binade 2^(e-1)
	binade := max(e-1, 1-f.bias())
	quantum := math.Ldexp(1, binade-f.manBits)
	r := math.RoundToEven(a/quantum) * quantum
	if r >= math.Ldexp(1, f.bias()+1) {
		return sign | expMask
	}
	if r < math.Ldexp(1, 1-f.bias()) {
		return sign | uint16(r/f.leastSubnormal())
	}
	_, e = math.Frexp(r)
	man := (r/math.Ldexp(1, e-1) - 1) * math.Ldexp(1, f.manBits)
	return sign | uint16(e-1+f.bias())<<f.manBits | uint16(man)
}

// ulp is the format's quantum at |v|: the spacing of its values there.
func (f halfFormat) ulp(v float64) float64 {
	_, e := math.Frexp(math.Abs(v))
	return math.Ldexp(1, max(e-1, 1-f.bias())-f.manBits)
}

// halfSentinel fills the margins around the uint16 arrays of the half
// kernels' calls (halfCall, tHalfCall): a signalling NaN of the format, which no kernel stores (they quiet NaNs).
var halfSentinel = map[string]uint16{"bf16": 0x7f8d, "f16": 0x7d5a}

// errorUnit completes "max error N" for a kernel's largest error in units
// of its bound divided by the tolerance tol: units of 2^-24 for float32
// storage; with half storage, whose bound is widened by one rounding to
// the format, shares of that widened bound.
func errorUnit(storage string, tol int) string {
	if _, half := halfFormats[storage]; half {
		return fmt.Sprintf("of %d, the bound widened by one rounding to %s", tol, storage)
	}
	return fmt.Sprintf("units of 2^-24 (contract: %d)", tol)
}

// expectPanic runs f and returns its panic message, or fails.
func expectPanic(t *testing.T, what string, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("%s: no panic", what)
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}
