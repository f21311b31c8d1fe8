package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// TestAdminScopeIsTheTokens (issue 21): the admin endpoint shows a token
// only streams on the tables that token is scoped to, even when another
// token has the same principal name (which serve refuses at start, see
// serve's TestServeTokensOneScopePerName); its 401 says the token is wrong.
func TestAdminScopeIsTheTokens(t *testing.T) {
	st := fixture(t)
	// alice also owns a stream on clitest.TableB, through a second token.
	if _, _, err := st.CreateStream(context.Background(), server.StreamMeta{ID: "ps-a2", Kind: server.KindPersistent,
		Table: clitest.TableB, Principal: "alice", RecordType: int32(ingestpb.RecordType_JSON)}); err != nil {
		t.Fatal(err)
	}
	tokens := lookupIn{
		"tok-a1": {Name: "alice", Tables: []string{clitest.TableA}},
		"tok-a2": {Name: "alice", Tables: []string{clitest.TableB}},
	}
	ts := httptest.NewServer(NewHandler(st, tokens.lookup, slog.New(slog.DiscardHandler), DefaultLimits()))
	defer ts.Close()
	var l StreamsList
	if code := get(t, ts, "GET", "/v1/streams", "tok-a1", &l); code != 200 || len(l.Streams) != 1 || l.Streams[0].ID != "ps-a" {
		t.Fatalf("tok-a1 lists %d %+v, want ps-a only", code, l)
	}
	var e ErrorBody
	for _, p := range []string{"/v1/streams/ps-a2", "/v1/streams/ps-a2/records"} {
		if code := get(t, ts, "GET", p, "tok-a1", &e); code != http.StatusNotFound {
			t.Fatalf("tok-a1 reads %s: %d %q", p, code, e.Error)
		}
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-a2", "tok-a2", nil); code != 200 {
		t.Fatalf("tok-a2 reads its stream: %d", code)
	}
	if code := get(t, ts, "GET", "/v1/streams", "tok-nobody", &e); code != http.StatusUnauthorized || !strings.Contains(e.Error, "wrong token") {
		t.Fatalf("unknown token: %d %q, want 401 saying wrong token", code, e.Error)
	}
}

// blockingStore blocks Streams until release is closed.
type blockingStore struct {
	server.Store
	entered chan struct{}
	release chan struct{}
}

func (s blockingStore) Streams(ctx context.Context) ([]server.StreamMeta, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Streams(ctx)
}

// TestAdminConcurrencyLimit (issue 21): at most Limits.MaxConcurrent
// requests are served at once; another waits Limits.QueueWait, then gets
// 503 with Retry-After.
func TestAdminConcurrencyLimit(t *testing.T) {
	lim := Limits{MaxConcurrent: 1, QueueWait: 50 * time.Millisecond}
	st := blockingStore{Store: fixture(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	ts := httptest.NewServer(NewHandler(st, nil, slog.New(slog.DiscardHandler), lim))
	defer ts.Close()
	first := make(chan int)
	go func() { first <- get(t, ts, "GET", "/v1/streams", "", nil) }()
	<-st.entered
	var e ErrorBody
	if code := get(t, ts, "GET", "/v1/streams/ps-a", "", &e); code != http.StatusServiceUnavailable || !strings.Contains(e.Error, "busy") {
		t.Fatalf("second request: %d %q, want 503 busy", code, e.Error)
	}
	close(st.release)
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-a", "", nil); code != 200 {
		t.Fatalf("after: %d", code)
	}
}
