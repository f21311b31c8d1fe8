package zerobus_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// connectProxy is an HTTP CONNECT proxy on loopback that counts tunnels.
type connectProxy struct {
	lis     net.Listener
	tunnels atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func startProxy(t *testing.T) *connectProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{lis: lis}
	p.wg.Go(func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.track(c)
			p.wg.Go(func() { p.serve(c) })
		}
	})
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
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	p.track(up)
	defer up.Close()
	p.tunnels.Add(1)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, br); up.Close(); close(done) }()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}

// TestProxyVariables: grpc_proxy (the official SDK's first variable)
// carries the stream through a CONNECT proxy, and no_grpc_proxy excepts
// the host.
func TestProxyVariables(t *testing.T) {
	for _, v := range []string{"grpc_proxy", "GRPC_PROXY", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_grpc_proxy", "NO_GRPC_PROXY", "no_proxy", "NO_PROXY"} {
		t.Setenv(v, "")
	}
	l := startLocalT(t)
	p := startProxy(t)
	t.Setenv("grpc_proxy", "http://"+p.lis.Addr().String())
	ingest := func() {
		t.Helper()
		sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		defer sdk.Free()
		st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.IngestRecordOffset(`{"via": "proxy"}`); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ingest()
	if n := p.tunnels.Load(); n != 1 {
		t.Fatalf("%d tunnels through the proxy, want 1", n)
	}
	t.Setenv("no_grpc_proxy", "127.0.0.1")
	ingest()
	if n := p.tunnels.Load(); n != 1 {
		t.Fatalf("%d tunnels after no_grpc_proxy, want still 1", n)
	}
}
