package grpcio_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

const (
	oauthTestID     = "sp-client-id"
	oauthTestSecret = "s3cr3t-Sh0uld-N3v3r-Appear"
	oauthTestTable  = "main.sales.orders"
)

// tokenAnswer is a successful token answer.
func tokenAnswer(token string, expiresIn int) string {
	return fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","expires_in":%d,"scope":"all-apis"}`, token, expiresIn)
}

// fakeTokenEndpoint is an in-memory token endpoint, an http.RoundTripper, for
// the tests that run in a synctest bubble (a real httptest server does
// network I/O, which is not durably blocking there). respond is called for
// each request, numbered from 1.
type fakeTokenEndpoint struct {
	mu      sync.Mutex
	n       int
	respond func(n int, req *http.Request) (status int, body string, err error)
}

func (f *fakeTokenEndpoint) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	status, body, err := f.respond(n, req)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

func (f *fakeTokenEndpoint) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// mintTokens answers request n with token "tok-n" valid for expiresIn seconds.
func mintTokens(expiresIn int) func(int, *http.Request) (int, string, error) {
	return func(n int, _ *http.Request) (int, string, error) {
		return http.StatusOK, tokenAnswer(fmt.Sprintf("tok-%d", n), expiresIn), nil
	}
}

func oauthTestConfig(rt http.RoundTripper) grpcio.OAuthConfig {
	return grpcio.OAuthConfig{
		WorkspaceURL: "https://example.cloud.databricks.com",
		ClientID:     oauthTestID,
		ClientSecret: oauthTestSecret,
		Table:        oauthTestTable,
		HTTPClient:   &http.Client{Transport: rt},
	}
}

func mustOAuth(t *testing.T, cfg grpcio.OAuthConfig) *grpcio.OAuth {
	t.Helper()
	o, err := grpcio.NewOAuth(cfg)
	if err != nil {
		t.Fatalf("NewOAuth: %v", err)
	}
	return o
}

// wantToken calls Headers and checks the bearer token it returns.
func wantToken(t *testing.T, o *grpcio.OAuth, want string) {
	t.Helper()
	h, err := o.Headers(t.Context())
	if err != nil {
		t.Fatalf("Headers: %v", err)
	}
	if got := h[grpcio.HeaderAuthorization]; got != "Bearer "+want {
		t.Fatalf("authorization = %q, want %q", got, "Bearer "+want)
	}
	if len(h) != 1 {
		t.Fatalf("Headers returned %v, want only the authorization header", h)
	}
}

// wantTokenError checks that err wraps a *core.ConnectionError with code and a
// *grpcio.TokenError, and returns the latter.
func wantTokenError(t *testing.T, err error, code core.Code) *grpcio.TokenError {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", code)
	}
	var ce *core.ConnectionError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("error %v: want a *core.ConnectionError with code %v", err, code)
	}
	var te *grpcio.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("error %v: want a *grpcio.TokenError inside", err)
	}
	noSecrets(t, err.Error())
	return te
}

// noSecrets fails if s holds the secret, the Basic credentials or a token.
func noSecrets(t *testing.T, s string, tokens ...string) {
	t.Helper()
	basic := base64.StdEncoding.EncodeToString([]byte(oauthTestID + ":" + oauthTestSecret))
	for _, bad := range append([]string{oauthTestSecret, basic}, tokens...) {
		if strings.Contains(s, bad) {
			t.Fatalf("output leaks %q:\n%s", bad, s)
		}
	}
}

// TestOAuthWireRequest checks the request against a real HTTP server: method,
// path, Basic auth, headers, form fields and the authorization_details JSON.
func TestOAuthWireRequest(t *testing.T) {
	for _, tc := range []struct {
		name, workspaceID, wantResource string
	}{
		{"with resource", "1234567890", "api://databricks/workspaces/1234567890/zerobusDirectWriteApi"},
		{"without resource", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				method, path, contentType string
				user, pass                string
				basicOK                   bool
				form                      url.Values
			}
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				got.method, got.path, got.contentType = r.Method, r.URL.Path, r.Header.Get("Content-Type")
				got.user, got.pass, got.basicOK = r.BasicAuth()
				if err := r.ParseForm(); err != nil {
					t.Errorf("ParseForm: %v", err)
				}
				got.form = r.PostForm
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tokenAnswer("wire-token", 3600))
			}))
			defer srv.Close()

			cfg := grpcio.OAuthConfig{
				WorkspaceURL: srv.URL + "/", // a trailing slash is dropped
				ClientID:     oauthTestID,
				ClientSecret: oauthTestSecret,
				Table:        "cat.sch.tbl",
				WorkspaceID:  tc.workspaceID,
				HTTPClient:   srv.Client(),
			}
			o := mustOAuth(t, cfg)
			wantToken(t, o, "wire-token")
			if n := calls.Load(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			if got.method != http.MethodPost || got.path != "/oidc/v1/token" {
				t.Errorf("request %s %s, want POST /oidc/v1/token", got.method, got.path)
			}
			if got.contentType != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type %q", got.contentType)
			}
			if !got.basicOK || got.user != oauthTestID || got.pass != oauthTestSecret {
				t.Errorf("Basic auth (%q, %q, %v), want the client id and secret", got.user, got.pass, got.basicOK)
			}
			wantKeys := []string{"authorization_details", "grant_type", "scope"}
			if tc.wantResource != "" {
				wantKeys = append(wantKeys, "resource")
			}
			var keys []string
			for k, v := range got.form {
				keys = append(keys, k)
				if len(v) != 1 {
					t.Errorf("form field %s has %d values", k, len(v))
				}
			}
			if !sameStrings(keys, wantKeys) {
				t.Errorf("form fields %v, want %v", keys, wantKeys)
			}
			if g := got.form.Get("grant_type"); g != "client_credentials" {
				t.Errorf("grant_type %q", g)
			}
			if g := got.form.Get("scope"); g != "all-apis" {
				t.Errorf("scope %q", g)
			}
			if g := got.form.Get("resource"); g != tc.wantResource {
				t.Errorf("resource %q, want %q", g, tc.wantResource)
			}
			type detail struct {
				Type           string   `json:"type"`
				Privileges     []string `json:"privileges"`
				ObjectType     string   `json:"object_type"`
				ObjectFullPath string   `json:"object_full_path"`
			}
			var details []detail
			dec := json.NewDecoder(strings.NewReader(got.form.Get("authorization_details")))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&details); err != nil {
				t.Fatalf("authorization_details %q: %v", got.form.Get("authorization_details"), err)
			}
			want := []detail{
				{"unity_catalog_privileges", []string{"USE CATALOG"}, "CATALOG", "cat"},
				{"unity_catalog_privileges", []string{"USE SCHEMA"}, "SCHEMA", "cat.sch"},
				{"unity_catalog_privileges", []string{"SELECT", "MODIFY"}, "TABLE", "cat.sch.tbl"},
			}
			if !reflect.DeepEqual(details, want) {
				t.Errorf("authorization_details\n got %+v\nwant %+v", details, want)
			}
		})
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

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

// TestOAuthEndpointErrors: the status codes of the token endpoint's
// answers, network failures and malformed answers.
func TestOAuthEndpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		err    error
		want   core.Code
	}{
		{"401 bad secret", 401, `{"error":"invalid_client","error_description":"Client authentication failed"}`, nil, core.CodeUnauthenticated},
		{"400", 400, `{"error":"invalid_request"}`, nil, core.CodeUnauthenticated},
		{"403", 403, `not json`, nil, core.CodeUnauthenticated},
		{"408", 408, ``, nil, core.CodeUnavailable},
		{"429", 429, ``, nil, core.CodeUnavailable},
		{"500", 500, `<html>oops</html>`, nil, core.CodeUnavailable},
		{"503", 503, `{"error":"temporarily_unavailable"}`, nil, core.CodeUnavailable},
		{"network", 0, ``, errors.New("dial tcp: connection refused"), core.CodeUnavailable},
		{"200 not json", 200, `<html>proxy login</html>`, nil, core.CodeUnavailable},
		{"200 no token", 200, `{"token_type":"Bearer","expires_in":3600}`, nil, core.CodeUnavailable},
		{"200 bad expires_in", 200, `{"access_token":"x","expires_in":"soon"}`, nil, core.CodeUnavailable},
		{"200 other token type", 200, `{"access_token":"x","token_type":"MAC","expires_in":3600}`, nil, core.CodeUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &fakeTokenEndpoint{respond: func(int, *http.Request) (int, string, error) { return tc.status, tc.body, tc.err }}
			o := mustOAuth(t, oauthTestConfig(ep))
			_, err := o.Headers(t.Context())
			te := wantTokenError(t, err, tc.want)
			if te.StatusCode != tc.status {
				t.Errorf("TokenError.StatusCode %d, want %d", te.StatusCode, tc.status)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("error %v does not wrap the network error", err)
			}
			if !strings.Contains(err.Error(), "/oidc/v1/token") {
				t.Errorf("error %q does not name the token endpoint", err)
			}
			var ce *core.ConnectionError
			errors.As(err, &ce)
			if ce.Retryable() != (tc.want == core.CodeUnavailable) {
				t.Errorf("Retryable() = %v for %v", ce.Retryable(), tc.want)
			}
		})
	}
}

// TestOAuthRejectedOverHTTP: a 401 from a real server, whose answer
// echoes the credentials, becomes UNAUTHENTICATED without leaking them.
func TestOAuthRejectedOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"error":             "invalid_client",
			"error_description": "bad credentials: " + r.Header.Get("Authorization") + " secret=" + oauthTestSecret,
		})
	}))
	defer srv.Close()
	cfg := oauthTestConfig(nil)
	cfg.WorkspaceURL, cfg.HTTPClient = srv.URL, srv.Client()
	o := mustOAuth(t, cfg)
	_, err := o.Headers(t.Context())
	te := wantTokenError(t, err, core.CodeUnauthenticated)
	if te.StatusCode != 401 || te.OAuthError != "invalid_client" || !strings.Contains(te.Description, "[REDACTED]") {
		t.Fatalf("TokenError %+v", te)
	}
	noSecrets(t, fmt.Sprintf("%v %+v %#v", err, te, te))
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

// TestOAuthNoExpiry: a token answer without expires_in serves its own
// callers but is not cached.
func TestOAuthNoExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: func(n int, _ *http.Request) (int, string, error) {
			return http.StatusOK, fmt.Sprintf(`{"access_token":"tok-%d","token_type":"bearer"}`, n), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		wantToken(t, o, "tok-1")
		wantToken(t, o, "tok-2")
	})
}

// TestOAuthExpiresInQuoted: expires_in as a quoted number is accepted.
func TestOAuthExpiresInQuoted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: func(n int, _ *http.Request) (int, string, error) {
			return http.StatusOK, fmt.Sprintf(`{"access_token":"tok-%d","expires_in":"600"}`, n), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		wantToken(t, o, "tok-1")
		time.Sleep(8 * time.Minute)
		wantToken(t, o, "tok-1")
		time.Sleep(time.Minute)
		wantToken(t, o, "tok-2")
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

// TestOAuthConfigValidation: every invalid field is a *core.ConfigError
// naming it, and no reason quotes the secret.
func TestOAuthConfigValidation(t *testing.T) {
	ok := oauthTestConfig(nil)
	if _, err := grpcio.NewOAuth(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*grpcio.OAuthConfig)
		field string
	}{
		{"no URL", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "" }, "WorkspaceURL"},
		{"bad URL", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "https://exa mple.com/%zz" }, "WorkspaceURL"},
		{"no scheme", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "example.com" }, "WorkspaceURL"},
		{"ftp", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "ftp://example.com" }, "WorkspaceURL"},
		{"no host", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "https:///path" }, "WorkspaceURL"},
		{"user info", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "https://u:" + oauthTestSecret + "@example.com" }, "WorkspaceURL"},
		{"query", func(c *grpcio.OAuthConfig) { c.WorkspaceURL = "https://example.com/?a=b" }, "WorkspaceURL"},
		{"no client id", func(c *grpcio.OAuthConfig) { c.ClientID = "" }, "ClientID"},
		{"no secret", func(c *grpcio.OAuthConfig) { c.ClientSecret = "" }, "ClientSecret"},
		{"no table", func(c *grpcio.OAuthConfig) { c.Table = "" }, "Table"},
		{"two parts", func(c *grpcio.OAuthConfig) { c.Table = "main.orders" }, "Table"},
		{"four parts", func(c *grpcio.OAuthConfig) { c.Table = "a.b.c.d" }, "Table"},
		{"empty catalog", func(c *grpcio.OAuthConfig) { c.Table = ".b.c" }, "Table"},
		{"empty schema", func(c *grpcio.OAuthConfig) { c.Table = "a..c" }, "Table"},
		{"empty table", func(c *grpcio.OAuthConfig) { c.Table = "a.b." }, "Table"},
		{"bad workspace id", func(c *grpcio.OAuthConfig) { c.WorkspaceID = "12/34" }, "WorkspaceID"},
		{"negative RefreshBefore", func(c *grpcio.OAuthConfig) { c.RefreshBefore = -time.Second }, "RefreshBefore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			o, err := grpcio.NewOAuth(cfg)
			var ce *core.ConfigError
			if !errors.As(err, &ce) || o != nil {
				t.Fatalf("NewOAuth = %v, %v; want a *core.ConfigError", o, err)
			}
			if !errors.Is(err, core.ErrInvalidConfig) || ce.Field != "OAuthConfig."+tc.field {
				t.Fatalf("error %v: field %q, want OAuthConfig.%s", err, ce.Field, tc.field)
			}
			noSecrets(t, err.Error())
		})
	}
}

// TestOAuthNoSecretInOutput: the config and the provider, printed with
// every verb, nested, and logged, never show the secret or the token.
func TestOAuthNoSecretInOutput(t *testing.T) {
	ep := &fakeTokenEndpoint{respond: mintTokens(3600)}
	cfg := oauthTestConfig(ep)
	cfg.WorkspaceURL = "https://user:" + oauthTestSecret + "@example.com" // invalid, but printable
	o := mustOAuth(t, oauthTestConfig(ep))
	wantToken(t, o, "tok-1")

	type holder struct {
		Cfg   grpcio.OAuthConfig
		P     *grpcio.OAuth
		inner *grpcio.OAuth // fmt cannot call Format on it
	}
	var out strings.Builder
	for _, v := range []any{cfg, &cfg, o, holder{cfg, o, o}, &holder{cfg, o, o}, []any{cfg, o}, map[string]any{"c": cfg}} {
		// Not %p: on a struct value it is a bad verb (go vet reports it),
		// which fmt prints field by field without calling Format.
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	fmt.Fprintf(&out, "%p %p\n", &cfg, o)
	fmt.Fprintln(&out, cfg, o)
	fmt.Fprint(&out, cfg, o)
	// Where fmt cannot call Format (an unexported field, here with a verb
	// that pointers do not take), it prints the fields itself: an OAuth
	// shows only a pointer then.
	if !strings.Contains(out.String(), "%!s(*grpcio.OAuth=&{0x") {
		t.Errorf("no fallback printing of an OAuth in the holder:\n%s", out.String())
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		slog.New(h).Info("config", "cfg", cfg, "provider", o, "ptr", &cfg)
	}
	out.WriteString(logs.String())
	s := out.String()
	noSecrets(t, s, "tok-1")
	if !strings.Contains(s, "[REDACTED]") || !strings.Contains(s, oauthTestID) || !strings.Contains(s, oauthTestTable) {
		t.Fatalf("output lacks the redacted marker or the non-secret fields:\n%s", s)
	}
}

// TestOAuthZeroValue: an OAuth not made by NewOAuth fails cleanly.
func TestOAuthZeroValue(t *testing.T) {
	for _, o := range []*grpcio.OAuth{nil, new(grpcio.OAuth)} {
		_, err := o.Headers(t.Context())
		var ce *core.ConnectionError
		if !errors.As(err, &ce) || ce.Code != core.CodeUnauthenticated {
			t.Fatalf("Headers of %v: %v, want UNAUTHENTICATED", o, err)
		}
		o.Invalidate()
		_ = fmt.Sprintf("%v %#v %s", o, o, slog.AnyValue(o))
	}
}

// TestWorkspaceIDFromEndpoint: the first label of the endpoint's host.
func TestWorkspaceIDFromEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"https://1234567890.zerobus.us-west-2.cloud.databricks.com": "1234567890",
		"1234567890.zerobus.us-west-2.cloud.databricks.com:443":     "1234567890",
		"http://ws.example.com/path":                                "ws",
		"https://127.0.0.1:8443":                                    "",
		"http://localhost:1234":                                     "",
		"http://[::1]:1234":                                         "",
		"":                                                          "",
	} {
		if got := grpcio.WorkspaceIDFromEndpoint(in); got != want {
			t.Errorf("WorkspaceIDFromEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// ExampleNewOAuth mints a token from a token endpoint (a test server here;
// in production, the workspace URL) and returns the header for an open.
func ExampleNewOAuth() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"example-token","token_type":"Bearer","expires_in":3600}`)
	}))
	defer srv.Close()

	provider, err := grpcio.NewOAuth(grpcio.OAuthConfig{
		WorkspaceURL: srv.URL, // e.g. "https://my-workspace.cloud.databricks.com"
		ClientID:     "my-service-principal",
		ClientSecret: "my-secret",
		Table:        "main.default.events",
		WorkspaceID:  grpcio.WorkspaceIDFromEndpoint("https://1234567890.zerobus.us-west-2.cloud.databricks.com"),
		HTTPClient:   srv.Client(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	headers, err := provider.Headers(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(headers[grpcio.HeaderAuthorization])
	// Printing or logging the provider never shows the secret.
	fmt.Println(strings.Contains(fmt.Sprintf("%+v", provider), "my-secret"))
	// Output:
	// Bearer example-token
	// false
}
