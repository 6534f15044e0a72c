package benchkit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
)

var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// WriteSVG draws the ratio to copy of every implementation at every shape:
// one panel per kernel, one group of bars per (data level, H), a log scale,
// whiskers from p25 to p75, and the copy bound as the line at 1.
func (rep *Report) WriteSVG(w io.Writer) error {
	var ops []string // kernels, in order of appearance: one panel each
	byOp := map[string][]ShapeResult{}
	for _, sr := range rep.Shapes {
		k := sr.Shape.Label()
		if _, ok := byOp[k]; !ok {
			ops = append(ops, k)
		}
		byOp[k] = append(byOp[k], sr)
	}
	lo, hi := 1.0, 1.0
	for _, sr := range rep.Shapes {
		for _, r := range sr.Results[1:] {
			if r.Status == OK {
				lo = math.Min(lo, r.Ratio.P25)
				hi = math.Max(hi, r.Ratio.P75)
			}
		}
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo*0.9)*2)/2) // a half decade below
	hi = hi * 1.7                                         // room for the labels above the bars
	nImpl := len(rep.Impls)
	maxGroups := 0
	for _, op := range ops {
		maxGroups = max(maxGroups, len(byOp[op]))
	}
	const (
		left, right, top = 70.0, 20.0, 70.0
		panelH, gap      = 300.0, 80.0
		barW, groupGap   = 14.0, 26.0
	)
	groupW := float64(nImpl)*barW + groupGap
	width := left + right + float64(maxGroups)*groupW
	width = math.Max(width, 700)
	height := top + float64(len(ops))*(panelH+gap) + 10

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	text := func(x, y float64, anchor, extra, s string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>`, x, y, anchor, extra)
		xml.EscapeText(&b, []byte(s))
		b.WriteString("</text>\n")
	}
	text(left, 20, "start", `font-size="15" font-weight="bold"`, fmt.Sprintf("Time / Go copy time, single thread (lower is better): %s", rep.Machine.CPU))
	// legend
	lx := left
	for i, im := range rep.Impls {
		fmt.Fprintf(&b, `<rect x="%.1f" y="32" width="12" height="12" fill="%s"/>`+"\n", lx, palette[i%len(palette)])
		text(lx+16, 43, "start", "", im.Name)
		lx += 16 + 7.5*float64(len(im.Name)) + 18
	}
	text(left, 60, "start", `font-size="11" fill="#555"`, "bars: median ratio; whiskers: p25-p75 over rounds; dashed line: the copy bound (1.0); log scale")

	for pi, op := range ops {
		y0 := top + float64(pi)*(panelH+gap) + 20
		y1 := y0 + panelH
		ys := func(v float64) float64 {
			return y1 - (math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))*panelH
		}
		text(left, y0-8, "start", `font-size="14" font-weight="bold"`, op)
		// grid
		for _, t := range ticks(lo, hi) {
			y := ys(t)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, width-right, y)
			text(left-6, y+4, "end", "", trimFloat(t)+"x")
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-dasharray="5,3"/>`+"\n", left, ys(1), width-right, ys(1))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, y0, left, y1)
		for gi, sr := range byOp[op] {
			gx := left + groupGap/2 + float64(gi)*groupW
			for i, r := range sr.Results[1:] {
				x := gx + float64(i)*barW
				color := palette[i%len(palette)]
				if r.Status != OK {
					text(x+barW/2, y1-4, "middle", `font-size="9" fill="#999"`, "-")
					continue
				}
				yt := ys(r.Ratio.Median)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>`, x+1, yt, barW-2, math.Max(y1-yt, 0), color)
				xml.EscapeText(&b, []byte(fmt.Sprintf("%s %s H=%d %s: %.2fx (%.2f-%.2f), %.1f GB/s", r.Impl, op, sr.Shape.H, sr.Shape.Level, r.Ratio.Median, r.Ratio.P25, r.Ratio.P75, r.GBps(sr.Shape))))
				b.WriteString("</title></rect>\n")
				xc := x + barW/2
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", xc, ys(r.Ratio.P25), xc, ys(r.Ratio.P75))
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" text-anchor="start" transform="rotate(-90 %.1f %.1f)">%.2f</text>`+"\n",
					xc+3, math.Min(ys(r.Ratio.P75), yt)-3, xc+3, math.Min(ys(r.Ratio.P75), yt)-3, r.Ratio.Median)
			}
			s := sr.Shape
			text(gx+float64(nImpl)*barW/2, y1+16, "middle", "", fmt.Sprintf("H=%d", s.H))
			text(gx+float64(nImpl)*barW/2, y1+30, "middle", `fill="#555"`, fmt.Sprintf("%s %s", s.Level, sizeString(s.XBytes())))
		}
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// ticks are 1, 2, 5 times powers of ten within [lo, hi].
func ticks(lo, hi float64) []float64 {
	var out []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			t := m * math.Pow(10, e)
			if t >= lo*0.999 && t <= hi {
				out = append(out, t)
			}
		}
	}
	return out
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%g", v)
	return s
}
