package io_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// TestExactlyOnceUnderFaults runs a persistent stream through the driver
// under a random, seeded fault schedule (drops, lost acks, commit-then-drop,
// repeated and delayed acks, close signals, lost open responses, failed
// opens) and random process restarts (the stream is abandoned and a new one
// resumes it by id, replaying the source from the watermark). The server's
// log must hold every source record exactly once, in order.
//
// Even seeds ingest through the stream's copies and reuse one slice and one
// set of record buffers for every call, scribbling over them as soon as a
// call returns: a record the driver kept by reference, or memory it gave
// back too early, would reach the server's log scribbled. Odd seeds run
// with Options.NoCopy and fresh buffers.
//
// ZBSTREAM_DRIVER_SEEDS sets how many seeds run (default 20);
// ZBSTREAM_DRIVER_SEED replays one.
func TestExactlyOnceUnderFaults(t *testing.T) {
	seeds := []uint64{}
	if s := os.Getenv("ZBSTREAM_DRIVER_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ZBSTREAM_DRIVER_SEED: %v", err)
		}
		seeds = append(seeds, seed)
	} else {
		n := 20
		if s := os.Getenv("ZBSTREAM_DRIVER_SEEDS"); s != "" {
			var err error
			if n, err = strconv.Atoi(s); err != nil {
				t.Fatalf("ZBSTREAM_DRIVER_SEEDS: %v", err)
			}
		}
		for i := range n {
			seeds = append(seeds, uint64(i+1))
		}
	}
	var total eoCounts
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n, err := runExactlyOnce(seed)
				if err != nil {
					t.Fatalf("seed %d: %v\nreplay: ZBSTREAM_DRIVER_SEED=%d go test ./io -run TestExactlyOnceUnderFaults -v", seed, err, seed)
				}
				t.Logf("%+v", n)
				total.add(n)
			})
		})
	}
	t.Logf("all seeds: %+v", total)
	// The schedule must really have hurt: otherwise the test proves nothing.
	if len(seeds) >= 10 && (total.faults == 0 || total.restarts == 0 || total.reconciled == 0 || total.resent == 0) {
		t.Errorf("the fault schedule did too little to test anything: %+v", total)
	}
}

// eoCounts sums what one run went through.
type eoCounts struct {
	faults, restarts, reconnects, reconciled, resent int64
}

func (c *eoCounts) add(o eoCounts) {
	c.faults += o.faults
	c.restarts += o.restarts
	c.reconnects += o.reconnects
	c.reconciled += o.reconciled
	c.resent += o.resent
}

// sourceRecord is the i-th record of the application's source.
func sourceRecord(i int) []byte { return []byte(fmt.Sprintf(`{"seq":%d}`, i)) }

// faultMenu are the faults the schedule draws from; each is injected with a
// random After, and acts once.
var faultMenu = []memtransport.FaultKind{
	memtransport.FaultDiscardThenDrop, memtransport.FaultCommitThenDrop, memtransport.FaultLoseAcks,
	memtransport.FaultRepeatAcks, memtransport.FaultDelayAcks, memtransport.FaultCloseSignal,
	memtransport.FaultLoseOpenResponse, memtransport.FaultFailOpen,
}

func runExactlyOnce(seed uint64) (eoCounts, error) {
	var n eoCounts
	rng := rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))
	srv := memtransport.NewServer(memtransport.Options{})
	const total = 1500
	ctx := context.Background()

	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = fmt.Sprint("eo-", seed)
	cfg.Retries = 1000 // faults never exhaust recovery here: only restarts end a stream
	cfg.Seed = seed
	cfg.MaxInflightCalls = 1 + rng.IntN(64)

	noCopy := seed%2 == 1
	var reused [][]byte // the slice and buffers every call reuses, when copying
	next := 0           // next source record to ingest
	var streamID string // empty until the first create
	// sourceEnd maps each accepted offset to the source position after its
	// call: what the application keeps durably beside the stream id, so a
	// new process can replay from the resume watermark.
	sourceEnd := map[int64]int{core.NoOffset: 0}
	for next < total {
		c := cfg
		c.StreamID = streamID
		s, err := streamio.Open(ctx, srv.Transport(), c, streamio.Options{NoCopy: noCopy})
		if err != nil {
			return n, fmt.Errorf("open (restart %d): %w", n.restarts, err)
		}
		if streamID == "" {
			streamID = s.StreamID()
		} else {
			// A new process: replay the source from the watermark.
			w := s.LastDurable()
			pos, ok := sourceEnd[w]
			if !ok {
				return n, fmt.Errorf("resume watermark %d was never assigned", w)
			}
			next = pos
		}
		// Faults for this incarnation.
		var handles []*memtransport.FaultHandle
		for range rng.IntN(4) {
			handles = append(handles, srv.Inject(memtransport.Match{}, memtransport.Fault{
				Kind:  faultMenu[rng.IntN(len(faultMenu))],
				After: rng.IntN(40),
				Delay: time.Duration(rng.IntN(3000)) * time.Millisecond,
			}))
		}
		stop := next + 1 + rng.IntN(total/2) // where this incarnation "crashes"
		for next < total && next < stop {
			size := min(1+rng.IntN(5), total-next)
			recs := make([][]byte, size)
			if !noCopy {
				for len(reused) < size {
					reused = append(reused, nil)
				}
				recs = reused[:size] // its buffers are those of earlier calls
			}
			for i := range recs {
				recs[i] = append(recs[i][:0], sourceRecord(next+i)...)
			}
			off, err := s.IngestBatch(ctx, recs)
			if err != nil {
				return n, fmt.Errorf("ingest at source %d: %w", next, err)
			}
			if !noCopy {
				for i := range recs {
					recs[i] = append(recs[i][:0], `{"scribbled":true}`...)
				}
			}
			next += len(recs)
			sourceEnd[off] = next
		}
		if next >= total {
			if err := s.Close(ctx); err != nil {
				return n, fmt.Errorf("close: %w", err)
			}
		} else {
			// The process dies: whatever was in flight is the server's
			// business now; the next incarnation resumes.
			n.restarts++
			dead, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.Close(dead); err != nil && !errors.Is(err, context.Canceled) {
				return n, fmt.Errorf("abandon: %w", err)
			}
		}
		st := s.Stats()
		n.reconnects += st.Reconnects
		n.reconciled += st.Reconciled
		n.resent += st.Resent
		for _, h := range handles {
			n.faults += int64(h.Hits())
			h.Remove()
		}
	}
	got := srv.Records(streamID)
	if len(got) != total {
		return n, fmt.Errorf("server holds %d records, want %d (after %d restarts)", len(got), total, n.restarts)
	}
	for i, r := range got {
		if !bytes.Equal(r, sourceRecord(i)) {
			return n, fmt.Errorf("record %d is %s, want %s", i, r, sourceRecord(i))
		}
	}
	return n, nil
}
