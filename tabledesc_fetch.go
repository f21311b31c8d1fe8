package zbstream

// One table's schema read from Unity Catalog: the GET with its bearer
// token, the answer bounded and parsed, failures classified as retryable
// or not, and the retries.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/record"
)

// The bounds of a schema read.
const (
	// TablesPath is the Unity Catalog tables API, relative to the
	// workspace URL; the table's full name follows it.
	TablesPath = "/api/2.1/unity-catalog/tables/"
	// maxTableAnswer bounds the answer read.
	maxTableAnswer = 8 << 20
	// tableAttempts is how many times a retryable failure is tried in
	// all, tableBackoff the first pause between attempts (doubled after
	// each).
	tableAttempts = 3
	tableBackoff  = 100 * time.Millisecond
	// maxEcho bounds what of an error answer a TableFetchError repeats.
	maxEcho = 256
)

// TableFetchError is a table's schema that could not be read from Unity
// Catalog (Client.TableDescriptor).
type TableFetchError struct {
	// Table is the table, catalog.schema.table; URL the request's.
	Table, URL string
	// StatusCode is the HTTP status of the answer, 0 when there was none.
	StatusCode int
	// Message is the answer's error_code and message, when it gave them
	// (shortened, control characters replaced).
	Message string
	// Retryable reports a failure that may pass later: a 5xx, 408 or 429
	// answer, a network failure, a token endpoint unavailable.
	Retryable bool
	// Err is the underlying failure, if any (a *ConnectionError from the
	// token request, a network error, a TLS error).
	Err error
}

// Error names the table, the status and the reason.
func (e *TableFetchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "zbstream: reading the schema of %s from Unity Catalog failed", e.Table)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(core.Unprefixed(e.Err))
	}
	return b.String()
}

// Unwrap returns the underlying failure.
func (e *TableFetchError) Unwrap() error { return e.Err }

// fetcher reads table schemas from one workspace.
type fetcher struct {
	base, userAgent string
	auth            grpcio.HeadersProvider
	http            *http.Client
}

// fetch reads table's schema, retrying what may pass.
func (f fetcher) fetch(ctx context.Context, table string) (*record.TableSchema, error) {
	pause := tableBackoff
	for attempt := 1; ; attempt++ {
		ts, err := f.once(ctx, table)
		var fe *TableFetchError
		if err == nil || !errors.As(err, &fe) || !fe.Retryable || attempt == tableAttempts {
			return ts, err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, core.Errorf("zbstream: reading the schema of %s: %w (after: %w)", table, context.Cause(ctx), err)
		}
		pause *= 2
	}
}

// once makes one request.
func (f fetcher) once(ctx context.Context, table string) (*record.TableSchema, error) {
	u := strings.TrimRight(f.base, "/") + TablesPath + url.PathEscape(table)
	fail := func(status int, retryable bool, msg string, err error) error {
		return &TableFetchError{Table: table, URL: u, StatusCode: status, Message: msg, Retryable: retryable, Err: err}
	}
	headers, err := f.auth.Headers(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, core.Errorf("zbstream: reading the schema of %s: %w: %w", table, context.Cause(ctx), err)
		}
		var ce *core.ConnectionError
		return nil, fail(0, errors.As(err, &ce) && ce.Code == core.CodeUnavailable && !tlsFailure(err), "no token", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fail(0, false, "", err)
	}
	req.Header.Set("Authorization", headers[grpcio.HeaderAuthorization])
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", f.userAgent)
	resp, err := f.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, core.Errorf("zbstream: reading the schema of %s: %w: %w", table, context.Cause(ctx), err)
		}
		return nil, fail(0, !tlsFailure(err), "", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxTableAnswer+1))
	switch code := resp.StatusCode; {
	case code >= 300 && code < 400:
		return nil, fail(code, false, "a redirect, not followed", nil)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		f.auth.Invalidate() // the next call mints a new token
		return nil, fail(code, false, ucMessage(body), nil)
	case code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests:
		return nil, fail(code, true, ucMessage(body), nil)
	case code < 200 || code >= 300:
		return nil, fail(code, false, ucMessage(body), nil)
	case rerr != nil:
		return nil, fail(code, true, "the answer was cut off", rerr)
	case len(body) > maxTableAnswer:
		return nil, fail(code, false, fmt.Sprintf("the answer is over %d bytes", maxTableAnswer), nil)
	}
	ts, err := record.ParseTableSchema(body)
	if err != nil {
		return nil, core.Errorf("zbstream: table %s: %w", table, err)
	}
	return ts, nil
}

// tlsFailure reports a TLS handshake or certificate failure: trying again
// does not help.
func tlsFailure(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		alert    tls.AlertError
	)
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &record) || errors.As(err, &alert)
}

// ucMessage returns the error_code and message of a Unity Catalog error
// answer, shortened and without control characters.
func ucMessage(body []byte) string {
	var e struct {
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	s := strings.TrimSpace(strings.Trim(e.ErrorCode+": "+e.Message, ": "))
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxEcho {
		s = strings.ToValidUTF8(s[:maxEcho], "") + "..."
	}
	return s
}
