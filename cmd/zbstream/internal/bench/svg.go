package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Chart geometry and colours.
const (
	svgWidth      = 1000
	svgPanelH     = 300 // height of one panel's plot area
	svgLeft       = 90  // left margin (y-axis labels)
	svgRight      = 20
	svgTop        = 155 // title, subtitle and legend
	svgPanelGap   = 110 // x labels of a panel and the next panel's title
	svgBottom     = 90
	svgColourZB   = "#1f6feb"
	svgColourRaw  = "#a0a7b1"
	svgColourText = "#1f2328"
	svgColourGrid = "#d8dee4"
)

// svgPanel is one chart panel: a quantity for every cell.
type svgPanel struct {
	title string
	unit  string
	value func(c cell, recordsPerSec float64) float64
}

// writeSVG draws the table as grouped bars, one group per size and
// mode, zbstream beside the raw ceiling: records/s in the upper panel and
// MB/s in the lower one, both on log scales (the sizes span three orders of
// magnitude). Each bar is a client's median round, labelled with its
// value, with a whisker from its slowest to its fastest round; each group
// is labelled with the median ratio and its range over the rounds.
func writeSVG(w io.Writer, r result) error {
	panels := []svgPanel{
		{"Records per second", "records/s", func(_ cell, x float64) float64 { return x }},
		{"Throughput in MB/s of records, MB = 10^6 bytes", "MB/s", func(c cell, x float64) float64 { return c.MBps(x) }},
	}
	height := svgTop + len(panels)*svgPanelH + (len(panels)-1)*svgPanelGap + svgBottom
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" fill="%s">`+"\n",
		svgWidth, height, svgWidth, height, svgColourText)
	p(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	p(`<text x="%d" y="32" font-size="19" font-weight="bold">%s</text>`+"\n", svgLeft,
		esc("zbstream beside a raw gRPC stream (the ceiling), "+engineLabel(r.Engine)))
	p(`<text x="%d" y="54" font-size="13">%s</text>`+"\n", svgLeft,
		esc(fmt.Sprintf("%s · %s%s", r.Date.Format("2006-01-02"), r.Machine, loadNote(r.Load))))
	p(`<text x="%d" y="72" font-size="13">%s</text>`+"\n", svgLeft,
		esc(fmt.Sprintf("median of %d interleaved rounds of %s per client and cell, whiskers min to max; persistent stream, JSON records, one per call or in batches",
			r.Rounds, r.Duration)))
	// Legend.
	p(`<g class="legend" font-size="13">`)
	p(`<rect x="%d" y="90" width="14" height="14" fill="%s"/><text x="%d" y="102">zbstream (until the last record is acknowledged)</text>`,
		svgLeft, svgColourZB, svgLeft+20)
	p(`<rect x="%d" y="90" width="14" height="14" fill="%s"/><text x="%d" y="102">raw gRPC bidi stream, same messages, no client logic</text>`,
		svgLeft+380, svgColourRaw, svgLeft+400)
	p("</g>\n")

	plotW := float64(svgWidth - svgLeft - svgRight)
	n := len(r.Cells)
	for i, pn := range panels {
		top := float64(svgTop + i*(svgPanelH+svgPanelGap))
		var lo, hi float64 = math.Inf(1), 0
		for _, c := range r.Cells {
			zb, raw := c.Zbstream(), c.Raw()
			for _, x := range []float64{pn.value(c, zb.Min), pn.value(c, zb.Max), pn.value(c, raw.Min), pn.value(c, raw.Max)} {
				if x > 0 {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
				}
			}
		}
		if hi == 0 { // nothing measured
			lo, hi = 1, 10
		}
		e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if e1 <= e0 {
			e1 = e0 + 1
		}
		y := func(x float64) float64 {
			if x <= 0 {
				return top + svgPanelH
			}
			f := (math.Log10(x) - e0) / (e1 - e0)
			return top + svgPanelH*(1-math.Max(0, math.Min(1, f)))
		}
		p(`<g class="panel">` + "\n")
		p(`<text x="%d" y="%.1f" font-size="15" font-weight="bold">%s</text>`+"\n", svgLeft, top-14, esc(pn.title+" (log scale)"))
		// Grid and y-axis labels, one per power of ten.
		for e := e0; e <= e1; e++ {
			gy := y(math.Pow(10, e))
			p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="1"/>`, svgLeft, gy, svgWidth-svgRight, gy, svgColourGrid)
			p(`<text x="%d" y="%.1f" font-size="12" text-anchor="end">%s</text>`+"\n", svgLeft-8, gy+4, compact(math.Pow(10, e)))
		}
		p(`<text transform="translate(%d %.1f) rotate(-90)" font-size="13" text-anchor="middle">%s</text>`+"\n",
			24, top+svgPanelH/2, esc(pn.unit))
		// Axes.
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="1.5"/>`, svgLeft, top, svgLeft, top+svgPanelH, svgColourText)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", svgLeft, top+svgPanelH, svgWidth-svgRight, top+svgPanelH, svgColourText)
		gw := plotW / float64(max(n, 1))
		bw := math.Min(gw*0.34, 60)
		for j, c := range r.Cells {
			cx := float64(svgLeft) + gw*(float64(j)+0.5)
			for k, s := range []struct {
				class, colour, name string
				v                   spread
			}{
				{"zbstream", svgColourZB, "zbstream", c.Zbstream()},
				{"raw", svgColourRaw, "raw gRPC", c.Raw()},
			} {
				x := cx - bw - 2 + float64(k)*(bw+4)
				v, lo, hi := pn.value(c, s.v.Median), pn.value(c, s.v.Min), pn.value(c, s.v.Max)
				by := y(v)
				p(`<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
					s.class, x, by, bw, top+svgPanelH-by, s.colour,
					esc(fmt.Sprintf("%s %s, %s: median %s %s, rounds %s to %s", sizeLabel(c.Size), c.Mode(), s.name, compact(v), pn.unit, compact(lo), compact(hi))))
				svgWhisker(p, "whisker "+s.class, x+bw/2, y(lo), y(hi), bw/4)
				p(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`+"\n", x+bw/2, math.Min(by, y(hi))-4, compact(v))
			}
			// Group labels: size, mode and ratio.
			ly := top + svgPanelH
			p(`<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" font-weight="bold">%s</text>`, cx, ly+18, esc(sizeLabel(c.Size)))
			p(`<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`, cx, ly+33, esc(c.Mode()))
			ratio := c.Ratio()
			p(`<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" fill="%s">%s</text>`, cx, ly+49, svgColourZB,
				fmt.Sprintf("%.2f×", ratio.Median))
			p(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="%s">%s</text>`+"\n", cx, ly+63, svgColourZB,
				fmt.Sprintf("%.2f–%.2f", ratio.Min, ratio.Max))
		}
		p("</g>\n")
	}
	p(`<text x="%d" y="%d" font-size="11">ratio: median of the rounds' zbstream / raw gRPC records per second, and its range. Reproduce: go run ./cmd/zbstream bench -csv docs/bench.csv -svg docs/bench.svg</text>`+"\n",
		svgLeft, height-16)
	p("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// svgWhisker draws a vertical line at x from y0 to y1 with caps half w
// wide: a bar's range over the rounds.
func svgWhisker(p func(string, ...any), class string, x, y0, y1, w float64) {
	p(`<g class="%s" stroke="%s" stroke-width="1.2">`, class, svgColourText)
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, y0, x, y1)
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x-w, y0, x+w, y0)
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`, x-w, y1, x+w, y1)
}

// engineLabel names the server measured against in the chart's title.
func engineLabel(e string) string {
	switch e {
	case "ackonly":
		return "ack-only engine, loopback"
	case "memory":
		return "memory engine, loopback"
	}
	return e
}

// esc escapes s for XML text and attributes.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// compact formats x with three significant digits and a k, M or G suffix.
func compact(x float64) string {
	suffix := ""
	for _, u := range []struct {
		s string
		m float64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if x >= u.m {
			x /= u.m
			suffix = u.s
			break
		}
	}
	switch {
	case x >= 100 || x == math.Trunc(x):
		return fmt.Sprintf("%.0f%s", x, suffix)
	case x >= 10:
		return fmt.Sprintf("%.1f%s", x, suffix)
	case x >= 1:
		return fmt.Sprintf("%.2f%s", x, suffix)
	}
	return fmt.Sprintf("%.2g%s", x, suffix)
}
