// The execution harness of package amd64's tests. It is copied, with the
// generated assembly, stubs and case table, into a scratch module and run
// there: each kernel is called on inputs written by the generator's test
// and compared with the outputs ir.Eval produced for the same inputs.

package k

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// kfunc is one assembly function under test.
type kfunc struct {
	name   string
	kernel string // data files are named after the kernel
	h      int    // fixed row length, 0 when taken at run time
	avx512 bool
	roles  string                              // per array: i row input, o row output, p parameter, a per-row input, b per-row output
	dst, x int                                 // indices of the arrays an in-place call aliases
	call   func(p []*float32, rows, h int) int // returns the rows completed
}

var rowCounts = []int{1, 2, 5}

// sentinel fills the guard cells around each array.
const sentinel = 0x7fc0dead

func length(role byte, h, rows int) int {
	switch role {
	case 'p':
		return h
	case 'a', 'b':
		return rows
	}
	return h * rows
}

func written(role byte) bool { return role == 'o' || role == 'b' }

// load reads a case: the rows the kernel completes, each array's initial
// contents, and for written arrays the expected final contents (rows
// after the completed ones untouched).
func load(t *testing.T, f kfunc, h, rows int, variant string) (done int, in, want [][]float32) {
	name := filepath.Join("data", fmt.Sprintf("%s_%d_%d%s.bin", f.kernel, h, rows, variant))
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	next := func(n int) []float32 {
		if len(b) < 4*n {
			t.Fatalf("%s: short file", name)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		return v
	}
	if len(b) < 4 {
		t.Fatalf("%s: short file", name)
	}
	done = int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	for i := range len(f.roles) {
		n := length(f.roles[i], h, rows)
		in = append(in, next(n))
		if written(f.roles[i]) {
			want = append(want, next(n))
		} else {
			want = append(want, in[i])
		}
	}
	if len(b) != 0 {
		t.Fatalf("%s: %d bytes left over", name, len(b))
	}
	return done, in, want
}

// placement puts one array's data somewhere in memory and says whether
// the cells around it are intact afterwards.
type placement interface {
	place(data []float32) []float32
	intact() bool
	release()
}

// heap surrounds the data with sentinel cells, skip before (so the data
// is misaligned; 1 when zero) and 16 after.
type heap struct {
	skip int
	buf  []float32
}

func (p *heap) place(data []float32) []float32 {
	p.skip = max(p.skip, 1)
	p.buf = make([]float32, p.skip+len(data)+16)
	for i := range p.buf {
		p.buf[i] = math.Float32frombits(sentinel)
	}
	s := p.buf[p.skip : p.skip+len(data)]
	copy(s, data)
	return s
}

func (p *heap) intact() bool {
	n := len(p.buf)
	for _, i := range append(seq(0, p.skip), seq(n-16, n)...) {
		if math.Float32bits(p.buf[i]) != sentinel {
			return false
		}
	}
	return true
}

func (p *heap) release() {}

func seq(a, b int) []int {
	var s []int
	for i := a; i < b; i++ {
		s = append(s, i)
	}
	return s
}

// fenced puts the data against an inaccessible page, right after its end
// (atEnd) or right before its start: any access past that edge faults.
type fenced struct {
	atEnd bool
	mem   []byte
}

func (p *fenced) place(data []float32) []float32 {
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

func (p *fenced) intact() bool { return true }

func (p *fenced) release() { syscall.Munmap(p.mem) }

// skew varies the misalignment of the skew placement from one array to
// the next.
var skew int

var modes = []struct {
	name string
	new  func() placement
}{
	{"heap", func() placement { return &heap{} }},
	// Each array misaligned by a different number of floats: outputs
	// that cannot all stream, and many shifts of the first.
	{"skew", func() placement { skew++; return &heap{skip: 16 + skew%16} }},
	{"fence-end", func() placement { return &fenced{atEnd: true} }},
	{"fence-start", func() placement { return &fenced{} }},
}

func TestKernels(t *testing.T) {
	run := map[bool]bool{
		false: os.Getenv("NORMGEN_RUN_AVX2") == "1",
		true:  os.Getenv("NORMGEN_RUN_AVX512") == "1",
	}
	ran := 0
	for _, f := range funcs {
		if !run[f.avx512] {
			continue
		}
		hs := sizes
		if f.h > 0 {
			hs = []int{f.h}
		}
		for _, h := range hs {
			for _, rows := range rowCounts {
				done, in, want := load(t, f, h, rows, "")
				for _, mode := range modes {
					if err := check(f, h, rows, done, in, want, mode.new, -1); err != nil {
						t.Errorf("%s h=%d rows=%d %s: %v", f.name, h, rows, mode.name, err)
					}
					ran++
				}
				// In place: dst is x.
				done, in, want = load(t, f, h, rows, "_inplace")
				if err := check(f, h, rows, done, in, want, modes[1].new, f.dst); err != nil {
					t.Errorf("%s h=%d rows=%d in place: %v", f.name, h, rows, err)
				}
				ran++
			}
		}
	}
	t.Logf("%d calls checked", ran)
	if ran == 0 {
		t.Skip("no kernel runs on this CPU")
	}
}

// check calls f on a copy of in, compares its result with done and every
// array with want (NaN matches NaN). With alias >= 0, that array shares
// x's memory (in-place call) and only its expected contents are checked
// there.
func check(f kfunc, h, rows, done int, in, want [][]float32, newPlacement func() placement, alias int) error {
	ptrs := make([]*float32, len(in))
	arrays := make([][]float32, len(in))
	places := make([]placement, len(in))
	for i, data := range in {
		if i == alias {
			continue
		}
		p := newPlacement()
		defer p.release()
		s := p.place(data)
		places[i], arrays[i], ptrs[i] = p, s, &s[0]
	}
	if alias >= 0 {
		places[alias], arrays[alias], ptrs[alias] = places[f.x], arrays[f.x], ptrs[f.x]
	}
	if got := f.call(ptrs, rows, h); got != done {
		return fmt.Errorf("returned %d rows completed, want %d", got, done)
	}
	for i, s := range arrays {
		if !places[i].intact() {
			return fmt.Errorf("array %d: wrote outside its slice", i)
		}
		if alias >= 0 && i == f.x {
			continue
		}
		for j, got := range s {
			w := want[i][j]
			if !written(f.roles[i]) {
				if math.Float32bits(got) != math.Float32bits(w) {
					return fmt.Errorf("input array %d changed at %d: %v, was %v", i, j, got, w)
				}
				continue
			}
			if w != w && got != got {
				continue
			}
			if !(math.Abs(float64(got-w)) <= 1e-4*(1+math.Abs(float64(w)))) {
				at := fmt.Sprintf("row %d", j)
				if f.roles[i] == 'o' {
					at = fmt.Sprintf("row %d, column %d", j/h, j%h)
				}
				return fmt.Errorf("array %d, %s: got %v, want %v", i, at, got, w)
			}
		}
	}
	return nil
}
