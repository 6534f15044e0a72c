//go:build !purego

// This file is copied, with harness_test.go for its helpers, into the
// scratch package that TestExecuteLayouts builds for GOARCH=arm64. It
// replays the cases in layouts.bin, of kernels of the Columns and Segments
// layouts: each gives the shape arguments, the count the function must
// return, and for every array its inputs, the row each element belongs to
// (-1: none, such as the gaps between columns or segments, and the
// parameters) and, for written arrays, what ir.EvalShape computed. The
// elements of the rows before the returned count must match ir.EvalShape;
// every other element must be bit for bit as it was.
package k

import (
	"math"
	"os"
	"testing"
)

type layoutArray struct {
	written bool
	in      []float32
	owner   []int32
	want    []float32
}

type layoutCase struct {
	name   string
	rows   int
	shape  []int
	expect int
	arrays []layoutArray
	fn     func(p []*float32, rows int, shape []int) int
}

func readLayoutCases(t *testing.T) []*layoutCase {
	data, err := os.ReadFile("layouts.bin")
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{data}
	cases := make([]*layoutCase, r.u32())
	for c := range cases {
		name := string(r.b[:r.u32()])
		r.b = r.b[len(name):]
		k := &layoutCase{name: name, rows: int(r.u32())}
		k.shape = make([]int, r.u32())
		for i := range k.shape {
			k.shape[i] = int(r.u32())
		}
		k.expect = int(r.u32())
		k.arrays = make([]layoutArray, r.u32())
		for a := range k.arrays {
			ar := &k.arrays[a]
			ar.written = r.u32() == 1
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
		var ok bool
		if k.fn, ok = layoutFuncs[name]; !ok {
			t.Fatalf("no function %s", name)
		}
		cases[c] = k
	}
	return cases
}

func runLayout(t *testing.T, k *layoutCase, pageFenced bool) (failures int) {
	mems := make([][]float32, len(k.arrays))
	bufs := make([][]float32, len(k.arrays))
	ptrs := make([]*float32, len(k.arrays))
	for a, ar := range k.arrays {
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
	what := func() string { return k.name + " rows=" + itoa(k.rows) + " shape=" + ints(k.shape) }
	if done := k.fn(ptrs, k.rows, k.shape); done != k.expect {
		t.Errorf("%s: returned %d rows completed, want %d", what(), done, k.expect)
		failures++
	}
	for a, ar := range k.arrays {
		if bufs[a] != nil {
			for i := range bufs[a] {
				inside := i >= guard && i < guard+len(ar.in)
				if !inside && math.Float32bits(bufs[a][i]) != poison {
					t.Errorf("%s: array %d: guard overwritten", what(), a)
					failures++
					break
				}
			}
		}
		for i := range ar.in {
			got := mems[a][i]
			var bad bool
			if !ar.written || ar.owner[i] < 0 || int(ar.owner[i]) >= k.expect {
				bad = math.Float32bits(got) != math.Float32bits(ar.in[i])
			} else {
				bad = !near(got, ar.want[i])
			}
			if bad {
				w := ar.in[i]
				if ar.written {
					w = ar.want[i]
				}
				t.Errorf("%s: array %d [%d] (row %d): got %g, want %g (input %g)", what(), a, i, ar.owner[i], got, w, ar.in[i])
				failures++
				break
			}
		}
	}
	return failures
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func ints(v []int) string {
	s := "["
	for i, n := range v {
		if i > 0 {
			s += " "
		}
		s += itoa(n)
	}
	return s + "]"
}

func TestLayouts(t *testing.T) {
	cases := readLayoutCases(t)
	failures := 0
	for _, pageFenced := range []bool{false, true} {
		for _, k := range cases {
			if failures += runLayout(t, k, pageFenced); failures > 30 {
				t.FailNow()
			}
		}
	}
	t.Logf("layout cases: %d", len(cases))
}
