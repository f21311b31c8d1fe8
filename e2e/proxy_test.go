package e2e_test

// HTTP CONNECT proxies end to end: a proxy started in the test, chosen from
// the environment (HTTPS_PROXY for a TLS endpoint, HTTP_PROXY for
// plaintext, NO_PROXY exceptions) or given explicitly with credentials.

import (
	"encoding/base64"
	"net/url"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/internal/proxytest"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// proxiedStream creates a persistent stream through client options opts,
// ingests one record and checks it landed.
func proxiedStream(t *testing.T, ts *servertest.Server, endpoint string, opts ...zbstream.Option) error {
	t.Helper()
	cl, err := zbstream.NewClient(endpoint, append([]zbstream.Option{zbstream.WithToken(ts.Token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := cl.CreatePersistentStream(ctx(t), ts.Table, zbstream.WithRetries(1), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}))
	if err != nil {
		return err
	}
	e := &env{ts: ts, client: cl, table: ts.Table}
	ingest(t, s, rec(0, 0))
	mustClose(t, s)
	e.wantStored(t, s.StreamID(), one(rec(0, 0)))
	return nil
}

func TestConnectProxy(t *testing.T) {
	certPEM, cfg := testCert(t)
	tlsSrv := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS = cfg }))
	plain := servertest.Start(t)
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}

	t.Run("HTTPS_PROXY", func(t *testing.T) {
		p := proxytest.Start(t, false)
		t.Setenv("HTTPS_PROXY", p.URL())
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.Seen(); len(hosts) == 0 || hosts[0] != tlsSrv.Addr {
			t.Fatalf("proxy saw CONNECT to %v, want %s", hosts, tlsSrv.Addr)
		}
	})
	t.Run("HTTP_PROXY", func(t *testing.T) {
		p := proxytest.Start(t, false)
		t.Setenv("HTTP_PROXY", p.URL())
		if err := proxiedStream(t, plain, "http://"+plain.Addr); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.Seen(); len(hosts) == 0 || hosts[0] != plain.Addr {
			t.Fatalf("proxy saw CONNECT to %v, want %s", hosts, plain.Addr)
		}
	})
	t.Run("NO_PROXY", func(t *testing.T) {
		p := proxytest.Start(t, false)
		t.Setenv("HTTPS_PROXY", p.URL())
		t.Setenv("NO_PROXY", "127.0.0.1")
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.Seen(); len(hosts) != 0 {
			t.Fatalf("NO_PROXY host went through the proxy: %v", hosts)
		}
	})
	t.Run("explicit with credentials", func(t *testing.T) {
		p := proxytest.Start(t, false)
		u, _ := url.Parse(p.URL())
		u.User = url.UserPassword("alice", "s3cret")
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM), zbstream.WithProxy(grpcio.ProxyURL(u))); err != nil {
			t.Fatal(err)
		}
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
		if _, auths := p.Seen(); len(auths) == 0 || auths[0] != want {
			t.Fatalf("Proxy-Authorization %q, want %q", auths, want)
		}
	})
	t.Run("refused", func(t *testing.T) {
		p := proxytest.Start(t, true)
		t.Setenv("HTTPS_PROXY", p.URL())
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err == nil {
			t.Fatal("a stream was created through a proxy that refuses CONNECT")
		} else {
			t.Logf("through a refusing proxy: %v", err)
		}
	})
}
