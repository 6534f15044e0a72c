package testkit

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// The tests of the bulk conversions between float32 and the half formats
// live in normgen's templates/testkit/half.go; the generator appends them
// to <stem>_half_test.go in packages with bf16 or f16 kernels, whatever
// their kernels.

// halfConv is one storage format's bulk conversions of the package: its
// entry points (isa "") or their assembly on one instruction set.
type halfConv struct {
	storage               string
	isa                   string
	narrowName, widenName string // the entry points
	narrow                func(dst []uint16, src []float32)
	widen                 func(dst []float32, src []uint16)
}

// label names the conversions in messages.
func (c halfConv) label() string {
	if c.isa == "" {
		return c.storage
	}
	return c.storage + " (" + c.isa + ")"
}

// narrowCases are float32 values covering every rounding case of the
// formats: each value next to a representable one of either format and
// the midpoints between neighbours (ties), one float32 ulp either side;
// the edges of the subnormals and of f16's range; infinities, zeros and
// NaNs with payloads.
func narrowCases() []float32 {
	var out []float32
	add := func(v float32) {
		out = append(out, v, math.Nextafter32(v, float32(math.Inf(1))), math.Nextafter32(v, float32(math.Inf(-1))))
	}
	for _, f := range halfFormats {
		for b := 0; b < 1<<15; b += 1 {
			v := f.decode(uint16(b))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			next := f.decode(uint16(b + 1))
			add(float32(v))
			add(-float32(v))
			if !math.IsInf(next, 0) && !math.IsNaN(next) {
				mid := (v + next) / 2 // exact in float64
				add(float32(mid))
				add(-float32(mid))
			}
		}
	}
	for _, v := range []float32{65504, 65519, 65520, 65535, 65536, 1e10, math.MaxFloat32, 0x1p-24, 0x1p-25, 0x1p-26, 0x1.8p-25, 0x1p-14, 0x1p-126, 0x1p-133, 0x1p-134, 0x1p-149} {
		add(v)
		add(-v)
	}
	for _, bits := range []uint32{0x7f800000, 0xff800000, 0x7f800001, 0x7fc00000, 0xffffffff, 0x7f80ffff, 0x7fbfffff, 0x7fff0000, 0x80000000, 0} {
		out = append(out, math.Float32frombits(bits))
	}
	return out
}

// TestHalfConversions checks the package's bulk conversions, the entry
// points and each instruction set's assembly the CPU runs, against the
// formats' definitions: every one of the 65536 bit patterns widened, and
// narrowCases narrowed: exactly, except that a NaN need only stay a NaN.
// Short calls at unaligned starts check the assembly's partial vectors
// and that nothing is written outside dst; calls with different lengths
// panic, naming the entry point and both lengths.
func TestHalfConversions(t *testing.T) {
	if len(halfConversions) == 0 {
		t.Fatal("no conversions to test")
	}
	vals := narrowCases()
	bits := make([]uint16, 1<<16)
	for i := range bits {
		bits[i] = uint16(i)
	}
	var checked []string
	for _, c := range append(append([]halfConv(nil), halfConversions...), asmHalfConversions()...) {
		checked = append(checked, c.label())
		f := halfFormats[c.storage]
		wide := make([]float32, len(bits))
		c.widen(wide, bits)
		for i, v := range wide {
			if !f.widened(uint16(i), v) {
				t.Fatalf("%s: widen %#04x = %v, want %v", c.label(), i, v, f.decode(uint16(i)))
			}
		}
		narrow := make([]uint16, len(vals))
		c.narrow(narrow, vals)
		for i, v := range vals {
			if !f.narrowed(v, narrow[i]) {
				t.Fatalf("%s: narrow %v (%#08x) = %#04x, want %#04x", c.label(), v, math.Float32bits(v), narrow[i], f.encode(float64(v)))
			}
		}
		checkHalfPartial(t, c, vals)
		if c.isa != "" {
			continue // the assembly is called with equal lengths
		}
		for _, n := range []int{0, 1} {
			for _, call := range []struct {
				name     string
				dst, src int
				run      func()
			}{
				{c.narrowName, n, n + 1, func() { c.narrow(make([]uint16, n), make([]float32, n+1)) }},
				{c.widenName, n + 2, n, func() { c.widen(make([]float32, n+2), make([]uint16, n)) }},
			} {
				msg := expectPanic(t, c.label()+" lengths", call.run)
				for _, want := range []string{call.name + ":", fmt.Sprint(call.dst), fmt.Sprint(call.src)} {
					if !strings.Contains(msg, want) {
						t.Fatalf("%s: panic message %q does not name %q", c.label(), msg, want)
					}
				}
			}
		}
	}
	t.Logf("conversions checked: %s", strings.Join(checked, ", "))
}

// widened reports whether v is the format's value of bits b (any NaN for
// a NaN).
func (f halfFormat) widened(b uint16, v float32) bool {
	want := f.decode(b)
	return math.IsNaN(want) == math.IsNaN(float64(v)) && (math.IsNaN(want) || float64(v) == want)
}

// narrowed reports whether b is v rounded to the format (any NaN for a
// NaN); under Bochs, an f16 tie may also be rounded away from zero (see
// emulatedF16TiesAway).
func (f halfFormat) narrowed(v float32, b uint16) bool {
	if math.IsNaN(float64(v)) {
		return math.IsNaN(f.decode(b))
	}
	e := f.encode(float64(v))
	return b == e || emulatedF16TiesAway && f == halfFormats["f16"] && b == f.tieAway(float64(v), e)
}

// checkHalfPartial converts every length up to four vectors of the widest
// ISA and then some, at the start of dst and one element in, between
// fences that must stay untouched.
func checkHalfPartial(t *testing.T, c halfConv, vals []float32) {
	t.Helper()
	f := halfFormats[c.storage]
	const fence = 8
	for n := 0; n <= 67; n++ {
		for off := 0; off <= 1; off++ {
			src := vals[(n*37)%(len(vals)-n):][:n]
			u := make([]uint16, n+off+2*fence)
			for i := range u {
				u[i] = 0x5a5a
			}
			c.narrow(u[fence+off:fence+off+n], src)
			w := make([]float32, n+off+2*fence)
			for i := range w {
				w[i] = -7
			}
			c.widen(w[fence+off:fence+off+n], u[fence+off:fence+off+n])
			for i := range u {
				j := i - fence - off
				if j < 0 || j >= n {
					if u[i] != 0x5a5a || w[i] != -7 {
						t.Fatalf("%s: n=%d offset %d: element %d outside dst written", c.label(), n, off, i)
					}
					continue
				}
				if !f.narrowed(src[j], u[i]) || !f.widened(u[i], w[i]) {
					t.Fatalf("%s: n=%d offset %d: element %d: %v -> %#04x -> %v", c.label(), n, off, j, src[j], u[i], w[i])
				}
			}
		}
	}
}

// halfMargin is how many uint16 sentinels fence each of halfCall's arrays.
const halfMargin = 16

// halfCall runs call on the arrays a with the half arrays (half[i]) in
// the kernel's storage: it encodes them into uint16 arrays u, fenced with
// margins, runs call(u), checks the margins and decodes them back into a.
// Overlapping float32 arrays (in place, or overlapping on purpose) get
// uint16 arrays that overlap in the same way. The float32 arrays of a
// test stay its record; the format's values in them convert exactly.
// The tests of the half kernels over rows and of the half tensor
// backward passes call their kernels through it.
func halfCall(storage string, half []bool, a [][]float32, call func(u [][]uint16)) {
	f := halfFormats[storage]
	sentinel := halfSentinel[storage]
	type group struct {
		lo, hi  uintptr // float32 address range
		members []int
		buf     []uint16
	}
	addr := func(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }
	var groups []*group
	u := make([][]uint16, len(a))
	for i, s := range a {
		if !half[i] || len(s) == 0 {
			if half[i] && s != nil {
				u[i] = []uint16{}
			}
			continue
		}
		lo, hi := addr(s), addr(s)+4*uintptr(len(s))
		var g *group
		for _, h := range groups {
			if lo < h.hi && h.lo < hi {
				g = h
				break
			}
		}
		if g == nil {
			g = &group{lo: lo, hi: hi}
			groups = append(groups, g)
		}
		g.lo, g.hi = min(g.lo, lo), max(g.hi, hi)
		g.members = append(g.members, i)
	}
	for _, g := range groups {
		n := int(g.hi-g.lo) / 4
		g.buf = make([]uint16, n+2*halfMargin)
		for j := range g.buf {
			g.buf[j] = sentinel
		}
		for _, i := range g.members {
			off := halfMargin + int(addr(a[i])-g.lo)/4
			u[i] = g.buf[off : off+len(a[i]) : off+len(a[i])]
			for j, v := range a[i] {
				u[i][j] = f.encode(float64(v))
			}
		}
	}
	halfRepeat(func() { call(u) })
	for _, g := range groups {
		n := len(g.buf) - halfMargin
		for j, b := range g.buf {
			if (j < halfMargin || j >= n) && b != sentinel {
				panic(fmt.Sprintf("wrote outside the %s arrays: margin index %d = %#04x", storage, j, b))
			}
		}
		for _, i := range g.members {
			for j, b := range u[i] {
				a[i][j] = float32(f.decode(b))
			}
		}
	}
}
