package grpcio

// The OAuth token cache: a Headers call serves the cached token until it is
// due for refresh, then waits for a new one; concurrent callers share one
// token request (a single flight) that is canceled only when none of them
// waits any more; a failed refresh falls back to the cached token while it
// is still valid.

import (
	"context"
	"log/slog"
	"time"
)

// maxRefreshMargin caps the default refresh margin (RefreshBefore zero):
// 10% of a long-lived token's lifetime would refresh it needlessly early.
const maxRefreshMargin = 5 * time.Minute

// tokenFlight is one token request shared by every Headers call waiting
// for it.
type tokenFlight struct {
	done    chan struct{} // closed when token and err are set
	cancel  context.CancelFunc
	waiters int // guarded by OAuth.mu

	token string
	err   error
}

func (o *oauth) headers(ctx context.Context) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, o.ctxError(err)
	}
	o.mu.Lock()
	if o.token != "" && time.Now().Before(o.refreshAt) {
		tok := o.token
		o.mu.Unlock()
		return bearerHeader(tok), nil
	}
	f := o.flight
	if f == nil {
		f = o.startLocked(ctx)
	}
	f.waiters++
	o.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		o.mu.Lock()
		f.waiters--
		if f.waiters == 0 && o.flight == f {
			// Nobody waits for it any more: stop it, and let the next
			// caller start afresh rather than join a canceled request.
			o.flight = nil
			f.cancel()
		}
		o.mu.Unlock()
		return nil, o.ctxError(ctx.Err())
	}
	if f.err == nil {
		return bearerHeader(f.token), nil
	}
	o.mu.Lock()
	tok, expiry := o.token, o.expiry
	o.mu.Unlock()
	if tok != "" {
		if left := time.Until(expiry); left > 0 {
			if o.log != nil {
				o.log.LogAttrs(ctx, slog.LevelWarn, "zbstream: OAuth token refresh failed; using the cached token",
					slog.String("client_id", o.cfg.ClientID), slog.String("table", o.cfg.Table),
					slog.Duration("valid_for", left), slog.Any("error", f.err))
			}
			return bearerHeader(tok), nil
		}
	}
	return nil, f.err
}

func (o *oauth) invalidate() {
	o.mu.Lock()
	o.token, o.expiry, o.refreshAt = "", time.Time{}, time.Time{}
	o.mu.Unlock()
}

// startLocked starts a token request shared by every caller that joins it
// before it ends. It runs on its own goroutine, under a context that keeps
// ctx's values but not its cancellation: it is canceled only when every
// caller has stopped waiting.
func (o *oauth) startLocked(ctx context.Context) *tokenFlight {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &tokenFlight{done: make(chan struct{}), cancel: cancel}
	o.flight = f
	go func() {
		defer cancel()
		start := time.Now()
		tok, lifetime, err := o.mint(fctx)
		if err == nil && o.log != nil {
			o.log.LogAttrs(fctx, slog.LevelDebug, "zbstream: OAuth token minted",
				slog.String("client_id", o.cfg.ClientID), slog.String("table", o.cfg.Table),
				slog.Duration("lifetime", lifetime))
		}
		o.mu.Lock()
		if o.flight == f {
			o.flight = nil
			if err == nil && lifetime > 0 {
				o.token = tok
				o.expiry = start.Add(lifetime)
				o.refreshAt = o.expiry.Add(-o.margin(lifetime))
			}
		}
		f.token, f.err = tok, err
		close(f.done)
		o.mu.Unlock()
	}()
	return f
}

// margin is how long before expiry a token of this lifetime is replaced.
func (o *oauth) margin(lifetime time.Duration) time.Duration {
	m := o.cfg.RefreshBefore
	if m == 0 {
		m = min(maxRefreshMargin, lifetime/10)
	}
	return min(m, lifetime/2)
}
