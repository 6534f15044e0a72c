package benchkit

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Thread scaling: a kernel's Parallel entry point on several threads
// against a copy of the same bytes split across as many goroutines, next
// to the serial entry point against a one-thread copy. Several threads
// cannot be timed by one thread's CPU time: these samples are wall-clock,
// so other work on the machine shows in them (the report gives the load).

// ScaleCase is one kernel at one shape, serial and Parallel, on buffers
// it owns; X and Dst are what the copies copy (x read, dst written).
type ScaleCase struct {
	Label    string // kernel and shape, as the table shows them
	Impl     string // the implementation timed (normgen-avx512, say)
	X, Dst   []float32
	Serial   func()
	Parallel func()
}

// ScaleResult is one ScaleCase's medians (ns per call) over rounds.
type ScaleResult struct {
	Label, Impl    string
	Bytes          int64 // x read plus dst written
	Threads        int
	Rounds         int
	Copy1, CopyN   Stats // copy on 1 thread; split across Threads goroutines
	Serial, ParalN Stats // the serial entry point on 1 thread; the Parallel one on Threads
}

// Scaling is a whole scaling run.
type Scaling struct {
	Threads int
	Load    string // /proc/loadavg at its start
	Results []ScaleResult
}

// splitCopy copies x into dst in n contiguous parts, n-1 of them on
// goroutines of their own, as the Parallel entry points split rows.
func splitCopy(dst, x []float32, n int) {
	var wg sync.WaitGroup
	for w := 0; w < n-1; w++ {
		lo, hi := len(x)*w/n, len(x)*(w+1)/n
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], x[lo:hi])
		}()
	}
	lo := len(x) * (n - 1) / n
	copy(dst[lo:], x[lo:])
	wg.Wait()
}

// RunScaling times every case on 1 and on threads threads, in rounds of
// the four functions in rotated order, each sample at least cfg.Sample
// of wall time.
func RunScaling(cfg Config, threads int, cases []ScaleCase) *Scaling {
	sc := &Scaling{Threads: threads, Load: ReadMachine().Load}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	for _, c := range cases {
		logf(cfg, "scaling: %s (%s), %d threads\n", c.Label, c.Impl, threads)
		fs := []struct {
			procs int
			f     func()
		}{
			{1, func() { copy(c.Dst, c.X) }},
			{threads, func() { splitCopy(c.Dst, c.X, threads) }},
			{1, c.Serial},
			{threads, c.Parallel},
		}
		sample := func(i int, n int) float64 {
			runtime.GOMAXPROCS(fs[i].procs)
			t0 := time.Now()
			for range n {
				fs[i].f()
			}
			return float64(time.Since(t0).Nanoseconds()) / float64(n)
		}
		calls := make([]int, len(fs))
		for i := range fs {
			calls[i] = 1
			for {
				d := sample(i, calls[i]) * float64(calls[i])
				if d >= float64(cfg.Sample) || calls[i] >= 1<<20 {
					break
				}
				calls[i] = int(float64(calls[i])*1.2*float64(cfg.Sample)/max(d, 1000)) + 1
			}
		}
		ns := make([][]float64, len(fs))
		t0 := time.Now()
		rounds := 0
		for rounds < cfg.MaxRounds && (rounds < cfg.MinRounds || time.Since(t0) < cfg.Budget) {
			for j := range fs {
				i := (j + rounds) % len(fs)
				ns[i] = append(ns[i], sample(i, calls[i]))
			}
			rounds++
		}
		r := ScaleResult{Label: c.Label, Impl: c.Impl, Bytes: 8 * int64(len(c.X)), Threads: threads, Rounds: rounds,
			Copy1: Summarize(ns[0]), CopyN: Summarize(ns[1]), Serial: Summarize(ns[2]), ParalN: Summarize(ns[3])}
		logf(cfg, "  copy %.1f GB/s, %d-thread copy %.1f GB/s; serial %.2fx copy, Parallel %.2fx %d-thread copy, speed-up %.2f\n",
			gbps(r.Bytes, r.Copy1), threads, gbps(r.Bytes, r.CopyN), r.Serial.Median/r.Copy1.Median, r.ParalN.Median/r.CopyN.Median, threads, r.Serial.Median/r.ParalN.Median)
		sc.Results = append(sc.Results, r)
	}
	return sc
}

func gbps(bytes int64, s Stats) float64 {
	if s.Median <= 0 {
		return 0
	}
	return float64(bytes) / s.Median
}

// WriteMarkdown writes the scaling table.
func (sc *Scaling) WriteMarkdown(b *strings.Builder) {
	if sc == nil || len(sc.Results) == 0 {
		return
	}
	n := sc.Threads
	fmt.Fprintf(b, "## %d-thread scaling\n\n", n)
	fmt.Fprintf(b, "The Parallel entry points on GOMAXPROCS=%d against a copy of the same bytes split across %d goroutines (the same split), "+
		"next to the serial entry point against a one-thread copy. Wall-clock medians over interleaved rounds (several threads have no one thread's CPU time), "+
		"so other work on the machine counts: load average at the start %s on %d logical CPUs. Speed-up: serial time / Parallel time; "+
		"copy speed-up: the same for the copies, the most the memory system gives.\n\n", n, n, sc.Load, runtime.NumCPU())
	fmt.Fprintf(b, "| kernel | impl | copy GB/s | %d-thread copy GB/s | copy speed-up | serial / copy | Parallel / %d-thread copy (p25-p75) | speed-up | rounds |\n", n, n)
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range sc.Results {
		fmt.Fprintf(b, "| %s | %s | %.1f | %.1f | %.2f | %.2fx | %.2fx (%.2f-%.2f) | %.2f | %d |\n", mdEscape(r.Label), r.Impl,
			gbps(r.Bytes, r.Copy1), gbps(r.Bytes, r.CopyN), r.Copy1.Median/r.CopyN.Median,
			r.Serial.Median/r.Copy1.Median, r.ParalN.Median/r.CopyN.Median, r.ParalN.P25/r.CopyN.Median, r.ParalN.P75/r.CopyN.Median,
			r.Serial.Median/r.ParalN.Median, r.Rounds)
	}
	b.WriteString("\n")
}
