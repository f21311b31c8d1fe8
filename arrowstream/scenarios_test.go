package arrowstream_test

// The official SDKs' Arrow Flight scenarios (the Rust SDK's arrow_tests.rs,
// the Go SDK's arrow_integration_test.go), each driven against our stream
// over real gRPC on loopback, with the fake DoPut server of
// fakeserver_test.go playing the official mock's part. docs/testing.md maps
// every official test to ours; where our documented behaviour differs
// (docs/protocol.md §12.8), the test asserts ours and says so. This file:
// creation, ingest, flush, close, errors, timeouts, concurrency and
// Unacked. The others: scenarios_recovery_test.go,
// scenarios_rotation_test.go, scenarios_ipc_test.go, and
// scenarios_later_test.go for those the official suite added later.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// scenarioOpen opens a stream to f as the official scenarios do: frames
// of the default size, so that each of their small batches is one frame.
func scenarioOpen(t *testing.T, f *fakeServer, opts ...arrowstream.Option) *arrowstream.Stream {
	t.Helper()
	return open(t, f, append([]arrowstream.Option{arrowstream.WithMaxFrameBytes(arrowstream.MaxFrameBytes)}, opts...)...)
}

// scenario starts fs and opens a stream to it (scenarioOpen), and returns
// them with the test's context.
func scenario(t *testing.T, fs *fakeServer, opts ...arrowstream.Option) (*fakeServer, *arrowstream.Stream, context.Context) {
	t.Helper()
	f := startServer(t, fs)
	return f, scenarioOpen(t, f, opts...), testCtx(t)
}

// holdAll is a script that holds every ack until hold is closed.
func holdAll(hold <-chan struct{}) func(conn, frame int) act {
	return func(conn, frame int) act { return act{ack: true, hold: hold} }
}

// briefly returns a context that ends 50 ms from now: it bounds a call
// that must still be waiting then.
func briefly(t *testing.T, ctx context.Context) context.Context {
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	t.Cleanup(cancel)
	return short
}

// flushLanded flushes s and checks that the rows 0..n-1 reached f
// (landed).
func flushLanded(t *testing.T, ctx context.Context, s *arrowstream.Stream, f *fakeServer, n int64) {
	t.Helper()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	landed(t, f, n)
}

// gate returns a channel for act.hold and the function that opens it,
// which may be called more than once.
func gate() (<-chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// ingestAt ingests the rows with ids from .. from+n-1 as one batch and
// returns its offset.
func ingestAt(t *testing.T, ctx context.Context, s *arrowstream.Stream, from, n int64) int64 {
	t.Helper()
	rec := batch(from, n)
	defer rec.Release()
	off, err := s.IngestBatch(ctx, rec)
	if err != nil {
		t.Fatalf("IngestBatch of rows %d..%d: %v", from, from+n-1, err)
	}
	return off
}

// idsOf returns the id column of rec.
func idsOf(rec arrow.RecordBatch) []int64 {
	return slices.Clone(rec.Column(0).(*array.Int64).Int64Values())
}

// span returns the ids from .. to-1.
func span(from, to int64) []int64 {
	var out []int64
	for id := from; id < to; id++ {
		out = append(out, id)
	}
	return out
}

// unackedIDs returns the ids of each batch Unacked returns, releasing them.
func unackedIDs(s *arrowstream.Stream) [][]int64 {
	var out [][]int64
	for _, rec := range s.Unacked() {
		out = append(out, idsOf(rec))
		rec.Release()
	}
	return out
}

// statusOf returns the gRPC status code and message err carries, if any.
func statusOf(err error) (codes.Code, string) {
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) {
		return codes.OK, ""
	}
	st, _ := status.FromError(ce.Err)
	return codes.Code(ce.Code), st.Message()
}

// test_successful_arrow_stream_creation, and the Go SDK's
// TestArrowStreamCreation: a stream opens once the server answers the
// schema with its ready signal, on a call that names the table and
// carries the credentials (the official tests' headers provider), and is
// open (it takes a batch).
func TestScenarioSuccessfulArrowStreamCreation(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	if k := f.counts(); k.conns != 1 || k.frames != 0 {
		t.Fatalf("%d calls, %d data frames after New; want the one call and no data", k.conns, k.frames)
	}
	f.mu.Lock()
	md := f.md[0]
	f.mu.Unlock()
	if table, auth := md.Get("x-databricks-zerobus-table-name"), md.Get("authorization"); !slices.Equal(table, []string{"main.default.t"}) || !slices.Equal(auth, []string{"Bearer tok"}) {
		t.Fatalf("call metadata: table %v, authorization %v", table, auth)
	}
	if off := ingestAt(t, ctx, s, 0, 1); off != 0 {
		t.Fatalf("first offset %d", off)
	}
	flushLanded(t, ctx, s, f, 1)
}

// test_ingest_single_batch, and the Go SDK's TestArrowStreamWaitForOffset:
// one batch (with a null) gets offset 0, Wait returns once the server has
// acknowledged it, and it went out as one frame.
func TestScenarioIngestSingleBatch(t *testing.T) {
	for _, rows := range []int64{3, 5} {
		f, s, ctx := scenario(t, &fakeServer{})
		off := ingestAt(t, ctx, s, 0, rows)
		if off != 0 {
			t.Fatalf("offset %d; want 0", off)
		}
		if err := s.Wait(ctx, off); err != nil {
			t.Fatal(err)
		}
		if n := f.counts().frames; n != 1 {
			t.Fatalf("%d frames; want 1", n)
		}
		landed(t, f, rows)
	}
}

// test_ingest_multiple_batches, and the Go SDK's
// TestArrowStreamIngestAndFlush and TestArrowStreamMultipleBatches:
// batches get offsets 0, 1, 2, ..., each is one frame numbered in order
// on the call, and Wait (or Flush) sees them all acknowledged.
func TestScenarioIngestMultipleBatches(t *testing.T) {
	for _, c := range []struct {
		name  string
		sizes []int64
		flush bool
	}{
		{"rust: three batches of two rows, waited one by one", []int64{2, 2, 2}, false},
		{"go: IngestAndFlush, two batches of three rows", []int64{3, 3}, true},
		{"go: MultipleBatches of 1, 2, 3 and 4 rows", []int64{1, 2, 3, 4}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, s, ctx := scenario(t, &fakeServer{})
			n := ingest(t, ctx, s, c.sizes...) // checks the offsets
			if c.flush {
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				for off := range int64(len(c.sizes)) {
					if err := s.Wait(ctx, off); err != nil {
						t.Fatalf("Wait(%d) = %v", off, err)
					}
				}
			}
			// The highest frame offset the server saw is len-1: one frame
			// per batch, numbered from 0 without a gap (the fake checks it).
			if got := f.framesOn(); !slices.Equal(got, []int{len(c.sizes)}) {
				t.Fatalf("frames per call %v; want [%d]", got, len(c.sizes))
			}
			landed(t, f, n)
		})
	}
}

// test_flush_waits_for_acks and test_flush_timeout: with the acks held
// back, a Flush bounded in time returns its bound's error (ours is bounded
// by its context, the official SDKs' by flush_timeout_ms), and the stream
// goes on: once the acks come, Flush returns nil.
func TestScenarioFlushWaitsForAcks(t *testing.T) {
	hold, release := gate()
	defer release()
	f, s, ctx := scenario(t, &fakeServer{script: holdAll(hold)})
	ingestAt(t, ctx, s, 0, 1)
	ingestAt(t, ctx, s, 1, 1)
	if err := s.Flush(briefly(t, ctx)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with the acks held = %v; want DeadlineExceeded", err)
	}
	release()
	flushLanded(t, ctx, s, f, 2)
	if got := f.framesOn(); !slices.Equal(got, []int{2}) {
		t.Fatalf("frames per call %v; want [2]", got)
	}
}

// test_close_flushes_and_closes, and the Go SDK's TestArrowStreamClose:
// Close waits for the batch's ack and ends the stream, which then takes
// nothing more. (We have no IsClosed: a closed stream refuses ingest.)
func TestScenarioCloseFlushesAndCloses(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	off := ingestAt(t, ctx, s, 0, 1)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, off); err != nil {
		t.Fatalf("Wait after Close = %v; want the batch durable", err)
	}
	if _, err := s.IngestBatch(ctx, batch(1, 1)); !errors.Is(err, zbstream.ErrClosed) {
		t.Fatalf("IngestBatch after Close = %v", err)
	}
	landed(t, f, 1)
}

// test_server_error_propagates, and the later
// test_wait_for_offset_returns_real_error_on_terminal_failure: a status
// no reconnect mends, ending the call at the first frame, reaches Wait as
// that status, with its message; the stream fails without a retry.
func TestScenarioServerErrorPropagates(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act { return act{code: codes.InvalidArgument} }})
	off := ingestAt(t, ctx, s, 0, 1)
	err := s.Wait(ctx, off)
	if code, msg := statusOf(err); code != codes.InvalidArgument || msg != "ended by the test" || !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("Wait = %v; want the server's INVALID_ARGUMENT and its message", err)
	}
	if _, err := s.IngestBatch(ctx, batch(1, 1)); !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("IngestBatch after the failure = %v", err)
	}
	if conns := f.counts().conns; conns != 1 {
		t.Fatalf("%d calls; want 1", conns)
	}
}

// test_schema_mismatch_rejected: a batch of other columns is refused at
// ingest, before any byte is sent, and the stream goes on.
func TestScenarioSchemaMismatchRejected(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	other := otherBatch()
	defer other.Release()
	if _, err := s.IngestBatch(ctx, other); !errors.Is(err, arrowstream.ErrSchemaMismatch) {
		t.Fatalf("IngestBatch of other columns = %v; want ErrSchemaMismatch", err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent for a refused batch", n)
	}
	if off := ingestAt(t, ctx, s, 0, 1); off != 0 {
		t.Fatalf("offset after the refusal %d; want 0", off)
	}
	flushLanded(t, ctx, s, f, 1)
}

// test_ingest_after_close_rejected, and the Go SDK's
// TestArrowStreamIngestAfterClose: after Close an ingest is refused.
func TestScenarioIngestAfterCloseRejected(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IngestBatch(ctx, batch(0, 1)); !errors.Is(err, zbstream.ErrClosed) {
		t.Fatalf("IngestBatch after Close = %v; want ErrClosed", err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent after Close", n)
	}
}

// test_ack_timeout (the server holds the ack past the ack timeout, an old
// version had it end the call instead) and the later
// test_wait_for_offset_returns_real_error_on_stream_end: without recovery
// the stream fails, and Wait says why.
func TestScenarioAckTimeout(t *testing.T) {
	t.Run("no ack within the ack timeout", func(t *testing.T) {
		hold, release := gate()
		defer release()
		_, s, ctx := scenario(t, &fakeServer{script: holdAll(hold)}, arrowstream.WithoutRecovery(), arrowstream.WithTimeouts(0, 100*time.Millisecond, 0))
		off := ingestAt(t, ctx, s, 0, 1)
		if err := s.Wait(ctx, off); !errors.Is(err, zbstream.ErrAckTimeout) {
			t.Fatalf("Wait = %v; want ErrAckTimeout", err)
		}
		if u := unackedIDs(s); !slices.EqualFunc(u, [][]int64{{0}}, slices.Equal) {
			t.Fatalf("Unacked = %v", u)
		}
	})
	t.Run("the server ends the call without an ack", func(t *testing.T) {
		f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act { return act{end: true} }}, arrowstream.WithoutRecovery())
		off := ingestAt(t, ctx, s, 0, 1)
		err := s.Wait(ctx, off)
		var ce *zbstream.ConnectionError
		if !errors.As(err, &ce) || !errors.Is(err, zbstream.ErrStreamFailed) {
			t.Fatalf("Wait = %v; want the stream failed with the call's end", err)
		}
		if conns := f.counts().conns; conns != 1 {
			t.Fatalf("%d calls without recovery; want 1", conns)
		}
	})
}

// test_idempotent_close, and the Go SDK's TestArrowStreamIdempotentClose:
// a second Close returns nil as the first did.
func TestScenarioIdempotentClose(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{})
	for i := range 2 {
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close %d = %v", i+1, err)
		}
	}
}

// test_empty_flush: Flush with nothing ingested returns nil at once (the
// official test times it; we only check that it returns, and sends
// nothing).
func TestScenarioEmptyFlush(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s := scenarioOpen(t, f)
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames for an empty flush", n)
	}
}

// test_concurrent_batch_ingestion: five goroutines ingest two batches
// each; the ten offsets are 0..9, each once, and each becomes durable.
func TestScenarioConcurrentBatchIngestion(t *testing.T) {
	const tasks, each = 5, 2
	f, s, ctx := scenario(t, &fakeServer{}, arrowstream.WithMaxInflight(tasks*each+10, arrowstream.DefaultMaxInflightBytes))
	offsets := make([][]int64, tasks)
	errs := make([]error, tasks)
	var wg sync.WaitGroup
	for task := range tasks {
		wg.Go(func() {
			for b := range each {
				rec := batch(int64(task*each+b), 1)
				off, err := s.IngestBatch(ctx, rec)
				rec.Release()
				if err != nil {
					errs[task] = err
					return
				}
				offsets[task] = append(offsets[task], off)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(offsets...)
	for _, off := range all {
		if err := s.Wait(ctx, off); err != nil {
			t.Fatalf("Wait(%d) = %v", off, err)
		}
	}
	slices.Sort(all)
	if !slices.Equal(all, span(0, tasks*each)) {
		t.Fatalf("offsets %v; want 0..%d once each", all, tasks*each-1)
	}
	landed(t, f, tasks*each)
}

// test_get_unacked_batches_empty_when_all_acked, and the Go SDK's
// TestArrowStreamGetUnackedBatches: after a Close that delivered
// everything, Unacked is empty. (The Go SDK's GetUnackedBatches fails on a
// closed stream; ours, like the Rust SDK's, answers.)
func TestScenarioGetUnackedBatchesEmptyWhenAllAcked(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{})
	for id := range int64(2) {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if u := unackedIDs(s); len(u) != 0 {
		t.Fatalf("Unacked after a complete Close = %v", u)
	}
}

// test_get_unacked_batches_after_failure: the first batch is acked, the
// server fails the call at the second with a status no reconnect mends;
// Wait fails for the second only, and Unacked holds it alone. Close of
// the failed stream returns nil (docs/protocol.md §12.8).
func TestScenarioGetUnackedBatchesAfterFailure(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{script: failSecond}, arrowstream.WithoutRecovery())
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 1, 1)); err == nil {
		t.Fatal("Wait of the failed batch = nil")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close of a failed stream = %v", err)
	}
	if u := unackedIDs(s); !slices.EqualFunc(u, [][]int64{{1}}, slices.Equal) {
		t.Fatalf("Unacked = %v; want the second batch", u)
	}
}

// failSecond acks the first frame and ends the call at the second with
// INVALID_ARGUMENT, a status no reconnect mends.
func failSecond(conn, frame int) act {
	if frame == 0 {
		return act{ack: true}
	}
	return act{code: codes.InvalidArgument}
}

// otherBatch returns a batch of other columns than testSchema's, as the
// official schema-mismatch scenarios build one: a single int32 field.
func otherBatch() arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "different_field", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	return b.NewRecordBatch()
}
