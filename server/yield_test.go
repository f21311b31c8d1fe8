package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	idle, idleID := pcreate(t, ts, c, "idle")
	pjson(t, idle, 0, `{"a":1}`)
	pwaitAck(t, idle, 0)

	busy, _ := pcreate(t, ts, c, "busy")
	pjson(t, busy, 0, `{"b":1}`)
	pwaitAck(t, busy, 0) // read only once the idle stream gave its hold back

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
