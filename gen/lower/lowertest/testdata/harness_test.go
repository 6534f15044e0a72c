//go:build !purego

// The conformance kit's harness, copied into the scratch module with the
// lowered functions (table_test.go maps their names to calls) and the
// cases (cases.bin, see lowertest.Encode). Each case gives the shape of
// one call, the count it must return and, per array, its inputs, the row
// each element belongs to (-1: none, such as parameters and the gaps of a
// strided layout) and, for written arrays, what ir.EvalShape computed.
// The elements of the rows before the returned count must match
// ir.EvalShape (NaN where it has NaN, the same infinity); every other
// element must be bit for bit as it was. Every case runs in every
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

// poison is a NaN no kernel computes, so an overwritten guard zone shows.
const poison = 0x7fc0dead

type array struct {
	alias   int // index of the array whose memory this one shares, or -1
	written bool
	in      []float32
	owner   []int32 // row of each element, -1 for none
	want    []float32
}

type kase struct {
	name   string
	rows   int
	shape  []int
	want   int
	arrays []array
	fn     func(p []*float32, rows int, shape []int) int
}

type reader struct{ b []byte }

func (r *reader) u32() uint32 {
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) floats(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(r.u32())
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
			ar.alias, ar.written = int(int32(r.u32())), r.u32() == 1
			n := int(r.u32())
			ar.in = r.floats(n)
			ar.owner = make([]int32, n)
			for i := range ar.owner {
				ar.owner[i] = int32(r.u32())
			}
			if ar.written {
				ar.want = r.floats(n)
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

// placement puts one array's data somewhere in memory and says whether
// the memory around it is intact after the call.
type placement interface {
	place(data []float32) []float32
	intact() bool
	release()
}

// zoned surrounds the data with guard zones of poison: lead floats
// before it (at least 1, so that it is misaligned) and zone after.
type zoned struct {
	lead int
	buf  []float32
	n    int
}

func (p *zoned) place(data []float32) []float32 {
	p.lead, p.n = max(p.lead, 1), len(data)
	p.buf = make([]float32, p.lead+len(data)+zone)
	for i := range p.buf {
		p.buf[i] = math.Float32frombits(poison)
	}
	s := p.buf[p.lead : p.lead+len(data)]
	copy(s, data)
	return s
}

func (p *zoned) intact() bool {
	for i, v := range p.buf {
		if (i < p.lead || i >= p.lead+p.n) && math.Float32bits(v) != poison {
			return false
		}
	}
	return true
}

func (p *zoned) release() {}

// paged puts the data against an inaccessible page, right after its end
// (atEnd) or right before its start: any access past that edge faults.
type paged struct {
	atEnd bool
	mem   []byte
}

func (p *paged) place(data []float32) []float32 {
	page := os.Getpagesize()
	size := 4 * len(data)
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
	s := unsafe.Slice((*float32)(unsafe.Pointer(&m[off])), len(data))
	copy(s, data)
	return s
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
	// Each array misaligned by a different number of floats: outputs
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

func check(k *kase, newPlacement func() placement) error {
	mems := make([][]float32, len(k.arrays))
	places := make([]placement, len(k.arrays))
	ptrs := make([]*float32, len(k.arrays))
	for a, ar := range k.arrays {
		if ar.alias >= 0 {
			continue
		}
		p := newPlacement()
		defer p.release()
		mems[a], places[a] = p.place(ar.in), p
		ptrs[a] = &mems[a][0]
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
		for i, v := range mems[a] {
			if !ar.written || ar.owner[i] < 0 || int(ar.owner[i]) >= got {
				if math.Float32bits(v) != math.Float32bits(ar.in[i]) {
					return fmt.Errorf("array %d [%d] (row %d, not written): %v, was %v", a, i, ar.owner[i], v, ar.in[i])
				}
				continue
			}
			if !near(v, ar.want[i]) {
				return fmt.Errorf("array %d [%d] (row %d): got %v, want %v (input %v)", a, i, ar.owner[i], v, ar.want[i], ar.in[i])
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
