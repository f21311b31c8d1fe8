package arrowflight

import (
	"context"
	"fmt"
	"time"

	"github.com/zbstream/zbstream"
)

// Close stops accepting batches, waits until every batch accepted is
// durable, half-closes the connection and waits for the server to end
// it. It waits at most the close timeout (WithTimeouts) and until ctx
// ends: the batches still not durable then fail with an error wrapping
// zbstream.ErrCloseTimeout (or ctx's error), which Close returns; they
// stay in Unacked. Close is idempotent, returns nil on a stream that had
// failed before it was called, and leaves no goroutine or call behind.
func (s *Stream) Close(ctx context.Context) error {
	s.mu.Lock()
	failedBefore := s.m.Err() != nil
	s.closing = true
	s.broadcast()
	s.mu.Unlock()

	t := time.NewTimer(s.opts.closeTimeout)
	defer t.Stop()
	var cause error
	select {
	case <-s.done:
	case <-t.C:
		cause = zbstream.ErrCloseTimeout
	case <-ctx.Done():
		cause = fmt.Errorf("%w: %w", zbstream.ErrCloseTimeout, ctx.Err())
	}
	if cause != nil {
		s.mu.Lock()
		if !s.m.Idle() {
			s.failLocked(cause)
		}
		s.mu.Unlock()
		s.cancel()
		<-s.done
	}
	if failedBefore {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.m.Err(); err != nil {
		return failed(err)
	}
	return nil
}
