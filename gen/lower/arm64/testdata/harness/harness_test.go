//go:build !purego

// This file is copied into the scratch package that exec_test.go builds for
// GOARCH=arm64 and runs under qemu. It replays the cases in cases.bin: each
// gives the inputs of every array, the rows ir.Eval completed (a guard may
// abandon one) and what it computed for the written arrays. The function
// must return the same count, leave the abandoned row and those after it
// bit for bit as they were, and match ir.Eval on the rows it completed
// (NaN where it has NaN, the same infinity where it has one). Every case
// runs twice: with poison values fenced around each array (a stray write
// is reported), then with each array ending flush against an inaccessible
// page (a stray read past the end faults).
package k

import (
	"encoding/binary"
	"math"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

const guard = 16 // poison floats before and after every array

// poison is a NaN no kernel computes, so an overwritten guard is seen.
const poison = 0x7fc0dead

type array struct {
	alias   int // index of the array whose memory this one shares, or -1
	written bool
	width   int // values per row; 0 for parameters
	in      []float32
	want    []float32 // for written arrays
}

type kase struct {
	name       string
	h, rows    int
	done       int // rows completed
	arrays     []array
	fn         func(p []*float32, rows, h int) int
	bufs, mems [][]float32
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

func readCases(t *testing.T) []*kase {
	data, err := os.ReadFile("cases.bin")
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{data}
	cases := make([]*kase, r.u32())
	for c := range cases {
		name := string(r.b[:r.u32()])
		r.b = r.b[len(name):]
		k := &kase{name: name, h: int(r.u32()), rows: int(r.u32())}
		k.arrays = make([]array, r.u32())
		k.done = int(r.u32())
		for a := range k.arrays {
			ar := &k.arrays[a]
			ar.alias, ar.written, ar.width = int(int32(r.u32())), r.u32() == 1, int(r.u32())
			ar.in = r.floats(int(r.u32()))
			if ar.written {
				ar.want = r.floats(len(ar.in))
			}
		}
		var ok bool
		if k.fn, ok = funcs[name]; !ok {
			t.Fatalf("no function %s", name)
		}
		cases[c] = k
	}
	return cases
}

// fenced returns n floats with poison on both sides, and the whole buffer.
func fenced(n int) (mem, buf []float32) {
	buf = make([]float32, guard+n+guard)
	for i := range buf {
		buf[i] = math.Float32frombits(poison)
	}
	return buf[guard : guard+n], buf
}

// flush returns n floats that end where an inaccessible page begins, and
// the function that unmaps them.
func flush(t *testing.T, n int) ([]float32, func()) {
	page := os.Getpagesize()
	size := (4*n+page-1)/page*page + page
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(b[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	end := size - page
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[end-4*n])), n), func() { syscall.Munmap(b) }
}

func run(t *testing.T, k *kase, pageFenced bool) (failures int) {
	mems := make([][]float32, len(k.arrays))
	bufs := make([][]float32, len(k.arrays))
	ptrs := make([]*float32, len(k.arrays))
	for a, ar := range k.arrays {
		if ar.alias >= 0 {
			mems[a], bufs[a], ptrs[a] = mems[ar.alias], bufs[ar.alias], ptrs[ar.alias]
			continue
		}
		if pageFenced {
			var unmap func()
			mems[a], unmap = flush(t, len(ar.in))
			defer unmap()
		} else {
			mems[a], bufs[a] = fenced(len(ar.in))
		}
		copy(mems[a], ar.in)
		ptrs[a] = &mems[a][0]
	}
	if done := k.fn(ptrs, k.rows, k.h); done != k.done {
		t.Errorf("%s h=%d rows=%d: returned %d rows completed, want %d", k.name, k.h, k.rows, done, k.done)
		failures++
	}
	for a, ar := range k.arrays {
		if bufs[a] != nil {
			for i := range bufs[a] {
				inside := i >= guard && i < guard+len(ar.in)
				if !inside && math.Float32bits(bufs[a][i]) != poison {
					t.Errorf("%s h=%d rows=%d: array %d: guard overwritten", k.name, k.h, k.rows, a)
					failures++
					break
				}
			}
		}
		for i := range ar.in {
			got := mems[a][i]
			var bad bool
			if !ar.written || (ar.width > 0 && i/ar.width >= k.done) {
				// Read only, or in a row not completed: untouched.
				bad = math.Float32bits(got) != math.Float32bits(ar.in[i])
			} else {
				bad = !near(got, ar.want[i])
			}
			if bad {
				w := ar.want[i]
				if !ar.written {
					w = ar.in[i]
				}
				t.Errorf("%s h=%d rows=%d: array %d [%d]: got %g, want %g", k.name, k.h, k.rows, a, i, got, w)
				failures++
				break
			}
		}
	}
	return failures
}

// near reports whether a computed value matches ir.Eval's: within 1e-4
// absolutely or relatively, or the same non-finite value.
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

func TestKernels(t *testing.T) {
	cases := readCases(t)
	failures := 0
	for _, pageFenced := range []bool{false, true} {
		for _, k := range cases {
			if failures += run(t, k, pageFenced); failures > 30 {
				t.FailNow()
			}
		}
	}
	t.Logf("cases: %d", len(cases))
}
