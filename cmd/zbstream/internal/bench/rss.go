package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/server"
)

// The -rss measurement: 1 KiB records (or -record-size) through a 64 MiB
// in-flight bound; the target is a peak RSS under 192 MiB, and the bound
// plus 32 MiB over what the child held before it opened the stream.
const (
	rssRecordSize    = 1 << 10
	rssInflightBytes = 64 << 20
	rssTarget        = 192 << 20
	rssSlack         = 32 << 20
)

// rssConfig is handed to the child as JSON in the environment.
type rssConfig struct {
	Endpoint string `json:"endpoint"`
	Table    string `json:"table"`
	Volume   int64  `json:"volume"`
	Batch    int    `json:"batch"`
	Size     int    `json:"size"` // bytes of each record
}

// rssResult is what the child reports, as one "result {json}" line.
type rssResult struct {
	Records int64         `json:"records"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed"`
	// PeakInflight is the most payload in flight (accepted, not durable)
	// seen, sampled every 1,000 calls.
	PeakInflight int64 `json:"peak_inflight"`
	// PeakKept is the most the byte bound counted, sampled with
	// PeakInflight: the payload, and io.CallCost and io.RecordCost for
	// each call and record in flight.
	PeakKept int64 `json:"peak_kept"`
	// Baseline is the child's RSS before it opened the client: this
	// binary's code and runtime (0 where the platform does not say).
	Baseline int64 `json:"baseline"`
}

// rss ingests cfg.volume of 1 KiB records in a child process (this
// binary again, in the rss role) against the ack-only server in this
// process, and reports the child's peak RSS and throughput.
func rss(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	srv, ep, stop, err := benchServer("ackonly")
	if err != nil {
		return err
	}
	defer stop()
	if cfg.ackDelay > 0 {
		srv.Inject(server.Match{}, server.Fault{Kind: server.FaultDelayAcks, Delay: cfg.ackDelay, Times: server.Unlimited})
	}
	rc := rssConfig{Endpoint: ep, Table: cfg.table, Volume: cfg.volume, Batch: cfg.batch, Size: int(cfg.rssSize)}
	cmd, err := cli.RoleCommand(ctx, "bench", "rss", rc)
	if err != nil {
		return err
	}
	var errBuf strings.Builder
	cmd.Stderr = &proc.LockedWriter{W: &errBuf}
	if cfg.verbose { // the child's stderr as it comes (GODEBUG=gctrace=1 for one)
		cmd.Stderr = io.MultiWriter(stderr, cmd.Stderr)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "zbstream bench -rss: %s of %d B records in calls of %d, in-flight bound %s, acks held back %v, in a child process; %s\n",
		formatBytes(cfg.volume), cfg.rssSize, cfg.batch, formatBytes(rssInflightBytes), cfg.ackDelay, machineLine())
	if gc := childGCSettings(); gc != "" {
		fmt.Fprintln(stdout, "child's Go runtime settings from the environment:", gc)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var res *rssResult
	var parseErr error
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "result "); ok {
			res = new(rssResult)
			parseErr = json.Unmarshal([]byte(rest), res)
		} else if rest, ok := strings.CutPrefix(line, "progress "); ok {
			fmt.Fprintln(stderr, "  "+rest)
		}
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the -rss child process: %w\n%s", err, errBuf.String())
	}
	if res == nil || parseErr != nil {
		return fmt.Errorf("the -rss child process reported no result (%v)\n%s", parseErr, errBuf.String())
	}
	peak, ok := proc.PeakRSS(cmd.ProcessState)
	if !ok {
		return errors.New("-rss: no resource usage on this platform")
	}
	verdict := "under"
	if peak >= rssTarget {
		verdict = "OVER"
	}
	secs := res.Elapsed.Seconds()
	fmt.Fprintf(stdout, "ingested %d records (%s) in %.1fs: %.0f records/s, %.1f MB/s\n",
		res.Records, formatBytes(res.Bytes), secs, float64(res.Records)/secs, float64(res.Bytes)/secs/1e6)
	fmt.Fprintf(stdout, "peak in flight: %.1f MiB of payload, %.1f MiB with what the stream keeps for each call and record, of the %s bound (sampled)\n",
		float64(res.PeakInflight)/(1<<20), float64(res.PeakKept)/(1<<20), formatBytes(rssInflightBytes))
	fmt.Fprintf(stdout, "peak RSS of the child: %.1f MiB (%s the %d MiB target)\n", float64(peak)/(1<<20), verdict, rssTarget>>20)
	if res.Baseline > 0 {
		growth := peak - res.Baseline
		within := "within"
		if growth > rssInflightBytes+rssSlack {
			within = "OVER"
		}
		fmt.Fprintf(stdout, "before it opened the stream: %.1f MiB (this binary's code and runtime); the stream's growth: %.1f MiB, %s the bound + %d MiB (%d MiB)\n",
			float64(res.Baseline)/(1<<20), float64(growth)/(1<<20), within, rssSlack>>20, (rssInflightBytes+rssSlack)>>20)
	}
	if peak >= rssTarget {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("peak RSS %.1f MiB is over the %d MiB target", float64(peak)/(1<<20), rssTarget>>20))
	}
	return nil
}

// childGCSettings names the GOGC and GOMEMLIMIT the child inherits, if
// any: they decide how far its heap grows past what it holds.
func childGCSettings() string {
	var s []string
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			s = append(s, k+"="+v)
		}
	}
	return strings.Join(s, " ")
}

// rssChild is the -rss child: it ingests the volume through one
// persistent stream with the 64 MiB in-flight bound, every record a fresh
// allocation (as an application reading a source would have), and prints
// its result.
func rssChild(ctx context.Context, rc rssConfig, stdout io.Writer) error {
	res, err := rssIngest(ctx, rc, func(done, total int64, el time.Duration) {
		fmt.Fprintf(stdout, "progress %5.1fs  %3.0f%%  %.0f records/s\n", el.Seconds(), 100*float64(done)/float64(total), float64(done)/el.Seconds())
	})
	if err != nil {
		return err
	}
	js, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "result %s\n", js)
	return nil
}

// rssIngest does the child's work; progress is called about every 5 s.
func rssIngest(ctx context.Context, rc rssConfig, progress func(done, total int64, el time.Duration)) (rssResult, error) {
	baseline, _ := proc.CurrentRSS()
	c, err := zbstream.NewClient(rc.Endpoint)
	if err != nil {
		return rssResult{}, err
	}
	defer c.Close()
	s, err := c.CreatePersistentStream(ctx, rc.Table, zbstream.WithMaxInflight(1_000_000, rssInflightBytes))
	if err != nil {
		return rssResult{}, cli.ClientErr(err, "-ca-file")
	}
	defer s.Close(ctx) // on an error path: at once if ctx has ended
	batch := max(rc.Batch, 1)
	size := rc.Size
	if size <= 0 {
		size = rssRecordSize
	}
	total := max(rc.Volume/int64(size), 1)
	start := time.Now()
	next := start.Add(5 * time.Second)
	var done, calls, peakInflight, peakKept int64
	for done < total {
		n := int(min(int64(batch), total-done))
		recs := make([][]byte, n) // fresh records, as a source yields them; the stream copies them
		for i := range n {
			recs[i] = rssRecord(done+int64(i), size)
		}
		if n == 1 {
			_, err = s.IngestRecord(ctx, recs[0])
		} else {
			_, err = s.IngestBatch(ctx, recs)
		}
		if err != nil {
			return rssResult{}, cli.ClientErr(err, "-ca-file")
		}
		done += int64(n)
		if calls++; calls%1000 == 0 {
			st := s.Stats()
			peakInflight = max(peakInflight, st.InFlightBytes)
			peakKept = max(peakKept, st.InFlightBytes+st.InFlightCalls*int64(streamio.CallCost+batch*streamio.RecordCost))
		}
		if progress != nil && time.Now().After(next) {
			progress(done, total, time.Since(start))
			next = next.Add(5 * time.Second)
		}
	}
	if err := s.Flush(ctx); err != nil {
		return rssResult{}, cli.ClientErr(err, "-ca-file")
	}
	el := time.Since(start)
	if err := s.Close(ctx); err != nil {
		return rssResult{}, cli.ClientErr(err, "-ca-file")
	}
	return rssResult{Records: done, Bytes: done * int64(size), Elapsed: el, PeakInflight: peakInflight, PeakKept: peakKept, Baseline: baseline}, nil
}

// rssRecord is a new JSON object of size bytes (at least minRecord) for
// record i: its number and padding, or padding alone where the number
// would not fit.
func rssRecord(i int64, size int) []byte {
	rec := make([]byte, size)
	head := fmt.Appendf(rec[:0], `{"seq":%d,"pad":"`, i)
	if len(head) > size-2 {
		head = append(rec[:0], `{"p":"`...)
	}
	for j := len(head); j < size-2; j++ {
		rec[j] = 'a' + byte(i%26)
	}
	copy(rec[size-2:], `"}`)
	return rec
}
