package e2e_test

// A message says "zbstream:" once however the failure travelled: through
// the transport, the driver's recovery, the stream's failure.

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// wantPrefixOnce checks that err is an error whose message says
// "zbstream:" once, at its start.
func wantPrefixOnce(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if n := strings.Count(err.Error(), "zbstream:"); n != 1 || !strings.HasPrefix(err.Error(), "zbstream: ") {
		t.Errorf("%s: %q says \"zbstream:\" %d times, want once at its start", what, err, n)
	} else {
		t.Logf("%s: %v", what, err)
	}
}

// TestErrorsSayZbstreamOnce drives real failures through the client: an
// unreachable server until the retries are exhausted, an open the server
// refuses, invalid options, a provider's table that is not the stream's, a
// TLS mistake, and a stream that fails after it was opened (the calls made
// after, and Close).
func TestErrorsSayZbstreamOnce(t *testing.T) {
	few := []zbstream.StreamOption{zbstream.WithRetries(2), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond})}
	open := func(endpoint string, opts ...zbstream.Option) *zbstream.Client {
		t.Helper()
		cl, err := zbstream.NewClient(endpoint, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	ts := servertest.Start(t)

	cl := open("http://"+freeAddr(t), zbstream.WithToken("t"))
	_, err := cl.CreatePersistentStream(ctx(t), ts.Table, few...)
	if !errors.Is(err, zbstream.ErrRetriesExhausted) {
		t.Errorf("unreachable: %v, want retries exhausted", err)
	}
	wantPrefixOnce(t, "unreachable", err)

	_, err = open("http://"+ts.Addr, zbstream.WithToken("wrong")).CreateStream(ctx(t), ts.Table, few...)
	wantPrefixOnce(t, "refused", err)

	_, err = open("http://"+ts.Addr, zbstream.WithToken(ts.Token)).CreateStream(ctx(t), ts.Table, zbstream.WithMaxInflight(-1, 0))
	wantPrefixOnce(t, "bad option", err)

	_, err = zbstream.NewClient("ftp://" + ts.Addr)
	wantPrefixOnce(t, "bad endpoint", err)

	h := &sdkHeaders{token: ts.Token, key: "x-databricks-zerobus-table-name", table: "main.default.other"}
	_, err = open("http://"+ts.Addr, zbstream.WithHeadersProvider(h)).CreateStream(ctx(t), ts.Table, few...)
	wantPrefixOnce(t, "provider's table", err)

	_, cfg := testCert(t)
	tlsTS := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS = cfg }))
	_, err = open("https://"+tlsTS.Addr, zbstream.WithToken(tlsTS.Token)).CreateStream(ctx(t), tlsTS.Table, few...)
	wantPrefixOnce(t, "TLS", err)

	// A stream that fails once open: its server stops, and reconnecting
	// is refused until the retries are exhausted.
	gone := servertest.Start(t)
	s, err := open("http://"+gone.Addr, zbstream.WithToken(gone.Token)).CreateStream(ctx(t), gone.Table, few...)
	if err != nil {
		t.Fatal(err)
	}
	gone.Stop()
	waitDone(t, s)
	wantPrefixOnce(t, "stream Err", s.Err())
	_, err = s.IngestRecord(ctx(t), rec(0, 0))
	if !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Errorf("ingest after the failure: %v, want ErrStreamFailed", err)
	}
	wantPrefixOnce(t, "ingest after the failure", err)
	wantPrefixOnce(t, "close after the failure", s.Close(context.Background()))
}

// freeAddr returns a loopback address nothing listens on: a listener
// opened and closed.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
