// The execution harness of the Columns and Segments layouts, copied with
// harness_test.go (for its placements) into a scratch module by package
// amd64's TestExecuteLayouts. Each case file holds the value the call must
// return and, per array, its initial contents, what ir.EvalShape left in
// it, and the row each element belongs to (-1: none): the elements of
// rows before the returned one must match EvalShape, all others must be
// untouched.

package k

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// lfunc is one assembly function under test; sh is the call's shape
// arguments after rows, in signature order.
type lfunc struct {
	name   string
	avx512 bool
	call   func(p []*float32, rows int, sh []int) int
}

// lcase is one call: a function, its data, rows and shape, and the array
// that aliases x (dst, in place) or -1.
type lcase struct {
	fn    int
	file  string
	rows  int
	sh    []int
	alias int
	x     int
}

type larray struct {
	in, want []float32
	rowOf    []int32
}

func loadLayout(t *testing.T, name string) (ret int, arrays []larray) {
	b, err := os.ReadFile(filepath.Join("ldata", name))
	if err != nil {
		t.Fatal(err)
	}
	u32 := func() uint32 {
		if len(b) < 4 {
			t.Fatalf("%s: short file", name)
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v
	}
	ret = int(int32(u32()))
	for len(b) > 0 {
		n := int(u32())
		var a larray
		for range n {
			a.in = append(a.in, math.Float32frombits(u32()))
		}
		for range n {
			a.want = append(a.want, math.Float32frombits(u32()))
		}
		for range n {
			a.rowOf = append(a.rowOf, int32(u32()))
		}
		arrays = append(arrays, a)
	}
	return ret, arrays
}

func TestLayouts(t *testing.T) {
	run := map[bool]bool{
		false: os.Getenv("NORMGEN_RUN_AVX2") == "1",
		true:  os.Getenv("NORMGEN_RUN_AVX512") == "1",
	}
	ran, short := 0, 0
	for _, c := range layoutCases {
		f := layoutFuncs[c.fn]
		if !run[f.avx512] {
			continue
		}
		ret, arrays := loadLayout(t, c.file)
		if ret < c.rows {
			short++
		}
		ms := modes
		if c.alias >= 0 {
			ms = modes[1:2]
		}
		for _, mode := range ms {
			if err := checkLayout(f, c, ret, arrays, mode.new); err != nil {
				t.Errorf("%s %s %s: %v", f.name, c.file, mode.name, err)
			}
			ran++
		}
	}
	t.Logf("%d calls checked; %d cases stop short at a guard", ran, short)
	if ran == 0 {
		t.Skip("no kernel runs on this CPU")
	}
	if short == 0 {
		t.Error("no case trips a guard")
	}
}

func checkLayout(f lfunc, c lcase, ret int, arrays []larray, newPlacement func() placement) error {
	ptrs := make([]*float32, len(arrays))
	mems := make([][]float32, len(arrays))
	places := make([]placement, len(arrays))
	for i, a := range arrays {
		if i == c.alias {
			continue
		}
		p := newPlacement()
		defer p.release()
		s := p.place(a.in)
		places[i], mems[i], ptrs[i] = p, s, &s[0]
	}
	if c.alias >= 0 {
		places[c.alias], mems[c.alias], ptrs[c.alias] = places[c.x], mems[c.x], ptrs[c.x]
	}
	got := f.call(ptrs, c.rows, c.sh)
	if got != ret {
		return fmt.Errorf("returned %d, want %d", got, ret)
	}
	for i, s := range mems {
		if !places[i].intact() {
			return fmt.Errorf("array %d: wrote outside its slice", i)
		}
		if i == c.x && c.alias >= 0 {
			continue
		}
		a := arrays[i]
		for j, v := range s {
			if r := a.rowOf[j]; r < 0 || int(r) >= got {
				if math.Float32bits(v) != math.Float32bits(a.in[j]) {
					return fmt.Errorf("array %d element %d (row %d, not completed): %v, was %v", i, j, r, v, a.in[j])
				}
				continue
			}
			w := a.want[j]
			if v == w || w != w && v != v {
				continue // the same value, infinities included, or both NaN
			}
			if !(math.Abs(float64(v-w)) <= 1e-4*(1+math.Abs(float64(w)))) {
				return fmt.Errorf("array %d element %d (row %d): got %v, want %v", i, j, a.rowOf[j], v, w)
			}
		}
	}
	return nil
}
