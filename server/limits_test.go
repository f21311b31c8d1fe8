package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// A call that sends no first message is ended with DEADLINE_EXCEEDED,
// after it got its response headers.
func TestFirstMessageDeadline(t *testing.T) {
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.FirstMessageTimeout = 100 * time.Millisecond }))
	c := ts.Client(t)
	ps := openPersistent(t, c, callCtx(t, ts))
	awaitHeader(t, ps.Header)
	_, err := pend(t, ps)
	wantCode(t, err, codes.DeadlineExceeded)
	es, err := c.EphemeralStream(callCtx(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	awaitHeader(t, es.Header)
	wantCode(t, eend(es), codes.DeadlineExceeded)
}

// An opened stream with no traffic is rotated (close_stream_signal, then a
// clean end), never failed, and keeps everything it acknowledged.
func TestIdleStreamIsRotated(t *testing.T) {
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) {
		o.IdleTimeout = time.Second // far above the time between two local sends
		o.CloseGrace = 50 * time.Millisecond
	}))
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{"a":1}`)
	pwaitAck(t, st, 0)
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("waiting for the close signal: %v", err)
	}
	if r.GetCloseStreamSignal() == nil {
		t.Fatalf("got %v, want close_stream_signal", r)
	}
	if _, err := pend(t, st); err != nil {
		t.Fatalf("idle end: %v, want a clean end", err)
	}
	st2, w := presume(t, ts, c, id)
	if w == nil || *w != 0 {
		t.Fatalf("watermark %v", w)
	}
	pclose(t, st2)

	es, _ := ecreate(t, ts, c, jsonCreate(ts.Table))
	r2, err := es.Recv()
	if err != nil || r2.GetCloseStreamSignal() == nil {
		t.Fatalf("ephemeral: %v %v, want close_stream_signal", r2, err)
	}
	if err := eend(es); err != nil {
		t.Fatalf("ephemeral idle end: %v", err)
	}
}

// A principal's concurrent stream calls are capped (RESOURCE_EXHAUSTED
// above the cap); other principals are not affected, and an ended call
// frees its place.
func TestConnectionsPerPrincipalCap(t *testing.T) {
	ts := startServer(t,
		servertest.WithPrincipal("tok-carol", server.Principal{Name: "carol", Tables: []string{servertest.DefaultTable}}),
		servertest.WithOptions(func(o *server.Options) { o.MaxConnectionsPerPrincipal = 2 }))
	c := ts.Client(t)
	a, _ := pcreate(t, ts, c, "")
	b, _ := pcreate(t, ts, c, "")
	third := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
	psend(t, third, pcreateReq(jsonCreate(ts.Table)))
	_, err := pend(t, third)
	wantCode(t, err, codes.ResourceExhausted)
	es, err := c.EphemeralStream(callCtx(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, eend(es), codes.ResourceExhausted)

	carol := openPersistent(t, c, withReqID(ctxWith(t, "tok-carol", ts.Table), ""))
	psend(t, carol, pcreateReq(jsonCreate(ts.Table)))
	if _, err := carol.Recv(); err != nil {
		t.Fatalf("carol: %v", err)
	}
	pclose(t, carol)

	pclose(t, a)
	// The place is freed once the call has ended on the server; the
	// client may see its end first, so retry on RESOURCE_EXHAUSTED.
	for {
		st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
		psend(t, st, pcreateReq(jsonCreate(ts.Table)))
		_, err := st.Recv()
		if err == nil {
			pclose(t, st)
			break
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pclose(t, b)
}

// MaxConcurrentStreams caps the calls of one HTTP/2 connection: a call
// above it waits, client side, for one to end.
func TestMaxConcurrentStreams(t *testing.T) {
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.MaxConcurrentStreams = 2 }))
	c := ts.Client(t)
	a, _ := pcreate(t, ts, c, "")
	b, _ := pcreate(t, ts, c, "")
	opened := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ts.Context(t.Context()), time.Minute)
		defer cancel()
		st, err := c.PersistentStream(ctx)
		if err == nil {
			_, err = st.Header()
			st.CloseSend()
			for err == nil {
				_, err = st.Recv()
			}
		}
		opened <- err
	}()
	// Not admitted while two calls are open. (A wait, not a measurement:
	// a working limit can never let it through.)
	select {
	case err := <-opened:
		t.Fatalf("third call admitted beside two: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	pclose(t, a)
	if err := <-opened; status.Code(err) != codes.InvalidArgument {
		// The third call half-closed without a first message.
		t.Fatalf("third call: %v", err)
	}
	pclose(t, b)
}
