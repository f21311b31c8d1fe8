package redpandatest_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// The service principal the token endpoint knows.
const (
	oauthClientID = "etl-sp"
	oauthSecret   = "etl-secret"
	oauthName     = "etl principal"
)

// startOAuth starts the reference server and, on an httptest server, its
// workspace's OAuth token endpoint minting tokens into the server's Auth
// for oauthClientID, limited to the server's table: as `zbstream serve
// -oauth` runs them. It returns the server and the workspace URL.
func startOAuth(t *testing.T) (*servertest.Server, string) {
	t.Helper()
	var auth *server.Auth
	ts := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { auth = o.Auth }))
	ep, err := server.NewTokenEndpoint(auth, []server.OAuthClient{
		{ID: oauthClientID, Secret: oauthSecret, Name: oauthName, Tables: []string{ts.Table}},
	}, server.TokenEndpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(ep)
	t.Cleanup(hs.Close)
	return ts, hs.URL
}

// oauthYAML is the zerobus output for ts authenticating with OAuth client
// credentials against the workspace.
func oauthYAML(ts *servertest.Server, workspace, secret string) string {
	return fmt.Sprintf(`
zerobus:
  endpoint: http://%s
  table: %s
  oauth:
    workspace_url: %s
    client_id: %s
    client_secret: %s
  max_in_flight: 4
`, ts.Addr, ts.Table, workspace, oauthClientID, secret)
}

// TestOAuth: with oauth client credentials the output gets a token from
// the workspace's token endpoint and writes with it: the records are
// stored, in a stream of the OAuth principal.
func TestOAuth(t *testing.T) {
	ts, workspace := startOAuth(t)
	produce := pipeline(t, oauthYAML(ts, workspace, oauthSecret))
	want := []string{`{"a":1}`, `{"a":2}`, `{"a":3}`}
	if err := produce(testCtx(t), batch(want[:2]...)); err != nil {
		t.Fatal(err)
	}
	if err := produce(testCtx(t), batch(want[2])); err != nil {
		t.Fatal(err)
	}
	if got := storedRecords(t, ts); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stored %q, want %q", got, want)
	}
	streams, err := ts.Streams(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 1 || streams[0].Principal != oauthName || streams[0].Table != ts.Table {
		t.Errorf("streams %+v, want one to %s by %q (the OAuth client's token)", streams, ts.Table, oauthName)
	}
}

// TestOAuthWrongSecret: a wrong client secret fails the batch at once,
// with an error that says the token endpoint refused the credentials (and
// does not quote the secret); nothing is stored. A right secret in a
// second output then writes, so the failure was the secret's.
func TestOAuthWrongSecret(t *testing.T) {
	ts, workspace := startOAuth(t)
	const wrong = "not-the-secret"
	produce := pipeline(t, oauthYAML(ts, workspace, wrong))
	start := time.Now()
	err := produce(testCtx(t), batch(`{"a":1}`, `{"a":2}`))
	if err == nil {
		t.Fatal("a batch with a wrong secret was acknowledged")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the batch failed after %v: retried a refusal that cannot pass", d)
	}
	msg := err.Error()
	if !strings.Contains(msg, "invalid_client") || !strings.Contains(msg, ts.Table) {
		t.Errorf("error %q: want the token endpoint's invalid_client and the table", msg)
	}
	if strings.Contains(msg, wrong) {
		t.Errorf("error %q quotes the secret", msg)
	}
	if got := storedRecords(t, ts); len(got) != 0 {
		t.Errorf("stored %q with a wrong secret", got)
	}

	produce = pipeline(t, oauthYAML(ts, workspace, oauthSecret))
	if err := produce(testCtx(t), batch(`{"a":3}`)); err != nil {
		t.Fatalf("with the right secret: %v", err)
	}
	if got := storedRecords(t, ts); len(got) != 1 || got[0] != `{"a":3}` {
		t.Errorf("stored %q, want only the right secret's record", got)
	}
}
