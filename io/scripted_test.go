package io_test

import (
	"context"
	stdio "io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// scriptedTransport is a transport whose server is the test itself: every
// open hands the test a scriptedConn, whose sends the test can hold at a
// gate and whose messages the test writes.
type scriptedTransport struct {
	conns    chan *scriptedConn
	gate     chan struct{} // nil: sends go through at once
	openErrs chan error    // an error here fails the next open
	// read, if set, is called by Send with the call it is lent.
	read func(streamio.Call)
	// borrows: its connections are streamio.Borrowers that borrow.
	borrows bool
}

func newScripted(gate chan struct{}) *scriptedTransport {
	return &scriptedTransport{conns: make(chan *scriptedConn, 16), gate: gate, openErrs: make(chan error, 16)}
}

func (t *scriptedTransport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	select {
	case err := <-t.openErrs:
		return nil, err
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &scriptedConn{ctx: ctx, cancel: cancel, gate: t.gate, resp: make(chan core.Response, 1024), read: t.read}
	if c.gate == nil {
		c.gate = make(chan struct{})
		close(c.gate)
	}
	t.conns <- c
	if t.borrows {
		return borrowingConn{c}, nil
	}
	return c, nil
}

func (t *scriptedTransport) InvalidateCredentials() {}

// borrowingConn is a scriptedConn that borrows (streamio.Borrower).
type borrowingConn struct{ *scriptedConn }

func (borrowingConn) Borrows() bool { return true }

type scriptedConn struct {
	ctx    context.Context
	cancel context.CancelFunc
	gate   chan struct{}
	resp   chan core.Response
	read   func(streamio.Call)
}

func (c *scriptedConn) Send(call streamio.Call) error {
	if c.read != nil {
		c.read(call)
	}
	select {
	case <-c.gate:
		return nil
	case <-c.ctx.Done():
		return &core.ConnectionError{Code: core.CodeCanceled, Err: c.ctx.Err()}
	}
}

func (c *scriptedConn) Recv() (core.Response, error) {
	select {
	case r := <-c.resp:
		return r, nil
	case <-c.ctx.Done():
		return core.Response{}, stdio.EOF
	}
}

func (c *scriptedConn) CloseSend() error { c.cancel(); return nil } // the server ends the call
func (c *scriptedConn) Abort()           { c.cancel() }

func ackOf(o int64) core.Response {
	return core.Response{Kind: core.RespAck, Offset: o, HasOffset: true}
}

// openScripted opens a stream over tr and answers its first open.
func openScripted(t *testing.T, tr *scriptedTransport, cfg core.Config, opts streamio.Options) (*streamio.Stream, *scriptedConn) {
	t.Helper()
	type opened struct {
		s   *streamio.Stream
		err error
	}
	ch := async(func() opened {
		s, err := streamio.Open(context.Background(), tr, cfg, opts)
		return opened{s, err}
	})
	c := <-tr.conns
	if cfg.Kind == core.Persistent && cfg.StreamID != "" {
		c.resp <- core.Response{Kind: core.RespResume}
	} else {
		c.resp <- core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true}
	}
	o := <-ch
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.s, c
}

// TestWindowLowWater: a full window lets a blocked caller in once it has
// drained below its low-water mark, not only once it is empty.
func TestWindowLowWater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(nil)
		cfg := config(core.Ephemeral)
		cfg.MaxInflightCalls = 8
		s, c := openScripted(t, tr, cfg, streamio.Options{})
		ingestN(t, s, 8, 0)
		ninth := asyncIngest(context.Background(), s, 8)
		settle(time.Second)
		if _, ok := poll(ninth); ok {
			t.Fatal("an ingest went in over a full window")
		}
		c.resp <- ackOf(0) // 7 of 8 in flight: at the low-water mark (8 - 8/8)
		settle(time.Second)
		if r, ok := poll(ninth); !ok || r.err != nil || r.off != 8 {
			t.Fatalf("the window drained to 7 of 8 and the blocked ingest got %+v (done %v), want offset 8", r, ok)
		}
		if err := s.Close(context.Background()); err == nil {
			t.Fatal("close succeeded with records never acknowledged")
		}
	})
}

// TestBogusAckBehindHeldAck: an ack above everything handed to the sender
// fails the stream (protocol.md §5.2) even when it arrives behind an ack
// that is held for a send still in progress, and even if the client later
// sends that far.
func TestBogusAckBehindHeldAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		tr := newScripted(gate)
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{})
		ingest(t, s, 0, 0) // Send(0) waits at the gate
		synctest.Wait()
		c.resp <- ackOf(0) // held: offset 0 is handed over, not reported sent
		c.resp <- ackOf(5) // offset 5 was never even accepted
		synctest.Wait()
		ingestN(t, s, 5, 1) // offsets 1..5 handed over
		close(gate)         // every send goes through
		settle(time.Second)
		wantViolation(t, "ack 5 sent before offset 5 existed", s.Err(), core.AckAboveSent)
		_ = s.Close(context.Background())
	})
}

// TestCloseWakesBlockedIngest: Close refuses new records at once, also to a
// caller blocked on a full window.
func TestCloseWakesBlockedIngest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(nil)
		cfg := config(core.Ephemeral)
		cfg.MaxInflightCalls = 1
		s, c := openScripted(t, tr, cfg, streamio.Options{})
		ingest(t, s, 0, 0)
		blocked := asyncIngest(context.Background(), s, 1)
		settle(time.Second)
		closed := async(func() error { return s.Close(context.Background()) })
		settle(time.Second)
		r, ok := poll(blocked)
		if !ok {
			t.Fatal("Close was called and the blocked ingest still waits")
		}
		wantIs(t, "blocked ingest after Close", r.err, core.ErrClosed)
		c.resp <- ackOf(0)
		if err := <-closed; err != nil {
			t.Fatalf("close: %v", err)
		}
	})
}

// countingObserver counts connection events.
type countingObserver struct {
	streamio.NopObserver
	connected, disconnected int
}

func (o *countingObserver) Connected(bool)         { o.connected++ }
func (o *countingObserver) Disconnected(core.Code) { o.disconnected++ }

// TestObserverConnectionsPair: every connection that was Connected is
// Disconnected once, also those the core leaves itself (rotations), so a
// gauge of open connections built on them stays true.
func TestObserverConnectionsPair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(nil)
		obs := &countingObserver{}
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{Observer: obs})
		for range 3 { // three server rotations
			c.resp <- core.Response{Kind: core.RespCloseSignal}
			c = <-tr.conns
			c.resp <- core.Response{Kind: core.RespResume}
			settle(time.Second)
		}
		if obs.connected != 4 || obs.disconnected != 3 {
			t.Fatalf("after 3 rotations: %d connected, %d disconnected; want 4 and 3", obs.connected, obs.disconnected)
		}
		// An open that fails never connected: it is not Disconnected.
		tr.openErrs <- &core.ConnectionError{Code: core.CodeUnavailable, Err: stdio.ErrUnexpectedEOF}
		c.cancel() // the server ends the call; the next open fails, the one after succeeds
		c = <-tr.conns
		c.resp <- core.Response{Kind: core.RespResume}
		settle(time.Second)
		if obs.connected != 5 || obs.disconnected != 4 {
			t.Fatalf("after a failed open: %d connected, %d disconnected; want 5 and 4", obs.connected, obs.disconnected)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if obs.connected != obs.disconnected {
			t.Fatalf("after close: %d connected, %d disconnected", obs.connected, obs.disconnected)
		}
	})
}

// TestFlushAfterFailure: a flush on a failed stream reports the failure,
// also when every record it accepted was durable before the stream failed.
func TestFlushAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(nil)
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{})
		ingest(t, s, 0, 0)
		settle(time.Second)
		c.resp <- ackOf(0)
		settle(time.Second)
		c.resp <- ackOf(7) // above anything sent: the stream fails
		settle(time.Second)
		wantViolation(t, "ack 7", s.Err(), core.AckAboveSent)
		wantIs(t, "flush after the failure", s.Flush(context.Background()), core.ErrStreamFailed)
		_ = s.Close(context.Background())
	})
}

// TestWaitNotAnOffset: an offset below core.NoOffset was never assigned.
func TestWaitNotAnOffset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := openScripted(t, newScripted(nil), config(core.Ephemeral), streamio.Options{})
		wantIs(t, "Wait(-2)", s.Wait(context.Background(), -2), streamio.ErrNeverAssigned)
		if err := s.Wait(context.Background(), core.NoOffset); err != nil {
			t.Fatalf("Wait(NoOffset): %v", err)
		}
		_ = s.Close(context.Background())
	})
}
