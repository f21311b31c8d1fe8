package io_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// TestConcurrentIngestUnderFaults has many goroutines ingest and wait on one
// stream while connections drop and acks are lost, for both stream kinds.
// Every accepted call must be acknowledged exactly once, its callback run
// exactly once and in offset order, every Wait must return, and the server
// must hold every record (exactly once on a persistent stream, at least
// once on an ephemeral one).
func TestConcurrentIngestUnderFaults(t *testing.T) {
	for _, kind := range []core.Kind{core.Persistent, core.Ephemeral} {
		t.Run(kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { concurrentIngest(t, kind) })
		})
	}
}

func concurrentIngest(t *testing.T, kind core.Kind) {
	const producers, perProducer = 8, 300
	srv := memtransport.NewServer(memtransport.Options{})
	for _, f := range []memtransport.Fault{
		{Kind: memtransport.FaultDiscardThenDrop, After: 97, Times: 5},
		{Kind: memtransport.FaultCommitThenDrop, After: 41, Times: 5},
		{Kind: memtransport.FaultLoseAcks, After: 13, Times: 50},
		{Kind: memtransport.FaultRepeatAcks, After: 7, Times: 50},
	} {
		srv.Inject(memtransport.Match{Kind: kind}, f)
	}
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	cfg.ClientRequestID = "concurrent"
	cfg.MaxInflightCalls = 64 // small, so producers block at the window too
	cfg.Retries = 100

	var mu sync.Mutex
	var acked []int64
	ctx := context.Background()
	s, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{
		OnAck: func(o int64) {
			mu.Lock()
			acked = append(acked, o)
			mu.Unlock()
		},
		OnFail: func(o int64, err error) { t.Errorf("offset %d failed: %v", o, err) },
		// Small enough that callbacks push back on producers too.
		CallbackQueue: 32,
	})
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	offsets := make([][]int64, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				off, err := s.IngestRecord(ctx, []byte(fmt.Sprintf(`{"p":%d,"i":%d}`, p, i)))
				if err != nil {
					t.Errorf("producer %d record %d: %v", p, i, err)
					return
				}
				offsets[p] = append(offsets[p], off)
				if i%25 == 0 {
					if err := s.Wait(ctx, off); err != nil {
						t.Errorf("wait %d: %v", off, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}

	// Offsets: dense, unique, increasing within each producer.
	var all []int64
	for p, offs := range offsets {
		for i := 1; i < len(offs); i++ {
			if offs[i] <= offs[i-1] {
				t.Fatalf("producer %d: offset %d after %d", p, offs[i], offs[i-1])
			}
		}
		all = append(all, offs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, o := range all {
		if o != int64(i) {
			t.Fatalf("offsets are not dense: position %d holds %d", i, o)
		}
	}
	// Callbacks: once per offset, in order.
	if len(acked) != producers*perProducer {
		t.Fatalf("%d callbacks, want %d", len(acked), producers*perProducer)
	}
	for i, o := range acked {
		if o != int64(i) {
			t.Fatalf("callback %d was for offset %d", i, o)
		}
	}
	st := s.Stats()
	if got := st.Acknowledged + st.Reconciled; got != producers*perProducer || st.Failed != 0 {
		t.Fatalf("stats %+v: want %d completed, none failed", st, producers*perProducer)
	}
	if st.Reconnects == 0 || st.Resent == 0 {
		t.Fatalf("the faults did not act: %+v", st)
	}
	if len(s.Unacked()) != 0 {
		t.Fatalf("unacked after a clean close: %v", s.Unacked())
	}
	checkServerLog(t, srv, kind, producers, perProducer)
}

// checkServerLog checks that every record of every producer is on the
// server in the producer's order: exactly once on a persistent stream, at
// least once (resends after lost acks land again) on ephemeral streams.
func checkServerLog(t *testing.T, srv *memtransport.Server, kind core.Kind, producers, perProducer int) {
	t.Helper()
	var recs [][]byte
	for _, info := range srv.Streams() {
		recs = append(recs, srv.Records(info.ID)...)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r)]++
	}
	dups := 0
	for p := range producers {
		for i := range perProducer {
			n := seen[fmt.Sprintf(`{"p":%d,"i":%d}`, p, i)]
			switch {
			case n == 0:
				t.Fatalf("record p=%d i=%d is not on the server", p, i)
			case n > 1 && kind == core.Persistent:
				t.Fatalf("record p=%d i=%d is on the server %d times", p, i, n)
			}
			dups += n - 1
		}
	}
	if len(recs) != producers*perProducer+dups {
		t.Fatalf("server holds %d records, want %d plus %d resends", len(recs), producers*perProducer, dups)
	}
	if kind != core.Persistent {
		return
	}
	// One log, in offset order: each producer's records in its order.
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	for _, r := range recs {
		var p, i int
		if _, err := fmt.Sscanf(string(r), `{"p":%d,"i":%d}`, &p, &i); err != nil {
			t.Fatalf("record %q: %v", r, err)
		}
		if i <= last[p] {
			t.Fatalf("producer %d: record %d stored after %d", p, i, last[p])
		}
		last[p] = i
	}
}
