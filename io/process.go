package io

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zbstream/zbstream/core"
)

// process drains the machine's actions after an input and re-arms the
// timer. The caller holds s.mu.
func (s *Stream) process() {
	for {
		s.acts = s.m.Poll(s.acts[:0])
		if len(s.acts) == 0 {
			break
		}
		for i := range s.acts {
			s.apply(&s.acts[i])
		}
		clear(s.acts) // release payload and error references
	}
	if !s.openSeen && s.m.Opened() {
		s.openSeen = true
		close(s.opened)
		s.observeOpened()
	}
	s.rearm()
}

// apply carries out one action. The caller holds s.mu.
func (s *Stream) apply(a *core.Action) {
	switch a.Kind {
	case core.ActOpen:
		s.startConn(a)
	case core.ActSend:
		s.conn(a).dispatch(a, s)
	case core.ActCloseSend:
		c := s.conn(a)
		c.closeSend = true
		c.notify()
	case core.ActAbort:
		c := s.conn(a)
		if c.h != nil && !c.disconnected {
			// The machine left a live connection itself: a rotation, a
			// timeout, the end of the stream.
			c.disconnected = true
			s.lastCode = core.CodeCanceled
			s.observeDisconnected(core.CodeCanceled)
		}
		if c.started {
			// Writes that returned but were never reported still went out.
			s.countSent(c, c.sent.Load())
		}
		if c.senderLive {
			c.stray = true
			s.strays++
		}
		c.abort()
		delete(s.conns, a.Conn)
		if s.live == c {
			s.live = nil
			signal(&s.space) // callers waiting for its sender wait no more
		}
	case core.ActComplete:
		n := a.Last - a.Offset + 1
		if a.Reconciled {
			s.stats.Reconciled += n
			s.logInfo("offsets reconciled from the resume watermark", "first", a.Offset, "last", a.Last, "count", n)
		} else {
			s.stats.Acknowledged += n
		}
		s.giveBack()
		s.cb.push(a.Offset, a.Last, nil)
		s.observeEnded(a.Offset, a.Last, a.Reconciled, nil)
		signal(&s.progress)
		s.signalRoom()
	case core.ActFail:
		n := a.Last - a.Offset + 1
		s.stats.Failed += n
		s.cb.push(a.Offset, a.Last, a.Err)
		s.observeEnded(a.Offset, a.Last, false, a.Err)
		signal(&s.progress)
		s.signalRoom()
	case core.ActInvalidateCredentials:
		s.t.InvalidateCredentials()
	case core.ActFinished:
		s.finished = true
		s.err = a.Err
		s.timer.Stop()
		s.timerArmed = false
		s.cb.finish()
		signal(&s.progress)
		signal(&s.space)
		close(s.done)
		s.observeClosed(a.Err)
		if a.Err != nil {
			s.logError("stream failed", "stream_id", s.m.StreamID(), "error", a.Err)
		} else {
			s.logInfo("stream closed", "stream_id", s.m.StreamID())
		}
	}
}

// giveBack recycles the arena's memory of durable calls, unless the sender
// of a connection the stream has left may still be reading it. The caller
// holds s.mu.
func (s *Stream) giveBack() {
	if s.arena != nil && s.strays == 0 {
		s.arena.giveBack(s.m.AckFloor())
	}
}

// conn returns the connection an action names. The machine names only
// connections it opened and has not aborted, so a miss is a broken
// invariant.
func (s *Stream) conn(a *core.Action) *conn {
	c := s.conns[a.Conn]
	if c == nil {
		panic(fmt.Sprintf("zbstream: %s for connection %d, which is not live", a.Kind, a.Conn))
	}
	return c
}

// startConn starts the goroutine that opens and then reads one connection.
func (s *Stream) startConn(a *core.Action) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		id:     a.Conn,
		ctx:    ctx,
		cancel: cancel,
		wake:   make(chan struct{}, 1),
		req: OpenRequest{
			Kind: s.kind, RecordType: s.rt,
			Resume: a.Resume, StreamID: a.StreamID, RequestID: a.RequestID,
		},
	}
	s.conns[a.Conn] = c
	s.live = c
	if s.stats.Opens > 0 {
		s.stats.Reconnects++
		s.observeReconnecting()
	}
	s.stats.Opens++
	s.logDebug("opening connection", "conn", a.Conn, "resume", a.Resume, "stream_id", a.StreamID)
	s.wg.Add(1)
	go s.runConn(c)
}

// rearm makes sure the timer fires by the machine's next deadline. It is
// lazy: the ack deadline moves with every ack, and resetting a timer each
// time would cost more than the ack, so a timer armed earlier than needed is
// left alone. It fires early, Tick finds nothing due, and rearm sets it
// again. The caller holds s.mu and took it with lock.
func (s *Stream) rearm() {
	if at, ok := s.m.NextDeadline(); ok && (!s.timerArmed || at < s.timerAt) {
		s.timer.Reset(at.Sub(s.at))
		s.timerAt, s.timerArmed = at, true
	}
}

// timerLoop feeds the machine's deadlines to Tick until the stream ends.
func (s *Stream) timerLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.timer.C:
			s.lock()
			s.timerArmed = false
			if err := s.m.Tick(s.at); err != nil {
				panic(fmt.Sprintf("zbstream: tick: %v", err))
			}
			s.process()
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}

// signalRoom wakes the callers blocked on a full window once it has drained
// below its low-water mark (7/8 of each limit, the byte limit applied to
// what the window keeps: kept), not on every completion: a
// full window would otherwise wake every blocked producer once per ack, for
// one call's worth of room each time. The caller holds s.mu.
func (s *Stream) signalRoom() {
	if s.space == nil {
		return
	}
	if calls, bytes := s.m.Pending(); calls <= s.lowCalls && kept(int64(calls), bytes, s.m.PendingRecords()) <= s.lowBytes {
		signal(&s.space)
	}
}

// signal wakes everybody waiting on *ch, if anybody is.
func signal(ch *chan struct{}) {
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}

// waitOn returns the channel *ch, making it if nobody waits yet.
func waitOn(ch *chan struct{}) <-chan struct{} {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

func (s *Stream) logDebug(msg string, args ...any) { s.log(slog.LevelDebug, msg, args...) }
func (s *Stream) logInfo(msg string, args ...any)  { s.log(slog.LevelInfo, msg, args...) }
func (s *Stream) logError(msg string, args ...any) { s.log(slog.LevelError, msg, args...) }

func (s *Stream) log(level slog.Level, msg string, args ...any) {
	if l := s.opts.Logger; l != nil {
		l.Log(context.Background(), level, msg, args...)
	}
}
