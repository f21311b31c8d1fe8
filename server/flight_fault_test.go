package server_test

// Faults injected on Arrow Flight DoPut calls (docs/server.md, "Faults on
// Arrow streams"), seen by a client that sends frames by hand.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// faultFrames are 5 data frames of 2 rows each, offsets 0 to 4.
func faultFrames(t *testing.T) []*flight.FlightData {
	t.Helper()
	var fds []*flight.FlightData
	for i := range 5 {
		rec := allTypesRows(t, 2*i, 2)
		fds = append(fds, batchFrame(t, rec, offsetMeta(i)))
		rec.Release()
	}
	return fds
}

// ack is the app_metadata of an ack of frames 0..off, 2 rows each.
func ack(off int) string {
	return fmt.Sprintf(`{"ack_up_to_offset":%d,"ack_up_to_records":%d}`, off, 2*(off+1))
}

const ready = `{"ack_up_to_offset":-1,"ack_up_to_records":0}`

// arrowCounts returns the counts of the one Arrow stream of ts.
func arrowCounts(t *testing.T, ctx context.Context, ts *servertest.Server) server.ArrowCounts {
	t.Helper()
	id := arrowStream(t, ctx, ts).ID
	c, ok := ts.ArrowCounts(id)
	if !ok {
		t.Fatalf("no counts for stream %s", id)
	}
	return c
}

// TestArrowFaultsAtFrames: each connection-ending kind, at the 3rd data
// frame of a call that sends 5 back to back (the server may take them
// together), stores and acknowledges what the kind says, whatever the
// grouping, and ends the call with its code; the counts say so.
func TestArrowFaultsAtFrames(t *testing.T) {
	cases := []struct {
		f              server.Fault
		lastAck        string // the last PutResult ("": any ack up to frame 1, or only the ready signal)
		code           codes.Code
		stored, acked  int64 // frames
		wantMsgContain string
	}{
		{server.Fault{Kind: server.FaultDrop, After: 3}, ack(2), codes.Unavailable, 3, 3, "connection dropped"},
		{server.Fault{Kind: server.FaultDrop, After: 3, Code: codes.InvalidArgument, Message: "refused"}, ack(2), codes.InvalidArgument, 3, 3, "refused"},
		{server.Fault{Kind: server.FaultDiscardThenDrop, After: 3}, ack(1), codes.Unavailable, 2, 2, "discarded"},
		{server.Fault{Kind: server.FaultPartialAck, After: 3}, ack(1), codes.Unavailable, 3, 2, "without ack"},
		{server.Fault{Kind: server.FaultCommitThenDrop, After: 3}, "", codes.Unavailable, 3, -1, "before ack"},
		{server.Fault{Kind: server.FaultDrop}, ready, codes.Unavailable, 0, 0, "connection dropped"},
		{server.Fault{Kind: server.FaultPartialAck}, ready, codes.Unavailable, 1, 0, "without ack"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/after=%d/%v", c.f.Kind, c.f.After, c.f.Code), func(t *testing.T) {
			ts := startServer(t)
			ctx := arrowCtx(t, ts)
			h := ts.Inject(server.Match{Table: ts.Table}, c.f)
			acks, err := servertest.PutFrames(ctx, ts.Flight(t), append([]*flight.FlightData{schemaFrame(allTypes)}, faultFrames(t)...)...)
			expectCode(t, err, c.code)
			if !strings.Contains(err.Error(), c.wantMsgContain) {
				t.Errorf("status %v, want a message with %q", err, c.wantMsgContain)
			}
			if h.Hits() != 1 || !h.Spent() {
				t.Errorf("fault acted %d times, spent %v", h.Hits(), h.Spent())
			}
			last := acks[len(acks)-1]
			if c.lastAck != "" && last != c.lastAck {
				t.Errorf("acks %q: the last is not %s", acks, c.lastAck)
			}
			if c.lastAck == "" && !slices.Contains([]string{ready, ack(0), ack(1)}, last) {
				t.Errorf("acks %q: the last covers frame 2, which had no ack", acks)
			}
			n := arrowCounts(t, ctx, ts)
			acked := c.acked
			if acked < 0 { // CommitThenDrop: what the last ack covered
				acked = map[string]int64{ready: 0, ack(0): 1, ack(1): 2}[last]
			}
			if n.FramesStored != c.stored || n.RowsStored != 2*c.stored || n.FramesAcked != acked || n.RowsAcked != 2*acked ||
				n.FramesReceived < c.stored || n.RowsReceived != 2*n.FramesReceived || n.FramesReceived > 5 {
				t.Errorf("counts %+v: want %d frames stored, %d acked, received at least those", n, c.stored, acked)
			}
			m := arrowStream(t, ctx, ts)
			if m.Records != c.stored {
				t.Errorf("%d frames in the store, want %d", m.Records, c.stored)
			}
		})
	}
}

// TestArrowFailOpen: a FailOpen fault refuses the schema frame with its
// code: no ready signal, no stream; the next call opens.
func TestArrowFailOpen(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultFailOpen, Code: codes.ResourceExhausted})
	acks, err := servertest.PutFrames(ctx, ts.Flight(t), schemaFrame(allTypes))
	expectCode(t, err, codes.ResourceExhausted)
	if len(acks) != 0 {
		t.Fatalf("acks %q before a refused open", acks)
	}
	if metas, _ := ts.Streams(ctx); len(metas) != 0 {
		t.Fatalf("streams %+v after a refused open", metas)
	}
	if acks, err := servertest.PutFrames(ctx, ts.Flight(t), schemaFrame(allTypes)); err != nil || !slices.Equal(acks, []string{ready}) {
		t.Fatalf("the next call: %q, %v", acks, err)
	}
}

// step sends frames one at a time on an Arrow call and reads, after frame
// i, reads[i] PutResults (1 when reads is short), then half-closes and
// reads until the end: the transcript of what the client saw.
func step(t *testing.T, ts *servertest.Server, ctx context.Context, frames []*flight.FlightData, reads ...int) []string {
	t.Helper()
	st := openArrow(t, ts, ctx, allTypes)
	var tr []string
	for i, fd := range frames {
		if err := st.Send(fd); err != nil {
			t.Fatal(err)
		}
		n := 1
		if i < len(reads) {
			n = reads[i]
		}
		for range n {
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("after frame %d: %v (so far %q)", i, err, tr)
			}
			tr = append(tr, string(r.AppMetadata))
		}
	}
	if err := expectEnd(t, st); err != nil {
		tr = append(tr, "end: "+err.Error())
	}
	return tr
}

// TestArrowAckFaults: the ack kinds on a call whose frames go one at a
// time, each read back before the next: the transcript is exact.
func TestArrowAckFaults(t *testing.T) {
	closeOnly := `{"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":3600000}`
	cases := []struct {
		f     server.Fault
		reads []int
		want  []string
		acked int64
	}{
		// The ack of the last frame is lost (a frame sent while the
		// server holds others is acknowledged with them: a lost ack in
		// the middle would be hidden by the next).
		{server.Fault{Kind: server.FaultLoseAcks, After: 5}, []int{1, 1, 1, 1, 0}, []string{ack(0), ack(1), ack(2), ack(3)}, 4},
		{server.Fault{Kind: server.FaultRepeatAcks, After: 2, Repeat: 2}, []int{1, 3}, []string{ack(0), ack(1), ack(1), ack(1), ack(2), ack(3), ack(4)}, 5},
		{server.Fault{Kind: server.FaultDelayAcks, After: 4, Delay: time.Millisecond}, nil, []string{ack(0), ack(1), ack(2), ack(3), ack(4)}, 5},
		// Above the highest frame received (1) by 10; the next acks are true.
		{server.Fault{Kind: server.FaultAckAboveSent, After: 2, Above: 10}, nil,
			[]string{ack(0), `{"ack_up_to_offset":11,"ack_up_to_records":4}`, ack(2), ack(3), ack(4)}, 5},
		// The close-only notice follows the ack of frame 1; the frames
		// sent within the grace are still stored and acknowledged.
		{server.Fault{Kind: server.FaultCloseSignal, After: 2, Delay: time.Hour}, []int{1, 2}, []string{ack(0), ack(1), closeOnly, ack(2), ack(3), ack(4)}, 5},
	}
	for _, c := range cases {
		t.Run(c.f.Kind.String(), func(t *testing.T) {
			ts := startServer(t)
			ctx := arrowCtx(t, ts)
			ts.Inject(server.Match{}, c.f)
			got := step(t, ts, ctx, faultFrames(t), c.reads...)
			if !slices.Equal(got, c.want) {
				t.Fatalf("transcript\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(c.want, "\n\t"))
			}
			if n := arrowCounts(t, ctx, ts); n.FramesAcked != c.acked || n.FramesStored != 5 || n.FramesReceived != 5 || n.RowsReceived != 10 {
				t.Errorf("counts %+v", n)
			}
		})
	}
}

// TestArrowCloseSignalEnds: a close signal with no grace ends the call
// with OK after the notice; frames acknowledged before it stay stored.
func TestArrowCloseSignalEnds(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	ts.Inject(server.Match{}, server.Fault{Kind: server.FaultCloseSignal, After: 1})
	st := openArrow(t, ts, ctx, allTypes)
	if err := st.Send(faultFrames(t)[0]); err != nil {
		t.Fatal(err)
	}
	expectAck(t, st, ack(0))
	expectAck(t, st, `{"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":0}`)
	if err := expectEnd(t, st); err != nil {
		t.Fatalf("the rotated call ended with %v, want OK", err)
	}
	if m := arrowStream(t, ctx, ts); m.Records != 1 {
		t.Fatalf("%d frames stored, want 1", m.Records)
	}
}

// TestArrowFaultHold: a held fault does not act until its Hold is
// closed, and the call's end releases the wait: here the client gives up,
// and the Drop never stores the frame it would have acknowledged.
func TestArrowFaultHold(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	hold := make(chan struct{})
	defer close(hold)
	h := ts.Inject(server.Match{}, server.Fault{Kind: server.FaultDrop, After: 1, Hold: hold})
	callCtx, cancel := context.WithCancel(ctx)
	st := openArrow(t, ts, callCtx, allTypes)
	if err := st.Send(faultFrames(t)[0]); err != nil {
		t.Fatal(err)
	}
	<-h.Fired()
	id := arrowStream(t, ctx, ts).ID
	cancel()
	if _, err := st.Recv(); err == nil {
		t.Fatal("a PutResult from a held fault")
	}
	// The handler leaves the wait: the stop waits for it.
	ts.Stop()
	if n, _ := ts.ArrowCounts(id); n.FramesStored != 0 || n.FramesAcked != 0 || n.FramesReceived != 1 {
		t.Fatalf("counts %+v: the held Drop acted", n)
	}
}

// TestArrowCountsKept: the counts of ended calls are kept, the live
// ones' while they run; an unknown id has none.
func TestArrowCountsKept(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	for range 3 {
		if _, err := servertest.PutFrames(ctx, ts.Flight(t), append([]*flight.FlightData{schemaFrame(allTypes)}, faultFrames(t)[:2]...)...); err != nil {
			t.Fatal(err)
		}
	}
	metas, err := ts.Streams(ctx)
	if err != nil || len(metas) != 3 {
		t.Fatalf("%d streams, %v", len(metas), err)
	}
	want := server.ArrowCounts{FramesReceived: 2, RowsReceived: 4, FramesStored: 2, RowsStored: 4, FramesAcked: 2, RowsAcked: 4}
	for _, m := range metas {
		if n, ok := ts.ArrowCounts(m.ID); !ok || n != want {
			t.Errorf("%s: %+v, %v; want %+v", m.ID, n, ok, want)
		}
	}
	if _, ok := ts.ArrowCounts("as-nothing"); ok {
		t.Error("counts for an unknown stream")
	}
}

// failingStore fails every Append once fail is set.
type failingStore struct {
	server.Store
	fail atomic.Bool
}

func (s *failingStore) Append(ctx context.Context, id string, batches []server.Batch) error {
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return s.Store.Append(ctx, id, batches)
}

// TestArrowStoreFailureEndsTheCall: a frame the store cannot append is
// not acknowledged, and the call ends with INTERNAL at once (a client
// that sends more meets the end).
func TestArrowStoreFailureEndsTheCall(t *testing.T) {
	fs := &failingStore{Store: server.NewMemoryStore()}
	defer fs.Close()
	ts := startServer(t, servertest.WithStore(fs))
	ctx := arrowCtx(t, ts)
	st := openArrow(t, ts, ctx, allTypes)
	frames := faultFrames(t)
	if err := st.Send(frames[0]); err != nil {
		t.Fatal(err)
	}
	expectAck(t, st, ack(0))
	fs.fail.Store(true)
	if err := st.Send(frames[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("after a failed append: %v, want INTERNAL naming the store's error", err)
	}
}
