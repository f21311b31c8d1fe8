package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
)

// The demo reports the peak RSS of each of its processes: VmHWM (see
// package proc for why not ru_maxrss; elsewhere than Linux the summary
// leaves the line out). A child that ends by itself prints its own VmHWM
// as its last line ("peak-rss BYTES", demoChild); for a child killed with
// SIGKILL, which prints nothing more, the parent reads it just before the
// kill, which misses at most what the child allocates in between.

// peakRSSPrefix starts the line on which a child reports its peak RSS.
const peakRSSPrefix = "peak-rss "

// reportPeakRSS prints this process's peak RSS for the demo's parent, if
// it can be read.
func reportPeakRSS(w io.Writer) {
	if peak, ok := proc.VmHWM("self"); ok {
		fmt.Fprintf(w, "%s%d\n", peakRSSPrefix, peak)
	}
}

// notePeak records a child's peak RSS, reported or sampled: the highest
// wins, as VmHWM only grows.
func (c *child) notePeak(peak int64) {
	for {
		old := c.peak.Load()
		if peak <= old || c.peak.CompareAndSwap(old, peak) {
			return
		}
	}
}

// peakLine is the summary's line of peak RSS by process, or "" when this
// system does not tell. Call with d.mu held.
func (d *demo) peakLine() string {
	self, ok := proc.VmHWM("self")
	if !ok {
		return ""
	}
	line := "parent " + mib(self)
	for _, role := range []string{"server", "client"} {
		var peaks []string
		for _, c := range d.children {
			if c.role != role {
				continue
			}
			if p := c.peak.Load(); p > 0 {
				peaks = append(peaks, mib(p))
			} else {
				peaks = append(peaks, "?")
			}
		}
		if len(peaks) > 0 {
			line += fmt.Sprintf("; %s %s", role, strings.Join(peaks, ", "))
		}
	}
	return line + " (VmHWM of each process, in start order)"
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
