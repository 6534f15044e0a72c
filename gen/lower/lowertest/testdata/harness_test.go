//go:build !purego

// The conformance kit's harness, copied into the scratch module with the
// lowered functions (table_test.go maps their names to calls) and the
// cases (cases.bin, see lowertest.Encode). Each case gives the shape of
// one call, the count it must return and, per array, its inputs, the row
// each element belongs to (-1: none, such as parameters and the gaps of a
// strided layout) and, for written arrays, what ir.EvalShape computed.
// The elements of the rows before the returned count must match
// ir.EvalShape (NaN where it has NaN, the same infinity; a half array's
// within one unit of its format, for the one rounding of its store; an
// exact array's bit for bit); every other element must be bit for bit as
// it was. A half-precision array (bf16, f16) holds 16-bit elements, its
// values given as their bits. Every case runs in every
// placement: between guard zones of poison, checked after the call, at
// several misalignments, and flush against an inaccessible page at its
// end and at its start.
package k

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// zone is the poison floats after every array, and the least before it.
const zone = 16

// poison is a NaN no kernel computes, so an overwritten guard zone shows
// (its low half in a 16-bit array).
const poison = 0x7fc07fad

// Storage formats, as ir.Elem numbers them.
const (
	f32 = iota
	bf16
	f16
)

type array struct {
	alias   int // index of the array whose memory this one shares, or -1
	written bool
	early   bool // written before the guards: the abandoned row's too
	elem    int
	exact   bool
	in      []uint32 // bits
	owner   []int32  // row of each element, -1 for none
	want    []uint32
}

// size is the bytes of one element.
func (a *array) size() int {
	if a.elem == f32 {
		return 4
	}
	return 2
}

// value is the float32 of element bits b.
func (a *array) value(b uint32) float32 {
	switch a.elem {
	case bf16:
		return math.Float32frombits(b << 16)
	case f16:
		sign := float32(1)
		if b&0x8000 != 0 {
			sign = -1
		}
		exp, man := int(b>>10)&0x1f, float64(b&0x3ff)
		switch {
		case exp == 0x1f && man != 0:
			return float32(math.NaN())
		case exp == 0x1f:
			return sign * float32(math.Inf(1))
		case exp == 0:
			return sign * float32(math.Ldexp(man, -24))
		}
		return sign * float32(math.Ldexp(1024+man, exp-25))
	}
	return math.Float32frombits(b)
}

type kase struct {
	name   string
	rows   int
	shape  []int
	want   int
	arrays []array
	fn     func(p []unsafe.Pointer, rows int, shape []int) int
}

type reader struct{ b []byte }

func (r *reader) u32() uint32 {
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) words(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.u32()
	}
	return out
}

// cases reads the arrays of the distinct calls, then calls each with
// every case in turn.
func cases(t *testing.T, each func(*kase)) int {
	data, err := os.ReadFile("cases.bin")
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{data}
	sets := make([][]array, r.u32())
	for d := range sets {
		sets[d] = make([]array, r.u32())
		for a := range sets[d] {
			ar := &sets[d][a]
			ar.alias = int(int32(r.u32()))
			w := r.u32()
			ar.written, ar.early = w != 0, w == 2
			ar.elem, ar.exact = int(r.u32()), r.u32() == 1
			n := int(r.u32())
			ar.in = r.words(n)
			ar.owner = make([]int32, n)
			for i := range ar.owner {
				ar.owner[i] = int32(r.u32())
			}
			if ar.written {
				ar.want = r.words(n)
			}
		}
	}
	n := int(r.u32())
	for range n {
		name := string(r.b[:r.u32()])
		r.b = r.b[len(name):]
		k := &kase{name: name, rows: int(r.u32())}
		k.shape = make([]int, r.u32())
		for i := range k.shape {
			k.shape[i] = int(r.u32())
		}
		k.want = int(r.u32())
		k.arrays = sets[r.u32()]
		var ok bool
		if k.fn, ok = funcs[name]; !ok {
			t.Fatalf("no function %s", name)
		}
		each(k)
	}
	if len(r.b) != 0 {
		t.Fatalf("cases.bin: %d bytes left over", len(r.b))
	}
	return n
}

// placement puts n elements of size bytes somewhere in memory and says
// whether the memory around them is intact after the call.
type placement interface {
	place(n, size int) []byte
	intact() bool
	release()
}

// zoned surrounds the data with guard zones of poison: lead elements
// before it (at least 1, so that it is misaligned) and zone after.
type zoned struct {
	lead, n, size int
	buf           []byte
}

func (p *zoned) place(n, size int) []byte {
	p.lead, p.n, p.size = max(p.lead, 1), n, size
	p.buf = make([]byte, (p.lead+n+zone)*size)
	for i := 0; i < len(p.buf); i += size {
		put(p.buf[i:], size, poison)
	}
	return p.buf[p.lead*size : (p.lead+n)*size]
}

func (p *zoned) intact() bool {
	for i := 0; i < len(p.buf)/p.size; i++ {
		if (i < p.lead || i >= p.lead+p.n) && get(p.buf[i*p.size:], p.size) != poison&(1<<(8*p.size)-1) {
			return false
		}
	}
	return true
}

// put writes the low size bytes of v at b, little-endian.
func put(b []byte, size int, v uint32) {
	if size == 2 {
		binary.LittleEndian.PutUint16(b, uint16(v))
		return
	}
	binary.LittleEndian.PutUint32(b, v)
}

// get reads size bytes at b, little-endian.
func get(b []byte, size int) uint32 {
	if size == 2 {
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return binary.LittleEndian.Uint32(b)
}

func (p *zoned) release() {}

// paged puts the data against an inaccessible page, right after its end
// (atEnd) or right before its start: any access past that edge faults.
type paged struct {
	atEnd bool
	mem   []byte
}

func (p *paged) place(n, elem int) []byte {
	page := os.Getpagesize()
	size := elem * n
	pages := (size + page - 1) / page
	m, err := syscall.Mmap(-1, 0, (pages+2)*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	p.mem = m
	if err := syscall.Mprotect(m[:page], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(m[(pages+1)*page:], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	off := page
	if p.atEnd {
		off = (pages+1)*page - size
	}
	return m[off : off+size]
}

func (p *paged) intact() bool { return true }

func (p *paged) release() { syscall.Munmap(p.mem) }

// skew varies the misalignment of the skew placement from one array to
// the next.
var skew int

var placements = []struct {
	name string
	new  func() placement
}{
	{"zoned", func() placement { return &zoned{} }},
	// Each array misaligned by a different number of elements: outputs
	// that cannot all stream, and many shifts of the first.
	{"skew", func() placement { skew++; return &zoned{lead: zone + skew%16} }},
	{"page-end", func() placement { return &paged{atEnd: true} }},
	{"page-start", func() placement { return &paged{} }},
}

// near reports whether a computed value matches ir.EvalShape's: within
// 1e-4 absolutely or relatively, or the same non-finite value.
func near(got, want float32) bool {
	g, w := float64(got), float64(want)
	switch {
	case math.IsNaN(w):
		return math.IsNaN(g)
	case math.IsInf(w, 0):
		return g == w
	}
	return math.Abs(g-w) <= 1e-4+1e-4*math.Abs(w)
}

// nearHalf reports whether half array a's element bits got match want:
// the same bits, both NaN, neighbours in the format (the one rounding of
// a store of float32 results that differ slightly), or near in value.
func nearHalf(a *array, got, want uint32) bool {
	g, w := a.value(got), a.value(want)
	switch {
	case got == want:
		return true
	case math.IsNaN(float64(w)) || math.IsNaN(float64(g)):
		return math.IsNaN(float64(w)) && math.IsNaN(float64(g))
	case got>>15 == want>>15 && (got == want+1 || want == got+1):
		return true
	}
	return near(g, w)
}

func check(k *kase, newPlacement func() placement) error {
	mems := make([][]byte, len(k.arrays))
	places := make([]placement, len(k.arrays))
	ptrs := make([]unsafe.Pointer, len(k.arrays))
	for a, ar := range k.arrays {
		if ar.alias >= 0 {
			continue
		}
		p := newPlacement()
		defer p.release()
		size := ar.size()
		mems[a], places[a] = p.place(len(ar.in), size), p
		for i, v := range ar.in {
			put(mems[a][i*size:], size, v)
		}
		ptrs[a] = unsafe.Pointer(&mems[a][0])
	}
	for a, ar := range k.arrays {
		if ar.alias >= 0 {
			ptrs[a] = ptrs[ar.alias]
		}
	}
	got := k.fn(ptrs, k.rows, k.shape)
	if got != k.want {
		return fmt.Errorf("returned %d rows completed, want %d", got, k.want)
	}
	for a, ar := range k.arrays {
		if ar.alias >= 0 {
			continue // its memory is checked as the array it shares
		}
		if !places[a].intact() {
			return fmt.Errorf("array %d: guard zone overwritten", a)
		}
		size := ar.size()
		last := got // the last row written
		if !ar.early || got == k.rows {
			last--
		}
		for i := range ar.in {
			v := get(mems[a][i*size:], size)
			if !ar.written || ar.owner[i] < 0 || int(ar.owner[i]) > last {
				if v != ar.in[i] {
					return fmt.Errorf("array %d [%d] (row %d, not written): %#x, was %#x", a, i, ar.owner[i], v, ar.in[i])
				}
				continue
			}
			var ok bool
			switch {
			case ar.exact:
				ok = v == ar.want[i]
			case ar.elem != f32:
				ok = nearHalf(&ar, v, ar.want[i])
			default:
				ok = near(ar.value(v), ar.value(ar.want[i]))
			}
			if !ok {
				return fmt.Errorf("array %d [%d] (row %d): got %v (%#x), want %v (%#x) (input %v)", a, i, ar.owner[i],
					ar.value(v), v, ar.value(ar.want[i]), ar.want[i], ar.value(ar.in[i]))
			}
		}
	}
	return nil
}

func TestCases(t *testing.T) {
	calls, failures, seen := 0, 0, 0
	n := cases(t, func(k *kase) {
		// Every case runs guard-zoned, and in one of the other placements
		// in turn: each placement still meets every kernel and size, at
		// half the calls of running all four.
		other := placements[1+seen%(len(placements)-1)]
		seen++
		for _, p := range [...]struct {
			name string
			new  func() placement
		}{placements[0], other} {
			if err := check(k, p.new); err != nil {
				t.Errorf("%s rows=%d shape=%v %s: %v", k.name, k.rows, k.shape, p.name, err)
				if failures++; failures > 30 {
					t.FailNow()
				}
			}
			calls++
		}
	})
	t.Logf("cases: %d, calls: %d", n, calls)
}
