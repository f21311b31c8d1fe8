package grpcio

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	stdio "io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

	redactedMark = "[REDACTED]"

	maxRefreshMargin = 5 * time.Minute
	maxTokenLifetime = 24 * time.Hour
	maxTokenBody     = 1 << 20
	maxDescription   = 256
)

// OAuthConfig configures an OAuth client-credentials headers provider.
//
// Printing an OAuthConfig with any fmt verb, or logging it with log/slog,
// never shows ClientSecret: it reads "[REDACTED]" when set. One limit is
// fmt's: where it cannot call methods, in an unexported field of another
// struct or for a bad verb such as %p on a value (which go vet reports), it
// prints the fields itself. Keep an OAuthConfig in exported fields or
// behind a pointer; an *OAuth is safe everywhere.
type OAuthConfig struct {
	// WorkspaceURL is the Databricks workspace (the Unity Catalog
	// endpoint), e.g. "https://my-workspace.cloud.databricks.com"; the
	// token is requested from WorkspaceURL + TokenPath. It must be an
	// http or https URL with a host, and no user info, query or fragment.
	WorkspaceURL string
	// ClientID is the service principal's OAuth client id. Required.
	ClientID string
	// ClientSecret is the service principal's OAuth secret. Required;
	// never logged or printed.
	ClientSecret string
	// Table is the table the token is down-scoped to, catalog.schema.table
	// (exactly three non-empty dot-separated parts).
	Table string
	// WorkspaceID, when set, is sent as the token request's resource,
	// "api://databricks/workspaces/<WorkspaceID>/zerobusDirectWriteApi",
	// as the official SDKs do. They take it from the Zerobus endpoint's
	// host (see WorkspaceIDFromEndpoint). When empty, no resource is sent.
	WorkspaceID string
	// HTTPClient sends the token requests (set it for a custom CA or
	// proxy). Nil means a client with DefaultOAuthTimeout and Go's default
	// transport, which honours HTTPS_PROXY and NO_PROXY.
	HTTPClient *http.Client
	// RefreshBefore is how long before a token's expiry it is replaced.
	// Zero means 10% of the token's lifetime, at most 5 minutes. In every
	// case the margin is at most half the lifetime. Negative is invalid.
	RefreshBefore time.Duration
	// Logger, when set, receives token events at Debug (minted) and Warn
	// (a refresh failed and the cached token was kept). No secret or
	// token is ever logged. Nil logs nothing.
	Logger *slog.Logger
}

// String describes the configuration with ClientSecret redacted.
func (c OAuthConfig) String() string {
	return fmt.Sprintf("OAuthConfig{WorkspaceURL: %s, ClientID: %s, ClientSecret: %s, Table: %s, WorkspaceID: %s, RefreshBefore: %v, HTTPClient: %s}",
		redactWorkspaceURL(c.WorkspaceURL), c.ClientID, c.secretShown(), c.Table, c.WorkspaceID, c.RefreshBefore, shownSet(c.HTTPClient != nil))
}

// GoString is like String in Go syntax, with ClientSecret redacted.
func (c OAuthConfig) GoString() string {
	return fmt.Sprintf("grpcio.OAuthConfig{WorkspaceURL:%q, ClientID:%q, ClientSecret:%q, Table:%q, WorkspaceID:%q, RefreshBefore:%d, HTTPClient:%s, Logger:%s}",
		redactWorkspaceURL(c.WorkspaceURL), c.ClientID, c.secretShown(), c.Table, c.WorkspaceID, int64(c.RefreshBefore),
		shownPtr(c.HTTPClient != nil, "*http.Client"), shownPtr(c.Logger != nil, "*slog.Logger"))
}

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s,
// %q, %x, %d, ...) prints the redacted form, never the secret.
func (c OAuthConfig) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, c.String(), c.GoString())
}

// LogValue implements slog.LogValuer, with ClientSecret redacted.
func (c OAuthConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("workspace_url", redactWorkspaceURL(c.WorkspaceURL)),
		slog.String("client_id", c.ClientID),
		slog.String("client_secret", c.secretShown()),
		slog.String("table", c.Table),
		slog.String("workspace_id", c.WorkspaceID),
		slog.Duration("refresh_before", c.RefreshBefore),
	)
}

func (c OAuthConfig) secretShown() string {
	if c.ClientSecret == "" {
		return ""
	}
	return redactedMark
}

func shownSet(set bool) string {
	if set {
		return "set"
	}
	return "nil"
}

func shownPtr(set bool, typ string) string {
	if set {
		return "(" + typ + ")(set)"
	}
	return "nil"
}

// formatRedacted prints s (or gs for %#v) whatever the verb: a type holding
// a secret must not fall back to fmt's field-by-field printing.
func formatRedacted(f fmt.State, verb rune, s, gs string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = stdio.WriteString(f, gs)
	case verb == 'q':
		_, _ = stdio.WriteString(f, strconv.Quote(s))
	default:
		_, _ = stdio.WriteString(f, s)
	}
}

// redactWorkspaceURL returns raw with any user info replaced, or a
// placeholder when it does not parse (the text might hold credentials).
func redactWorkspaceURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "[invalid URL]"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

// WorkspaceIDFromEndpoint returns the workspace id the official SDKs derive
// from a Zerobus endpoint: the first label of its host, e.g. "1234567890"
// for "https://1234567890.zerobus.us-west-2.cloud.databricks.com". The
// scheme may be omitted. It returns "" when the host is an IP address or
// has a single label (a local test server, say).
func WorkspaceIDFromEndpoint(endpoint string) string {
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if host == "" || net.ParseIP(host) != nil {
		return ""
	}
	label, _, ok := strings.Cut(host, ".")
	if !ok || label == "" {
		return ""
	}
	return label
}

// validate reports the first invalid field as a *core.ConfigError. Reasons
// never quote the secret, nor a URL's user info.
func (c *OAuthConfig) validate() (tokenURL string, parts [3]string, err error) {
	bad := func(field, reason string) error {
		return &core.ConfigError{Field: "OAuthConfig." + field, Reason: reason}
	}
	u, perr := url.Parse(c.WorkspaceURL)
	switch {
	case c.WorkspaceURL == "":
		return "", parts, bad("WorkspaceURL", "is required")
	case perr != nil:
		return "", parts, bad("WorkspaceURL", "is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", parts, bad("WorkspaceURL", "must be an http or https URL, got "+strconv.Quote(redactWorkspaceURL(c.WorkspaceURL)))
	case u.Host == "" || u.Hostname() == "":
		return "", parts, bad("WorkspaceURL", "must have a host, got "+strconv.Quote(redactWorkspaceURL(c.WorkspaceURL)))
	case u.User != nil:
		return "", parts, bad("WorkspaceURL", "must not hold user info (pass ClientID and ClientSecret instead)")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", parts, bad("WorkspaceURL", "must not have a query or fragment, got "+strconv.Quote(redactWorkspaceURL(c.WorkspaceURL)))
	}
	if c.ClientID == "" {
		return "", parts, bad("ClientID", "is required")
	}
	if c.ClientSecret == "" {
		return "", parts, bad("ClientSecret", "is required")
	}
	split := strings.Split(c.Table, ".")
	if len(split) != 3 {
		return "", parts, bad("Table", fmt.Sprintf("must be catalog.schema.table (exactly three dot-separated parts), got %q (%d parts)", c.Table, len(split)))
	}
	for i, name := range [3]string{"catalog", "schema", "table"} {
		if split[i] == "" {
			return "", parts, bad("Table", fmt.Sprintf("has an empty %s name in %q", name, c.Table))
		}
		parts[i] = split[i]
	}
	if c.WorkspaceID != "" && strings.ContainsFunc(c.WorkspaceID, func(r rune) bool {
		return !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return "", parts, bad("WorkspaceID", fmt.Sprintf("must hold only letters, digits, '-' and '_', got %q", c.WorkspaceID))
	}
	if c.RefreshBefore < 0 {
		return "", parts, bad("RefreshBefore", "must not be negative, got "+c.RefreshBefore.String())
	}
	return strings.TrimRight(u.String(), "/") + TokenPath, parts, nil
}

// ucPrivileges is one element of the authorization_details array.
type ucPrivileges struct {
	Type           string   `json:"type"`
	Privileges     []string `json:"privileges"`
	ObjectType     string   `json:"object_type"`
	ObjectFullPath string   `json:"object_full_path"`
}

// authorizationDetails down-scopes a token to one table: USE CATALOG on its
// catalog, USE SCHEMA on its schema, SELECT and MODIFY on the table.
func authorizationDetails(p [3]string) string {
	const typ = "unity_catalog_privileges"
	b, err := json.Marshal([]ucPrivileges{
		{Type: typ, Privileges: []string{"USE CATALOG"}, ObjectType: "CATALOG", ObjectFullPath: p[0]},
		{Type: typ, Privileges: []string{"USE SCHEMA"}, ObjectType: "SCHEMA", ObjectFullPath: p[0] + "." + p[1]},
		{Type: typ, Privileges: []string{"SELECT", "MODIFY"}, ObjectType: "TABLE", ObjectFullPath: p[0] + "." + p[1] + "." + p[2]},
	})
	if err != nil { // strings and slices of strings always marshal
		panic(err)
	}
	return string(b)
}

// OAuth is a HeadersProvider that authenticates with OAuth client
// credentials against a Databricks workspace, as the official Zerobus SDKs
// do: it POSTs to the workspace's /oidc/v1/token with HTTP Basic
// authentication (client id and secret) and the form fields
// grant_type=client_credentials, scope=all-apis, authorization_details
// down-scoping the token to the table (USE CATALOG, USE SCHEMA, SELECT and
// MODIFY) and, when a workspace id is configured, resource.
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

// tokenFlight is one token request shared by every Headers call waiting
// for it.
type tokenFlight struct {
	done    chan struct{} // closed when token and err are set
	cancel  context.CancelFunc
	waiters int // guarded by OAuth.mu

	token string
	err   error
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
		"grant_type":            {"client_credentials"},
		"scope":                 {"all-apis"},
		"authorization_details": {authorizationDetails(parts)},
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

// Invalidate drops the cached token, so that the next Headers call mints a
// new one. Call it after the server rejected the token. A request already
// in flight is not affected.
func (o *OAuth) Invalidate() {
	if o != nil && o.p != nil {
		o.p.invalidate()
	}
}

func (o *oauth) invalidate() {
	o.mu.Lock()
	o.token, o.expiry, o.refreshAt = "", time.Time{}, time.Time{}
	o.mu.Unlock()
}

// String describes the provider with no secret and no token.
func (o *OAuth) String() string {
	if o == nil || o.p == nil {
		return "OAuth(nil)"
	}
	return "OAuth{" + o.p.cfg.String() + "}"
}

// GoString is like String; it never shows the secret or the token.
func (o *OAuth) GoString() string {
	if o == nil || o.p == nil {
		return "(*grpcio.OAuth)(nil)"
	}
	return "&grpcio.OAuth{cfg:" + o.p.cfg.GoString() + "}"
}

// Format implements fmt.Formatter: every verb prints the redacted form.
func (o *OAuth) Format(f fmt.State, verb rune) { formatRedacted(f, verb, o.String(), o.GoString()) }

// LogValue implements slog.LogValuer: the configuration, redacted.
func (o *OAuth) LogValue() slog.Value {
	if o == nil || o.p == nil {
		return slog.StringValue("OAuth(nil)")
	}
	return o.p.cfg.LogValue()
}

func bearerHeader(token string) map[string]string {
	return map[string]string{HeaderAuthorization: "Bearer " + token}
}

// ctxError wraps the end of a caller's ctx.
func (o *oauth) ctxError(err error) error {
	code := core.CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = core.CodeDeadlineExceeded
	}
	return &core.ConnectionError{Code: code, Err: &TokenError{URL: o.tokenURL, Err: err}}
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

// tokenResponse is the token endpoint's answer, success or OAuth error.
type tokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// mint performs one token request. lifetime is 0 when the answer gave no
// usable expires_in: the token then serves the callers of this request
// only, and is not cached.
func (o *oauth) mint(ctx context.Context) (token string, lifetime time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.tokenURL, strings.NewReader(o.form))
	if err != nil { // the URL was validated; only a broken ctx gets here
		return "", 0, o.fail(core.CodeUnavailable, 0, "", "", err)
	}
	req.SetBasicAuth(o.cfg.ClientID, o.cfg.ClientSecret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		code := core.CodeUnavailable
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			code = core.CodeCanceled
		}
		return "", 0, o.fail(code, 0, "", "", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, rerr := stdio.ReadAll(stdio.LimitReader(resp.Body, maxTokenBody))
	var tr tokenResponse
	jerr := json.Unmarshal(body, &tr)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		code := core.CodeUnauthenticated
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests {
			code = core.CodeUnavailable
		}
		if jerr != nil {
			tr = tokenResponse{}
		}
		return "", 0, o.fail(code, resp.StatusCode, tr.Error, tr.ErrorDescription, nil)
	}
	switch {
	case rerr != nil:
		return "", 0, o.fail(core.CodeUnavailable, resp.StatusCode, "", "", fmt.Errorf("reading the answer: %w", rerr))
	case jerr != nil:
		return "", 0, o.fail(core.CodeUnavailable, resp.StatusCode, "", "", errors.New("the answer is not a JSON token response"))
	case tr.AccessToken == "":
		return "", 0, o.fail(core.CodeUnavailable, resp.StatusCode, tr.Error, tr.ErrorDescription, errors.New("the answer has no access_token"))
	case tr.TokenType != "" && !strings.EqualFold(tr.TokenType, "bearer"):
		return "", 0, o.fail(core.CodeUnauthenticated, resp.StatusCode, "", "", fmt.Errorf("unsupported token_type %q", sanitizeEcho(tr.TokenType)))
	}
	lifetime, err = parseExpiresIn(tr.ExpiresIn)
	if err != nil {
		return "", 0, o.fail(core.CodeUnavailable, resp.StatusCode, "", "", err)
	}
	return tr.AccessToken, lifetime, nil
}

// parseExpiresIn reads expires_in, a number of seconds (some servers quote
// it). Absent, null or not positive: 0 (not cached). It is capped at a day.
func parseExpiresIn(raw json.RawMessage) (time.Duration, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return 0, nil
	}
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("expires_in is not a number: %q", sanitizeEcho(s))
	}
	if !(secs > 0) { // also NaN
		return 0, nil
	}
	if secs >= maxTokenLifetime.Seconds() {
		return maxTokenLifetime, nil
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// fail builds the error of a failed token request, with anything the server
// echoed scrubbed of the secret.
func (o *oauth) fail(code core.Code, status int, oauthCode, desc string, cause error) error {
	return &core.ConnectionError{Code: code, Err: &TokenError{
		URL:         o.tokenURL,
		StatusCode:  status,
		OAuthError:  sanitizeEcho(o.scrub(oauthCode)),
		Description: sanitizeEcho(o.scrub(desc)),
		Err:         cause,
	}}
}

// scrub removes the secret and the Basic credentials from text the token
// endpoint sent back.
func (o *oauth) scrub(s string) string {
	if s == "" {
		return s
	}
	basic := base64.StdEncoding.EncodeToString([]byte(o.cfg.ClientID + ":" + o.cfg.ClientSecret))
	s = strings.ReplaceAll(s, basic, redactedMark)
	return strings.ReplaceAll(s, o.cfg.ClientSecret, redactedMark)
}

// sanitizeEcho shortens s to at most maxDescription bytes, on a rune boundary,
// and replaces control characters.
func sanitizeEcho(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxDescription {
		return s
	}
	cut := maxDescription
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// TokenError is a failed OAuth token request. The errors of OAuth.Headers
// wrap it in a *core.ConnectionError that carries the status code. It never
// holds the client secret or a token.
type TokenError struct {
	// URL is the token endpoint.
	URL string
	// StatusCode is the HTTP status of the answer; 0 when there was none.
	StatusCode int
	// OAuthError and Description are the answer's "error" and
	// "error_description" fields (RFC 6749, section 5.2), when present,
	// truncated and scrubbed of the secret.
	OAuthError  string
	Description string
	// Err is the underlying failure (network, context, malformed answer),
	// or nil for an error answer.
	Err error
}

// Error describes the failure: the endpoint, the HTTP status, the OAuth
// error and the cause, whichever are known.
func (e *TokenError) Error() string {
	var b strings.Builder
	b.WriteString("zbstream: OAuth token request to ")
	b.WriteString(e.URL)
	b.WriteString(" failed")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.OAuthError != "" {
		b.WriteString(": ")
		b.WriteString(e.OAuthError)
	}
	if e.Description != "" {
		b.WriteString(": ")
		b.WriteString(e.Description)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying failure.
func (e *TokenError) Unwrap() error { return e.Err }
