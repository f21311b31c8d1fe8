package io

import (
	"context"
	"errors"

	"github.com/zbstream/zbstream/core"
)

// IngestRecord accepts one record and returns its offset once the record is
// accepted (not yet durable: see Wait and Flush). The stream keeps a copy:
// the caller may reuse record as soon as IngestRecord returns (with
// Options.NoCopy, it is kept by reference until durable or failed, and the
// caller must not modify it until then).
//
// When the window of unacknowledged calls is full (its byte bound counting
// CallCost and RecordCost beside the payload), or callbacks lag
// Options.CallbackQueue offsets behind, or the connection's sender is
// behind (SendBacklog bytes or SendBacklogCalls calls, or SendBacklogTarget
// bytes in more than SendBacklogMinCalls calls), IngestRecord blocks
// until there is room or ctx ends. A record larger than the per-call limit
// is refused with a *core.LimitError; after Close, core.ErrClosed; after a
// failure, an error wrapping core.ErrStreamFailed and the cause.
func (s *Stream) IngestRecord(ctx context.Context, record []byte) (int64, error) {
	return s.ingest(ctx, record, nil, false)
}

// IngestBatch accepts records as one call under one offset, which it
// returns; every record of the batch lands together. An empty batch gets no
// offset: core.NoOffset and a nil error. Otherwise it behaves as
// IngestRecord: the stream copies the records, and the caller may reuse
// the slice and the records at once. With Options.NoCopy both are kept by
// reference until the call is durable or failed: do not modify or reuse
// either before then (a new slice per call is the simple way).
func (s *Stream) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	return s.ingest(ctx, nil, records, true)
}

func (s *Stream) ingest(ctx context.Context, one []byte, many [][]byte, batch bool) (int64, error) {
	size, framed, n := int64(len(one)), core.FramedSize(len(one)), 1
	if batch {
		size, framed = core.BatchSizes(many)
		n = len(many)
	}
	for {
		s.lock()
		var (
			off int64
			err error
		)
		inFlight, before := s.m.Pending()
		switch {
		case s.cb.full() && !s.m.State().Terminal():
			err = core.ErrWindowFull
		case s.backlogged():
			err = core.ErrWindowFull // the same wait, for the sender
		case s.overBound(size, framed, n):
			err = core.ErrWindowFull // the byte bound, with what a call keeps
		case batch:
			off, err = s.acceptBatch(many, size, framed)
		default:
			off, err = s.acceptRecord(one, framed)
		}
		if err == nil {
			if off != core.NoOffset {
				_, after := s.m.Pending()
				s.accepted(off, n, after-before)
			}
			s.idleIngest = inFlight == 0
			s.process()
			s.idleIngest = false
			if c := s.writeHere; c != nil {
				s.writeHere = nil
				s.sendHere(c)
			}
			s.mu.Unlock()
			return off, nil
		}
		if !errors.Is(err, core.ErrWindowFull) {
			s.process() // offset exhaustion fails the stream
			s.mu.Unlock()
			return core.NoOffset, err
		}
		room := waitOn(&s.space)
		s.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return core.NoOffset, context.Cause(ctx)
		}
	}
}

// accepted counts a call accepted at off, of n records and size payload
// bytes (the window's growth: the core has summed them already). The
// caller holds s.mu.
func (s *Stream) accepted(off int64, n int, size int64) {
	s.stats.Accepted++
	s.stats.Records += int64(n)
	s.observeAccepted(off, n, size)
}

// acceptRecord gives one record to the machine: a copy in the arena, or
// the record itself with Options.NoCopy or when the machine will refuse it
// anyway (too large, as the machine says, or the stream has ended); framed
// is its size as a call (core.FramedSize). The caller holds s.mu.
func (s *Stream) acceptRecord(r []byte, framed int64) (int64, error) {
	if s.arena == nil || s.finished || s.m.CallTooLarge(framed) {
		return s.m.IngestRecord(s.at, s.rt, r)
	}
	m := s.arena.mark()
	off, err := s.m.IngestRecord(s.at, s.rt, s.arena.copyRecord(r))
	s.arena.settle(m, off, err)
	return off, err
}

// acceptBatch is acceptRecord for a batch of payload bytes, framed bytes
// as a call (core.BatchSizes).
func (s *Stream) acceptBatch(records [][]byte, payload, framed int64) (int64, error) {
	if s.arena == nil || s.finished || len(records) == 0 || s.m.CallTooLarge(framed) {
		return s.m.IngestBatch(s.at, s.rt, records)
	}
	m := s.arena.mark()
	off, err := s.m.IngestBatch(s.at, s.rt, s.arena.copyBatch(records, int(framed)))
	s.arena.settle(m, off, err)
	return off, err
}
