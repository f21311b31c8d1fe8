package arrowstream_test

// The official Arrow Flight scenarios of the server's close signal, a
// rotation notice in our words (docs/protocol.md §12.5): see
// scenarios_test.go. No test measures time: a grace the stream must not
// wait out is ten minutes long, beyond the tests' one-minute context.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream/arrowstream"
)

// tenMinutes is a grace, in ms, that no passing test waits out.
const tenMinutes = 600_000

// test_default_graceful_close_waits_for_full_server_duration (later
// renamed test_server_rotation_half_closes_before_reconnect): two batches
// are acked; the server answers the third with a close-only notice. The
// stream keeps the call for the grace: an ack that follows the notice is
// taken there and nothing is sent again. When the grace ends with the
// third batch unacknowledged, the stream moves to a new call and replays
// it there.
func TestScenarioDefaultGracefulCloseWaitsForFullServerDuration(t *testing.T) {
	t.Run("the ack comes within the grace", func(t *testing.T) {
		// The ack comes 100 ms after the notice: a stream that left at
		// once would have replayed the batch on a new call by then.
		f := startServer(t, &fakeServer{script: func(conn, frame int) act {
			if conn == 0 && frame == 2 {
				late, release := gate()
				time.AfterFunc(100*time.Millisecond, release)
				return act{ack: true, rotate: true, grace: tenMinutes, lateAck: true, hold: late}
			}
			return act{ack: true}
		}})
		s := threeBatches(t, f)
		if err := s.Close(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		for id, k := range landed(t, f, 9) {
			if k != 1 {
				t.Fatalf("row %d arrived %d times: the ack after the notice was not taken", id, k)
			}
		}
	})
	t.Run("the grace ends first", func(t *testing.T) {
		f := startServer(t, &fakeServer{script: func(conn, frame int) act {
			if conn == 0 && frame == 2 {
				return act{rotate: true, grace: 100}
			}
			return act{ack: true}
		}})
		threeBatches(t, f)
		if got := f.framesOn(); !slices.Equal(got, []int{3, 1}) {
			t.Fatalf("frames per call %v; want [3 1]: the third batch replayed on a new call", got)
		}
		landed(t, f, 9)
	})
}

// threeBatches ingests three batches of three rows into a new stream to
// f, waiting for each, and returns the stream.
func threeBatches(t *testing.T, f *fakeServer) *arrowstream.Stream {
	t.Helper()
	s := scenarioOpen(t, f)
	ctx := testCtx(t)
	for i := range int64(3) {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 3*i, 3)); err != nil {
			t.Fatalf("Wait(%d) = %v", i, err)
		}
	}
	return s
}

// test_immediate_recovery_on_close_signal (stream_paused_max_wait_time_ms
// 0; later test_zero_ack_wait_still_half_closes) and
// test_client_max_less_than_server: the grace a notice asks for is capped
// by the stream's maximum (WithMaxGrace): with 0 the stream leaves at
// once, with 100 ms after that, not after the notice's ten minutes, and
// replays the unacknowledged batch on the new call.
func TestScenarioClientMaxGraceBelowServers(t *testing.T) {
	for _, limit := range []time.Duration{0, 100 * time.Millisecond} {
		f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
			if conn == 0 && frame == 1 {
				return act{rotate: true, grace: tenMinutes}
			}
			return act{ack: true}
		}}, arrowstream.WithMaxGrace(limit))
		for id := range int64(2) {
			if err := s.Wait(ctx, ingestAt(t, ctx, s, id, 1)); err != nil {
				t.Fatalf("max grace %v: Wait(%d) = %v", limit, id, err)
			}
		}
		if got := f.framesOn(); !slices.Equal(got, []int{2, 1}) {
			t.Fatalf("max grace %v: frames per call %v; want [2 1]", limit, got)
		}
		landed(t, f, 2)
	}
}

// test_all_acked_during_graceful_close_exits_early and
// test_ingest_accepted_during_graceful_close: an ack that carries a
// ten-minute close duration leaves nothing in flight, so the stream leaves
// the call at once; a batch ingested after it is accepted, with the next
// offset, and sent only on the new call.
func TestScenarioAllAckedDuringGracefulCloseExitsEarly(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		return act{ack: true, closeInAck: conn == 0 && frame == 1, grace: tenMinutes}
	}})
	for id := range int64(2) {
		if err := s.Wait(ctx, ingestAt(t, ctx, s, id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	off := ingestAt(t, ctx, s, 2, 1)
	if off != 2 {
		t.Fatalf("offset after the notice %d; want 2", off)
	}
	if err := s.Wait(ctx, off); err != nil {
		t.Fatal(err)
	}
	if got := f.framesOn(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("frames per call %v; want [2 1]: the batch after the notice on the new call only", got)
	}
	landed(t, f, 3)
}

// test_no_lost_records_during_close_signal_recovery: ten goroutines ingest
// a 3-row batch each while the server answers the first frame with a
// close-only notice (100 ms) and acks nothing on that call; every batch
// becomes durable on the next call.
func TestScenarioNoLostRecordsDuringCloseSignalRecovery(t *testing.T) {
	f := startServer(t, &fakeServer{script: func(conn, frame int) act {
		if conn == 0 {
			return act{rotate: frame == 0, grace: 100}
		}
		return act{ack: true}
	}})
	concurrentBatches(t, f)
}

// test_zero_server_grace_uses_bounded_local_drain and
// test_server_rotation_without_recovery_still_half_closes (later): a
// notice of grace 0 moves the stream to a new call at once, which replays
// the batch. With recovery disabled too: a rotation is no failure
// (§12.5), where the official SDK fails the stream (§12.8).
func TestScenarioZeroServerGrace(t *testing.T) {
	for _, opts := range [][]arrowstream.Option{nil, {arrowstream.WithoutRecovery()}} {
		f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
			return act{ack: conn > 0, rotate: conn == 0}
		}}, opts...)
		if err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 3)); err != nil {
			t.Fatalf("recovery disabled %t: Wait = %v", opts != nil, err)
		}
		if got := f.framesOn(); !slices.Equal(got, []int{1, 1}) {
			t.Fatalf("frames per call %v; want [1 1]", got)
		}
		landed(t, f, 3)
	}
}

// test_post_eof_permanent_error_is_preserved (later): after a notice, the
// server ends the call with a status no reconnect mends; that is a
// failure like any other (§4.4), not the end of a rotation.
func TestScenarioPostEOFPermanentErrorIsPreserved(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		return act{rotate: true, grace: tenMinutes, code: codes.InvalidArgument}
	}})
	err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 3))
	if code, _ := statusOf(err); code != codes.InvalidArgument {
		t.Fatalf("Wait = %v; want the INVALID_ARGUMENT that ended the call", err)
	}
	if conns := f.counts().conns; conns != 1 {
		t.Fatalf("%d calls; want 1", conns)
	}
}

// test_invalid_close_ack_still_half_closes_request (later): an ack with a
// close duration that counts more rows than its frame holds fails the
// stream; nothing is sent again.
func TestScenarioInvalidCloseAck(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act {
		return act{raw: `{"ack_up_to_offset":0,"ack_up_to_records":4,"close_stream_duration_ms":1000}`}
	}})
	err := s.Wait(ctx, ingestAt(t, ctx, s, 0, 3))
	var pe *arrowstream.ProtocolError
	if !errors.As(err, &pe) || pe.Rule != arrowstream.RowsMismatch {
		t.Fatalf("Wait = %v; want RowsMismatch", err)
	}
	if k := f.counts(); k.conns != 1 || k.frames != 1 {
		t.Fatalf("%d calls, %d frames; want 1 and 1", k.conns, k.frames)
	}
}
