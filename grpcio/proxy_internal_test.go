package grpcio

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestProxyHandshakeKeepsEarlyBytes: bytes of the tunnel that arrive in
// the same segment as the proxy's answer (a plaintext HTTP/2 server speaks
// first) must reach the caller, before what follows.
func TestProxyHandshakeKeepsEarlyBytes(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	done := make(chan error, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			done <- err
			return
		}
		if req.Method != http.MethodConnect || req.Host != "target.test:80" || req.RequestURI != "target.test:80" {
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			done <- nil
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\n\r\nhello "))
		time.Sleep(10 * time.Millisecond)
		c.Write([]byte("world"))
		done <- nil
	}()
	d := &connectDialer{proxy: &url.URL{Scheme: "http", Host: lis.Addr().String()}, dial: (&net.Dialer{}).DialContext}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "target.test:80")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "hello world" {
		t.Fatalf("read %q through the tunnel, want %q", got, "hello world")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
