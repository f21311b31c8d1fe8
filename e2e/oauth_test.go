package e2e_test

// OAuth client credentials end to end: a token endpoint started in the
// test mints tokens, the reference server accepts some of them. A token
// the server rejects at the first open is replaced by a fresh one; tokens
// are cached per table across streams and replaced once expired; a wrong
// secret is not retried; neither the secret nor a token is logged.

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

type tokenEndpoint struct {
	*httptest.Server
	mints     atomic.Int64
	expiresIn atomic.Int64 // seconds
	bad       atomic.Value // string: the last malformed request
}

func startTokenEndpoint(t *testing.T, id, secret, table string) *tokenEndpoint {
	t.Helper()
	te := &tokenEndpoint{}
	te.expiresIn.Store(3600)
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if r.URL.Path != "/oidc/v1/token" || !ok || u != id || p != secret {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "all-apis" ||
			!strings.Contains(r.Form.Get("authorization_details"), strings.Split(table, ".")[2]) {
			te.bad.Store(fmt.Sprintf("%v", r.Form))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		n := te.mints.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "Bearer", "expires_in": te.expiresIn.Load()})
	}))
	t.Cleanup(te.Close)
	return te
}

func TestOAuth(t *testing.T) {
	const id, secret = "sp-client", "sp-secret-9b1e"
	tokens := map[string]server.Principal{}
	for n := 2; n <= 50; n++ { // tok-1 is refused by the server
		tokens[fmt.Sprintf("tok-%d", n)] = server.Principal{Name: "sp", Tables: []string{servertest.DefaultTable}}
	}
	ts := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.Auth = server.NewAuth(tokens) }))
	te := startTokenEndpoint(t, id, secret, ts.Table)
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithOAuth(te.URL, id, secret), zbstream.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &env{ts: ts, client: c, table: ts.Table}

	// tok-1 is refused (UNAUTHENTICATED): the first open is retried once
	// with a freshly minted token.
	s := e.createPersistent(t)
	if n := te.mints.Load(); n != 2 {
		t.Fatalf("%d tokens minted, want 2 (the refused one and its replacement)", n)
	}
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)

	// Cached: a second stream into the table mints nothing.
	s2 := e.create(t)
	ingest(t, s2, rec(1, 0))
	mustClose(t, s2)
	if n := te.mints.Load(); n != 2 {
		t.Fatalf("%d tokens minted after a second stream, want 2 (cached)", n)
	}

	// A reconnect with a valid cached token mints nothing...
	h := ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDrop})
	ingest(t, s, rec(0, 1))
	waitFired(t, h)
	mustFlush(t, s)
	if n := te.mints.Load(); n != 2 {
		t.Fatalf("%d tokens minted after a reconnect, want 2", n)
	}
	mustClose(t, s)

	// ...and once the token has expired, the next open mints a new one.
	te.expiresIn.Store(1)
	c2, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithOAuth(te.URL, id, secret), zbstream.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	e2 := &env{ts: ts, client: c2, table: ts.Table}
	s3 := e2.createPersistent(t)
	before := te.mints.Load()
	time.Sleep(1100 * time.Millisecond)
	h = ts.Inject(server.Match{StreamID: s3.StreamID()}, server.Fault{Kind: server.FaultDrop})
	ingest(t, s3, rec(2, 0))
	waitFired(t, h)
	ingest(t, s3, rec(2, 1)) // needs the reconnect
	mustClose(t, s3)
	if st := s3.Stats(); st.Reconnects != 1 {
		t.Fatalf("stats %+v, want one reconnect", st)
	}
	e2.wantStored(t, s3.StreamID(), one(rec(2, 0)), one(rec(2, 1)))
	if n := te.mints.Load(); n <= before {
		t.Fatalf("no token minted after expiry (%d minted)", n)
	}
	if b := te.bad.Load(); b != nil {
		t.Fatalf("malformed token request: %v", b)
	}

	// A wrong secret: the endpoint says 401, which is not retried.
	bad, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithOAuth(te.URL, id, "wrong-secret-3c"), zbstream.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	mints := te.mints.Load()
	_, err = bad.CreateStream(ctx(t), ts.Table, zbstream.WithRetries(100), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}))
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) || codes.Code(ce.Code) != codes.Unauthenticated {
		t.Fatalf("CreateStream with a wrong secret: %v, want UNAUTHENTICATED", err)
	}
	if te.mints.Load() != mints {
		t.Fatal("a token was minted for a wrong secret")
	}

	e.wantStored(t, s.StreamID(), one(rec(0, 0)), one(rec(0, 1)))
	out := logs.String()
	for _, secretish := range []string{secret, "wrong-secret-3c", "tok-1", "tok-2", "tok-3"} {
		if strings.Contains(out, secretish) {
			t.Errorf("the log holds %q:\n%s", secretish, out)
		}
	}
}
