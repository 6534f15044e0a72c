package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/normgen/normgen/bench/peers"
	"github.com/normgen/normgen/benchkit"
)

// extraShapes are the shapes of the backward and half-storage ops: each at
// every size and level, as benchkit.Shapes makes them (x of about l2 and
// dram bytes in float32; a half shape has as many rows as the float32
// one, so half its bytes), BatchNormBackward over [N, C] and the -ncl
// shapes.
func extraShapes(ops []string, sizes []int, l2, dram int64, ncl string, parseNCL func(string) (n, c, l int, level benchkit.Level)) []benchkit.Shape {
	var out []benchkit.Shape
	for _, name := range ops {
		for _, lv := range []struct {
			level benchkit.Level
			size  int64
		}{{benchkit.L2, l2}, {benchkit.DRAM, dram}} {
			if lv.size <= 0 {
				continue
			}
			for _, h := range sizes {
				rows := max(1, int((lv.size+int64(2*h))/int64(4*h)))
				switch name {
				case peers.LayerNormBackward:
					out = append(out, peers.BackwardShape(benchkit.LayerNorm, h, rows, lv.level))
				case peers.RMSNormBackward:
					out = append(out, peers.BackwardShape(benchkit.RMSNorm, h, rows, lv.level))
				case peers.BatchNormBackward:
					s := peers.BackwardShape(benchkit.BatchNorm, h, max(rows, benchkit.MinBatchRows), lv.level)
					if rows < benchkit.MinBatchRows {
						s.RowsNote = benchkit.BatchRowsNote
					}
					out = append(out, s)
				default:
					st, op, ok := peers.ParseHalf(name)
					if !ok {
						panic("normbench: unknown op " + name)
					}
					out = append(out, peers.HalfShape(st, op, h, rows, lv.level))
				}
			}
		}
		if name == peers.BatchNormBackward && ncl != "" {
			for _, d := range strings.Split(ncl, ",") {
				n, c, l, level := parseNCL(d)
				out = append(out, peers.BatchNormBackwardNCL(n, c, l, level))
			}
		}
	}
	return out
}

// halfTable is the markdown section comparing each half-storage kernel's
// time with the float32 kernel of the same op, size, level and
// implementation: the ratio of their median times per call (each
// measured against its own copy in interleaved rounds; the two shapes run
// one after the other in the same process). Empty without such pairs.
func halfTable(rep *benchkit.Report) string {
	type key struct {
		op    benchkit.Op
		h     int
		level benchkit.Level
	}
	f32 := map[key]benchkit.ShapeResult{}
	for _, sr := range rep.Shapes {
		if s := sr.Shape; s.Storage == benchkit.F32 && s.Kernel == "" {
			f32[key{s.Op, s.H, s.Level}] = sr
		}
	}
	var names []string
	for _, im := range rep.Impls {
		names = append(names, im.Name)
	}
	var b strings.Builder
	rows := 0
	for _, sr := range rep.Shapes {
		s := sr.Shape
		base, ok := f32[key{s.Op, s.H, s.Level}]
		if s.Storage == benchkit.F32 || !ok {
			continue
		}
		if rows == 0 {
			b.WriteString("\n## Half storage: time / float32 time\n\n")
			b.WriteString("Each half-storage kernel's median time per call divided by that of the same implementation's float32 kernel (same op, H, rows and level; each shape timed against its own copy, one after the other in this run). The copy column is the copy of the half rows against the copy of the float32 rows: the bound's own ratio, 0.5 when only bytes count. Target: at most 0.6 from memory (DRAM). n/a: either kernel missing.\n\n")
			fmt.Fprintf(&b, "| kernel | H | data | copy |")
			for _, n := range names {
				fmt.Fprintf(&b, " %s |", n)
			}
			b.WriteString("\n|---|--:|---|--:|" + strings.Repeat("--:|", len(names)) + "\n")
		}
		rows++
		ratio := func(name string) string {
			i := slices.IndexFunc(sr.Results, func(r benchkit.Result) bool { return r.Impl == name })
			j := slices.IndexFunc(base.Results, func(r benchkit.Result) bool { return r.Impl == name })
			if i < 0 || j < 0 || sr.Results[i].Status != benchkit.OK || base.Results[j].Status != benchkit.OK || base.Results[j].Ns.Median <= 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.2f", sr.Results[i].Ns.Median/base.Results[j].Ns.Median)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |", s.Label(), s.H, s.Level, ratio(benchkit.Bound))
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", ratio(n))
		}
		b.WriteString("\n")
	}
	return b.String()
}
