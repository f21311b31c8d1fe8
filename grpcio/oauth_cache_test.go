package grpcio_test

// The token cache: reuse while fresh, refresh before expiry, one shared
// request, the cached token kept over a failed refresh, Invalidate and
// the callers' contexts.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

// TestOAuthCaches: many Headers calls while the token is fresh make one
// request, and each call gets its own map.
func TestOAuthCaches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: mintTokens(3600)}
		o := mustOAuth(t, oauthTestConfig(ep))
		for range 100 {
			wantToken(t, o, "tok-1")
			time.Sleep(30 * time.Second) // 50 minutes in all: still fresh
		}
		h, _ := o.Headers(t.Context())
		h[grpcio.HeaderAuthorization] = "changed"
		wantToken(t, o, "tok-1")
		if n := ep.requests(); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
	})
}

// TestOAuthRefreshBeforeExpiry: the token is replaced a margin before it
// expires: 5 minutes for long-lived tokens, 10% of shorter lifetimes,
// RefreshBefore when set, never more than half the lifetime.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	for _, tc := range []struct {
		name          string
		expiresIn     int
		refreshBefore time.Duration
		wantMargin    time.Duration
	}{
		{"hour: 5 min", 3600, 0, 5 * time.Minute},
		{"10 min: 10%", 600, 0, time.Minute},
		{"RefreshBefore", 3600, 20 * time.Minute, 20 * time.Minute},
		{"RefreshBefore capped at half", 600, time.Hour, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ep := &fakeTokenEndpoint{respond: mintTokens(tc.expiresIn)}
				cfg := oauthTestConfig(ep)
				cfg.RefreshBefore = tc.refreshBefore
				o := mustOAuth(t, cfg)
				wantToken(t, o, "tok-1")
				refreshAt := time.Duration(tc.expiresIn)*time.Second - tc.wantMargin
				time.Sleep(refreshAt - time.Second)
				wantToken(t, o, "tok-1")
				time.Sleep(time.Second)
				wantToken(t, o, "tok-2")
				if n := ep.requests(); n != 2 {
					t.Fatalf("%d requests, want 2", n)
				}
				// The new token's lifetime counts from its own request.
				time.Sleep(refreshAt - time.Second)
				wantToken(t, o, "tok-2")
				time.Sleep(time.Second)
				wantToken(t, o, "tok-3")
			})
		})
	}
}

// TestOAuthSingleFlight: concurrent callers needing a token share one
// request, at the first mint and at a refresh.
func TestOAuthSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		ep := &fakeTokenEndpoint{respond: func(n int, req *http.Request) (int, string, error) {
			<-release
			return http.StatusOK, tokenAnswer(fmt.Sprintf("tok-%d", n), 3600), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		const callers = 50
		round := func(want string) {
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() { wantToken(t, o, want) })
			}
			synctest.Wait() // every caller is blocked on the one request
			release <- struct{}{}
			wg.Wait()
		}
		round("tok-1")
		if n := ep.requests(); n != 1 {
			t.Fatalf("%d requests for the first token, want 1", n)
		}
		time.Sleep(56 * time.Minute)
		round("tok-2")
		if n := ep.requests(); n != 2 {
			t.Fatalf("%d requests after the refresh, want 2", n)
		}
	})
}

// TestOAuthRefreshFailure: when a refresh fails, a still-valid token is
// kept (and the failure logged without secrets); once it has expired, the
// failure is returned.
func TestOAuthRefreshFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		ep := &fakeTokenEndpoint{respond: func(n int, req *http.Request) (int, string, error) {
			if fail.Load() {
				return http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`, nil
			}
			return http.StatusOK, tokenAnswer(fmt.Sprintf("tok-%d", n), 3600), nil
		}}
		var logs bytes.Buffer
		cfg := oauthTestConfig(ep)
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o := mustOAuth(t, cfg)
		wantToken(t, o, "tok-1")

		fail.Store(true)
		time.Sleep(56 * time.Minute) // due for refresh, valid for 4 more minutes
		wantToken(t, o, "tok-1")
		time.Sleep(3 * time.Minute)
		wantToken(t, o, "tok-1")
		if n := ep.requests(); n != 3 {
			t.Fatalf("%d requests, want 3 (each call while due retries the refresh)", n)
		}
		time.Sleep(time.Minute) // expired
		_, err := o.Headers(t.Context())
		te := wantTokenError(t, err, core.CodeUnavailable)
		if te.StatusCode != http.StatusServiceUnavailable || te.OAuthError != "temporarily_unavailable" {
			t.Fatalf("TokenError %+v", te)
		}

		fail.Store(false)
		wantToken(t, o, "tok-5")
		out := logs.String()
		if !strings.Contains(out, "using the cached token") || !strings.Contains(out, "token minted") {
			t.Errorf("log lacks the expected events:\n%s", out)
		}
		noSecrets(t, out, "tok-1", "tok-5")
	})
}

// TestOAuthInvalidate: after Invalidate the next call mints a new token,
// and a failure then is returned even though the old token had not expired.
func TestOAuthInvalidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		ep := &fakeTokenEndpoint{respond: func(n int, req *http.Request) (int, string, error) {
			if fail.Load() {
				return http.StatusUnauthorized, `{"error":"invalid_client"}`, nil
			}
			return http.StatusOK, tokenAnswer(fmt.Sprintf("tok-%d", n), 3600), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		wantToken(t, o, "tok-1")
		wantToken(t, o, "tok-1")
		o.Invalidate()
		wantToken(t, o, "tok-2")
		wantToken(t, o, "tok-2")
		if n := ep.requests(); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
		o.Invalidate()
		fail.Store(true)
		_, err := o.Headers(t.Context())
		wantTokenError(t, err, core.CodeUnauthenticated)
	})
}

// TestOAuthContext: Headers honours its ctx: an ended ctx fails at once; a
// caller whose ctx ends while waiting returns with the ctx's error while
// the request goes on for other callers; the request is canceled once
// nobody waits for it.
func TestOAuthContext(t *testing.T) {
	t.Run("already canceled", func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: mintTokens(3600)}
		o := mustOAuth(t, oauthTestConfig(ep))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := o.Headers(ctx)
		wantTokenError(t, err, core.CodeCanceled)
		if !errors.Is(err, context.Canceled) || ep.requests() != 0 {
			t.Fatalf("error %v, %d requests", err, ep.requests())
		}
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			canceled := make(chan struct{})
			release := make(chan struct{})
			ep := &fakeTokenEndpoint{respond: func(n int, req *http.Request) (int, string, error) {
				select {
				case <-req.Context().Done():
					close(canceled)
					return 0, "", req.Context().Err()
				case <-release:
					return http.StatusOK, tokenAnswer(fmt.Sprintf("tok-%d", n), 3600), nil
				}
			}}
			o := mustOAuth(t, oauthTestConfig(ep))
			patient := make(chan error, 1)
			pctx, pcancel := context.WithCancel(t.Context())
			go func() {
				_, err := o.Headers(pctx)
				patient <- err
			}()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, err := o.Headers(ctx)
			wantTokenError(t, err, core.CodeDeadlineExceeded)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v does not wrap context.DeadlineExceeded", err)
			}
			// The patient caller still waits for the shared request.
			synctest.Wait()
			select {
			case <-canceled:
				t.Fatal("request canceled while a caller still waits")
			default:
			}
			pcancel()
			wantTokenError(t, <-patient, core.CodeCanceled)
			<-canceled // nobody waits: the request was canceled
			if n := ep.requests(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			// The next caller starts a new request.
			go func() { release <- struct{}{} }()
			wantToken(t, o, "tok-2")
		})
	})
}

// TestOAuthConcurrentUse mixes Headers, Invalidate and abandoned calls
// from many goroutines (for the race detector and goleak): every call
// either gets a token or its own ctx's error.
func TestOAuthConcurrentUse(t *testing.T) {
	ep := &fakeTokenEndpoint{respond: mintTokens(3600)}
	o := mustOAuth(t, oauthTestConfig(ep))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				ctx, cancel := context.WithCancel(t.Context())
				if (g+i)%7 == 0 {
					cancel()
				}
				h, err := o.Headers(ctx)
				switch {
				case err == nil:
					if !strings.HasPrefix(h[grpcio.HeaderAuthorization], "Bearer tok-") {
						t.Errorf("headers %v", h)
					}
				case !errors.Is(err, context.Canceled) || ctx.Err() == nil:
					t.Errorf("Headers: %v", err)
				}
				cancel()
				if (g+i)%5 == 0 {
					o.Invalidate()
				}
			}
		})
	}
	wg.Wait()
}
