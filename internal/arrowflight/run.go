package arrowflight

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

// run is the stream's connection loop, its one long-lived goroutine: it
// opens a connection, serves it until it ends, and decides what follows
// (docs/protocol.md §12.6): a new connection at once after a rotation,
// one after a backoff after a retryable failure while the episode's
// budget lasts, and the end of the stream otherwise.
func (s *Stream) run() {
	defer close(s.done)
	defer s.cancel()
	rng := rand.New(rand.NewPCG(s.opts.seed, s.opts.seed^0x9e3779b97f4a7c15))
	var (
		attempts     int    // reconnects of the current episode
		mark         uint64 // progress when the episode started
		everOpened   bool
		authRetried  bool
		previousCode = core.CodeOK
		reconnecting bool
	)
	for {
		s.mu.Lock()
		stop := s.m.Err() != nil || (s.closing && s.m.Idle())
		s.mu.Unlock()
		if stop || s.ctx.Err() != nil {
			return
		}
		if reconnecting {
			s.obs.reconnecting(previousCode)
		}
		reconnecting = true
		out, err := s.connection()
		select {
		case <-s.opened:
			everOpened = true
		default:
		}
		switch {
		case out == outClosed:
			return
		case out == outRotated:
			previousCode = core.CodeCanceled
			continue
		case s.ctx.Err() != nil:
			return
		}
		code := grpcio.Classify(err)
		previousCode = code
		if code == core.CodeUnauthenticated {
			s.client.InvalidateCredentials(s.table)
			if !everOpened && !authRetried {
				authRetried = true // an expired cached token: once, at once
				continue
			}
		}
		var ce *core.ConnectionError
		if !errors.As(err, &ce) {
			err = &core.ConnectionError{Code: code, Err: err}
		}
		if isProtocol(err) || !code.Retryable() || s.opts.noRecovery {
			s.fail(err)
			return
		}
		// Durable progress makes the budget whole, and so does an idle
		// stream that has opened (it has nothing to lose by waiting for the
		// server). A first open has not: were idleness to count there, an
		// unreachable server would be retried for ever, and New would hang
		// under a context without a deadline.
		s.mu.Lock()
		if s.progress != mark || (everOpened && s.m.Idle()) {
			attempts, mark = 0, s.progress
		}
		s.mu.Unlock()
		if attempts >= s.opts.retries {
			s.fail(&zbstream.RetryError{Attempts: attempts, Last: err})
			return
		}
		attempts++
		t := time.NewTimer(s.opts.backoff.Delay(attempts, rng))
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
	}
}

// isProtocol reports whether err is a server's protocol violation, which
// no reconnect mends.
func isProtocol(err error) bool { return errors.Is(err, zbstream.ErrProtocol) }

// fail fails the stream with err, once: every batch not yet durable
// fails, and stays in Unacked.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

func (s *Stream) failLocked(err error) {
	if s.m.Err() != nil {
		return
	}
	s.m.Fail(err)
	s.obs.failed(s.keptFirst, int64(len(s.kept)), err)
	s.broadcast()
}
