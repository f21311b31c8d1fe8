package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/record"
)

// arrowResult is a bench -format arrow run: one cell, the Arrow path's
// rounds as its Zb side and the JSON path's as its Raw side.
type arrowResult struct {
	Cell      cell
	Date      time.Time
	Machine   string
	Load      string
	Server    string
	Duration  time.Duration
	Rounds    int
	JSONBytes float64 // mean bytes of a row as a JSON line
	Batch     int
}

// arrowTable measures rows/s and client CPU per row of the same rows
// sent as JSON lines (a persistent stream, -batch records a call) and as
// Arrow record batches (an Arrow Flight stream, -batch rows a batch),
// interleaved, against a server in a process of its own, and prints the
// table.
func arrowTable(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	t := target{endpoint: cfg.endpoint, token: cfg.token, table: cfg.table}
	res := arrowResult{Date: time.Now().UTC(), Machine: machineLine(), Load: loadAverage(), Duration: cfg.duration, Rounds: cfg.rounds, Batch: cfg.batch}
	if _, ok := proc.CPUTime(); !ok {
		fmt.Fprintf(stderr, "zbstream bench: no CPU time on %s: the CPU per row is not measured\n", runtime.GOOS)
	}
	rec := arrowBenchBatch(cfg.batch)
	defer rec.Release()
	lines, err := jsonLines(rec)
	if err != nil {
		return err
	}
	var total int
	var call int64
	for _, l := range lines {
		total += len(l)
		call += record.FramedSize(len(l))
	}
	if call > core.DefaultMaxCallBytes {
		return cli.UsageErr("-batch %d: the JSON path's call of %d rows is %d bytes, over the %d-byte call limit", cfg.batch, cfg.batch, call, core.DefaultMaxCallBytes)
	}
	res.JSONBytes = float64(total) / float64(len(lines))
	if t.endpoint == "" {
		srv, err := startServeChild(ctx, "ackonly")
		if err != nil {
			return err
		}
		defer srv.stop()
		t.endpoint = srv.Endpoint
		res.Server = "zbstream serve -engine ackonly, a process of its own on loopback"
	} else {
		res.Server = "external " + t.endpoint
	}
	fmt.Fprintf(stderr, "zbstream bench -format arrow: %d rows a batch (%.0f B a row as JSON) x (a warm-up + %d rounds) x 2 paths x %s\n",
		cfg.batch, res.JSONBytes, cfg.rounds, cfg.duration)
	var logf func(int, bool, benchMeasure, time.Duration)
	if cfg.verbose {
		logf = func(round int, isArrow bool, m benchMeasure, took time.Duration) {
			name := "json"
			if isArrow {
				name = "arrow"
			}
			fmt.Fprintf(stderr, "    %-8s %-6s %10d rows in %7.3fs until the last ack (%7.3fs in all): %.0f rows/s, %.2f µs CPU a row\n",
				roundName(round), name, m.records, m.elapsed.Seconds(), took.Seconds(), m.rate(), m.cpuPerRecord()*1e6)
		}
	}
	measure := func(isArrow bool, calls int64, d time.Duration) (benchMeasure, error) {
		runtime.GC() // start without the last measurement's garbage
		return withCPU(func() (benchMeasure, error) {
			if isArrow {
				return benchArrow(ctx, t, rec, d, calls)
			}
			return benchRecords(ctx, t, lines, d, calls)
		})
	}
	res.Cell, err = measureCell(cell{Size: int(res.JSONBytes), Batch: cfg.batch}, cfg.rounds, cfg.duration, measure, logf)
	if err != nil {
		return err
	}
	writeArrowTable(stdout, res)
	return nil
}

// arrowRefused are the flags bench -format arrow does not take: its rows
// are its own, its server is an ack-only one, and it prints its table
// only.
var arrowRefused = []string{"sizes", "engine", "nocopy", "csv", "svg", "rss", "volume", "ack-delay", "recovery"}

// checkFormat checks -format, and refuses with -format arrow the flags it
// does not take.
func (c *config) checkFormat(fs *flag.FlagSet) error {
	switch c.format {
	case "json":
		return nil
	case "arrow":
	default:
		return cli.UsageErr("-format %q: want json or arrow", c.format)
	}
	for _, name := range arrowRefused {
		if flagWasSet(fs, name) {
			return cli.UsageErr("-format arrow does not take -%s (it sends rows of its own against an ack-only server, and prints its table)", name)
		}
	}
	return nil
}

// writeArrowTable prints the table of a bench -format arrow run.
func writeArrowTable(w io.Writer, r arrowResult) {
	fmt.Fprintf(w, "zbstream bench -format arrow, %s, %s%s\nserver: %s\n"+
		"the same rows (%s) as JSON lines (%.0f B a row; a persistent stream, %d records a call) and as Arrow record batches\n"+
		"(an Arrow Flight stream, %d rows a batch); %d interleaved rounds of %s per path (the first alternating);\n"+
		"rows/s: until the last ack, the median round with min and max; client CPU: this process's user+system time during the\n"+
		"round per row acknowledged (the server's is its own process's), the median round with min and max\n\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.Machine, loadNote(r.Load), r.Server, arrowBenchColumns, r.JSONBytes, r.Batch, r.Batch, r.Rounds, r.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\trows/s\tmin\tmax\tCPU µs/row\tmin\tmax\t")
	row := func(name string, rates, cpu []float64) {
		rs, cs := newSpread(rates), newSpread(cpu)
		if len(cpu) == 0 {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t-\t-\t-\t\n", name, rs.Median, rs.Min, rs.Max)
			return
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t\n", name, rs.Median, rs.Min, rs.Max, cs.Median*1e6, cs.Min*1e6, cs.Max*1e6)
	}
	row("json", r.Cell.RawRates, r.Cell.RawCPU)
	row("arrow", r.Cell.ZbRates, r.Cell.ZbCPU)
	tw.Flush()
	ratio := r.Cell.Ratio()
	fmt.Fprintf(w, "\narrow/json rows/s: %.2f (rounds %.2f-%.2f)", ratio.Median, ratio.Min, ratio.Max)
	if len(r.Cell.ZbCPU) > 0 && len(r.Cell.RawCPU) > 0 {
		c := newSpread(ratios(r.Cell.ZbCPU, r.Cell.RawCPU))
		fmt.Fprintf(w, "; arrow/json CPU a row: %.2f (rounds %.2f-%.2f)", c.Median, c.Min, c.Max)
	}
	fmt.Fprintln(w)
}
