package io

import (
	"context"
	"errors"
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
	idle         bool // the sender waits for wake: only then is it woken
	sending      bool // the sender is writing a batch it has not reported yet
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
	sent       atomic.Int64 // highest wire offset whose Send returned; written by the sender alone
	deferred   []heldMessage
	held       atomic.Bool // deferred is not empty: the sender reports after every Send

	backlog   atomic.Int64 // bytes handed to the sender and not yet written (see SendBacklog)
	throttled atomic.Bool  // callers wait for the backlog to drain
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
	c.queue = append(c.queue, Call{Wire: a.Wire, Record: a.Record, Records: a.Records, size: a.Size})
	c.backlog.Add(a.Size)
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

// runConn opens one connection, starts its sender, and reads it until it
// ends.
func (s *Stream) runConn(c *conn) {
	defer s.wg.Done()
	h, err := s.t.Open(c.ctx, c.req)
	s.lock()
	switch {
	case err != nil:
		s.ended(c, err)
		s.mu.Unlock()
		return
	case c.aborted:
		s.mu.Unlock()
		h.Abort()
		return
	}
	c.h = h
	s.observeConnected(c.req.Resume)
	c.senderLive = true
	s.wg.Add(1)
	go s.sendLoop(c)
	s.mu.Unlock()

	for {
		r, err := h.Recv()
		s.lock()
		if err != nil {
			s.ended(c, err)
			s.mu.Unlock()
			return
		}
		if !c.aborted {
			s.deliver(c, r)
			s.process()
		}
		s.mu.Unlock()
	}
}

// deliver feeds one server message to the machine, or holds it back behind
// sends not yet reported. The caller holds s.mu and calls process.
func (s *Stream) deliver(c *conn, r core.Response) {
	s.reportSent(c)
	if until, hold := c.holdUntil(&r); hold {
		c.deferred = append(c.deferred, heldMessage{r: r, until: until})
		c.held.Store(true)
		// The sender may have finished a send between the report above
		// and the flag: report again, or the message waits for its next.
		s.reportSent(c)
		return
	}
	s.receive(c, r)
}

func (s *Stream) receive(c *conn, r core.Response) {
	if err := s.m.Receive(s.at, c.id, r); err != nil {
		s.broken(err)
	}
}

// reportSent reports every send that returned since the last report, one
// at a time, and feeds each held message as soon as the sends it waits for
// are reported. The caller holds s.mu.
func (s *Stream) reportSent(c *conn) {
	if c.aborted {
		return
	}
	sent := c.sent.Load()
	i := 0
	for {
		for ; i < len(c.deferred) && c.deferred[i].until <= c.reported; i++ {
			s.receive(c, c.deferred[i].r)
			if c.aborted {
				return
			}
		}
		if c.reported >= sent {
			break
		}
		c.reported++
		if err := s.m.Sent(s.at, c.id, c.base+c.reported); err != nil {
			s.broken(err)
			return
		}
	}
	s.countSent(c, c.reported)
	c.deferred = c.deferred[:copy(c.deferred, c.deferred[i:])]
	c.held.Store(len(c.deferred) > 0)
	s.endIfDue(c)
}

// endIfDue reports a held end once nothing it waits for is left: the
// messages before it were fed, or the sender stopped without reporting the
// sends they wait for (which then never count). The caller holds s.mu.
func (s *Stream) endIfDue(c *conn) {
	if c.endHeld && !c.aborted && (len(c.deferred) == 0 || !c.sending) {
		c.endHeld = false
		c.deferred = nil
		c.held.Store(false)
		s.endNow(c, c.endErr)
	}
}

// countSent counts in Stats the calls written to c up to wire offset
// upTo that are not counted yet: each is a resend if an offset that high
// was written before (on this or an earlier connection). Counting writes,
// not hand-overs, keeps Resent a part of Sent: calls handed to a
// connection that died before writing them were not sent. The caller
// holds s.mu.
func (s *Stream) countSent(c *conn, upTo int64) {
	for w := c.counted + 1; w <= upTo; w++ {
		s.stats.Sent++
		if off := c.base + w; off <= s.sentHigh {
			s.stats.Resent++
			s.observeResent(off)
		} else {
			s.sentHigh = off
		}
	}
	c.counted = max(c.counted, upTo)
}

// ended reports the end of a connection, unless the machine has already
// left it. The caller holds s.mu.
func (s *Stream) ended(c *conn, err error) {
	if c.aborted {
		return
	}
	// Messages the server sent before the end may wait behind sends that
	// have returned since: feed them first, or their acks are lost and
	// the records they cover are sent again for nothing. If some still
	// wait behind a send in progress, hold the end until the sender has
	// reported it (a transport's Send returns once the connection ends).
	s.reportSent(c)
	if c.aborted || c.endHeld {
		s.process()
		return
	}
	if len(c.deferred) > 0 && c.sending {
		c.endHeld, c.endErr = true, err
		s.process()
		return
	}
	s.endNow(c, err)
}

// endNow reports the end of a connection to the machine. The caller holds
// s.mu.
func (s *Stream) endNow(c *conn, err error) {
	code := codeOf(err)
	cause := err
	var ce *core.ConnectionError
	if errors.As(err, &ce) {
		cause = ce.Err
	}
	s.lastCode = code
	if c.h != nil { // an open that failed never Connected
		c.disconnected = true
		s.observeDisconnected(code)
	}
	s.logInfo("connection ended", "conn", c.id, "code", code.String(), "error", err)
	if err := s.m.ConnectionFailed(s.at, c.id, code, cause); err != nil {
		s.broken(err)
	}
	s.process()
}

// broken fails the stream when the machine refuses an input the driver
// gave it: a driver bug, reported rather than hidden. The caller holds s.mu.
func (s *Stream) broken(err error) {
	_ = s.m.Fail(s.at, core.Errorf("internal error: %w", err))
}

// sendLoop writes what the machine hands this connection, in order, and
// reports each send, until the connection is aborted or half-closed.
func (s *Stream) sendLoop(c *conn) {
	defer s.wg.Done()
	defer s.senderExited(c)
	s.mu.Lock()
	for {
		// Held here: the lock taken to report the last batch also takes
		// the next one, one acquisition per batch.
		for len(c.queue) == 0 && !c.closeSend && !c.aborted {
			c.idle = true
			s.mu.Unlock()
			<-c.wake
			s.mu.Lock()
		}
		if c.aborted {
			s.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue = c.spare[:0]
		c.spare = nil
		c.sending = len(batch) > 0
		s.mu.Unlock()

		if len(batch) == 0 { // only the half-close is left
			if err := c.h.CloseSend(); err != nil {
				s.lock()
				s.ended(c, err)
				s.mu.Unlock()
			}
			return
		}
		for i := range batch {
			if err := c.h.Send(batch[i]); err != nil {
				// The connection has ended. Its end arrives through Recv
				// too, after every message the server sent before it:
				// the receiver reports it once those are delivered, so
				// that no ack the server sent is lost (and its records
				// sent again) because the sender saw the end first.
				s.lock()
				c.sending = false
				s.endIfDue(c)
				s.mu.Unlock()
				return
			}
			c.sent.Store(batch[i].Wire)
			s.wrote(c, batch[i].size)
			if c.held.Load() {
				s.lock()
				s.reportSent(c)
				s.process()
				s.mu.Unlock()
			}
		}
		s.lock()
		c.sending = false
		s.reportSent(c)
		clear(batch)
		c.spare = batch[:0]
		s.process()
	}
}

// senderExited records that c's sender has stopped: once no sender of a
// connection the stream has left runs, arena memory held back for them is
// given back.
func (s *Stream) senderExited(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.senderLive = false
	if c.stray {
		c.stray = false
		s.strays--
		s.giveBack()
	}
}
