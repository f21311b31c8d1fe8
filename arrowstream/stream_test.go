package arrowstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, f *fakeServer) *zbstream.Client {
	t.Helper()
	c, err := zbstream.NewClient("http://"+f.addr, zbstream.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// batch returns rows ids from, from+1, ..., each with a name of 20
// bytes, and every seventh name null.
func batch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	for id := from; id < from+n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		if id%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%015d", id))
		}
	}
	return b.NewRecordBatch()
}

// ingest ingests batches of the given sizes with consecutive ids and
// returns the number of rows.
func ingest(t *testing.T, ctx context.Context, s *arrowstream.Stream, sizes ...int64) int64 {
	t.Helper()
	var next int64
	for i, n := range sizes {
		rec := batch(next, n)
		off, err := s.IngestBatch(ctx, rec)
		rec.Release()
		if err != nil || off != int64(i) {
			t.Fatalf("IngestBatch %d = %d, %v", i, off, err)
		}
		next += n
	}
	return next
}

// landed checks that ids 0..n-1 all arrived at least once, and that no
// id arrived again after the server had acknowledged it.
func landed(t *testing.T, f *fakeServer, n int64) map[int64]int {
	t.Helper()
	got := f.idsReceived()
	for id := range n {
		if got[id] == 0 {
			t.Fatalf("row %d never arrived", id)
		}
	}
	if len(got) != int(n) {
		t.Fatalf("%d distinct rows arrived, want %d", len(got), n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.resentAck) != 0 {
		t.Fatalf("rows sent again after their ack: %v", f.resentAck)
	}
	return got
}

func open(t *testing.T, f *fakeServer, opts ...arrowstream.Option) *arrowstream.Stream {
	t.Helper()
	opts = append([]arrowstream.Option{
		arrowstream.WithMaxFrameBytes(1024),
		arrowstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}),
		arrowstream.WithSeed(1),
	}, opts...)
	s, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", testSchema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// deliver ingests batches of the given sizes into a new stream to f,
// flushes and closes it, checks that every row landed, and returns the
// stream and how often each row arrived.
func deliver(t *testing.T, f *fakeServer, sizes ...int64) (*arrowstream.Stream, map[int64]int) {
	t.Helper()
	s := open(t, f)
	ctx := testCtx(t)
	n := ingest(t, ctx, s, sizes...)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return s, landed(t, f, n)
}

// flushAgainst ingests one batch of n rows into a stream to a server
// that follows script and returns the server, the stream and what Flush
// returned.
func flushAgainst(t *testing.T, script func(conn, frame int) act, n int64, opts ...arrowstream.Option) (*fakeServer, *arrowstream.Stream, error) {
	t.Helper()
	f := startServer(t, &fakeServer{script: script})
	s := open(t, f, opts...)
	ctx := testCtx(t)
	ingest(t, ctx, s, n)
	return f, s, s.Flush(ctx)
}

func TestIngestSplitsAndAcks(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s, got := deliver(t, f, 1, 200, 37)
	for id, k := range got {
		if k != 1 {
			t.Fatalf("row %d arrived %d times on a fault-free run", id, k)
		}
	}
	if k := f.counts(); k.frames <= 3 || k.maxFrame > 1024 {
		t.Fatalf("%d frames, largest %d bytes: want the 200-row batch split into frames of at most 1024", k.frames, k.maxFrame)
	}
	if u := s.Unacked(); len(u) != 0 {
		t.Fatalf("Unacked after Close = %d batches", len(u))
	}
	f.mu.Lock()
	md := f.md[0]
	f.mu.Unlock()
	if got := md.Get("x-databricks-zerobus-table-name"); len(got) != 1 || got[0] != "main.default.t" {
		t.Fatalf("table header %v", got)
	}
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer tok" {
		t.Fatalf("authorization %v", got)
	}
}

func TestBatchOverTwoMiBIsSplit(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := testCtx(t)
	n := ingest(t, ctx, s, 150_000) // about 6 MiB
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	landed(t, f, n)
	if k := f.counts(); k.frames < 3 || k.maxFrame > arrowstream.MaxFrameBytes {
		t.Fatalf("%d frames, largest %d bytes", k.frames, k.maxFrame)
	}
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		script func(conn, frame int) act
		conns  int // connections the run needs at least
	}{
		{"drop mid-batch", func(conn, frame int) act {
			return act{ack: conn > 0 || frame < 3, drop: conn == 0 && frame == 5}
		}, 2},
		{"lost acks", func(conn, frame int) act {
			return act{ack: conn > 0 || frame == 1 || frame == 4, drop: conn == 0 && frame == 6}
		}, 2},
		{"partial ack, drops twice", func(conn, frame int) act {
			return act{ack: conn == 2 || frame%2 == 0, drop: conn < 2 && frame == 3}
		}, 3},
		{"close-only rotation, no grace", func(conn, frame int) act {
			return act{ack: conn > 0 || frame <= 2, rotate: conn == 0 && frame == 2}
		}, 2},
		{"rotation, then the server ends the call", func(conn, frame int) act {
			return act{ack: conn > 0 || frame <= 1, rotate: conn == 0 && frame == 2, grace: 60_000, end: conn == 0 && frame == 2}
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := startServer(t, &fakeServer{script: c.script})
			deliver(t, f, 90, 5, 120)
			if conns := f.counts().conns; conns < c.conns {
				t.Fatalf("%d connections, want at least %d", conns, c.conns)
			}
		})
	}
}

// A rotation is no failure: it moves the stream to a new connection even
// with recovery disabled.
func TestRotationWithoutRecovery(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		return act{ack: conn >= 3 || frame <= 1, rotate: frame == 1 && conn < 3}
	}})
	s := open(t, f, arrowstream.WithoutRecovery())
	ctx := testCtx(t)
	n := ingest(t, ctx, s, 100, 100)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	landed(t, f, n)
	if conns := f.counts().conns; conns < 4 {
		t.Fatalf("%d connections, want 4", conns)
	}
}

// Only the rows not acknowledged are replayed: here the first three
// frames of one batch were acked before the drop, and the next
// connection starts at the first row of the fourth.
func TestReplayIsTheUnackedSuffix(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		return act{ack: conn > 0 || frame < 3, drop: conn == 0 && frame == 5}
	}})
	s := open(t, f)
	ctx := testCtx(t)
	n := ingest(t, ctx, s, 300)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := landed(t, f, n)
	f.mu.Lock()
	defer f.mu.Unlock()
	// Rows of frames 0..2 arrived once; those of frames 3..5 twice; the
	// rest once (on the second connection).
	twice := 0
	for _, k := range got {
		if k == 2 {
			twice++
		}
	}
	if twice == 0 || twice >= int(n) {
		t.Fatalf("%d rows arrived twice: want the frames sent but not acked before the drop", twice)
	}
	if want := int(n) + twice; len(f.received) != want {
		t.Fatalf("%d rows received, want %d", len(f.received), want)
	}
}

func TestMalformedAckFailsTheStream(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		rule arrowstream.Rule
	}{
		{"beyond sent", `{"ack_up_to_offset":7,"ack_up_to_records":10}`, arrowstream.AckAboveSent},
		{"bad json", `{"ack_up_to_offset":0,`, arrowstream.MalformedAck},
		{"mistyped", `{"ack_up_to_offset":"0","ack_up_to_records":1}`, arrowstream.MalformedAck},
		{"more rows than sent", `{"ack_up_to_offset":0,"ack_up_to_records":4}`, arrowstream.RowsMismatch},
		{"second ready", `{"ack_up_to_offset":-1,"ack_up_to_records":0}`, arrowstream.SecondReady},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s, err := flushAgainst(t, func(conn, frame int) act { return act{raw: c.raw} }, 3)
			ctx := testCtx(t)
			var pe *arrowstream.ProtocolError
			if !errors.Is(err, zbstream.ErrProtocol) || !errors.Is(err, zbstream.ErrStreamFailed) || !errors.As(err, &pe) || pe.Rule != c.rule {
				t.Fatalf("Flush = %v; want the stream failed with %q", err, c.rule)
			}
			if _, err := s.IngestBatch(ctx, batch(3, 1)); !errors.Is(err, zbstream.ErrProtocol) {
				t.Fatalf("ingest after the failure = %v", err)
			}
			u := s.Unacked()
			if len(u) != 1 || u[0].NumRows() != 3 {
				t.Fatalf("Unacked = %v", u)
			}
			u[0].Release()
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close of a failed stream = %v", err)
			}
		})
	}
}

func TestReadyWithCloseIsRefused(t *testing.T) {
	f := startServer(t, &fakeServer{ready: `{"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":10}`})
	_, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", testSchema)
	var pe *arrowstream.ProtocolError
	if !errors.As(err, &pe) || pe.Rule != arrowstream.AckBeforeReady {
		t.Fatalf("New = %v; want AckBeforeReady", err)
	}
}

func TestUnackedAfterPartialAck(t *testing.T) {
	// Frames 0 and 1 acked, then an ack beyond what was sent.
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		if frame < 2 {
			return act{ack: true}
		}
		if frame == 4 {
			return act{raw: `{"ack_up_to_offset":99,"ack_up_to_records":1}`}
		}
		return act{}
	}})
	s := open(t, f)
	ctx := testCtx(t)
	ingest(t, ctx, s, 200)
	if err := s.Flush(ctx); !errors.Is(err, zbstream.ErrProtocol) {
		t.Fatalf("Flush = %v", err)
	}
	u := s.Unacked()
	if len(u) != 1 {
		t.Fatalf("Unacked = %d batches", len(u))
	}
	defer u[0].Release()
	ids := u[0].Column(0).(*array.Int64).Int64Values()
	f.mu.Lock()
	defer f.mu.Unlock()
	first := ids[0]
	if first == 0 || ids[len(ids)-1] != 199 || int64(len(ids)) != 200-first {
		t.Fatalf("Unacked rows %d..%d (%d): want the suffix after the acked frames", first, ids[len(ids)-1], len(ids))
	}
	if !f.acked[first-1] || f.acked[first] {
		t.Fatalf("the suffix starts at %d; acked before it %t, it %t", first, f.acked[first-1], f.acked[first])
	}
	if name := u[0].Column(1).(*array.String); name.IsNull(int(7*((first+6)/7)-first)) == false {
		t.Fatalf("nulls not kept in Unacked")
	}
}

func TestSchemaMismatchIsRefused(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s := open(t, f)
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, other)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	if _, err := s.IngestBatch(testCtx(t), rec); !errors.Is(err, arrowstream.ErrSchemaMismatch) {
		t.Fatalf("IngestBatch = %v", err)
	}
	// The stream goes on.
	n := ingest(t, testCtx(t), s, 4)
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	landed(t, f, n)
}

func ipcBytes(t *testing.T, schema *arrow.Schema, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestIngestIPC(t *testing.T) {
	for _, c := range []arrowstream.Compression{arrowstream.CompressionNone, arrowstream.CompressionLZ4, arrowstream.CompressionZstd} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			f := startServer(t, &fakeServer{})
			s := open(t, f, arrowstream.WithCompression(c))
			ctx := testCtx(t)
			r0, r1 := batch(0, 50), batch(50, 50)
			defer r0.Release()
			defer r1.Release()
			good := ipcBytes(t, testSchema, r0)
			off, err := s.IngestIPC(ctx, good)
			if err != nil || off != 0 {
				t.Fatalf("IngestIPC = %d, %v", off, err)
			}
			for name, b := range map[string][]byte{
				"two batches": ipcBytes(t, testSchema, r0, r1),
				"trailing":    append(bytes.Clone(good), 1, 2, 3),
				"no batch":    ipcBytes(t, testSchema),
				"garbage":     []byte("not arrow"),
				"empty":       nil,
			} {
				if _, err := s.IngestIPC(ctx, b); err == nil {
					t.Errorf("IngestIPC(%s) accepted", name)
				}
			}
			if off, err := s.IngestIPC(ctx, ipcBytes(t, testSchema, r1)); err != nil || off != 1 {
				t.Fatalf("IngestIPC = %d, %v", off, err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			landed(t, f, 100)
		})
	}
}

func TestWaitAndWindow(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act { return act{} }}) // never acks
	s := open(t, f, arrowstream.WithMaxInflight(1, 1<<20), arrowstream.WithTimeouts(0, time.Hour, 0))
	ctx := testCtx(t)
	ingest(t, ctx, s, 2)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.IngestBatch(short, batch(2, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("IngestBatch into a full window = %v", err)
	}
	if err := s.Wait(short, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v", err)
	}
	if err := s.Wait(ctx, 1); !errors.Is(err, zbstream.ErrNeverAssigned) {
		t.Fatalf("Wait(1) = %v", err)
	}
	closeCtx, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel2()
	if err := s.Close(closeCtx); !errors.Is(err, zbstream.ErrCloseTimeout) {
		t.Fatalf("Close = %v", err)
	}
	u := s.Unacked()
	if len(u) != 1 || u[0].NumRows() != 2 {
		t.Fatalf("Unacked = %v", u)
	}
	u[0].Release()
	if _, err := s.IngestBatch(ctx, batch(2, 1)); err == nil {
		t.Fatal("IngestBatch after Close accepted")
	}
}

func TestRetriesExhausted(t *testing.T) {
	f, _, err := flushAgainst(t, func(conn, frame int) act { return act{drop: true} }, 1, arrowstream.WithRetries(2))
	var re *zbstream.RetryError
	if !errors.As(err, &re) || re.Attempts != 2 {
		t.Fatalf("Flush = %v; want a RetryError after 2 attempts", err)
	}
	if conns := f.counts().conns; conns != 3 {
		t.Fatalf("%d connections, want 3", conns)
	}
}

// A status no reconnect can fix fails the stream at once.
func TestNonRetryableStatusFails(t *testing.T) {
	f, _, err := flushAgainst(t, func(conn, frame int) act { return act{code: codes.PermissionDenied} }, 1)
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) || ce.Code != zbstream.Code(codes.PermissionDenied) {
		t.Fatalf("Flush = %v; want PERMISSION_DENIED", err)
	}
	if conns := f.counts().conns; conns != 1 {
		t.Fatalf("%d connections, want 1", conns)
	}
}

// countingToken is a bearer token that counts how often it is dropped.
type countingToken struct {
	mu          sync.Mutex
	invalidated int
}

func (c *countingToken) Headers(context.Context) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer tok"}, nil
}

func (c *countingToken) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidated++
}

// UNAUTHENTICATED at the first open drops the credentials and is retried
// once, at once; later it fails the stream, dropping them again.
func TestUnauthenticated(t *testing.T) {
	f := startServer(t, &fakeServer{refuse: func(conn int) error {
		if conn == 0 || conn == 2 {
			return status.Error(codes.Unauthenticated, "expired")
		}
		return nil
	}, script: func(conn, frame int) act { return act{drop: true} }})
	tok := &countingToken{}
	c, err := zbstream.NewClient("http://"+f.addr, zbstream.WithHeadersProvider(tok))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t)
	s, err := arrowstream.New(ctx, c, "main.default.t", testSchema, arrowstream.WithRetries(1),
		arrowstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	if err != nil {
		t.Fatalf("New after one UNAUTHENTICATED = %v", err)
	}
	defer s.Close(ctx)
	ingest(t, ctx, s, 1)
	// Connection 1 drops (retryable); connection 2 is refused as
	// UNAUTHENTICATED, which now fails the stream.
	var ce *zbstream.ConnectionError
	if err := s.Flush(ctx); !errors.As(err, &ce) || ce.Code != zbstream.Code(codes.Unauthenticated) {
		t.Fatalf("Flush = %v; want UNAUTHENTICATED", err)
	}
	tok.mu.Lock()
	defer tok.mu.Unlock()
	if conns := f.counts().conns; tok.invalidated != 2 || conns != 3 {
		t.Fatalf("credentials dropped %d times over %d calls; want 2 over 3", tok.invalidated, conns)
	}
}

// A first open that never succeeds ends in a RetryError once the budget
// is spent, even with no deadline on New's context: nothing is in
// flight, and that must not make the budget whole again.
func TestNewGivesUpOnAnUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every dial is refused
	c, err := zbstream.NewClient("http://"+addr, zbstream.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan error, 1)
	go func() {
		s, err := arrowstream.New(context.Background(), c, "main.default.t", batch(0, 1).Schema(),
			arrowstream.WithRetries(2),
			arrowstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
		if s != nil {
			s.Close(context.Background())
		}
		got <- err
	}()
	select {
	case err := <-got:
		var re *zbstream.RetryError
		if !errors.As(err, &re) || re.Attempts != 2 {
			t.Fatalf("New = %v; want a RetryError after 2 attempts", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("New still retrying an unreachable server after 30s with a budget of 2")
	}
}

// TestEachBatchOfAnIdleStreamIsSent: ingest one batch, wait for its ack,
// again and again. Every batch comes to an idle connection, just after
// the ack before it woke the sender: a sender that looked for the next
// change after it had found nothing to send missed the batch ingested
// in between, which then waited unsent for a change that never came.
func TestEachBatchOfAnIdleStreamIsSent(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act { return act{ack: true} }})
	s := open(t, f)
	ctx := testCtx(t)
	const n = 300
	for i := range int64(n) {
		off, err := s.IngestBatch(ctx, batch(i, 1))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = s.Wait(wctx, off)
		cancel()
		if err != nil {
			t.Fatalf("Wait(%d) = %v: the batch was never sent", off, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	landed(t, f, n)
}
