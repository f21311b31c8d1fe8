package io

import (
	"context"
	"errors"
	"fmt"

	"github.com/zbstream/zbstream/core"
)

// Wait blocks until offset is durable (acknowledged, or at or below a resume
// watermark) and returns nil, or returns the stream's error if the offset
// failed, or ctx's error if ctx ends first. Offsets at or below a resume
// watermark return at once. An offset never assigned is ErrNeverAssigned.
func (s *Stream) Wait(ctx context.Context, offset int64) error {
	for {
		s.mu.Lock()
		switch last := s.m.LastAssigned(); {
		case offset < core.NoOffset:
			s.mu.Unlock()
			return fmt.Errorf("%w: %d is not an offset", ErrNeverAssigned, offset)
		case s.m.Durable(offset):
			s.mu.Unlock()
			return nil
		case offset > last:
			s.mu.Unlock()
			return fmt.Errorf("%w: %d (last assigned %d)", ErrNeverAssigned, offset, last)
		case s.m.Failed(offset):
			err := failed(s.m.Err())
			s.mu.Unlock()
			return err
		}
		progress := waitOn(&s.progress)
		s.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Flush waits until every call accepted before it was called is durable. It
// is bounded by ctx and by Options.FlushTimeout; a flush that times out
// returns ErrFlushTimeout and leaves the stream running. If the stream
// failed, Flush returns its error.
func (s *Stream) Flush(ctx context.Context) error {
	s.mu.Lock()
	target, ferr := s.m.LastAssigned(), s.m.Err()
	s.mu.Unlock()
	if ferr != nil {
		return failed(ferr)
	}
	wctx, cancel := context.WithTimeoutCause(ctx, s.opts.FlushTimeout, ErrFlushTimeout)
	defer cancel()
	err := s.Wait(wctx, target)
	if errors.Is(err, ErrFlushTimeout) {
		return fmt.Errorf("%w after %s: offset %d is not durable yet", ErrFlushTimeout, s.opts.FlushTimeout, target)
	}
	return err
}
