package grpcio_test

// The token endpoint's failures: their codes, and no secret in them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/core"
)

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
