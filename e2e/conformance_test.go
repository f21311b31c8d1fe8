package e2e_test

// protocol.md section 8, end to end: the public client over real gRPC on
// loopback against the reference server (server/servertest), with the
// server's fault injection where a scenario needs a misbehaving server.
// Every stored record is read back from the server.

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// ---- ephemeral: open ----

// TestEphemeralCreateRetriesThenOK: two failed opens (UNAVAILABLE), then
// the create succeeds within the retry budget.
func TestEphemeralCreateRetriesThenOK(t *testing.T) {
	e := start(t)
	h1 := e.ts.Inject(server.Match{Table: e.table}, server.Fault{Kind: server.FaultFailOpen})
	h2 := e.ts.Inject(server.Match{Table: e.table}, server.Fault{Kind: server.FaultFailOpen})
	s := e.create(t)
	if h1.Hits() != 1 || h2.Hits() != 1 {
		t.Fatalf("fault hits %d, %d; want 1, 1", h1.Hits(), h2.Hits())
	}
	if st := s.Stats(); st.Opens != 3 || st.Reconnects != 2 {
		t.Fatalf("opens %d, reconnects %d; want 3, 2", st.Opens, st.Reconnects)
	}
	ingest(t, s, rec(0, 0))
	mustClose(t, s)
	e.wantStored(t, s.StreamID(), one(rec(0, 0)))
}

// TestEphemeralCreateRetriesExhausted: every open fails with UNAVAILABLE;
// the create gives up after the budget with a *RetryError.
func TestEphemeralCreateRetriesExhausted(t *testing.T) {
	e := start(t)
	h := e.ts.Inject(server.Match{Table: e.table}, server.Fault{Kind: server.FaultFailOpen, Times: server.Unlimited})
	defer h.Remove()
	_, err := e.client.CreateStream(ctx(t), e.table, fast(zbstream.WithRetries(2), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}))...)
	var re *zbstream.RetryError
	if !errors.As(err, &re) || !errors.Is(err, zbstream.ErrRetriesExhausted) {
		t.Fatalf("CreateStream: %v, want a *RetryError", err)
	}
	wantCode(t, err, codes.Unavailable)
	if h.Hits() != 3 {
		t.Fatalf("%d opens reached the server, want 3 (the first and 2 retries)", h.Hits())
	}
}

// TestEphemeralCreateNonRetryable: an open refused with a non-retryable
// code fails at once, without a retry.
func TestEphemeralCreateNonRetryable(t *testing.T) {
	e := start(t)
	h := e.ts.Inject(server.Match{Table: e.table}, server.Fault{Kind: server.FaultFailOpen, Code: codes.InvalidArgument, Times: server.Unlimited})
	defer h.Remove()
	_, err := e.client.CreateStream(ctx(t), e.table, fast()...)
	wantCode(t, err, codes.InvalidArgument)
	if h.Hits() != 1 {
		t.Fatalf("%d opens reached the server, want 1", h.Hits())
	}
}

// TestEphemeralCreateTimeout: a listener that accepts TCP and never
// answers (the reference server has no "hang the open" fault); every open
// attempt times out and the create fails with ErrOpenTimeout, leaving
// nothing behind.
func TestEphemeralCreateTimeout(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		lis.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}()
	c, err := zbstream.NewClient("http://"+lis.Addr().String(), zbstream.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.CreateStream(ctx(t), "main.default.events",
		zbstream.WithRetries(1), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}),
		zbstream.WithOpenTimeout(100*time.Millisecond))
	if !errors.Is(err, zbstream.ErrOpenTimeout) {
		t.Fatalf("CreateStream against a silent server: %v, want ErrOpenTimeout", err)
	}
}

// ---- ephemeral: ingest ----

// TestEphemeralIngestShapes: single records, batches, JSON values, mixed,
// an empty batch (no offset); offsets are dense from 0, one per call, and
// every record lands under its call's offset.
func TestEphemeralIngestShapes(t *testing.T) {
	e := start(t)
	s := e.create(t)
	c := ctx(t)
	want := [][][]byte{}
	off, err := s.IngestRecord(c, rec(0, 0))
	if err != nil || off != 0 {
		t.Fatalf("IngestRecord: %d, %v", off, err)
	}
	want = append(want, one(rec(0, 0)))
	if off, err = s.IngestBatch(c, recs(0, 1, 3)); err != nil || off != 1 {
		t.Fatalf("IngestBatch: %d, %v", off, err)
	}
	want = append(want, recs(0, 1, 3))
	if off, err = s.IngestBatch(c, nil); err != nil || off != core.NoOffset {
		t.Fatalf("empty IngestBatch: %d, %v; want NoOffset, nil", off, err)
	}
	if off, err = s.IngestBatch(c, [][]byte{}); err != nil || off != core.NoOffset {
		t.Fatalf("empty IngestBatch: %d, %v; want NoOffset, nil", off, err)
	}
	if off, err = s.IngestJSON(c, pn{0, 4}); err != nil || off != 2 {
		t.Fatalf("IngestJSON: %d, %v", off, err)
	}
	want = append(want, one(rec(0, 4)))
	if off, err = s.IngestBatch(c, one(rec(0, 5))); err != nil || off != 3 {
		t.Fatalf("IngestBatch of one: %d, %v", off, err)
	}
	want = append(want, one(rec(0, 5)))
	// Mixed, from several goroutines: each call gets its own offset.
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int64][][]byte{}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				r := recs(1+g, i*3, 1+i%3)
				var off int64
				var err error
				if len(r) == 1 {
					off, err = s.IngestRecord(c, r[0])
				} else {
					off, err = s.IngestBatch(c, r)
				}
				if err != nil {
					t.Errorf("ingest: %v", err)
					return
				}
				mu.Lock()
				got[off] = r
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for off := int64(4); off < 44; off++ {
		r, ok := got[off]
		if !ok {
			t.Fatalf("offset %d was not given to any call: offsets are not dense", off)
		}
		want = append(want, r)
	}
	mustFlush(t, s)
	if d := s.LastDurable(); d != 43 {
		t.Fatalf("LastDurable after Flush: %d, want 43", d)
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, want...)
	st := s.Stats()
	if st.Accepted != 44 || st.Acknowledged != 44 || st.Failed != 0 || st.InFlightCalls != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestEphemeralWrongRecordType: typed ingest of the wrong type is refused
// with ErrRecordType before anything is queued; the stream goes on.
func TestEphemeralWrongRecordType(t *testing.T) {
	e := start(t)
	js := e.create(t)
	ps := e.create(t, zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{}))
	c := ctx(t)
	if _, err := ps.IngestJSON(c, map[string]int{"a": 1}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestJSON on a proto stream: %v, want ErrRecordType", err)
	}
	if _, err := ps.IngestProto(c, &ingestpb.ProtoEncodedRecordBatch{}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestProto of another message type: %v, want ErrRecordType", err)
	}
	if _, err := ps.IngestProtoBatch(c, []zbstream.ProtoMessage{&ingestpb.JsonRecordBatch{}, durationpb.New(time.Second)}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestProtoBatch with another message type: %v, want ErrRecordType", err)
	}
	if _, err := ps.IngestProto(c, nil); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestProto(nil): %v, want ErrRecordType", err)
	}
	if _, err := js.IngestProto(c, &ingestpb.JsonRecordBatch{}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestProto on a JSON stream: %v, want ErrRecordType", err)
	}
	if _, err := js.IngestJSON(c, []int{1, 2}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestJSON of an array: %v, want ErrRecordType", err)
	}
	if st := ps.Stats(); st.Accepted != 0 {
		t.Fatalf("refused calls were accepted: %+v", st)
	}
	// Both streams still work, and the proto one takes its own type.
	m0 := &ingestpb.JsonRecordBatch{Records: []string{"a", "b"}}
	m1 := &ingestpb.JsonRecordBatch{Records: []string{"c"}}
	m2 := &ingestpb.JsonRecordBatch{}
	if off, err := ps.IngestProto(c, m0); err != nil || off != 0 {
		t.Fatalf("IngestProto: %d, %v", off, err)
	}
	if off, err := ps.IngestProtoBatch(c, []zbstream.ProtoMessage{m1, m2}); err != nil || off != 1 {
		t.Fatalf("IngestProtoBatch: %d, %v", off, err)
	}
	if off, err := js.IngestJSON(c, pn{0, 0}); err != nil || off != 0 {
		t.Fatalf("IngestJSON: %d, %v", off, err)
	}
	pid, jid := ps.StreamID(), js.StreamID()
	mustClose(t, ps)
	mustClose(t, js)
	e.wantStored(t, jid, one(rec(0, 0)))
	got := e.stored(t, pid)
	if len(got) != 2 || len(got[0].Records) != 1 || len(got[1].Records) != 2 {
		t.Fatalf("proto stream stored %s", dump(got))
	}
	for i, w := range []proto.Message{m0, m1, m2} {
		b := got[min(i, 1)].Records[max(i-1, 0)]
		var m ingestpb.JsonRecordBatch
		if err := proto.Unmarshal(b, &m); err != nil || !proto.Equal(&m, w) {
			t.Fatalf("stored proto record %d: %v, %v; want %v", i, &m, err, w)
		}
	}
}

// TestEphemeralOversize: a call over the per-call limit is refused with a
// *LimitError (a batch counted as it travels) and nothing is queued.
func TestEphemeralOversize(t *testing.T) {
	e := start(t)
	s := e.create(t, zbstream.WithMaxCallBytes(1000))
	c := ctx(t)
	big := []byte(`{"pad":"` + string(make([]byte, 1000)) + `"}`)
	for i := range big[8 : len(big)-2] {
		big[8+i] = 'x'
	}
	var le *zbstream.LimitError
	if _, err := s.IngestRecord(c, big); !errors.As(err, &le) || !errors.Is(err, zbstream.ErrCallTooLarge) {
		t.Fatalf("oversize IngestRecord: %v, want a *LimitError", err)
	}
	if _, err := s.IngestJSON(c, map[string]string{"pad": string(big)}); !errors.As(err, &le) {
		t.Fatalf("oversize IngestJSON: %v, want a *LimitError", err)
	}
	// 100 records of 9 bytes: 900 bytes of payload, 1100 as sent.
	small := make([][]byte, 100)
	for i := range small {
		small[i] = []byte(`{"a":123}`)
	}
	if _, err := s.IngestBatch(c, small); !errors.As(err, &le) || le.Got <= le.Max {
		t.Fatalf("oversize IngestBatch: %v, want a *LimitError", err)
	}
	if st := s.Stats(); st.Accepted != 0 || s.LastAssigned() != core.NoOffset {
		t.Fatalf("refused calls took an offset: %+v", st)
	}
	if off, err := s.IngestRecord(c, rec(0, 0)); err != nil || off != 0 {
		t.Fatalf("IngestRecord after the refusals: %d, %v", off, err)
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, one(rec(0, 0)))
}

// TestEphemeralCloseSemantics: Close flushes what was accepted, is
// idempotent, and later ingest is refused with ErrClosed.
func TestEphemeralCloseSemantics(t *testing.T) {
	e := start(t)
	s := e.create(t)
	ingest(t, s, rec(0, 0), rec(0, 1), rec(0, 2))
	id := s.StreamID()
	mustClose(t, s) // no Flush: Close flushes
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)), one(rec(0, 2)))
	for range 2 {
		if err := s.Close(ctx(t)); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	if _, err := s.IngestRecord(ctx(t), rec(0, 3)); !errors.Is(err, zbstream.ErrClosed) {
		t.Fatalf("IngestRecord after Close: %v, want ErrClosed", err)
	}
	if _, err := s.IngestJSON(ctx(t), map[string]int{}); !errors.Is(err, zbstream.ErrClosed) {
		t.Fatalf("IngestJSON after Close: %v, want ErrClosed", err)
	}
	if err := s.Flush(ctx(t)); err != nil {
		t.Fatalf("Flush after a clean Close: %v", err)
	}
	if s.Err() != nil || len(s.Unacked()) != 0 {
		t.Fatalf("after a clean close: Err %v, Unacked %v", s.Err(), s.Unacked())
	}
}

// TestEphemeralConcurrentClose: many goroutines close while others
// ingest; every Close returns nil, every accepted record lands, and
// ingest after the close is ErrClosed.
func TestEphemeralConcurrentClose(t *testing.T) {
	e := start(t)
	s := e.create(t)
	c := ctx(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[int64][]byte{}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				r := rec(g, n)
				off, err := s.IngestRecord(c, r)
				if errors.Is(err, zbstream.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("IngestRecord: %v", err)
					return
				}
				mu.Lock()
				accepted[off] = r
				mu.Unlock()
			}
		}()
	}
	for range 200 {
		if s.LastAssigned() >= 50 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	id := s.StreamID()
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- s.Close(c) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Close: %v", err)
		}
	}
	wg.Wait()
	want := make([][][]byte, len(accepted))
	for off, r := range accepted {
		want[off] = one(r)
	}
	e.wantStored(t, id, want...)
}

// TestEphemeralCloseAfterError: after a terminal failure Close returns the
// stream's error, every time, and does not hang.
func TestEphemeralCloseAfterError(t *testing.T) {
	e := start(t)
	s := e.create(t)
	h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDrop, Code: codes.PermissionDenied, Message: "revoked"})
	ingest(t, s, rec(0, 0))
	waitFired(t, h)
	waitDone(t, s)
	err1 := s.Close(ctx(t))
	wantCode(t, err1, codes.PermissionDenied)
	err2 := s.Close(ctx(t))
	if err2 == nil || err2.Error() != err1.Error() {
		t.Fatalf("second Close: %v, first: %v", err2, err1)
	}
	if _, err := s.IngestRecord(ctx(t), rec(0, 1)); err == nil {
		t.Fatal("IngestRecord after a failure succeeded")
	}
}

// TestEphemeralPendingRetrievableAfterTerminalError: the server fails the
// connection (non-retryable) after two requests; the calls it never
// processed fail once each, in order (OnFail), and stay retrievable with
// their offsets and grouping, identically on every call, after Close too.
func TestEphemeralPendingRetrievableAfterTerminalError(t *testing.T) {
	e := start(t)
	var mu sync.Mutex
	var acked, failed []int64
	s := e.create(t,
		zbstream.WithOnAck(func(o int64) { mu.Lock(); acked = append(acked, o); mu.Unlock() }),
		zbstream.WithOnFail(func(o int64, err error) { mu.Lock(); failed = append(failed, o); mu.Unlock() }))
	// Held until all five calls are in: otherwise a slow caller could see
	// the failure before its third ingest (CI did, under load).
	hold := make(chan struct{})
	h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDrop, After: 2, Code: codes.InvalidArgument, Hold: hold})
	c := ctx(t)
	calls := [][][]byte{one(rec(0, 0)), recs(0, 1, 2), one(rec(0, 3)), recs(0, 4, 3), one(rec(0, 7))}
	for i, r := range calls {
		var off int64
		var err error
		if len(r) == 1 {
			off, err = s.IngestRecord(c, r[0])
		} else {
			off, err = s.IngestBatch(c, r)
		}
		if err != nil || off != int64(i) {
			t.Fatalf("ingest %d: %d, %v", i, off, err)
		}
	}
	close(hold)
	waitFired(t, h)
	err := s.Close(ctx(t))
	wantCode(t, err, codes.InvalidArgument)
	if !errors.Is(s.Flush(ctx(t)), zbstream.ErrStreamFailed) {
		t.Fatalf("Flush after the failure: %v", s.Flush(ctx(t)))
	}
	if werr := s.Wait(ctx(t), 4); !errors.Is(werr, zbstream.ErrStreamFailed) {
		t.Fatalf("Wait(4) after the failure: %v", werr)
	}
	if werr := s.Wait(ctx(t), 1); werr != nil {
		t.Fatalf("Wait(1) for an acknowledged offset: %v", werr)
	}
	first := s.Unacked()
	if len(first) != 3 {
		t.Fatalf("Unacked: %v, want offsets 2, 3, 4", first)
	}
	for i, b := range first {
		if b.Offset != int64(2+i) || !equalRecords(b.Records, calls[2+i]) {
			t.Fatalf("Unacked[%d] = %d %q, want %d %q", i, b.Offset, b.Records, 2+i, calls[2+i])
		}
	}
	if again := s.Unacked(); !slices.EqualFunc(first, again, func(a, b core.Batch) bool {
		return a.Offset == b.Offset && equalRecords(a.Records, b.Records)
	}) {
		t.Fatalf("Unacked changed between calls: %v, then %v", first, again)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(acked, []int64{0, 1}) || !slices.Equal(failed, []int64{2, 3, 4}) {
		t.Fatalf("callbacks: acked %v, failed %v; want [0 1], [2 3 4]", acked, failed)
	}
	if st := s.Stats(); st.Acknowledged != 2 || st.Failed != 3 {
		t.Fatalf("stats: %+v", st)
	}
	e.wantStored(t, s.StreamID(), calls[:2]...)
}

// ---- ephemeral: flush and window ----

// TestFlushSemantics: Flush on an empty stream returns at once; a Flush
// that times out returns ErrFlushTimeout and leaves the stream running;
// Flush waits for the offsets assigned before it, which are then durable.
func TestFlushSemantics(t *testing.T) {
	e := start(t)
	s := e.create(t, zbstream.WithFlushTimeout(50*time.Millisecond))
	if err := s.Flush(ctx(t)); err != nil {
		t.Fatalf("Flush of an empty stream: %v", err)
	}
	h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDelayAcks, Delay: time.Second})
	ingest(t, s, rec(0, 0))
	if err := s.Flush(ctx(t)); !errors.Is(err, zbstream.ErrFlushTimeout) {
		t.Fatalf("Flush with acks held back: %v, want ErrFlushTimeout", err)
	}
	if s.Err() != nil {
		t.Fatalf("the stream failed after a flush timeout: %v", s.Err())
	}
	waitFired(t, h)
	if err := s.Wait(ctx(t), 0); err != nil {
		t.Fatalf("Wait(0): %v", err)
	}
	ingest(t, s, rec(0, 1), rec(0, 2))
	if err := s.Flush(ctx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if d := s.LastDurable(); d < 2 {
		t.Fatalf("LastDurable after Flush: %d, want >= 2", d)
	}
	if err := s.Wait(ctx(t), 5); !errors.Is(err, zbstream.ErrNeverAssigned) {
		t.Fatalf("Wait for an offset never assigned: %v", err)
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)), one(rec(0, 2)))
}

// TestIngestBlocksAtWindow: with a window of one call and the first call's
// ack held back, the next ingest blocks (here: returns its context's error
// without taking an offset), and succeeds once the ack arrives.
func TestIngestBlocksAtWindow(t *testing.T) {
	e := start(t)
	s := e.create(t, zbstream.WithMaxInflight(1, 1<<20), zbstream.WithMaxCallBytes(1<<20))
	e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDelayAcks, Delay: time.Second})
	ingest(t, s, rec(0, 0))
	cc, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.IngestRecord(cc, rec(0, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("IngestRecord into a full window with a cancelled context: %v, want context.Canceled", err)
	}
	if s.LastAssigned() != 0 {
		t.Fatalf("a refused call took an offset: last assigned %d", s.LastAssigned())
	}
	// Blocks until the ack frees the window.
	if off, err := s.IngestRecord(ctx(t), rec(0, 1)); err != nil || off != 1 {
		t.Fatalf("IngestRecord: %d, %v", off, err)
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)))
}

// ---- persistent ----

// TestPersistentCreateResume: create, ingest 0 and 1, flush, the server
// committed 1, close; a resume sees watermark 1 and continues at 2; every
// record is stored once.
func TestPersistentCreateResume(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	if offs := ingest(t, s, rec(0, 0), rec(0, 1)); !slices.Equal(offs, []int64{0, 1}) {
		t.Fatalf("offsets %v", offs)
	}
	mustFlush(t, s)
	if w := e.meta(t, id).Watermark; w != 1 {
		t.Fatalf("server watermark after Flush: %d, want 1", w)
	}
	mustClose(t, s)
	if st := s.Stats(); st.Acknowledged != 2 {
		t.Fatalf("stats %+v", st)
	}
	r := e.resume(t, id)
	if r.StreamID() != id || r.LastDurable() != 1 || r.LastAssigned() != 1 {
		t.Fatalf("resumed: id %s, last durable %d, last assigned %d; want %s, 1, 1", r.StreamID(), r.LastDurable(), r.LastAssigned(), id)
	}
	if err := r.Wait(ctx(t), 1); err != nil {
		t.Fatalf("Wait(1) at the watermark after resume: %v", err)
	}
	if off, err := r.IngestJSON(ctx(t), pn{0, 2}); err != nil || off != 2 {
		t.Fatalf("first ingest after resume: %d, %v; want 2", off, err)
	}
	mustClose(t, r)
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)), one(rec(0, 2)))
	if m := e.meta(t, id); m.Kind != server.KindPersistent || m.Retired {
		t.Fatalf("meta %+v", m)
	}
}

// TestPersistentResumeEmpty: a stream that never stored anything resumes
// with no watermark, and its first offset is 0.
func TestPersistentResumeEmpty(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	mustClose(t, s)
	r := e.resume(t, id)
	if d := r.LastDurable(); d != core.NoOffset {
		t.Fatalf("LastDurable of an empty stream: %d, want -1", d)
	}
	if off := ingest(t, r, rec(0, 0)); off[0] != 0 {
		t.Fatalf("first offset %d, want 0", off[0])
	}
	mustClose(t, r)
	e.wantStored(t, id, one(rec(0, 0)))
}

// TestPersistentResumeUnknown: an unknown id is a *ConnectionError with
// NOT_FOUND, its cause a gRPC status, not retried.
func TestPersistentResumeUnknown(t *testing.T) {
	e := start(t)
	_, err := e.client.ResumeStream(ctx(t), e.table, "ps-does-not-exist", fast()...)
	wantCode(t, err, codes.NotFound)
	if errors.Is(err, zbstream.ErrRetriesExhausted) {
		t.Fatalf("NOT_FOUND was retried: %v", err)
	}
}

// TestPersistentBatchOneOffset: a batch takes one offset and every record
// lands under it.
func TestPersistentBatchOneOffset(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	c := ctx(t)
	b := recs(0, 0, 50)
	if off, err := s.IngestBatch(c, b); err != nil || off != 0 {
		t.Fatalf("IngestBatch: %d, %v", off, err)
	}
	if off, err := s.IngestRecord(c, rec(0, 50)); err != nil || off != 1 {
		t.Fatalf("IngestRecord: %d, %v", off, err)
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, b, one(rec(0, 50)))
	if m := e.meta(t, id); m.Records != 51 {
		t.Fatalf("server counts %d records, want 51", m.Records)
	}
}

// TestPersistentTwoStreamsIndependent: two streams into one table, written
// concurrently, keep their own offsets and records.
func TestPersistentTwoStreamsIndependent(t *testing.T) {
	e := start(t)
	a, b := e.createPersistent(t), e.createPersistent(t)
	if a.StreamID() == b.StreamID() {
		t.Fatal("two creates returned one stream")
	}
	var wg sync.WaitGroup
	for p, s := range []*zbstream.Stream{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 20 {
				off, err := s.IngestRecord(ctx(t), rec(p, n))
				if err != nil || off != int64(n) {
					t.Errorf("stream %d: ingest %d: %d, %v", p, n, off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mustClose(t, a)
	mustClose(t, b)
	for p, s := range []*zbstream.Stream{a, b} {
		want := make([][][]byte, 20)
		for n := range want {
			want[n] = one(rec(p, n))
		}
		e.wantStored(t, s.StreamID(), want...)
	}
}

// TestPersistentResumeWrongRecordType: resuming a JSON stream as a proto
// stream is INVALID_ARGUMENT, and so is a proto stream resumed with
// another message type.
func TestPersistentResumeWrongRecordType(t *testing.T) {
	e := start(t)
	js := e.createPersistent(t)
	ps := e.createPersistent(t, zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{}))
	jid, pid := js.StreamID(), ps.StreamID()
	mustClose(t, js)
	mustClose(t, ps)
	_, err := e.client.ResumeStream(ctx(t), e.table, jid, fast(zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{}))...)
	wantCode(t, err, codes.InvalidArgument)
	_, err = e.client.ResumeStream(ctx(t), e.table, pid, fast()...)
	wantCode(t, err, codes.InvalidArgument)
	_, err = e.client.ResumeStream(ctx(t), e.table, pid, fast(zbstream.WithProtoMessage(&ingestpb.ProtoEncodedRecordBatch{}))...)
	wantCode(t, err, codes.InvalidArgument)
	r := e.resume(t, pid, zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{}))
	if off, err := r.IngestProto(ctx(t), &ingestpb.JsonRecordBatch{Records: []string{"x"}}); err != nil || off != 0 {
		t.Fatalf("IngestProto after a matching resume: %d, %v", off, err)
	}
	mustClose(t, r)
}

// TestRetireThenResume: RetireStream retires the stream at its watermark,
// and a resume of the retired stream is NOT_FOUND; so is retiring an
// unknown id. Retiring again is fine (idempotent).
func TestRetireThenResume(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	ingest(t, s, rec(0, 0), rec(0, 1), rec(0, 2))
	mustClose(t, s)
	if err := e.client.RetireStream(ctx(t), e.table, id); err != nil {
		t.Fatalf("RetireStream: %v", err)
	}
	if m := e.meta(t, id); !m.Retired || m.Watermark != 2 {
		t.Fatalf("the server has %+v, want retired at watermark 2", m)
	}
	if err := e.client.RetireStream(ctx(t), e.table, id); err != nil {
		t.Fatalf("RetireStream again: %v", err)
	}
	_, err := e.client.ResumeStream(ctx(t), e.table, id, fast()...)
	wantCode(t, err, codes.NotFound)
	err = e.client.RetireStream(ctx(t), e.table, "ps-unknown")
	if code := statusCode(err); code != codes.NotFound {
		t.Fatalf("RetireStream of an unknown id: %v (code %s), want NOT_FOUND", err, code)
	}
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)), one(rec(0, 2)))
}

// TestRetireLiveStream: retiring a stream while it is open fences its
// connection; the writer's resume then learns NOT_FOUND and the stream
// fails with it; ingest is refused and Close returns the error.
func TestRetireLiveStream(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	if err := e.client.RetireStream(ctx(t), e.table, id); err != nil {
		t.Fatalf("RetireStream: %v", err)
	}
	waitDone(t, s)
	_, err := s.IngestRecord(ctx(t), rec(0, 1))
	if !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("IngestRecord into a retired stream: %v, want ErrStreamFailed", err)
	}
	wantCode(t, err, codes.NotFound)
	wantCode(t, s.Close(ctx(t)), codes.NotFound)
	if got := unackedOffsets(s); len(got) != 0 {
		t.Fatalf("Unacked offsets %v, want none", got)
	}
	e.wantStored(t, id, one(rec(0, 0)))
}

// TestAuthErrors: a token that may not write the table is
// PERMISSION_DENIED, an unknown token UNAUTHENTICATED; neither is retried
// for long: the create returns with the server's code, not the test's
// deadline.
func TestAuthErrors(t *testing.T) {
	ts := servertest.Start(t, servertest.WithPrincipal("other-token", server.Principal{Name: "other", Tables: []string{"main.other.events"}}))
	retries := []zbstream.StreamOption{zbstream.WithRetries(1000), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond})}
	other := newClient(t, ts, "other-token")
	_, err := other.CreateStream(ctx(t), ts.Table, retries...)
	wantCode(t, err, codes.PermissionDenied)
	_, err = other.CreatePersistentStream(ctx(t), ts.Table, retries...)
	wantCode(t, err, codes.PermissionDenied)

	// A stream of the default principal, resumed by another principal: the
	// stream is not theirs, so it does not exist for them (protocol.md
	// §6.6: NOT_FOUND, exactly as for an unknown id, so ids leak nothing).
	owner := newClient(t, ts, ts.Token)
	s, err := owner.CreatePersistentStream(ctx(t), ts.Table, fast()...)
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	_, err = other.ResumeStream(ctx(t), ts.Table, s.StreamID(), retries...)
	wantCode(t, err, codes.NotFound)

	wrong := newClient(t, ts, "wrong-token")
	for _, create := range []func(context.Context, string, ...zbstream.StreamOption) (*zbstream.Stream, error){
		wrong.CreateStream, wrong.CreatePersistentStream,
	} {
		_, err = create(ctx(t), ts.Table, retries...)
		wantCode(t, err, codes.Unauthenticated)
	}
	_, err = wrong.ResumeStream(ctx(t), ts.Table, s.StreamID(), retries...)
	wantCode(t, err, codes.Unauthenticated)
	err = wrong.RetireStream(ctx(t), ts.Table, s.StreamID())
	if code := statusCode(err); code != codes.Unauthenticated {
		t.Fatalf("RetireStream with a wrong token: %v, want UNAUTHENTICATED", err)
	}
}
