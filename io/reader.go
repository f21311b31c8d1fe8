package io

import (
	"errors"

	"github.com/zbstream/zbstream/core"
)

// The reading side of a connection: its open, its messages fed to the
// machine in order (held behind sends not yet reported), and its end.

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
	if is, ok := h.(IdleSender); ok {
		c.idleSends = is.SendsWhenIdle()
	}
	if s.arena != nil {
		b, ok := h.(Borrower)
		s.arena.lend = ok && b.Borrows()
	}
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
