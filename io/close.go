package io

import (
	"context"
	"fmt"
)

// Close ends the stream cleanly: it stops accepting records, waits until
// every accepted one is durable, half-closes the connection and waits for
// the server to end it, then waits up to Options.CallbackDrain for queued
// callbacks and for every goroutine the stream started.
//
// Close is idempotent and safe to call concurrently with ingest and with
// itself. It returns nil when the stream closed cleanly, else the error the
// stream failed with (records it could not deliver stay in Unacked). If ctx
// ends before the stream has closed, Close fails the stream with ctx's cause
// rather than leave anything running, and returns that.
func (s *Stream) Close(ctx context.Context) error {
	s.lock()
	s.closing = true
	err := s.m.Close(s.at)
	s.process()
	signal(&s.space) // callers blocked on a full window get ErrClosed now
	s.mu.Unlock()
	if err != nil {
		panic(fmt.Sprintf("zbstream: close: %v", err))
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		s.abandon(fmt.Errorf("zbstream: close abandoned: %w", context.Cause(ctx)))
	}
	s.release(ctx)
	return s.err
}
