package grpcio

// One request to the token endpoint: the down-scoping authorization_details
// sent in the form, the POST with the client's Basic credentials, and the
// reading of the answer into a token and its lifetime, or a failure
// classified as retryable or not.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdio "io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zbstream/zbstream/core"
)

// Bounds on what the token endpoint can make the client hold: the lifetime
// of a cached token, and how much of an answer is read.
const (
	maxTokenLifetime = 24 * time.Hour
	maxTokenBody     = 1 << 20
)

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
