package arrowstream_test

// Recovery against the reference server's injected faults (servertest,
// real gRPC on loopback): the server's own counts of what each DoPut call
// received, stored and acknowledged show that the stream replays exactly
// the rows not acknowledged, and the rows read back from the server are
// the rows ingested.

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// faultBatch is the rows of each batch of the fault tests: several frames
// of WithMaxFrameBytes(1024) each.
const faultBatch = 150

// arrowStreams returns the ids of ts's Arrow streams.
func arrowStreams(t *testing.T, ctx context.Context, ts *servertest.Server) []string {
	t.Helper()
	metas, err := ts.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range metas {
		if m.RecordType == server.RecordTypeArrow {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// serverCounts returns the server's counts of Arrow stream id.
func serverCounts(t *testing.T, ts *servertest.Server, id string) server.ArrowCounts {
	t.Helper()
	c, ok := ts.ArrowCounts(id)
	if !ok {
		t.Fatalf("no counts for stream %s", id)
	}
	return c
}

// wantRows checks that stream id holds the rows from, from+1, ...,
// from+n-1 of the ingested sequence, as ingested.
func wantRows(t *testing.T, ctx context.Context, ts *servertest.Server, id string, from, n int64) {
	t.Helper()
	schema, got, err := ts.ArrowRecords(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := batch(from, n)
	wt := array.NewTableFromRecords(testSchema, []arrow.RecordBatch{want})
	ht := array.NewTableFromRecords(schema, got)
	defer func() {
		wt.Release()
		ht.Release()
		want.Release()
		for _, r := range got {
			r.Release()
		}
	}()
	if !schema.Equal(testSchema) || ht.NumRows() != n || !array.TableEqual(wt, ht) {
		t.Fatalf("stream %s holds %d rows, not rows %d..%d as ingested", id, ht.NumRows(), from, from+n-1)
	}
}

// connects counts the connections a stream opened (its EventConnected).
type connects struct {
	zbstream.NopObserver
	c chan struct{}
	n int
}

func (o *connects) Observe(e zbstream.Event) {
	if e.Kind == zbstream.EventConnected {
		o.c <- struct{}{}
	}
}

// await waits until the stream has opened n connections in all.
func (o *connects) await(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for ; o.n < n; o.n++ {
		select {
		case <-o.c:
		case <-ctx.Done():
			t.Fatalf("%d connections opened, want %d", o.n, n)
		}
	}
}

// TestReferenceServerFaults: a stream's first batch is acknowledged,
// then a fault acts on its call at the 3rd frame of its second batch,
// each batch being split into several frames; the third batch is
// ingested once the stream has moved on. The stream recovers on a
// second call, which receives exactly the rows the first did not
// acknowledge (the server's counts): rows acknowledged before the fault
// are not sent again. Every row lands, and the server holds, on the first
// call, a prefix of the rows as ingested and, on the second, the rest
// from the first unacknowledged row; rows are stored twice only where the
// fault stored frames it did not acknowledge (at least once).
func TestReferenceServerFaults(t *testing.T) {
	cases := []struct {
		name     string
		f        server.Fault
		opts     []arrowstream.Option
		midBatch bool // the first call's ack ends inside the second batch
		dups     bool // the first call may store rows it did not acknowledge
		// The client may leave the first call without reading its last
		// acks (a rotation without grace): it sends those rows again.
		unread bool
	}{
		{name: "drop mid-batch", f: server.Fault{Kind: server.FaultDrop}, midBatch: true},
		{name: "drop, frame discarded", f: server.Fault{Kind: server.FaultDiscardThenDrop}, midBatch: true},
		{name: "lost ack, then drop", f: server.Fault{Kind: server.FaultCommitThenDrop}, dups: true},
		{name: "partial ack", f: server.Fault{Kind: server.FaultPartialAck}, midBatch: true, dups: true},
		// No ack reaches the client after the point: its ack timeout
		// ends the call.
		{name: "acks lost", f: server.Fault{Kind: server.FaultLoseAcks, Times: server.Unlimited},
			opts: []arrowstream.Option{arrowstream.WithTimeouts(0, time.Second, 0)}, dups: true},
		// A rotation: the client leaves once what it sent is acknowledged.
		{name: "close-only rotation", f: server.Fault{Kind: server.FaultCloseSignal, Delay: time.Hour}},
		// No grace: the client leaves at the notice, the server ends the
		// call at once, storing and acknowledging what it took before.
		{name: "close-only rotation, no grace", f: server.Fault{Kind: server.FaultCloseSignal}, dups: true, unread: true},
		{name: "drop with a retryable code", f: server.Fault{Kind: server.FaultDrop, Code: codes.Aborted}, midBatch: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := servertest.Start(t)
			ctx := testCtx(t)
			cl, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			conns := &connects{c: make(chan struct{}, 16)}
			opts := append([]arrowstream.Option{
				arrowstream.WithObserver(conns),
				arrowstream.WithMaxFrameBytes(1024),
				arrowstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}),
				arrowstream.WithSeed(1),
			}, c.opts...)
			s, err := arrowstream.New(ctx, cl, ts.Table, testSchema, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())

			// The first batch is durable before the fault is armed, on
			// this call only, at the 3rd frame of the second batch.
			rec := batch(0, faultBatch)
			if _, err := s.IngestBatch(ctx, rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
			if err := s.Wait(ctx, 0); err != nil {
				t.Fatal(err)
			}
			ids := arrowStreams(t, ctx, ts)
			if len(ids) != 1 {
				t.Fatalf("%d Arrow streams before the fault", len(ids))
			}
			first := ids[0]
			before := serverCounts(t, ts, first)
			if before.RowsAcked != faultBatch || before.FramesAcked < 4 {
				t.Fatalf("counts %+v: the first batch is not acknowledged in 4 frames or more", before)
			}
			f := c.f
			f.After = int(before.FramesAcked) + 3
			h := ts.Inject(server.Match{StreamID: first}, f)

			// The second batch meets the fault; the third is ingested once
			// the stream has moved to its next call, so that it goes there.
			for i := int64(1); i < 3; i++ {
				rec := batch(i*faultBatch, faultBatch)
				if _, err := s.IngestBatch(ctx, rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
				if i == 1 {
					<-h.Fired()
					conns.await(t, ctx, 2)
				}
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if u := s.Unacked(); len(u) != 0 {
				t.Fatalf("%d batches unacknowledged after Close", len(u))
			}
			if h.Hits() == 0 {
				t.Fatal("the fault never acted")
			}

			ids = arrowStreams(t, ctx, ts)
			if len(ids) != 2 {
				t.Fatalf("%d Arrow streams, want the faulted call and one more", len(ids))
			}
			second := ids[0]
			if second == first {
				second = ids[1]
			}
			const total = 3 * faultBatch
			a, b := serverCounts(t, ts, first), serverCounts(t, ts, second)
			t.Logf("faulted call %+v\nnext call %+v", a, b)
			from := total - b.RowsReceived // the row the next call started from
			switch {
			case a.RowsAcked < faultBatch || a.RowsStored < a.RowsAcked || a.RowsReceived < a.RowsStored:
				t.Fatalf("faulted call %+v: acked < stored < received broken, or the first batch lost", a)
			case from != a.RowsAcked && !c.unread:
				t.Fatalf("the next call received %d rows, want the %d the faulted call did not acknowledge: rows acknowledged were sent again, or rows not", b.RowsReceived, total-a.RowsAcked)
			case from > a.RowsAcked || from < faultBatch:
				t.Fatalf("the next call received %d rows: rows never acknowledged were not sent again, or the first batch was", b.RowsReceived)
			case b.RowsStored != b.RowsReceived || b.RowsAcked != b.RowsStored:
				t.Fatalf("the next call %+v: not every row received stored and acknowledged", b)
			case c.midBatch && (a.RowsAcked%faultBatch == 0 || a.RowsAcked > 2*faultBatch):
				t.Fatalf("faulted call %+v: its last ack is not inside the second batch", a)
			case !c.dups && a.RowsStored != a.RowsAcked:
				t.Fatalf("faulted call %+v: rows stored without an ack", a)
			}
			wantRows(t, ctx, ts, first, 0, a.RowsStored)
			wantRows(t, ctx, ts, second, from, total-from)
		})
	}
}
