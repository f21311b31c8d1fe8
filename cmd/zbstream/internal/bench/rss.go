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
	"github.com/zbstream/zbstream/server"
)

// The -rss measurement: 1 KiB records through a 64 MiB in-flight bound;
// the target is a peak RSS under 192 MiB.
const (
	rssRecordSize    = 1 << 10
	rssInflightBytes = 64 << 20
	rssTarget        = 192 << 20
)

// rssConfig is handed to the child as JSON in the environment.
type rssConfig struct {
	Endpoint string `json:"endpoint"`
	Table    string `json:"table"`
	Volume   int64  `json:"volume"`
	Batch    int    `json:"batch"`
}

// rssResult is what the child reports, as one "result {json}" line.
type rssResult struct {
	Records int64         `json:"records"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed"`
	// PeakInflight is the most payload in flight (accepted, not durable)
	// seen, sampled every 1,000 calls.
	PeakInflight int64 `json:"peak_inflight"`
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
	rc := rssConfig{Endpoint: ep, Table: cfg.table, Volume: cfg.volume, Batch: cfg.batch}
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
		formatBytes(cfg.volume), rssRecordSize, cfg.batch, formatBytes(rssInflightBytes), cfg.ackDelay, machineLine())
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
	fmt.Fprintf(stdout, "peak in flight: %.1f MiB of the %s bound (sampled)\n", float64(res.PeakInflight)/(1<<20), formatBytes(rssInflightBytes))
	fmt.Fprintf(stdout, "peak RSS of the child: %.1f MiB (%s the %d MiB target)\n", float64(peak)/(1<<20), verdict, rssTarget>>20)
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
	total := max(rc.Volume/rssRecordSize, 1)
	start := time.Now()
	next := start.Add(5 * time.Second)
	var done, calls, peakInflight int64
	for done < total {
		n := int(min(int64(batch), total-done))
		recs := make([][]byte, n) // fresh records, as a source yields them; the stream copies them
		for i := range n {
			recs[i] = rssRecord(done + int64(i))
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
			peakInflight = max(peakInflight, s.Stats().InFlightBytes)
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
	return rssResult{Records: done, Bytes: done * rssRecordSize, Elapsed: el, PeakInflight: peakInflight}, nil
}

// rssRecord is a new 1 KiB JSON object for record i.
func rssRecord(i int64) []byte {
	rec := make([]byte, rssRecordSize)
	head := fmt.Appendf(rec[:0], `{"seq":%d,"pad":"`, i)
	for j := len(head); j < rssRecordSize-2; j++ {
		rec[j] = 'a' + byte(i%26)
	}
	copy(rec[rssRecordSize-2:], `"}`)
	return rec
}
