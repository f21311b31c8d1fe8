package e2e_test

// HTTP CONNECT proxies end to end: a proxy started in the test, chosen from
// the environment (HTTPS_PROXY for a TLS endpoint, HTTP_PROXY for
// plaintext, NO_PROXY exceptions) or given explicitly with credentials.

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

type connectProxy struct {
	lis    net.Listener
	refuse bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	hosts  []string // CONNECT targets
	auths  []string // Proxy-Authorization values
}

func startConnectProxy(t *testing.T, refuse bool) *connectProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{lis: lis, refuse: refuse}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.track(c)
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *connectProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.hosts = append(p.hosts, req.Host)
	p.auths = append(p.auths, req.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if req.Method != http.MethodConnect || p.refuse {
		io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	d, err := net.Dial("tcp", req.Host)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(d)
	defer d.Close()
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(d, br)
		d.Close()
	}()
	io.Copy(c, d)
	c.Close()
	<-done
}

func (p *connectProxy) seen() (hosts, auths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...), append([]string(nil), p.auths...)
}

func (p *connectProxy) url() string { return "http://" + p.lis.Addr().String() }

// proxiedStream creates a persistent stream through client options opts,
// ingests one record and checks it landed.
func proxiedStream(t *testing.T, ts *servertest.Server, endpoint string, opts ...zbstream.Option) error {
	t.Helper()
	cl, err := zbstream.NewClient(endpoint, append([]zbstream.Option{zbstream.WithToken(ts.Token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := cl.CreatePersistentStream(ctx(t), ts.Table, zbstream.WithRecovery(1, time.Millisecond, 2*time.Millisecond))
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
		p := startConnectProxy(t, false)
		t.Setenv("HTTPS_PROXY", p.url())
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.seen(); len(hosts) == 0 || hosts[0] != tlsSrv.Addr {
			t.Fatalf("proxy saw CONNECT to %v, want %s", hosts, tlsSrv.Addr)
		}
	})
	t.Run("HTTP_PROXY", func(t *testing.T) {
		p := startConnectProxy(t, false)
		t.Setenv("HTTP_PROXY", p.url())
		if err := proxiedStream(t, plain, "http://"+plain.Addr); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.seen(); len(hosts) == 0 || hosts[0] != plain.Addr {
			t.Fatalf("proxy saw CONNECT to %v, want %s", hosts, plain.Addr)
		}
	})
	t.Run("NO_PROXY", func(t *testing.T) {
		p := startConnectProxy(t, false)
		t.Setenv("HTTPS_PROXY", p.url())
		t.Setenv("NO_PROXY", "127.0.0.1")
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err != nil {
			t.Fatal(err)
		}
		if hosts, _ := p.seen(); len(hosts) != 0 {
			t.Fatalf("NO_PROXY host went through the proxy: %v", hosts)
		}
	})
	t.Run("explicit with credentials", func(t *testing.T) {
		p := startConnectProxy(t, false)
		u, _ := url.Parse(p.url())
		u.User = url.UserPassword("alice", "s3cret")
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM), zbstream.WithProxy(grpcio.ProxyURL(u))); err != nil {
			t.Fatal(err)
		}
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
		if _, auths := p.seen(); len(auths) == 0 || auths[0] != want {
			t.Fatalf("Proxy-Authorization %q, want %q", auths, want)
		}
	})
	t.Run("refused", func(t *testing.T) {
		p := startConnectProxy(t, true)
		t.Setenv("HTTPS_PROXY", p.url())
		if err := proxiedStream(t, tlsSrv, "https://"+tlsSrv.Addr, zbstream.WithCAPEM(certPEM)); err == nil {
			t.Fatal("a stream was created through a proxy that refuses CONNECT")
		} else {
			t.Logf("through a refusing proxy: %v", err)
		}
	})
}
