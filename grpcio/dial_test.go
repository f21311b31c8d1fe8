package grpcio_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/internal/version"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// dial is grpcio.Dial that closes the connection when the test ends.
func dial(t *testing.T, endpoint string, opts grpcio.DialOptions) *grpc.ClientConn {
	t.Helper()
	cc, err := grpcio.Dial(endpoint, opts)
	if err != nil {
		t.Fatalf("Dial(%q): %v", endpoint, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// port returns the port of a host:port address.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantUnavailable checks that err is an UNAVAILABLE status whose message
// holds every part.
func wantUnavailable(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded, want UNAVAILABLE")
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("status %v, want UNAVAILABLE", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
	t.Logf("error as expected: %v", err)
}

func TestDialTLSWithTestCA(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pki.caPEM)
	p := port(t, ts.Addr)
	cases := []struct {
		name     string
		endpoint string
		opts     grpcio.DialOptions
	}{
		{"https localhost CAPEM", "https://localhost:" + p, grpcio.DialOptions{CAPEM: pki.caPEM}},
		{"https 127.0.0.1 CAFile", "https://127.0.0.1:" + p, grpcio.DialOptions{CAFile: caFile}},
		{"bare host:port is TLS", "localhost:" + p, grpcio.DialOptions{CAPEM: pki.caPEM}},
		{"TLSConfig RootCAs", "https://localhost:" + p, grpcio.DialOptions{TLSConfig: &tls.Config{RootCAs: pool}}},
		{"TLSConfig ServerName kept", "https://127.0.0.1:" + p, grpcio.DialOptions{TLSConfig: &tls.Config{ServerName: "localhost"}, CAPEM: pki.caPEM}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := dial(t, c.endpoint, c.opts)
			id, err := createStream(t, ts, cc)
			if err != nil {
				t.Fatalf("create over TLS: %v", err)
			}
			t.Logf("stream %s", id)
		})
	}
}

func TestDialTLSWithoutTheCAFails(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	cc := dial(t, "https://localhost:"+port(t, ts.Addr), grpcio.DialOptions{})
	_, err := createStream(t, ts, cc)
	wantUnavailable(t, err, "certificate signed by unknown authority")

	// A CA that did not sign the certificate fails the same way.
	other := newTestPKI(t)
	cc = dial(t, "https://localhost:"+port(t, ts.Addr), grpcio.DialOptions{CAPEM: other.caPEM})
	_, err = createStream(t, ts, cc)
	wantUnavailable(t, err, "certificate signed by unknown authority")
}

func TestDialTLSWrongNameFails(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	// The certificate does not name other.test: verification must fail
	// even though the CA is trusted.
	cc := dial(t, "https://other.test:"+port(t, ts.Addr), grpcio.DialOptions{
		CAPEM: pki.caPEM,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, ts.Addr)
		},
	})
	_, err := createStream(t, ts, cc)
	wantUnavailable(t, err, "other.test")
}

// sslCertFileChild is set in the environment of the re-executed test
// binary: "ok" expects the call to succeed, "fail" to fail.
const sslCertFileChild = "ZBSTREAM_TEST_SSL_CERT_FILE_CHILD"

// TestDialTLSSSLCertFile checks that the system roots honour
// SSL_CERT_FILE. crypto/x509 loads them once per process, so the test
// re-executes its binary with the variable set.
func TestDialTLSSSLCertFile(t *testing.T) {
	if mode := os.Getenv(sslCertFileChild); mode != "" {
		clearProxyEnv(t)
		cc := dial(t, os.Getenv("ZBSTREAM_TEST_ENDPOINT"), grpcio.DialOptions{})
		_, err := createStreamAs(t, cc, os.Getenv("ZBSTREAM_TEST_TOKEN"), os.Getenv("ZBSTREAM_TEST_TABLE"))
		switch {
		case mode == "ok" && err != nil:
			t.Fatalf("with SSL_CERT_FILE=%s: %v", os.Getenv("SSL_CERT_FILE"), err)
		case mode == "fail":
			wantUnavailable(t, err, "certificate signed by unknown authority")
		}
		return
	}
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	otherFile := filepath.Join(dir, "other.pem")
	if err := os.WriteFile(otherFile, newTestPKI(t).caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	emptyDir := t.TempDir()
	for _, c := range []struct{ mode, file string }{{"ok", caFile}, {"fail", otherFile}} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestDialTLSSSLCertFile$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(),
			sslCertFileChild+"="+c.mode,
			"SSL_CERT_FILE="+c.file,
			"SSL_CERT_DIR="+emptyDir,
			"ZBSTREAM_TEST_ENDPOINT=https://localhost:"+port(t, ts.Addr),
			"ZBSTREAM_TEST_TOKEN="+ts.Token,
			"ZBSTREAM_TEST_TABLE="+ts.Table,
		)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestDialTLSSSLCertFile") {
			t.Fatalf("child (%s, SSL_CERT_FILE=%s): %v\n%s", c.mode, c.file, err, out)
		}
	}
}

func TestDialPlaintextOnlyForHTTP(t *testing.T) {
	clearProxyEnv(t)
	ts := startServer(t, nil)
	p := port(t, ts.Addr)
	cc := dial(t, "http://127.0.0.1:"+p, grpcio.DialOptions{})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create over plaintext: %v", err)
	}
	// Without the http:// scheme the client speaks TLS, which the
	// plaintext server does not.
	for _, ep := range []string{"127.0.0.1:" + p, "https://127.0.0.1:" + p} {
		cc := dial(t, ep, grpcio.DialOptions{})
		_, err := createStream(t, ts, cc)
		wantUnavailable(t, err)
	}
	// TLS options with an http:// endpoint are refused, not ignored.
	pki := newTestPKI(t)
	for _, o := range []grpcio.DialOptions{{CAPEM: pki.caPEM}, {CAFile: "/ca.pem"}, {TLSConfig: &tls.Config{}}} {
		_, err := grpcio.Dial("http://127.0.0.1:"+p, o)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != "Endpoint" {
			t.Errorf("Dial(http://, %+v): %v, want a *core.ConfigError for Endpoint", o, err)
		}
	}
}

func TestDialBadOptions(t *testing.T) {
	clearProxyEnv(t)
	pool := x509.NewCertPool()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	junk := filepath.Join(t.TempDir(), "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		endpoint string
		opts     grpcio.DialOptions
		field    string
	}{
		{"ftp://example.com", grpcio.DialOptions{}, "Endpoint"},
		{"https://example.com/v1", grpcio.DialOptions{}, "Endpoint"},
		{"https://example.com", grpcio.DialOptions{AppName: "bad\nname"}, "AppName"},
		{"https://example.com", grpcio.DialOptions{AppName: "caf\u00e9"}, "AppName"},
		{"https://example.com", grpcio.DialOptions{MaxRecvMsgSize: -1}, "MaxRecvMsgSize"},
		{"https://example.com", grpcio.DialOptions{CAPEM: []byte("junk")}, "CAPEM"},
		{"https://example.com", grpcio.DialOptions{CAFile: missing}, "CAFile"},
		{"https://example.com", grpcio.DialOptions{CAFile: junk}, "CAFile"},
		{"https://example.com", grpcio.DialOptions{TLSConfig: &tls.Config{RootCAs: pool}, CAFile: junk}, "TLSConfig"},
		{"https://example.com", grpcio.DialOptions{Proxy: grpcio.ProxyURL(&url.URL{Scheme: "socks5", Host: "p:1080"})}, "Proxy"},
		{"https://example.com", grpcio.DialOptions{Proxy: grpcio.ProxyURL(&url.URL{Scheme: "http"})}, "Proxy"},
	}
	for _, c := range cases {
		cc, err := grpcio.Dial(c.endpoint, c.opts)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			if cc != nil {
				cc.Close()
			}
			t.Errorf("Dial(%q, %+v): %v, want a *core.ConfigError for %s", c.endpoint, c.opts, err, c.field)
			continue
		}
		t.Logf("%v", err)
	}
}

func TestDialUserAgent(t *testing.T) {
	clearProxyEnv(t)
	if grpcio.UserAgent("") != "zbstream/"+version.Version {
		t.Errorf("UserAgent(\"\") = %q", grpcio.UserAgent(""))
	}
	if got, want := grpcio.UserAgent("myapp/2.1"), "myapp/2.1 zbstream/"+version.Version; got != want {
		t.Errorf("UserAgent = %q, want %q", got, want)
	}

	// A gRPC server that records the metadata of every call.
	var mu sync.Mutex
	var seen []metadata.MD
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		mu.Lock()
		seen = append(seen, md)
		mu.Unlock()
		return status.Error(codes.Unimplemented, "recorder")
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()

	for _, app := range []string{"", "myapp"} {
		cc := dial(t, "http://"+lis.Addr().String(), grpcio.DialOptions{AppName: app})
		_, err := ingestpb.NewZerobusClient(cc).RetireStream(t.Context(), &ingestpb.RetireStreamRequest{})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("call: %v", err)
		}
		mu.Lock()
		md := seen[len(seen)-1]
		mu.Unlock()
		ua := md.Get("user-agent")
		want := grpcio.UserAgent(app) + " grpc-go/"
		if len(ua) != 1 || !strings.HasPrefix(ua[0], want) {
			t.Errorf("AppName %q: user-agent %q, want %q...", app, ua, want)
		}
		t.Logf("user-agent: %q", ua)
	}
}

// TestDialDialContextGetsTheName checks that the target reaches the dialer
// unresolved (passthrough), and that the TLS name is the endpoint's host.
func TestDialDialContextGetsTheName(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	var mu sync.Mutex
	var addrs []string
	cc := dial(t, "https://"+fakeHost, grpcio.DialOptions{
		CAPEM: pki.caPEM,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			addrs = append(addrs, network+" "+addr)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, ts.Addr)
		},
	})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(addrs) == 0 || addrs[0] != "tcp "+fakeHost+":443" {
		t.Fatalf("dialer saw %q, want tcp %s:443", addrs, fakeHost)
	}
}

func TestDialProxyFromEnvironment(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	proxy := startProxy(t, map[string]string{fakeHost + ":443": ts.Addr}, 0)
	t.Setenv("HTTPS_PROXY", proxy.URL())
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1") // not for TLS endpoints

	cc := dial(t, "https://"+fakeHost, grpcio.DialOptions{CAPEM: pki.caPEM, AppName: "proxytest"})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	connects, auths := proxy.log()
	if !slices.Equal(connects, []string{fakeHost + ":443"}) {
		t.Errorf("proxy saw CONNECT %q, want [%s:443]", connects, fakeHost)
	}
	if auths[0] != "" {
		t.Errorf("Proxy-Authorization %q without credentials", auths[0])
	}
}

func TestDialProxyAuth(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	proxy := startProxy(t, map[string]string{fakeHost + ":443": ts.Addr}, 0)
	t.Setenv("https_proxy", "http://alice:p%40ss%3Aword@"+proxy.Addr)

	cc := dial(t, fakeHost+":443", grpcio.DialOptions{CAPEM: pki.caPEM})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	_, auths := proxy.log()
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:p@ss:word"))
	if len(auths) != 1 || auths[0] != want {
		t.Errorf("Proxy-Authorization %q, want [%q]", auths, want)
	}
}

func TestDialProxyNoProxy(t *testing.T) {
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	proxy := startProxy(t, nil, 0)
	endpoint := "https://localhost:" + port(t, ts.Addr)
	for _, c := range []struct {
		noProxy string
		via     bool
	}{
		{"", true}, // loopback is not exempted implicitly
		{"localhost", false},
		{"example.com, localhost:" + port(t, ts.Addr), false},
		{"localhost:1", true},
		{"*", false},
		{"127.0.0.1", true}, // an IP entry does not match a name
	} {
		clearProxyEnv(t)
		t.Setenv("HTTPS_PROXY", proxy.URL())
		t.Setenv("NO_PROXY", c.noProxy)
		before, _ := proxy.log()
		cc := dial(t, endpoint, grpcio.DialOptions{CAPEM: pki.caPEM})
		if _, err := createStream(t, ts, cc); err != nil {
			t.Fatalf("NO_PROXY=%q: %v", c.noProxy, err)
		}
		cc.Close()
		after, _ := proxy.log()
		if via := len(after) > len(before); via != c.via {
			t.Errorf("NO_PROXY=%q: through the proxy %v, want %v", c.noProxy, via, c.via)
		}
	}
}

func TestDialProxyExplicitOption(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	proxy := startProxy(t, map[string]string{fakeHost + ":443": ts.Addr}, 0)
	u, err := url.Parse(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	// Set by option, with nothing in the environment.
	cc := dial(t, "https://"+fakeHost, grpcio.DialOptions{CAPEM: pki.caPEM, Proxy: grpcio.ProxyURL(u)})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	if connects, _ := proxy.log(); len(connects) != 1 {
		t.Fatalf("proxy saw %q", connects)
	}
	// Disabled by option, whatever the environment says.
	t.Setenv("HTTPS_PROXY", proxy.URL())
	cc = dial(t, "https://localhost:"+port(t, ts.Addr), grpcio.DialOptions{CAPEM: pki.caPEM, Proxy: grpcio.ProxyURL(nil)})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create without proxy: %v", err)
	}
	if connects, _ := proxy.log(); len(connects) != 1 {
		t.Fatalf("proxy used although disabled: %q", connects)
	}
}

// TestDialProxyPlaintext goes through HTTP_PROXY to an http:// endpoint:
// the server speaks first there (its HTTP/2 settings), so bytes may arrive
// with the proxy's answer.
func TestDialProxyPlaintext(t *testing.T) {
	clearProxyEnv(t)
	ts := startServer(t, nil)
	proxy := startProxy(t, map[string]string{fakeHost + ":80": ts.Addr}, 0)
	t.Setenv("HTTP_PROXY", proxy.URL())
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // not for http:// endpoints
	cc := dial(t, "http://"+fakeHost, grpcio.DialOptions{})
	if _, err := createStream(t, ts, cc); err != nil {
		t.Fatalf("create through the proxy: %v", err)
	}
	if connects, _ := proxy.log(); !slices.Equal(connects, []string{fakeHost + ":80"}) {
		t.Errorf("proxy saw CONNECT %q", connects)
	}
}

func TestDialProxyRefuses(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	ts := startServer(t, pki)
	proxy := startProxy(t, nil, http.StatusForbidden)
	t.Setenv("HTTPS_PROXY", proxy.URL())
	cc := dial(t, "https://"+fakeHost, grpcio.DialOptions{CAPEM: pki.caPEM})
	_, err := createStream(t, ts, cc)
	wantUnavailable(t, err, "proxy "+proxy.Addr, "CONNECT "+fakeHost+":443", "403 Forbidden")
}

func TestDialProxyUnreachable(t *testing.T) {
	clearProxyEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	t.Setenv("HTTPS_PROXY", "http://"+addr)
	cc := dial(t, "https://"+fakeHost, grpcio.DialOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = ingestpb.NewZerobusClient(cc).RetireStream(ctx, &ingestpb.RetireStreamRequest{})
	wantUnavailable(t, err, "connect to proxy "+addr)
}

// TestDialProxySilent: a proxy that accepts the connection and never
// answers holds the call until its deadline; closing the client ends the
// handshake (goleak checks that nothing is left behind).
func TestDialProxySilent(t *testing.T) {
	clearProxyEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		lis.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	t.Setenv("HTTPS_PROXY", "http://"+lis.Addr().String())
	cc, err := grpcio.Dial("https://"+fakeHost, grpcio.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err = ingestpb.NewZerobusClient(cc).RetireStream(ctx, &ingestpb.RetireStreamRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("call through a silent proxy: %v, want DEADLINE_EXCEEDED", err)
	}
	var c net.Conn
	select {
	case c = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the client never reached the proxy")
	}
	cc.Close()
	// The client gives up the handshake: its end of the connection closes.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the client kept the proxy connection open after Close")
			}
			break
		}
	}
	c.Close()
}
