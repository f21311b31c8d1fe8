package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
)

// spoolVerification is what the server's data says in the -spool mode.
type spoolVerification struct {
	stored       int // records stored
	returnedRecs int // records in calls that returned
	duplicates   int // extra copies of any record
	lost         int // records of returned calls not stored
	misplaced    int // records of returned calls stored at another offset
	flightLanded int // records of interrupted calls stored (once)
	flightNot    int // records of interrupted calls not stored
	untaken      int // source records no client took (none: takes are a prefix)
}

func (v spoolVerification) ok() bool {
	return v.duplicates == 0 && v.lost == 0 && v.misplaced == 0 && v.untaken == 0
}

// verifySpool reads the server's durable data back, once the server has
// stopped, and checks it against the calls (verifySpoolStore).
func verifySpool(ctx context.Context, cfg config, sc *spoolScore, p *readProgress) (spoolVerification, error) {
	st, err := openBoltBatches(cfg.DataDir, boltReadWindow)
	if err != nil {
		return spoolVerification{}, err
	}
	defer st.Close()
	return verifySpoolStore(ctx, st, cfg, sc, p)
}

// verifySpoolStore reads the stream back one batch at a time and checks
// every call that returned: its records stored exactly once, at its
// offset. Records of calls that never returned are counted apart; stored
// twice they are duplicates too, and a record from outside the source
// fails. What it keeps is a count and an offset per source record, not the
// records.
func verifySpoolStore(ctx context.Context, st batchStore, cfg config, sc *spoolScore, p *readProgress) (spoolVerification, error) {
	var v spoolVerification
	m, err := st.Stream(ctx, cfg.StreamID)
	if err != nil {
		return v, err
	}
	p.total.Store(m.Records)
	count := make([]int, cfg.Records)
	at := make([]int64, cfg.Records)
	err = scanStream(ctx, st, m, p, func(b server.Batch) error {
		for _, r := range b.Records {
			seq, err := seq(r, cfg.Records)
			if err != nil {
				return fmt.Errorf("stream %s holds %w", cfg.StreamID, err)
			}
			v.stored++
			count[seq]++
			at[seq] = b.Offset
		}
		return nil
	})
	if err != nil {
		return v, err
	}
	for _, n := range count {
		if n > 1 {
			v.duplicates += n - 1
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	covered := make([]bool, cfg.Records)
	for seq, c := range sc.returned {
		for s := seq; s < seq+c.n; s++ {
			covered[s] = true
			v.returnedRecs++
			switch {
			case count[s] == 0:
				v.lost++
			case at[s] != c.off:
				v.misplaced++
			}
		}
	}
	for seq, n := range sc.inflight {
		for s := seq; s < seq+n; s++ {
			covered[s] = true
			if count[s] > 0 {
				v.flightLanded++
			} else {
				v.flightNot++
			}
		}
	}
	for s, c := range covered {
		if !c {
			v.untaken++
			if count[s] > 0 {
				return v, fmt.Errorf("record %d was stored but no client reported taking it", s)
			}
		}
	}
	return v, nil
}

func (d *demo) spoolSummary(sc *spoolScore, v spoolVerification, elapsed time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	w := d.out
	fmt.Fprintln(w, "\nsummary")
	fmt.Fprintf(w, "  records          %d source, %d stored in 1 stream\n", d.cfg.Records, v.stored)
	fmt.Fprintf(w, "  faults           %s\n", formatCounts(d.faults))
	fmt.Fprintf(w, "  client processes %d (each reopened the spool; none replayed the source)\n", sc.procs)
	fmt.Fprintf(w, "  returned calls   %d calls, %d records: each must be stored once, at its offset\n", len(sc.returned), v.returnedRecs)
	fmt.Fprintf(w, "  never returned   %d records in %d calls a SIGKILL interrupted: %d landed (at most once), %d did not\n",
		v.flightLanded+v.flightNot, len(sc.inflight), v.flightLanded, v.flightNot)
	fmt.Fprintf(w, "  spool recovery   %d entries resent, %d found durable, %d torn bytes cut\n", sc.resent, sc.dropped, sc.torn)
	fmt.Fprintf(w, "  throughput       %.0f records/s (%.1f MB/s) over %.1fs, faults and restarts included\n",
		float64(v.stored)/elapsed.Seconds(), float64(v.stored*d.cfg.RecordSize)/elapsed.Seconds()/1e6, elapsed.Seconds())
	if line := d.peakLine(); line != "" {
		fmt.Fprintf(w, "  peak RSS         %s\n", line)
	}
	if v.misplaced > 0 || v.untaken > 0 {
		fmt.Fprintf(w, "  misplaced        %d (stored at another offset than the call returned)\n  untaken          %d\n", v.misplaced, v.untaken)
	}
	fmt.Fprintf(w, "  duplicates %d, lost %d (over the calls that returned)\n", v.duplicates, v.lost)
	if !v.ok() {
		fmt.Fprintln(w, "VERIFICATION FAILED")
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("verification failed: %d duplicates, %d lost, %d misplaced, %d untaken", v.duplicates, v.lost, v.misplaced, v.untaken))
	}
	fmt.Fprintln(w, "verified: exactly-once for every call that returned, without replaying the source")
	return nil
}
