package io

import "github.com/zbstream/zbstream/core"

// The stream's side of observation: each helper tells an EventObserver the
// event with its details, or a plain Observer its method. The caller holds
// s.mu.

// event returns an Event of kind k filled with what every event carries.
func (s *Stream) event(k EventKind) Event {
	calls, bytes := s.m.Pending()
	return Event{
		Kind: k, Table: s.opts.Table, StreamID: s.m.StreamID(),
		StreamKind: s.kind, RecordType: s.rt,
		InFlightCalls: int64(calls), InFlightBytes: bytes,
		CallbackQueue: s.cb.pending,
	}
}

// callEvent is event for the call at off, with its records and bytes and,
// for a call that ended, its latency.
func (s *Stream) callEvent(k EventKind, off int64) Event {
	e := s.event(k)
	e.Offset = off
	if c, ok := s.calls.info(off); ok {
		e.Records, e.Bytes = c.records, c.bytes
		if k == EventDurable || k == EventFailed {
			e.Latency = s.at.Sub(c.at)
		}
	}
	return e
}

func (s *Stream) observeOpened() {
	if s.events != nil {
		s.events.Observe(s.event(EventOpened))
	}
}

func (s *Stream) observeAccepted(off int64, n int, size int64) {
	if s.events == nil {
		s.opts.Observer.Accepted(n, size)
		return
	}
	s.calls.push(off, callInfo{at: s.at, bytes: size, records: n})
	s.events.Observe(s.callEvent(EventAccepted, off))
}

// observeEnded reports the calls first..last as durable (err nil) or
// failed.
func (s *Stream) observeEnded(first, last int64, reconciled bool, err error) {
	if s.events == nil {
		if err != nil {
			s.opts.Observer.Failed(last - first + 1)
		} else {
			s.opts.Observer.Completed(last-first+1, reconciled)
		}
		return
	}
	k, code := EventDurable, core.CodeOK
	if err != nil {
		k, code = EventFailed, codeOf(err)
	}
	for o := first; o <= last; o++ {
		e := s.callEvent(k, o)
		e.Reconciled, e.Err, e.Code = reconciled, err, code
		s.events.Observe(e)
	}
	s.calls.drop(last)
}

func (s *Stream) observeResent(off int64) {
	if s.events != nil {
		s.events.Observe(s.callEvent(EventResent, off))
	}
}

func (s *Stream) observeConnected(resumed bool) {
	if s.events == nil {
		s.opts.Observer.Connected(resumed)
		return
	}
	e := s.event(EventConnected)
	e.Resumed = resumed
	s.events.Observe(e)
}

func (s *Stream) observeDisconnected(code core.Code) {
	if s.events == nil {
		s.opts.Observer.Disconnected(code)
		return
	}
	e := s.event(EventDisconnected)
	e.Code = code
	s.events.Observe(e)
}

func (s *Stream) observeReconnecting() {
	if s.events != nil {
		e := s.event(EventReconnecting)
		e.Code = s.lastCode
		s.events.Observe(e)
	}
}

func (s *Stream) observeClosed(err error) {
	if s.events != nil && s.openSeen {
		e := s.event(EventClosed)
		e.Err = err
		if err != nil {
			e.Code = codeOf(err)
		}
		s.events.Observe(e)
	}
}
