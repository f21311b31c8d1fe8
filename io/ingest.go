package io

import (
	"context"
	"errors"

	"github.com/zbstream/zbstream/core"
)

// IngestRecord accepts one record and returns its offset once the record is
// accepted (not yet durable: see Wait and Flush). The record is kept by
// reference until it is durable or failed; the caller must not modify it.
//
// When the window of unacknowledged calls is full, or callbacks lag
// Options.CallbackQueue offsets behind, IngestRecord blocks until there is
// room or ctx ends. A record larger than the per-call limit is refused with
// a *core.LimitError; after Close, core.ErrClosed; after a failure, an error
// wrapping core.ErrStreamFailed and the cause.
func (s *Stream) IngestRecord(ctx context.Context, record []byte) (int64, error) {
	return s.ingest(ctx, record, nil, false)
}

// IngestBatch accepts records as one call under one offset, which it
// returns; every record of the batch lands together. An empty batch gets no
// offset: core.NoOffset and a nil error. Otherwise it behaves as
// IngestRecord. Both the slice and its records are kept by reference until
// the call is durable or failed: do not modify or reuse either before then
// (a new slice per call is the simple way).
func (s *Stream) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	return s.ingest(ctx, nil, records, true)
}

func (s *Stream) ingest(ctx context.Context, one []byte, many [][]byte, batch bool) (int64, error) {
	for {
		s.lock()
		var (
			off int64
			err error
		)
		_, before := s.m.Pending()
		switch {
		case s.cb.full() && !s.m.State().Terminal():
			err = core.ErrWindowFull
		case batch:
			off, err = s.m.IngestBatch(s.at, s.rt, many)
		default:
			off, err = s.m.IngestRecord(s.at, s.rt, one)
		}
		if err == nil {
			if off != core.NoOffset {
				_, after := s.m.Pending()
				n := 1
				if batch {
					n = len(many)
				}
				s.accepted(n, after-before)
			}
			s.process()
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

// accepted counts an accepted call of n records and size payload bytes
// (the window's growth: the core has summed them already). The caller holds
// s.mu.
func (s *Stream) accepted(n int, size int64) {
	s.stats.Accepted++
	s.stats.Records += int64(n)
	s.opts.Observer.Accepted(n, size)
}
