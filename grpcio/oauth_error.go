package grpcio

// The errors of a token request: TokenError, wrapped in the
// *core.ConnectionError that classifies it, and the scrubbing of what the
// token endpoint echoed back, so that no secret reaches an error.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/zbstream/zbstream/core"
)

// maxDescription bounds each text the token endpoint echoes into a
// TokenError, so that a hostile answer cannot flood errors and logs.
const maxDescription = 256

// ctxError wraps the end of a caller's ctx.
func (o *oauth) ctxError(err error) error {
	code := core.CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = core.CodeDeadlineExceeded
	}
	return &core.ConnectionError{Code: code, Err: &TokenError{URL: o.tokenURL, Err: err}}
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
