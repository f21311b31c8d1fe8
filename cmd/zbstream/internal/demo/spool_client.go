package demo

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/spool"
)

// spoolDir is where the -spool demo's client keeps its spool.
func spoolDir(cfg config) string { return filepath.Join(cfg.DataDir, "client-spool") }

// spoolClient is the -spool demo's client process. It opens the spool
// (a new process recovers it: the spool resends what the server lacks) and
// takes source batches from cfg.StartAt on, never before: the source is not
// replayed. It prints, each line one write to its stdout:
//
//	opened RESENT DROPPED TORN   after spool.Open
//	take SEQ N                   before the call of source records SEQ..SEQ+N-1
//	ret SEQ N OFFSET             after that call returned
//	done                         after a clean Close
//
// Takes are printed in source order, under the lock that hands batches
// out, so a batch never printed was never ingested and the next process
// may take it; a batch printed as taken is never taken again.
func spoolClient(ctx context.Context, cfg config, stdout io.Writer) error {
	client, err := zbstream.NewClient("http://"+cfg.Addr, zbstream.WithToken(cfg.Token))
	if err != nil {
		return err
	}
	defer client.Close()
	sp, err := spool.Open(ctx, client, spool.Options{
		Dir: spoolDir(cfg), Table: demoTable, StreamID: cfg.StreamID,
		MaxBytes: 256 << 20, SegmentBytes: 8 << 20,
		StreamOptions: []zbstream.StreamOption{
			zbstream.WithMaxInflight(500, 64<<20),
			zbstream.WithRetries(1000), zbstream.WithBackoff(zbstream.Backoff{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond}),
			zbstream.WithOpenTimeout(3 * time.Second), zbstream.WithAckTimeout(10 * time.Second),
		},
	})
	if err != nil {
		return err
	}
	var (
		mu   sync.Mutex // the source and stdout
		next = cfg.StartAt
	)
	say := func(format string, args ...any) {
		fmt.Fprintf(stdout, format+"\n", args...)
	}
	st := sp.Stats()
	say("opened %d %d %d", st.Resent, st.Dropped, st.TornBytes)
	take := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		if next >= cfg.Records {
			return 0, 0
		}
		seq, n := next, min(cfg.Batch, cfg.Records-next)
		next += n
		say("take %d %d", seq, n)
		return seq, n
	}
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Goroutines)
	for range cfg.Goroutines {
		wg.Go(func() {
			for {
				seq, n := take()
				if n == 0 {
					return
				}
				recs := make([][]byte, n)
				for j := range recs {
					recs[j] = record(seq+j, cfg.RecordSize)
				}
				off, err := sp.IngestBatch(ctx, recs)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				say("ret %d %d %d", seq, n, off)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := sp.Close(ctx); err != nil {
		return err
	}
	say("done")
	return nil
}
