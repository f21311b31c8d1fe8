package grpcio

// Printing and logging OAuthConfig and OAuth with the secret redacted: every
// fmt verb and log/slog show the configuration, never the client secret, a
// token or a workspace URL's user info.

import (
	"fmt"
	stdio "io"
	"log/slog"
	"net/url"
	"strconv"
)

// redactedMark stands for a secret in printed forms and scrubbed echoes.
const redactedMark = "[REDACTED]"

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
