package grpcio

// The OAuth headers provider: the exported OAuth type, its construction from
// an OAuthConfig and the HeadersProvider calls the transport makes. The
// token cache and single flight are in oauth_cache.go, the token request in
// oauth_request.go, its errors in oauth_error.go, the configuration in
// oauth_config.go and the redacted printing in oauth_redact.go.

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/zbstream/zbstream/core"
)

// Token request constants, as the official Zerobus SDKs send them.
const (
	// TokenPath is the workspace's OAuth token endpoint, relative to the
	// workspace URL.
	TokenPath = "/oidc/v1/token"

	// DefaultOAuthTimeout bounds one token request when OAuthConfig has no
	// HTTPClient (the context given to Headers bounds it as well).
	DefaultOAuthTimeout = 30 * time.Second
)

// OAuth is a HeadersProvider that authenticates with OAuth client
// credentials against a Databricks workspace, as the official Zerobus SDKs
// do: it POSTs to the workspace's /oidc/v1/token with HTTP Basic
// authentication (client id and secret) and the form fields
// grant_type=client_credentials, scope=all-apis, authorization_details
// down-scoping the token to the table (USE CATALOG, USE SCHEMA, SELECT and
// MODIFY) and, when a workspace id is configured, resource. An Unscoped
// provider sends neither (OAuthConfig.Unscoped).
//
// The token is cached (one per provider, that is per client id and table)
// and replaced before it expires: a Headers call that finds it due waits
// for the new one. Concurrent Headers calls that need a new token share one
// request. When a refresh fails while the cached token is still valid, the
// cached token is used (and the failure logged, when a Logger is set). Invalidate, called after the
// server rejected a token, makes the next Headers call mint a new one.
//
// Token endpoint failures are returned as a *core.ConnectionError wrapping a
// *TokenError: code UNAUTHENTICATED (not retried) for a 4xx answer other
// than 408 and 429, such as a wrong secret; UNAVAILABLE (retried) for a 5xx,
// 408 or 429 answer, a network failure or an unreadable answer; CANCELED or
// DEADLINE_EXCEEDED when the ctx given to Headers ends first.
//
// Neither the secret nor a token ever appears in an error, a log record or
// the printed form of an OAuth or OAuthConfig. An OAuth is safe for
// concurrent use. The zero OAuth is not usable: create one with NewOAuth.
type OAuth struct {
	// p holds all state behind a pointer: fmt prints a pointer found in a
	// field as an address, so even the fallback printing that fmt uses
	// where it cannot call Format (a bad verb, an unexported field of a
	// caller's struct) shows neither the secret nor the token.
	p *oauth
}

// oauth is the state of an OAuth.
type oauth struct {
	cfg      OAuthConfig
	tokenURL string
	form     string // the request body, the same for every request
	client   *http.Client
	log      *slog.Logger

	mu        sync.Mutex
	token     string    // "" when none is cached
	expiry    time.Time // when token stops being valid
	refreshAt time.Time // when token is due for replacement
	flight    *tokenFlight
}

// NewOAuth validates cfg and returns a provider; no request is made until
// the first Headers call. A configuration error is a *core.ConfigError
// (errors.Is(err, core.ErrInvalidConfig) holds).
func NewOAuth(cfg OAuthConfig) (*OAuth, error) {
	tokenURL, parts, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type": {"client_credentials"},
		"scope":      {"all-apis"},
	}
	if !cfg.Unscoped {
		form.Set("authorization_details", authorizationDetails(parts))
	}
	if cfg.WorkspaceID != "" {
		form.Set("resource", "api://databricks/workspaces/"+cfg.WorkspaceID+"/zerobusDirectWriteApi")
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultOAuthTimeout}
	}
	return &OAuth{p: &oauth{
		cfg:      cfg,
		tokenURL: tokenURL,
		form:     form.Encode(),
		client:   client,
		log:      cfg.Logger,
	}}, nil
}

// Headers returns {"authorization": "Bearer <token>"}, minting a token
// first when none is cached or the cached one is due for refresh. ctx
// bounds the wait: when it ends first, the error wraps ctx.Err(), and the
// shared request is canceled once no caller waits for it any more.
func (o *OAuth) Headers(ctx context.Context) (map[string]string, error) {
	if o == nil || o.p == nil {
		return nil, &core.ConnectionError{Code: core.CodeUnauthenticated, Err: errNoOAuth}
	}
	return o.p.headers(ctx)
}

var errNoOAuth = errors.New("zbstream: OAuth provider not created with NewOAuth")

// Invalidate drops the cached token, so that the next Headers call mints a
// new one. Call it after the server rejected the token. A request already
// in flight is not affected.
func (o *OAuth) Invalidate() {
	if o != nil && o.p != nil {
		o.p.invalidate()
	}
}

func bearerHeader(token string) map[string]string {
	return map[string]string{HeaderAuthorization: "Bearer " + token}
}
