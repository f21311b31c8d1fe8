package grpcio_test

// Helpers shared by the OAuth tests (an in-memory token endpoint, the
// checks of a token and of an error), the zero value and the example.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
