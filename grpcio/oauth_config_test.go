package grpcio_test

// OAuthConfig validation and WorkspaceIDFromEndpoint.

import (
	"errors"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

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
