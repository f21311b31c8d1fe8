package e2e_test

// Headers providers written as the official SDKs document them return the
// table header themselves: the same table is sent once and works, another
// table is a configuration mistake found before anything is sent.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// sdkHeaders is a headers provider as the official SDKs write them: the
// token and the table header, under the key spelled key. It counts its
// calls (one per open attempt).
type sdkHeaders struct {
	token, key, table string
	calls             atomic.Int64
}

func (h *sdkHeaders) Headers(context.Context) (map[string]string, error) {
	h.calls.Add(1)
	return map[string]string{"authorization": "Bearer " + h.token, h.key: h.table}, nil
}

func (h *sdkHeaders) Invalidate() {}

// TestHeadersProviderSendsTheTable: a provider that returns the stream's
// table header, in any case, ingests (the server refuses a call that
// carries the header twice).
func TestHeadersProviderSendsTheTable(t *testing.T) {
	ts := servertest.Start(t)
	for _, key := range []string{"x-databricks-zerobus-table-name", "X-Databricks-Zerobus-Table-Name"} {
		t.Run(key, func(t *testing.T) {
			cl, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithHeadersProvider(&sdkHeaders{token: ts.Token, key: key, table: ts.Table}))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			e := &env{ts: ts, client: cl, table: ts.Table}
			s := e.createPersistent(t)
			ingest(t, s, rec(0, 0))
			mustClose(t, s)
			e.wantStored(t, s.StreamID(), one(rec(0, 0)))
		})
	}
}

// TestHeadersProviderOtherTable: a provider that names another table
// fails the open and RetireStream with a *ConfigError, without retrying
// and before any connection is made (the server accepted none).
func TestHeadersProviderOtherTable(t *testing.T) {
	const table, token = "main.default.events", "secret"
	addr, accepts := startCounted(t, token, table)
	h := &sdkHeaders{token: token, key: "x-databricks-zerobus-table-name", table: "main.default.other"}
	cl, err := zbstream.NewClient("http://"+addr, zbstream.WithHeadersProvider(h))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.CreatePersistentStream(ctx(t), table, fast()...)
	var cfg *zbstream.ConfigError
	var ce *zbstream.ConnectionError
	if !errors.As(err, &cfg) || cfg.Field != "HeadersProvider" || !errors.As(err, &ce) || ce.Retryable() {
		t.Fatalf("CreatePersistentStream: %v, want a non-retryable *ConfigError for HeadersProvider", err)
	}
	t.Logf("%v", err)
	if n := h.calls.Load(); n != 1 {
		t.Errorf("%d open attempts, want 1", n)
	}
	if err := cl.RetireStream(ctx(t), table, "some-stream"); !errors.As(err, &cfg) {
		t.Errorf("RetireStream: %v, want a *ConfigError", err)
	}
	if n := accepts.Load(); n != 0 {
		t.Errorf("the server accepted %d connections, want none", n)
	}
}

// startCounted starts the reference server with token allowed to write
// table, on a listener that counts the connections it accepts.
func startCounted(t *testing.T, token, table string) (string, *atomic.Int64) {
	t.Helper()
	srv, err := server.New(server.Options{Auth: server.NewAuth(map[string]server.Principal{token: {Name: "test", Tables: []string{table}}})})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	cl := &countingListener{Listener: lis}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(cl) }()
	t.Cleanup(func() { srv.Stop(); wg.Wait() })
	return lis.Addr().String(), &cl.accepts
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepts atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}
