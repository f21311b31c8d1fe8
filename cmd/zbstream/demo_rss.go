package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The demo reports the peak RSS of each of its processes: VmHWM from
// /proc/<pid>/status (Linux; elsewhere the summary leaves the line out).
// Not ru_maxrss from wait4, which bench -rss uses: a child that Go's
// os/exec starts (vfork, then exec) inherits in its ru_maxrss the peak of
// the parent's memory up to the exec (a parent holding 300 MB gives
// /bin/true a ru_maxrss of 310 MB), while VmHWM belongs to the process's
// own address space. A child that ends by itself prints its own VmHWM as
// its last line ("peak-rss BYTES", demoChild); for a child killed with
// SIGKILL, which prints nothing more, the parent reads it just before
// the kill, which misses at most what the child allocates in between.

// peakRSSPrefix starts the line on which a child reports its peak RSS.
const peakRSSPrefix = "peak-rss "

// vmHWM returns the peak RSS of process pid ("self" for this one), in
// bytes, or false where it cannot be read (not Linux, process ended).
func vmHWM(pid string) (int64, bool) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// reportPeakRSS prints this process's peak RSS for the demo's parent, if
// it can be read.
func reportPeakRSS(w io.Writer) {
	if peak, ok := vmHWM("self"); ok {
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
	self, ok := vmHWM("self")
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
