package memtransport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// conn is one connection: the client's end (the streamio.Conn methods)
// and the server's handling of it, which runs synchronously in the
// caller's goroutines (Open, Send, CloseSend) and in timers.
//
// The server's messages go through one ordered output: emit queues a
// response on q, and end (a graceful end of the call) takes effect after
// everything queued before it. A delayed message (FaultDelayAcks) holds
// back everything after it. finish ends the connection at once: it is the
// client's abort, a fence, or the last step of a graceful end.
type conn struct {
	srv  *Server
	kind core.Kind

	q     chan core.Response // server messages not yet read
	ended chan struct{}      // closed by finish: no more output
	gone  chan struct{}      // closed by Abort or the context: Recv returns at once

	mu      sync.Mutex // guards the fields below and the closing of ended and gone
	endErr  error      // set before ended is closed
	stopCtx func() bool
	grace   *time.Timer // ends the call after a close signal's grace

	// Ordered output, used once a message was delayed (delayed is set).
	left    atomic.Bool // gone is closed
	over    atomic.Bool // ended is closed
	delayed atomic.Bool
	stopped atomic.Bool   // end was called: the server reads no more calls
	outLock chan struct{} // held (full) while emitting in order: a lock synctest sees as blocking
	space   chan struct{} // signalled when a pending item leaves
	pending []outItem     // guarded by mu
	seq     uint64        // numbering of pending items, guarded by mu

	// Server state of the connection, used by the sender goroutine (and
	// set up by Open before it returns).
	st         *stream
	hung       bool  // FaultHangOpen: never answered
	sendClosed bool  // CloseSend was called
	closing    bool  // a close signal was sent
	calls      int   // ingest calls received
	told       int64 // watermark told at the open (-1 for a create)
	maxRecv    int64 // highest offset received, at least told
	lastAck    int64 // last true ack value sent, at least told

	recvErr error // set once Recv returned the end: Recv keeps returning it

	// With Options.MergeAcks: a message Recv took from the queue while
	// merging acks, to return next.
	next     core.Response
	hasNext  bool
	lastRead int64 // the last ack Recv returned, when readAck
	readAck  bool
}

// outItem is a held-back server message or graceful end.
type outItem struct {
	seq   uint64
	resp  core.Response
	due   bool        // may be emitted (its delay, if any, is over)
	timer *time.Timer // of a delayed message
	end   bool
	err   error
}

var _ streamio.Conn = (*conn)(nil)

func (s *Server) newConn(ctx context.Context, kind core.Kind) *conn {
	c := &conn{
		srv: s, kind: kind,
		q: make(chan core.Response, s.opts.QueueSize), ended: make(chan struct{}), gone: make(chan struct{}),
		outLock: make(chan struct{}, 1), space: make(chan struct{}, 1),
		told: core.NoOffset, maxRecv: core.NoOffset, lastAck: core.NoOffset,
	}
	s.mu.Lock()
	s.live[c] = struct{}{}
	s.mu.Unlock()
	c.mu.Lock()
	c.stopCtx = context.AfterFunc(ctx, func() { c.leave(ctxError(ctx)) })
	c.mu.Unlock()
	return c
}

// finish ends the connection at once with err, if it has not ended yet.
func (c *conn) finish(err error) {
	if c.finishLocked(err) {
		c.srv.forget(c)
	}
}

func (c *conn) finishLocked(err error) (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr != nil {
		return false
	}
	c.endErr = err
	c.over.Store(true)
	close(c.ended)
	for _, it := range c.pending {
		if it.timer != nil {
			it.timer.Stop()
		}
	}
	c.pending = nil
	if c.grace != nil {
		c.grace.Stop()
	}
	if c.stopCtx != nil {
		c.stopCtx()
	}
	return true
}

// leave is the client's end (Abort or the context): the connection ends
// with err and blocked calls return at once.
func (c *conn) leave(err error) {
	c.finish(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.left.Load() {
		c.left.Store(true)
		close(c.gone)
	}
}

// err is the connection's end, once it ended.
func (c *conn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

// Recv returns the next server message; once the call ended and every
// message queued before its end was read, the end: io.EOF for a clean
// end, else a *core.ConnectionError. After Abort it returns at once.
func (c *conn) Recv() (core.Response, error) {
	r, err := c.recv()
	if err != nil || !c.srv.opts.MergeAcks || !c.mergeable(r) {
		return r, err
	}
	for {
		select {
		case n := <-c.q:
			if c.mergeable(n) && n.Offset >= r.Offset {
				r = n // a later cumulative ack covers this one
				continue
			}
			c.next, c.hasNext = n, true
		default:
		}
		c.lastRead, c.readAck = r.Offset, true
		return r, nil
	}
}

// mergeable reports whether r is an ordinary ack that a later one may
// replace: an ack with an offset, not below the last ack read (a
// regressive ack is a fault on purpose, and is delivered as it is).
func (c *conn) mergeable(r core.Response) bool {
	return r.Kind == core.RespAck && r.HasOffset && (!c.readAck || r.Offset >= c.lastRead)
}

func (c *conn) recv() (core.Response, error) {
	if c.hasNext {
		c.hasNext = false
		return c.next, nil
	}
	if c.recvErr != nil {
		return core.Response{}, c.recvErr
	}
	if c.left.Load() {
		c.recvErr = c.err()
		return core.Response{}, c.recvErr
	}
	select {
	case r := <-c.q: // the common case, without the cost of a full select
		return r, nil
	default:
	}
	select {
	case r := <-c.q:
		return r, nil
	case <-c.gone:
		c.recvErr = c.err()
		return core.Response{}, c.recvErr
	case <-c.ended:
		select {
		case r := <-c.q:
			return r, nil
		default:
			c.recvErr = c.err()
			return core.Response{}, c.recvErr
		}
	}
}

// CloseSend half-closes the connection: the server ends the call cleanly
// once it has answered everything sent before.
func (c *conn) CloseSend() error {
	if c.sendClosed {
		return nil
	}
	c.sendClosed = true
	if c.hung {
		return nil
	}
	c.end(nil)
	return nil
}

// Abort ends the connection: blocked and later Send and Recv calls return
// an error (CodeCanceled) at once. It is idempotent and does not block.
func (c *conn) Abort() { c.leave(errAborted) }
