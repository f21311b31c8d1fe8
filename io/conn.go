package io

import (
	"context"

	"sync/atomic"

	"github.com/zbstream/zbstream/core"
)

// conn is the driver's side of one connection. Fields are guarded by the
// stream's mutex except where noted.
//
// Sends are reported to the machine in order, and an ack may only cover
// offsets reported sent. But a server can acknowledge a call before the
// Send that wrote it has returned on this side, so an ack above what has
// been reported, yet within what was handed to the sender, is held back
// until the sender reports that far; later messages wait behind it to keep
// their order. Each held message waits for the sends handed over when it
// arrived and no more: an ack above everything handed over is fed the
// moment the sends before it are reported, so the machine still sees it
// for what it is, an ack of something never sent.
type conn struct {
	id     core.ConnID
	req    OpenRequest
	ctx    context.Context // governs the transport's connection
	cancel context.CancelFunc
	h      Conn // set once Open returned
	wake   chan struct{}

	aborted      bool // the machine has left this connection
	disconnected bool // Observer.Disconnected was called for it
	closeSend    bool // the machine asked for a half-close
	idle         bool // the sender waits for wake, and nobody writes: only then is it woken
	sending      bool // the sender (or an ingesting caller) is writing a batch it has not reported yet
	failed       bool // a Send failed: the sender stops once woken
	idleSends    bool // h is an IdleSender that SendsWhenIdle
	senderLive   bool // the sender goroutine runs
	stray        bool // the sender outlives the connection: counted in Stream.strays

	// The connection's end, held while messages before it wait behind a
	// send in progress (see ended).
	endHeld bool
	endErr  error

	queue, spare []Call // calls handed over and not yet taken by the sender

	started    bool
	base       int64        // logical offset minus wire offset on this connection
	dispatched int64        // highest wire offset handed to the sender
	reported   int64        // highest wire offset reported with Sent
	counted    int64        // highest wire offset counted in Stats.Sent
	sent       atomic.Int64 // highest wire offset whose Send returned; written by the one writing (see idle)
	deferred   []heldMessage
	held       atomic.Bool // deferred is not empty: the sender reports after every Send

	backlog      atomic.Int64 // bytes handed to the sender and not yet written (see SendBacklog)
	backlogCalls atomic.Int64 // the calls in backlog (see SendBacklogCalls)
	throttled    atomic.Bool  // callers wait for the backlog to drain
}

// notify wakes the sender if it sleeps. The caller holds the stream's
// mutex.
func (c *conn) notify() {
	if !c.idle {
		return
	}
	c.idle = false
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dispatch hands one send to the connection's sender.
func (c *conn) dispatch(a *core.Action, s *Stream) {
	if !c.started {
		c.started = true
		c.reported = a.Wire - 1
		c.counted = a.Wire - 1
		c.sent.Store(a.Wire - 1)
	}
	c.base = a.Offset - a.Wire
	c.dispatched = a.Wire
	call := Call{Wire: a.Wire, Record: a.Record, Records: a.Records, size: a.Size}
	if s.arena != nil {
		payload := a.Record
		switch {
		case len(a.Records) > 1:
			call.Framed = s.arena.framedBatch(a.Records)
			payload = call.Framed
		case len(a.Records) == 1:
			payload = a.Records[0]
		}
		call.Loan = s.arena.loan(payload)
		if call.Loan != nil {
			s.stats.Lent++
		}
	}
	c.queue = append(c.queue, call)
	c.backlog.Add(a.Size)
	c.backlogCalls.Add(1)
	if s.idleIngest && c.idle && c.idleSends && len(c.queue) == 1 && !c.closeSend && s.writeHere == nil {
		// The ingesting caller writes it (see Stream.sendHere): the
		// sender stays asleep, and nobody wakes it until the caller has
		// written and handed the turn back.
		c.idle = false
		s.writeHere = c
		return
	}
	c.notify()
}

// abort tears the connection down: the machine has left it.
func (c *conn) abort() {
	c.aborted = true
	c.cancel()
	if c.h != nil {
		c.h.Abort()
	}
	clear(c.queue)
	c.queue = c.queue[:0]
	c.deferred = nil
	c.notify()
}

// heldMessage is a server message waiting for the sends before it to be
// reported: it is fed once the wire offset until has been reported.
type heldMessage struct {
	r     core.Response
	until int64
}

// holdUntil reports whether r, arriving now, must wait behind sends not yet
// reported, and until which wire offset.
func (c *conn) holdUntil(r *core.Response) (int64, bool) {
	if r.Kind == core.RespAck && r.HasOffset && r.Offset > c.reported {
		switch {
		case r.Offset <= c.dispatched:
			return r.Offset, true
		case len(c.deferred) > 0:
			// Above anything handed over: it waits its turn, but only
			// for what was handed over when it came.
			return c.dispatched, true
		}
	}
	if len(c.deferred) > 0 {
		return c.reported, true // no wait of its own: only its turn
	}
	return 0, false
}
