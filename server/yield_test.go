package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// yieldServer starts a server whose receive budget holds one read at a
// time (a read holds the largest message or the whole budget, whichever
// is smaller), so that a call waiting for a message keeps every other
// call from being read until it is asked to yield.
func yieldServer(t *testing.T) *servertest.Server {
	t.Helper()
	server.SetPreemptAfter(t, 100*time.Millisecond)
	return startServer(t, servertest.WithOptions(func(o *server.Options) {
		o.ReceiveBudget = 1 << 20
		o.CloseGrace = 50 * time.Millisecond
	}))
}

// An opened stream whose receiver waits for a message while another call
// waits to be read is rotated (close_stream_signal, then a clean end), as
// an idle one is; the other call is then read, and the rotated stream
// keeps what it was acknowledged.
func TestIdleReaderIsRotatedForAWaitingCall(t *testing.T) {
	ts := yieldServer(t)
	c := ts.Client(t)
	idle, idleID, busy := idleThenBusy(t, ts, c)

	r, err := idle.Recv()
	if err != nil || r.GetCloseStreamSignal() == nil {
		t.Fatalf("idle stream got %v, %v; want close_stream_signal", r, err)
	}
	if _, err := pend(t, idle); err != nil {
		t.Fatalf("idle stream ended with %v, want a clean end", err)
	}
	pclose(t, busy)
	if m := meta(t, ts.Server, idleID); m.Watermark != 0 {
		t.Fatalf("rotated stream's watermark %d, want 0", m.Watermark)
	}
}

// A call that has sent nothing yet while another waits to be read is
// refused with UNAVAILABLE ("server busy", which clients retry) instead
// of holding the budget until its first-message deadline.
func TestSilentCallYieldsToAWaitingCall(t *testing.T) {
	ts := yieldServer(t)
	c := ts.Client(t)
	silent := openPersistent(t, c, callCtx(t, ts))
	awaitHeader(t, silent.Header)
	// The silent call's receiver holds its read hold before the busy call
	// asks for one (the headers go out before the receiver takes it; on a
	// loaded machine the busy call could otherwise take the budget first).
	waitHolding(t, ts, "servertest")

	busy, _ := pcreate(t, ts, c, "busy")
	pjson(t, busy, 0, `{"b":1}`)
	pwaitAck(t, busy, 0)
	pclose(t, busy)

	_, err := pend(t, silent)
	wantCode(t, err, codes.Unavailable)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "server busy") {
		t.Fatalf("status message %q, want server busy", msg)
	}
}

// A call whose first message the server could not read before the
// first-message deadline, because the receive budget was spent, is ended
// with UNAVAILABLE "server busy" (retryable), not DEADLINE_EXCEEDED, which
// would blame a client that sent its message in time.  Once the
// call holding the budget is rotated and ends, its read hold is given back
// and the principal's next call is read at once.
func TestFirstMessageNotReadForTheBudgetIsBusy(t *testing.T) {
	server.SetPreemptAfter(t, time.Hour) // no rotation while the deadline runs
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) {
		o.ReceiveBudget = 1 << 20 // one read hold: the whole budget
		o.FirstMessageTimeout = 300 * time.Millisecond
		o.CloseGrace = 50 * time.Millisecond
	}))
	c := ts.Client(t)
	idle, _ := pcreate(t, ts, c, "idle") // its receiver waits holding the budget
	pjson(t, idle, 0, `{"a":1}`)
	pwaitAck(t, idle, 0)
	// Its receiver takes the read hold back once it waits for the next
	// message; on a loaded machine the second call's create could
	// otherwise be read (and answered) before it does.
	waitHolding(t, ts, "servertest")

	// The same principal's second call: it holds a read hold already, so
	// no floor; its create is sent at once but cannot be read.
	st := openPersistent(t, c, withReqID(callCtx(t, ts), "second"))
	psend(t, st, pcreateReq(jsonCreate(ts.Table)))
	_, err := st.Recv()
	wantCode(t, err, codes.Unavailable)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "server busy") {
		t.Fatalf("status message %q, want server busy", msg)
	}

	// The idle call ends (the client closes): its hold is given back.
	pclose(t, idle)
	waitHeld(t, ts, "servertest", 0)
	third, _ := pcreate(t, ts, c, "third")
	pclose(t, third)
	waitHeld(t, ts, "servertest", 0)
}

// A call rotated while its receiver waits in Recv holding its read hold
// gives the hold back when it ends, and the principal's resume is read at
// once.
func TestRotatedReaderGivesItsHoldBack(t *testing.T) {
	ts := yieldServer(t)
	c := ts.Client(t)
	idle, idleID, busy := idleThenBusy(t, ts, c)
	if _, err := pend(t, idle); err != nil {
		t.Fatalf("rotated call ended with %v", err)
	}
	pclose(t, busy)
	waitHeld(t, ts, "servertest", 0)

	r := openPersistent(t, c, callCtx(t, ts))
	psend(t, r, presumeReq(idleID, ingestpb.RecordType_JSON, nil))
	if m, err := r.Recv(); err != nil || m.GetResumeStreamResponse() == nil {
		t.Fatalf("resume after the rotation: %v %v", m, err)
	}
	pclose(t, r)
	waitHeld(t, ts, "servertest", 0)
}

// idleThenBusy opens a stream that goes idle after its first record, then
// another that needs its read hold: the second is acknowledged only once
// the idle one was rotated and gave its hold back.
func idleThenBusy(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient) (idle pstream, idleID string, busy pstream) {
	t.Helper()
	idle, idleID = pcreate(t, ts, c, "idle")
	pjson(t, idle, 0, `{"a":1}`)
	pwaitAck(t, idle, 0)
	// The idle call's receiver takes its read hold back once it waits for
	// the next message. On a loaded machine the busy call's create could
	// otherwise take the budget first: then the busy call's receiver, not
	// the idle one's, was the one rotated, and the idle call waited out its
	// deadline (CI: "rotated call ended with ... DeadlineExceeded").
	waitHolding(t, ts, "servertest")
	busy, _ = pcreate(t, ts, c, "busy")
	pjson(t, busy, 0, `{"b":1}`)
	pwaitAck(t, busy, 0)
	return idle, idleID, busy
}

// waitHeld waits until principal who holds want bytes of the budget.
func waitHeld(t *testing.T, ts *servertest.Server, who string, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.Server.BudgetHeldBy(who) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d bytes of the budget, want %d", who, ts.Server.BudgetHeldBy(who), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
