package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
)

// benchCSVHeader is the CSV's header row.
var benchCSVHeader = []string{
	"size_bytes", "mode", "records_per_call",
	"zbstream_records_per_s", "zbstream_mb_per_s",
	"raw_records_per_s", "raw_mb_per_s", "ratio",
}

// writeBenchTable prints the table, with a line saying what was measured.
func writeBenchTable(w io.Writer, r benchResult) {
	client := "default (records copied)"
	if r.NoCopy {
		client = "WithNoCopy (records kept by reference)"
	}
	fmt.Fprintf(w, "zbstream bench, %s, %s%s\nengine %s, zbstream client %s, best of %d runs of %s per client and cell; MB = 10^6 bytes\n\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.Machine, loadNote(r.Load), r.Engine, client, r.Runs, r.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tmode\tzbstream records/s\tzbstream MB/s\traw records/s\traw MB/s\tratio\t")
	for _, c := range r.Cells {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%.0f\t%s\t%.3f\t\n",
			sizeLabel(c.Size), c.Mode(), c.Zbstream, mbString(c.MBps(c.Zbstream)), c.Raw, mbString(c.MBps(c.Raw)), c.Ratio())
	}
	tw.Flush()
}

// mbString formats MB/s with one decimal, or three significant digits
// below 10 (20-byte records one per call make well under 1 MB/s).
func mbString(x float64) string {
	if x >= 10 {
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// loadNote is ", load average L at the start", or "".
func loadNote(l string) string {
	if l == "" {
		return ""
	}
	return ", load average " + l + " at the start"
}

// writeBenchCSV writes the table as CSV, one row per cell.
func writeBenchCSV(w io.Writer, r benchResult) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(benchCSVHeader); err != nil {
		return err
	}
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	for _, c := range r.Cells {
		row := []string{
			strconv.Itoa(c.Size), c.Mode(), strconv.Itoa(c.Batch),
			f(c.Zbstream, 0), f(c.MBps(c.Zbstream), 3),
			f(c.Raw, 0), f(c.MBps(c.Raw), 3), f(c.Ratio(), 4),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeFileWith creates path and writes it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// readFileLimit reads at most limit bytes of path.
func readFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
