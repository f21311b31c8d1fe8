package arrowstream_test

// Scenarios the official Rust suite added after the version that
// docs/testing.md's first table follows (see scenarios_test.go): empty
// batches, waits and closes around a failure, the ack timer's start, the
// window, Unacked of a partly acknowledged batch, and the largest
// timeouts.

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// test_ingest_empty_batch_rejected: a batch of no rows is refused (it
// could never be acknowledged), and nothing is sent.
func TestScenarioIngestEmptyBatchRejected(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s := scenarioOpen(t, f)
	empty := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer empty.Release()
	rec := empty.NewRecordBatch()
	defer rec.Release()
	if _, err := s.IngestBatch(testCtx(t), rec); err == nil {
		t.Fatal("IngestBatch of no rows accepted")
	}
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatalf("Flush after the refusal = %v", err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent", n)
	}
}

// test_wait_for_offset_acked_wins_over_terminal_close and
// test_close_returns_terminal_error_after_background_failure: the first
// batch is acked, the call fails for good at the second. Wait of the
// second returns the failure; Wait of the first, asked after, still
// returns nil. Close of the failed stream returns nil where the official
// SDK returns the failure again (§12.8); the failure stays what every
// later call returns.
func TestScenarioWaitForOffsetAckedWinsOverTerminalClose(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{script: failSecond}, arrowstream.WithoutRecovery())
	first := ingestAt(t, ctx, s, 0, 1)
	second := ingestAt(t, ctx, s, 1, 1)
	err := s.Wait(ctx, second)
	if !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("Wait(second) = %v; want the failure", err)
	}
	if err := s.Wait(ctx, first); err != nil {
		t.Fatalf("Wait(first) after the failure = %v; want nil, it was acked", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close of a failed stream = %v; want nil (§12.8)", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("Flush after the failure = %v; want it", err)
	}
}

// test_close_propagates_flush_error and
// test_cancelled_close_rejects_ingest_and_resumes_teardown: a Close whose
// bound passes with an ack held returns ErrCloseTimeout, ends the stream
// (ingest refused) and leaves the batch in Unacked. A second Close returns
// nil: the stream had failed before it (§12.8).
func TestScenarioClosePropagatesFlushError(t *testing.T) {
	hold, release := gate()
	defer release()
	_, s, ctx := scenario(t, &fakeServer{script: holdAll(hold)})
	ingestAt(t, ctx, s, 0, 1)
	if err := s.Close(briefly(t, ctx)); !errors.Is(err, zbstream.ErrCloseTimeout) {
		t.Fatalf("Close with the ack held = %v; want ErrCloseTimeout", err)
	}
	if _, err := s.IngestBatch(ctx, batch(1, 1)); err == nil {
		t.Fatal("IngestBatch after a failed Close accepted")
	}
	if u := unackedIDs(s); !slices.EqualFunc(u, [][]int64{{0}}, slices.Equal) {
		t.Fatalf("Unacked = %v; want the held batch", u)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// test_flush_on_closed_empty_stream_errors: the official SDK's Flush on a
// closed stream fails; ours waits for the batches accepted before it, and
// with none returns nil (§12.8).
func TestScenarioFlushOnClosedEmptyStream(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush of a closed stream with nothing accepted = %v", err)
	}
}

// test_ack_timeout_starts_when_batch_becomes_pending: a stream idle for
// longer than its ack timeout does not fail the first batch after: the
// timer starts when a frame is in flight, not at the last ack.
func TestScenarioAckTimeoutStartsWhenBatchBecomesPending(t *testing.T) {
	const ackTimeout = 100 * time.Millisecond
	f, s, ctx := scenario(t, &fakeServer{}, arrowstream.WithoutRecovery(), arrowstream.WithTimeouts(0, ackTimeout, 0))
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ackTimeout) // idle: no frame in flight
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 1, 1)); err != nil {
		t.Fatalf("Wait after an idle spell = %v", err)
	}
	landed(t, f, 2)
}

// test_max_inflight_batches_blocks_until_ack and
// test_max_inflight_batches_zero_rejected: with room for one batch, a
// second ingest waits until the first is acknowledged; a window of no
// batch is refused when the stream opens.
func TestScenarioMaxInflightBatches(t *testing.T) {
	hold, release := gate()
	defer release()
	f, s, ctx := scenario(t, &fakeServer{script: holdAll(hold)}, arrowstream.WithMaxInflight(1, arrowstream.DefaultMaxInflightBytes))
	ingestAt(t, ctx, s, 0, 1)
	if _, err := s.IngestBatch(briefly(t, ctx), batch(1, 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second IngestBatch with the first unacked = %v; want it waiting", err)
	}
	release()
	if off := ingestAt(t, ctx, s, 1, 1); off != 1 {
		t.Fatalf("offset %d; want 1", off)
	}
	flushLanded(t, ctx, s, f, 2)

	_, err := arrowstream.New(ctx, client(t, f), "main.default.t", testSchema, arrowstream.WithMaxInflight(0, 1<<20))
	var ce *zbstream.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New with a window of 0 batches = %v; want a ConfigError", err)
	}
}

// test_get_unacked_batches_slices_partially_acked and
// test_get_unacked_batches_idempotent: after a failure, a batch whose
// first rows were acknowledged comes back from Unacked as its
// unacknowledged suffix, the next batch whole, and the same again on a
// second call. Our acks are per frame (§12.4), so the acknowledged prefix
// is the first frame of a batch split into several.
func TestScenarioGetUnackedBatchesSlicesPartiallyAcked(t *testing.T) {
	// The failure at the second frame waits until both batches are in.
	hold, release := gate()
	defer release()
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		if frame == 0 {
			return act{ack: true}
		}
		return act{hold: hold, code: codes.InvalidArgument}
	}}, arrowstream.WithoutRecovery(), arrowstream.WithMaxFrameBytes(1024))
	ingestAt(t, ctx, s, 0, 60) // frames of 1 KiB: several
	second := ingestAt(t, ctx, s, 60, 1)
	release()
	if err := s.Wait(ctx, second); err == nil {
		t.Fatal("Wait after the failure = nil")
	}
	f.mu.Lock()
	acked := int64(len(f.acked))
	f.mu.Unlock()
	if acked == 0 || acked >= 60 {
		t.Fatalf("%d rows acked: want the first frame of the first batch", acked)
	}
	want := [][]int64{span(acked, 60), {60}}
	for i := range 2 {
		if u := unackedIDs(s); !slices.EqualFunc(u, want, slices.Equal) {
			t.Fatalf("Unacked (call %d) = %v; want %v", i+1, u, want)
		}
	}
}

// test_unrepresentable_recovery_timeout_is_rejected and
// test_unrepresentable_ack_timeout_is_rejected: the official SDK refuses
// timeouts its clock cannot add; ours takes the largest durations as
// they are, and a stream with them works, rotation included.
func TestScenarioLargestTimeouts(t *testing.T) {
	// The second ack carries a close duration of 0: the third batch goes
	// out on a new call.
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		return act{ack: true, closeInAck: conn == 0 && frame == 1}
	}})
	huge := time.Duration(math.MaxInt64)
	s := scenarioOpen(t, f, arrowstream.WithTimeouts(huge, huge, huge), arrowstream.WithMaxGrace(huge))
	ctx := testCtx(t)
	for id := range int64(3) {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, id, 1)); err != nil {
			t.Fatalf("Wait(%d) = %v", id, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.framesOn(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("frames per call %v; want [2 1]", got)
	}
	landed(t, f, 3)
}

// test_ingest_rejects_variant_marker_schema_mismatch: a batch whose
// columns are the stream's but whose field metadata (there, the Parquet
// variant marker) differs is refused: metadata is part of the schema
// (§12.7).
func TestScenarioIngestRejectsFieldMetadataMismatch(t *testing.T) {
	f := startServer(t, &fakeServer{})
	marked := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{"ARROW:extension:name"}, []string{"arrow.parquet.variant"})},
	}, nil)
	s, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", marked)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(testCtx(t))
	rec := batch(0, 1) // the same columns, without the marker
	defer rec.Release()
	if _, err := s.IngestBatch(testCtx(t), rec); !errors.Is(err, arrowstream.ErrSchemaMismatch) {
		t.Fatalf("IngestBatch without the field's metadata = %v; want ErrSchemaMismatch", err)
	}
}

// test_close_during_reconnect_rebuild_window_slices_correctly and
// test_close_during_reconnect_window_moves_pending_to_failed: the first
// frame of a batch is acked, the call drops at its next frame, and Close
// comes while the reconnect is held. Close returns when its bound passes;
// Unacked holds the batch's suffix after the acked frame and the next
// batch whole.
func TestScenarioCloseDuringReconnectWindow(t *testing.T) {
	reached, arrived := gate()
	proceed, release := gate()
	defer release()
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		return act{ack: frame == 0, drop: frame == 1}
	}, refuse: func(conn int) error {
		if conn == 1 {
			arrived()
			<-proceed
		}
		return nil
	}}, arrowstream.WithMaxFrameBytes(1024))
	ingestAt(t, ctx, s, 0, 60) // several frames
	ingestAt(t, ctx, s, 60, 1)
	<-reached
	if err := s.Close(briefly(t, ctx)); !errors.Is(err, zbstream.ErrCloseTimeout) {
		t.Fatalf("Close during the reconnect = %v; want ErrCloseTimeout", err)
	}
	release()
	f.mu.Lock()
	acked := int64(len(f.acked))
	f.mu.Unlock()
	if acked == 0 || acked >= 60 {
		t.Fatalf("%d rows acked: want the first frame", acked)
	}
	if u, want := unackedIDs(s), [][]int64{span(acked, 60), {60}}; !slices.EqualFunc(u, want, slices.Equal) {
		t.Fatalf("Unacked = %v; want %v", u, want)
	}
}

// test_setup_schema_validation_error_surfaces_invalid_schema and
// test_reconnect_schema_validation_error_surfaces_invalid_schema: the
// server refuses the schema with a status that carries an ErrorInfo (the
// causes). The official SDK turns it into an error type of its own; ours
// keeps the status, details included, as the error's cause, at the first
// open and at a reconnect alike.
func TestScenarioSchemaValidationErrorKeepsItsDetails(t *testing.T) {
	// The official server's detail is a google.rpc.ErrorInfo; a Struct of
	// the same fields stands for it (this module does not depend on the
	// googleapis types).
	info, err := structpb.NewStruct(map[string]any{
		"reason": "SCHEMA_VALIDATION_FAILED",
		"causes": "FIELD_NOT_IN_TABLE,MISSING_REQUIRED_COLUMN",
	})
	if err != nil {
		t.Fatal(err)
	}
	refusal, err := status.New(codes.InvalidArgument, "Arrow Flight schema validation failed").WithDetails(protoadapt.MessageV1Of(info))
	if err != nil {
		t.Fatal(err)
	}
	causes := func(err error) string {
		var ce *zbstream.ConnectionError
		if !errors.As(err, &ce) {
			return ""
		}
		st, _ := status.FromError(ce.Err)
		for _, d := range st.Details() {
			if got, ok := d.(*structpb.Struct); ok && got.Fields["reason"].GetStringValue() == "SCHEMA_VALIDATION_FAILED" {
				return got.Fields["causes"].GetStringValue()
			}
		}
		return ""
	}
	const want = "FIELD_NOT_IN_TABLE,MISSING_REQUIRED_COLUMN"

	f := startServer(t, &fakeServer{refuse: func(int) error { return refusal.Err() }})
	_, err = arrowstream.New(testCtx(t), client(t, f), "main.default.t", testSchema)
	if got := causes(err); got != want {
		t.Fatalf("New = %v; want the refusal with its causes", err)
	}

	f = startServer(t, &fakeServer{script: dropAt(1), refuse: func(conn int) error {
		if conn == 1 {
			return refusal.Err()
		}
		return nil
	}})
	s := scenarioOpen(t, f)
	ctx := testCtx(t)
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, ingestAt(t, ctx, s, 1, 1)); causes(err) != want {
		t.Fatalf("Wait across the refused reconnect = %v; want the refusal with its causes", err)
	}
	if err := s.Flush(ctx); causes(err) != want {
		t.Fatalf("Flush after = %v; want the same", err)
	}
}
