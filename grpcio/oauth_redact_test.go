package grpcio_test

// No secret in any printed or logged form.

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/grpcio"
)

// TestOAuthNoSecretInOutput: the config and the provider, printed with
// every verb, nested, and logged, never show the secret or the token.
func TestOAuthNoSecretInOutput(t *testing.T) {
	ep := &fakeTokenEndpoint{respond: mintTokens(3600)}
	cfg := oauthTestConfig(ep)
	cfg.WorkspaceURL = "https://user:" + oauthTestSecret + "@example.com" // invalid, but printable
	o := mustOAuth(t, oauthTestConfig(ep))
	wantToken(t, o, "tok-1")

	type holder struct {
		Cfg   grpcio.OAuthConfig
		P     *grpcio.OAuth
		inner *grpcio.OAuth // fmt cannot call Format on it
	}
	var out strings.Builder
	for _, v := range []any{cfg, &cfg, o, holder{cfg, o, o}, &holder{cfg, o, o}, []any{cfg, o}, map[string]any{"c": cfg}} {
		// Not %p: on a struct value it is a bad verb (go vet reports it),
		// which fmt prints field by field without calling Format.
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	fmt.Fprintf(&out, "%p %p\n", &cfg, o)
	fmt.Fprintln(&out, cfg, o)
	fmt.Fprint(&out, cfg, o)
	// Where fmt cannot call Format (an unexported field, here with a verb
	// that pointers do not take), it prints the fields itself: an OAuth
	// shows only a pointer then.
	if !strings.Contains(out.String(), "%!s(*grpcio.OAuth=&{0x") {
		t.Errorf("no fallback printing of an OAuth in the holder:\n%s", out.String())
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		slog.New(h).Info("config", "cfg", cfg, "provider", o, "ptr", &cfg)
	}
	out.WriteString(logs.String())
	s := out.String()
	noSecrets(t, s, "tok-1")
	if !strings.Contains(s, "[REDACTED]") || !strings.Contains(s, oauthTestID) || !strings.Contains(s, oauthTestTable) {
		t.Fatalf("output lacks the redacted marker or the non-secret fields:\n%s", s)
	}
}
