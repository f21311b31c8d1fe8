// Package proxytest is an HTTP CONNECT proxy on loopback for tests: it
// records every CONNECT target and Proxy-Authorization it is sent, counts
// the tunnels it opens, and can refuse every request instead.
package proxytest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Proxy is a running proxy; Start makes one, and the test's cleanup stops
// it with every connection it holds.
type Proxy struct {
	lis    net.Listener
	refuse bool
	wg     sync.WaitGroup

	mu      sync.Mutex
	conns   []net.Conn
	hosts   []string // CONNECT targets
	auths   []string // Proxy-Authorization values
	tunnels int
}

// Start starts a proxy on 127.0.0.1 that tunnels every CONNECT or, with
// refuse, answers each request 403 Forbidden.
func Start(t testing.TB, refuse bool) *Proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{lis: lis, refuse: refuse}
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

// URL is the proxy's address as an http:// URL, as proxy variables take it.
func (p *Proxy) URL() string { return "http://" + p.lis.Addr().String() }

// Seen returns the CONNECT targets and Proxy-Authorization values of the
// requests so far, in order.
func (p *Proxy) Seen() (hosts, auths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...), append([]string(nil), p.auths...)
}

// Tunnels is the number of tunnels opened so far.
func (p *Proxy) Tunnels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tunnels
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) serve(c net.Conn) {
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
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(up)
	defer up.Close()
	p.mu.Lock()
	p.tunnels++
	p.mu.Unlock()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br)
		up.Close()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	<-done
}
