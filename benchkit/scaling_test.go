package benchkit

import (
	"strings"
	"testing"
	"time"
)

func TestSplitCopy(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7} {
		x := make([]float32, 1001)
		for i := range x {
			x[i] = float32(i + 1)
		}
		dst := make([]float32, len(x))
		splitCopy(dst, x, n)
		for i := range x {
			if dst[i] != x[i] {
				t.Fatalf("%d parts: dst[%d] = %v, want %v", n, i, dst[i], x[i])
			}
		}
	}
}

// TestRunScaling: every case is timed on both thread counts and the table
// has a row per case with the load beside it.
func TestRunScaling(t *testing.T) {
	x, dst := make([]float32, 1<<12), make([]float32, 1<<12)
	serial, parallel := 0, 0
	cases := []ScaleCase{{Label: "K H=8", Impl: "test", X: x, Dst: dst,
		Serial:   func() { serial++; copy(dst, x) },
		Parallel: func() { parallel++; splitCopy(dst, x, 2) }}}
	cfg := Config{Budget: 20 * time.Millisecond, MinRounds: 3, MaxRounds: 50, Sample: 50 * time.Microsecond}
	sc := RunScaling(cfg, 2, cases)
	if len(sc.Results) != 1 || serial == 0 || parallel == 0 {
		t.Fatalf("results %v, %d serial and %d Parallel calls", sc.Results, serial, parallel)
	}
	r := sc.Results[0]
	if r.Rounds < 3 || r.Copy1.Median <= 0 || r.CopyN.Median <= 0 || r.Serial.Median <= 0 || r.ParalN.Median <= 0 || r.Bytes != 8<<12 {
		t.Fatalf("result %+v", r)
	}
	var b strings.Builder
	sc.WriteMarkdown(&b)
	for _, want := range []string{"## 2-thread scaling", "| K H=8 | test |", "load average at the start"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
