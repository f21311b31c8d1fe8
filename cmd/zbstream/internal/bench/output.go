package bench

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
)

// csvHeader is the CSV's header row. Rates and the ratio are the
// median over the rounds, with their spread, min and max; MB/s is the
// median's.
var csvHeader = []string{
	"size_bytes", "mode", "records_per_call", "rounds",
	"zbstream_records_per_s_median", "zbstream_records_per_s_min", "zbstream_records_per_s_max", "zbstream_mb_per_s_median",
	"raw_records_per_s_median", "raw_records_per_s_min", "raw_records_per_s_max", "raw_mb_per_s_median",
	"ratio_median", "ratio_min", "ratio_max",
}

// writeTable prints the table, with lines saying what was measured.
func writeTable(w io.Writer, r result) {
	client := "default (records copied)"
	if r.NoCopy {
		client = "WithNoCopy (records kept by reference)"
	}
	fmt.Fprintf(w, "zbstream bench, %s, %s%s\nengine %s, zbstream client %s; %d interleaved rounds of %s per client and cell\n"+
		"(zbstream and raw alternating which goes first); rates: the median round; ratio: the median of the rounds'\n"+
		"zbstream/raw ratios, with their spread: min and max over the rounds; MB = 10^6 bytes\n\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.Machine, loadNote(r.Load), r.Engine, client, r.Rounds, r.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tmode\tzbstream records/s\tzbstream MB/s\traw records/s\traw MB/s\tratio\tratio min\tratio max\t")
	for _, c := range r.Cells {
		zb, raw, ratio := c.Zbstream(), c.Raw(), c.Ratio()
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%.0f\t%s\t%.3f\t%.3f\t%.3f\t\n",
			sizeLabel(c.Size), c.Mode(), zb.Median, mbString(c.MBps(zb.Median)), raw.Median, mbString(c.MBps(raw.Median)),
			ratio.Median, ratio.Min, ratio.Max)
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

// writeCSV writes the table as CSV, one row per cell.
func writeCSV(w io.Writer, r result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	for _, c := range r.Cells {
		zb, raw, ratio := c.Zbstream(), c.Raw(), c.Ratio()
		row := []string{
			strconv.Itoa(c.Size), c.Mode(), strconv.Itoa(c.Batch), strconv.Itoa(len(c.ZbRates)),
			f(zb.Median, 0), f(zb.Min, 0), f(zb.Max, 0), f(c.MBps(zb.Median), 3),
			f(raw.Median, 0), f(raw.Min, 0), f(raw.Max, 0), f(c.MBps(raw.Median), 3),
			f(ratio.Median, 4), f(ratio.Min, 4), f(ratio.Max, 4),
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
