package grpcio

// OAuthConfig and its validation: what NewOAuth accepts, checked once, with
// reasons that never quote the secret or a URL's user info.

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/zbstream/zbstream/core"
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
	// (exactly three non-empty dot-separated parts). With Unscoped it must
	// be empty.
	Table string
	// Unscoped asks for a token that is not down-scoped to a table: the
	// request carries scope=all-apis alone, without authorization_details
	// or resource, as the official SDKs ask for the token they read a
	// table's schema from Unity Catalog with. Table and WorkspaceID must
	// then be empty.
	Unscoped bool
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
	if c.Unscoped {
		if c.Table != "" || c.WorkspaceID != "" {
			return "", parts, bad("Table", "an Unscoped token has no Table or WorkspaceID")
		}
		if c.RefreshBefore < 0 {
			return "", parts, bad("RefreshBefore", "must not be negative, got "+c.RefreshBefore.String())
		}
		return strings.TrimRight(u.String(), "/") + TokenPath, parts, nil
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
