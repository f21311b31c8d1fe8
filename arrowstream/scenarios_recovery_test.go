package arrowstream_test

// The official Arrow Flight scenarios of recovery: reconnects, partial
// acks and the replay of unacknowledged rows, and large batches split into
// frames (see scenarios_test.go).

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// dropAt acks every frame except frame of the first call, where the call
// ends with UNAVAILABLE before any ack of it.
func dropAt(at int) func(conn, frame int) act {
	return func(conn, frame int) act {
		if conn == 0 && frame == at {
			return act{drop: true}
		}
		return act{ack: true}
	}
}

// test_supervisor_recovery_after_retriable_error: the first batch is
// acked; the call drops (UNAVAILABLE) at the second; the stream reconnects
// and replays only the second, at frame offset 0 of the new call.
func TestScenarioSupervisorRecoveryAfterRetriableError(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(1)})
	if off := ingestAt(t, ctx, s, 0, 1); off != 0 {
		t.Fatalf("offset %d", off)
	} else if err := s.Wait(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 1, 1)); err != nil {
		t.Fatalf("Wait across the reconnect = %v", err)
	}
	if got := f.framesOn(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("frames per call %v; want [2 1]: the second batch again, alone", got)
	}
	landed(t, f, 2)
}

// test_recreate_arrow_stream: a stream failed by a status no reconnect
// mends is replaced by a new one that takes over what the old one did not
// deliver. We have no recreate call: the application opens a new stream
// and ingests the old one's Unacked (docs/protocol.md §12.8).
func TestScenarioRecreateArrowStream(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		if conn == 0 {
			return failSecond(conn, frame)
		}
		return act{ack: true}
	}})
	old := scenarioOpen(t, f, arrowstream.WithoutRecovery())
	ctx := testCtx(t)
	if err := old.Wait(ctx, ingestAt(t, ctx, old, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := old.Wait(ctx, ingestAt(t, ctx, old, 1, 1)); err == nil {
		t.Fatal("Wait of the refused batch = nil")
	}
	old.Close(ctx)
	left := old.Unacked()
	s := scenarioOpen(t, f)
	for _, rec := range left {
		if _, err := s.IngestBatch(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 {
		t.Fatalf("%d batches carried over; want 1", len(left))
	}
	landed(t, f, 2)
}

// test_record_based_acknowledgment: batches of 3, 2 and 4 rows are acked
// with the cumulative row counts 3, 5 and 9, which our stream checks
// against the frames it sent (docs/protocol.md §12.4).
func TestScenarioRecordBasedAcknowledgment(t *testing.T) {
	acks := []string{
		`{"ack_up_to_offset":0,"ack_up_to_records":3}`,
		`{"ack_up_to_offset":1,"ack_up_to_records":5}`,
		`{"ack_up_to_offset":2,"ack_up_to_records":9}`,
	}
	_, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act { return act{raw: acks[frame]} }})
	var next int64
	for _, n := range []int64{3, 2, 4} {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, next, n)); err != nil {
			t.Fatalf("Wait of the batch of %d rows = %v", n, err)
		}
		next += n
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// test_partial_batch_recovery: a batch whose first rows were acknowledged
// before the call dropped is replayed from its first unacknowledged row,
// followed by the next batch; the server receives the acknowledged rows
// once and nothing else twice. The row count is the durable boundary
// (§12.4): a partial ack may cover the first frames of a batch split into
// several, or, as the official scenario sends, end inside a frame.
func TestScenarioPartialBatchRecovery(t *testing.T) {
	t.Run("per frame", func(t *testing.T) {
		// Batches of 5, 200 and 1 rows; frames of 1 KiB split the second.
		// The first call acks its first three frames (the first batch and
		// two frames of the second) and drops at the third batch.
		f, s, ctx := scenario(t, &fakeServer{byRows: func(conn, frame int, ids []int64) act {
			if conn > 0 {
				return act{ack: true}
			}
			return act{ack: frame < 3, drop: slices.Contains(ids, 205)}
		}}, arrowstream.WithMaxFrameBytes(1024))
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 5)); err != nil {
			t.Fatal(err)
		}
		second := ingestAt(t, ctx, s, 5, 200)
		third := ingestAt(t, ctx, s, 205, 1)
		for _, off := range []int64{second, third} {
			if err := s.Wait(ctx, off); err != nil {
				t.Fatalf("Wait(%d) = %v", off, err)
			}
		}
		landed(t, f, 206)
		f.mu.Lock()
		defer f.mu.Unlock()
		acked := 0
		for _, conn := range f.ackedOn {
			if conn == 0 {
				acked++
			}
		}
		if acked <= 5 || acked >= 205 {
			t.Fatalf("the first call acked %d rows: want the first batch and part of the second", acked)
		}
		// The first call received every row once; the second exactly the
		// rows the first did not acknowledge.
		if want := 2*206 - acked; len(f.received) != want {
			t.Fatalf("the server received %d rows; want %d (206, then the %d not acknowledged)", len(f.received), want, 206-acked)
		}
	})
	// The official scenario: the row count of an ack ends inside a
	// frame, which is durable in part; the replay starts at its first row
	// not durable, and so do the rows Unacked hands back.
	insideFrame := func(then act) func(conn, frame int) act {
		return func(conn, frame int) act {
			switch {
			case conn > 0:
				return act{ack: true}
			case frame == 0:
				return act{raw: `{"ack_up_to_offset":0,"ack_up_to_records":5}`}
			}
			then.raw = `{"ack_up_to_offset":1,"ack_up_to_records":12}` // 7 of the second batch's 10
			return then
		}
	}
	t.Run("a row count inside a frame", func(t *testing.T) {
		f, s, ctx := scenario(t, &fakeServer{script: insideFrame(act{drop: true})})
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 5)); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 5, 10)); err != nil {
			t.Fatalf("Wait = %v", err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if want := append(span(0, 15), span(12, 15)...); !slices.Equal(f.received, want) {
			t.Fatalf("the server received %v; want 0..14, then only the 3 rows not durable", f.received)
		}
	})
	t.Run("Unacked after a failure inside a frame", func(t *testing.T) {
		_, s, ctx := scenario(t, &fakeServer{script: insideFrame(act{code: codes.InvalidArgument})})
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 5)); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 5, 10)); err == nil {
			t.Fatal("Wait = nil; want the stream failed")
		}
		if u := unackedIDs(s); !slices.EqualFunc(u, [][]int64{span(12, 15)}, slices.Equal) {
			t.Fatalf("Unacked = %v; want the second batch's last 3 rows", u)
		}
	})
}

// test_no_stale_offset_after_non_close_signal_recovery: five batches are
// acked one by one; the call drops at the sixth while a seventh is
// ingested at once. Both land, and the new call numbers its frames from 0
// (the fake server checks every offset_id).
func TestScenarioNoStaleOffsetAfterNonCloseSignalRecovery(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(5)})
	for id := range int64(5) {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	pending := ingestAt(t, ctx, s, 5, 1)
	concurrent := ingestAt(t, ctx, s, 6, 1)
	for _, off := range []int64{pending, concurrent} {
		if err := s.Wait(ctx, off); err != nil {
			t.Fatalf("Wait(%d) = %v", off, err)
		}
	}
	landed(t, f, 7)
}

// test_no_lost_records_during_non_close_signal_recovery: ten goroutines
// ingest a 3-row batch each while the first call drops before any ack;
// every batch becomes durable and every row reaches the server.
func TestScenarioNoLostRecordsDuringNonCloseSignalRecovery(t *testing.T) {
	f := startServer(t, &fakeServer{script: dropAt(0)})
	concurrentBatches(t, f)
}

// concurrentBatches ingests ten 3-row batches from ten goroutines, waits
// for each, and checks that all 30 rows reached f.
func concurrentBatches(t *testing.T, f *fakeServer) {
	t.Helper()
	const tasks, rows = 10, 3
	s := scenarioOpen(t, f)
	ctx := testCtx(t)
	offsets := make([]int64, tasks)
	errs := make([]error, tasks)
	var wg sync.WaitGroup
	for task := range tasks {
		wg.Go(func() {
			rec := batch(int64(task*rows), rows)
			defer rec.Release()
			offsets[task], errs[task] = s.IngestBatch(ctx, rec)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, off := range offsets {
		if err := s.Wait(ctx, off); err != nil {
			t.Fatalf("Wait(%d) = %v", off, err)
		}
	}
	landed(t, f, tasks*rows)
}

// test_ingest_during_reconnect_window_is_not_dropped (a later official
// scenario): a batch ingested while the stream is reconnecting is sent on
// the new call.
func TestScenarioIngestDuringReconnectWindowIsNotDropped(t *testing.T) {
	reached, arrived := gate()
	proceed, release := gate()
	defer release()
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(1), refuse: func(conn int) error {
		if conn == 1 {
			arrived()
			<-proceed
		}
		return nil
	}})
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1)); err != nil {
		t.Fatal(err)
	}
	ingestAt(t, ctx, s, 1, 1) // the call drops at it
	<-reached                 // the reconnect is under way, and held
	during := ingestAt(t, ctx, s, 2, 1)
	release()
	if err := s.Wait(ctx, during); err != nil {
		t.Fatalf("Wait of the batch ingested while reconnecting = %v", err)
	}
	landed(t, f, 3)
}

// test_non_auth_non_retryable_reconnect_failure_terminates (later): the
// call drops, and the new call is refused with a status no reconnect
// mends; the stream fails with that status at once, retries left or not.
func TestScenarioNonAuthNonRetryableReconnectFailureTerminates(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(0), refuse: func(conn int) error {
		if conn == 1 {
			return status.Error(codes.InvalidArgument, "reconnect rejected")
		}
		return nil
	}}, arrowstream.WithRetries(5))
	err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1))
	var re *zbstream.RetryError
	if code, msg := statusOf(err); code != codes.InvalidArgument || msg != "reconnect rejected" || errors.As(err, &re) {
		t.Fatalf("Wait = %v; want the reconnect's INVALID_ARGUMENT itself", err)
	}
	if conns := f.counts().conns; conns != 2 {
		t.Fatalf("%d calls; want 2", conns)
	}
}

// test_retryable_reconnect_failure_exhausted_surfaces_real_error (later):
// every reconnect is refused with UNAVAILABLE; once the retries are spent
// the stream fails with an error that carries the last refusal.
func TestScenarioRetryableReconnectFailureExhaustedSurfacesRealError(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(0), refuse: func(conn int) error {
		if conn > 0 {
			return status.Error(codes.Unavailable, "reconnect unavailable")
		}
		return nil
	}}, arrowstream.WithRetries(2))
	err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1))
	var re *zbstream.RetryError
	if !errors.As(err, &re) || re.Attempts != 2 {
		t.Fatalf("Wait = %v; want a RetryError after 2 attempts", err)
	}
	if code, msg := statusOf(re.Last); code != codes.Unavailable || msg != "reconnect unavailable" {
		t.Fatalf("last cause %v; want the refusal's UNAVAILABLE", re.Last)
	}
	if conns := f.counts().conns; conns != 3 {
		t.Fatalf("%d calls; want 3", conns)
	}
}

// test_initial_non_auth_permanent_error_is_not_retried (later): a first
// call refused with a status no reconnect mends fails New with it, after
// one call.
func TestScenarioInitialNonAuthPermanentErrorIsNotRetried(t *testing.T) {
	f := startServer(t, &fakeServer{refuse: func(int) error {
		return status.Error(codes.InvalidArgument, "invalid initial schema")
	}})
	_, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", testSchema, arrowstream.WithRetries(5))
	if code, msg := statusOf(err); code != codes.InvalidArgument || msg != "invalid initial schema" {
		t.Fatalf("New = %v; want the refusal", err)
	}
	if conns := f.counts().conns; conns != 1 {
		t.Fatalf("%d calls; want 1", conns)
	}
}

// wideBatchOf returns rows with ids from .. from+n-1 whose names are size
// bytes long: the official chunking scenarios' 10,500 rows of 200 bytes
// make a batch just over 2 MiB.
func wideBatchOf(from, n int64, size int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	pad := strings.Repeat("x", size)
	for id := from; id < from+n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		name := fmt.Sprintf("%d-%s", id, pad)
		b.Field(1).(*array.StringBuilder).Append(name[:size])
	}
	return b.NewRecordBatch()
}

const largeRows, largeRowBytes = 10_500, 200

// test_large_batch_is_split_into_chunks and
// test_large_ipc_batch_is_split_into_chunks: a batch over 2 MiB, given as
// a record batch or as IPC bytes, goes out as two frames or more (frame
// offsets 0 and up), none over MaxFrameBytes.
func TestScenarioLargeBatchIsSplitIntoChunks(t *testing.T) {
	for _, asIPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("ipc=%t", asIPC), func(t *testing.T) {
			f, s, ctx := scenario(t, &fakeServer{})
			rec := wideBatchOf(0, largeRows, largeRowBytes)
			defer rec.Release()
			var off int64
			var err error
			if asIPC {
				off, err = s.IngestIPC(ctx, ipcBytes(t, testSchema, rec))
			} else {
				off, err = s.IngestBatch(ctx, rec)
			}
			if err != nil || off != 0 {
				t.Fatalf("ingest = %d, %v", off, err)
			}
			if err := s.Wait(ctx, off); err != nil {
				t.Fatal(err)
			}
			checkSplit(t, f, 2)
			landed(t, f, largeRows)
		})
	}
}

// checkSplit checks that f received at least min frames, none over
// MaxFrameBytes.
func checkSplit(t *testing.T, f *fakeServer, min int) {
	t.Helper()
	if k := f.counts(); k.frames < min || k.maxFrame > arrowstream.MaxFrameBytes {
		t.Fatalf("%d frames, the largest %d bytes; want at least %d, none over %d", k.frames, k.maxFrame, min, arrowstream.MaxFrameBytes)
	}
}

// test_large_batch_chunking_preserved_on_recovery: the call drops at the
// first frame of a batch over 2 MiB; the replay splits it again, so the
// server receives one frame, then two or more.
func TestScenarioLargeBatchChunkingPreservedOnRecovery(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(0)})
	rec := wideBatchOf(0, largeRows, largeRowBytes)
	defer rec.Release()
	off, err := s.IngestBatch(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, off); err != nil {
		t.Fatalf("Wait across the reconnect = %v", err)
	}
	checkSplit(t, f, 3)
	if got := f.framesOn(); len(got) != 2 || got[0] != 1 || got[1] < 2 {
		t.Fatalf("frames per call %v; want [1 n] with n >= 2", got)
	}
	landed(t, f, largeRows)
}

// test_forward_acknowledgement_is_terminal_with_recovery_enabled (later):
// an ack that counts more rows than were sent fails the stream even with
// recovery enabled, and nothing is sent again.
func TestScenarioForwardAcknowledgementIsTerminalWithRecoveryEnabled(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		return act{raw: `{"ack_up_to_offset":0,"ack_up_to_records":3}`}
	}}, arrowstream.WithRetries(3))
	err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 2))
	var pe *arrowstream.ProtocolError
	if !errors.As(err, &pe) || pe.Rule != arrowstream.RowsMismatch || !errors.Is(err, zbstream.ErrProtocol) {
		t.Fatalf("Wait = %v; want a ProtocolError (RowsMismatch)", err)
	}
	if k := f.counts(); k.conns != 1 || k.frames != 1 {
		t.Fatalf("%d calls, %d frames; want the batch sent once", k.conns, k.frames)
	}
}
