package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
)

// verification is what the server's stored data says.
type verification struct {
	stored     int // records stored
	duplicates int // records stored more than once (extra copies)
	lost       int // source records never stored
	outOfOrder int // records stored before one with a lower seq (persistent)
	streams    int
}

// verify reads the server's durable data back, once the server has
// stopped, and compares it with the source (verifyStore).
func verify(ctx context.Context, cfg config, p *readProgress) (verification, error) {
	st, err := openBoltBatches(cfg.DataDir, boltReadWindow)
	if err != nil {
		return verification{}, err
	}
	defer st.Close()
	return verifyStore(ctx, st, cfg, p)
}

// verifyStore reads the demo's streams back one batch at a time and
// compares them with the source: every record once, in order
// (persistent), or at least once (ephemeral). What it keeps is a count per
// source record, not the records.
func verifyStore(ctx context.Context, st batchStore, cfg config, p *readProgress) (verification, error) {
	var v verification
	metas, err := st.Streams(ctx)
	if err != nil {
		return v, err
	}
	metas = slices.DeleteFunc(metas, func(m server.StreamMeta) bool { return m.Table != demoTable })
	for _, m := range metas {
		p.total.Add(m.Records)
	}
	seen := make([]int, cfg.Records)
	last := -1
	for _, m := range metas {
		v.streams++
		err := scanStream(ctx, st, m, p, func(b server.Batch) error {
			for _, r := range b.Records {
				seq, err := seq(r, cfg.Records)
				if err != nil {
					return fmt.Errorf("stream %s holds %w", m.ID, err)
				}
				v.stored++
				seen[seq]++
				if seq < last && !cfg.Ephemeral {
					v.outOfOrder++
				}
				last = seq
			}
			return nil
		})
		if err != nil {
			return v, err
		}
	}
	for _, n := range seen {
		switch {
		case n == 0:
			v.lost++
		case n > 1:
			v.duplicates += n - 1
		}
	}
	return v, nil
}

// seq returns a stored record's place in the source, the seq field of
// its JSON, or an error for a record that is not from the source.
func seq(r []byte, records int) (int, error) {
	var rec struct {
		Seq int `json:"seq"`
	}
	if err := json.Unmarshal(r, &rec); err != nil || rec.Seq < 0 || rec.Seq >= records {
		return 0, fmt.Errorf("a record that is not from the source: %.60q", r)
	}
	return rec.Seq, nil
}

// ok reports whether the verification holds for the stream kind:
// exactly-once for persistent streams, at-least-once for ephemeral ones.
func (v verification) ok(ephemeral bool) bool {
	if ephemeral {
		return v.lost == 0
	}
	return v.lost == 0 && v.duplicates == 0 && v.outOfOrder == 0
}

func (d *demo) summary(v verification, elapsed time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var reconnects, reconciled, resent int64
	var hist [40]int64
	for _, st := range d.statuses {
		reconnects += st.Stats.Reconnects
		reconciled += st.Stats.Reconciled
		resent += st.Stats.Resent
		for i, n := range st.Latency {
			hist[i] += n
		}
	}
	w := d.out
	fmt.Fprintln(w, "\nsummary")
	fmt.Fprintf(w, "  records          %d source, %d stored in %d stream(s)\n", d.cfg.Records, v.stored, v.streams)
	fmt.Fprintf(w, "  faults           %s\n", formatCounts(d.faults))
	fmt.Fprintf(w, "  client processes %d\n", len(d.statuses))
	fmt.Fprintf(w, "  reconnects       %d\n", reconnects)
	fmt.Fprintf(w, "  reconciled       %d calls completed from resume watermarks (the server had them)\n", reconciled)
	fmt.Fprintf(w, "  resent           %d calls sent again after a reconnect\n", resent)
	fmt.Fprintf(w, "  throughput       %.0f records/s (%.1f MB/s) over %.1fs, faults and restarts included\n",
		float64(d.cfg.Records)/elapsed.Seconds(), float64(d.cfg.Records*d.cfg.RecordSize)/elapsed.Seconds()/1e6, elapsed.Seconds())
	fmt.Fprintf(w, "  ack latency      p50 %s, p99 %s (ingest call to acknowledgement)\n", percentile(hist, 0.50), percentile(hist, 0.99))
	if line := d.peakLine(); line != "" {
		fmt.Fprintf(w, "  peak RSS         %s\n", line)
	}
	if v.outOfOrder > 0 {
		fmt.Fprintf(w, "  out of order     %d\n", v.outOfOrder)
	}
	fmt.Fprintf(w, "  duplicates %d, lost %d\n", v.duplicates, v.lost)
	if !v.ok(d.cfg.Ephemeral) {
		fmt.Fprintln(w, "VERIFICATION FAILED")
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("verification failed: %d duplicates, %d lost, %d out of order", v.duplicates, v.lost, v.outOfOrder))
	}
	if d.cfg.Ephemeral {
		fmt.Fprintln(w, "verified: at-least-once (ephemeral streams resend what was not acknowledged)")
	} else {
		fmt.Fprintln(w, "verified: exactly-once")
	}
	return nil
}

// percentile reads a latency histogram (bucket b: [2^(b-1), 2^b) us) and
// returns the upper bound of the bucket holding quantile q.
func percentile(hist [40]int64, q float64) string {
	var total int64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return "n/a"
	}
	want := int64(q*float64(total) + 0.5)
	var acc int64
	for b, n := range hist {
		acc += n
		if acc >= want {
			return "< " + roundDuration(time.Duration(int64(1)<<b)*time.Microsecond)
		}
	}
	return "n/a"
}

// formatCounts prints "a 1, b 2" in key order.
func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// roundDuration prints d with two or three significant digits.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}
