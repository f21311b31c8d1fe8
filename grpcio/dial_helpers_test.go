package grpcio_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// fakeHost is a name that does not resolve: only the test proxy (or a
// test dialer) knows where it is.
const fakeHost = "zerobus.test"

// testPKI is a CA and a server certificate it signed, for localhost,
// 127.0.0.1, ::1 and fakeHost.
type testPKI struct {
	caPEM  []byte
	server tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "zbstream test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", fakeHost},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{
		caPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		server: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey},
	}
}

// startServer starts the reference server on loopback, with TLS when pki
// is not nil.
func startServer(t *testing.T, pki *testPKI) *servertest.Server {
	t.Helper()
	return servertest.Start(t, servertest.WithOptions(func(o *server.Options) {
		if pki != nil {
			o.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, MinVersion: tls.VersionTLS12}
		}
	}))
}

// createStream opens an ephemeral stream on cc, sends a create request and
// returns the stream id the server answers with, then ends the call
// cleanly.
func createStream(t *testing.T, ts *servertest.Server, cc *grpc.ClientConn) (string, error) {
	t.Helper()
	return createStreamAs(t, cc, ts.Token, ts.Table)
}

// createStreamAs is createStream with an explicit token and table.
func createStreamAs(t *testing.T, cc *grpc.ClientConn, token, table string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	st, err := ingestpb.NewZerobusClient(cc).EphemeralStream(servertest.OutgoingContext(ctx, token, table))
	if err != nil {
		return "", err
	}
	err = st.Send(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{
		CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_JSON.Enum()}}})
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	r, err := st.Recv()
	if err != nil {
		return "", err
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	if id == "" {
		t.Fatalf("create answered with %v", r)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("end of call: %v", err)
			}
			return id, nil
		}
	}
}

// connectProxy is an HTTP CONNECT proxy on loopback: it records every
// CONNECT target and Proxy-Authorization value, and pipes bytes to the
// target, or to routes[target] when the target is a fake name.
type connectProxy struct {
	Addr   string
	routes map[string]string
	refuse int // when not 0, answer every CONNECT with this status

	mu       sync.Mutex
	connects []string
	auths    []string
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	srv      *http.Server
}

func startProxy(t *testing.T, routes map[string]string, refuse int) *connectProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{Addr: lis.Addr().String(), routes: routes, refuse: refuse, conns: map[net.Conn]struct{}{}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() { defer close(served); p.srv.Serve(lis) }()
	t.Cleanup(func() {
		p.srv.Close()
		<-served
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *connectProxy) URL() string { return "http://" + p.Addr }

func (p *connectProxy) log() (connects, auths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...), append([]string(nil), p.auths...)
}

// track registers the two ends of a tunnel and its two pipe goroutines,
// unless the proxy is closing.
func (p *connectProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	p.wg.Add(2)
	return true
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.connects = append(p.connects, r.Host)
	p.auths = append(p.auths, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if p.refuse != 0 {
		http.Error(w, "denied by test proxy", p.refuse)
		return
	}
	target := r.Host
	if real, ok := p.routes[target]; ok {
		target = real
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(client, up) {
		client.Close()
		up.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		up.Close()
	}
	pipe := func(dst net.Conn, src io.Reader) {
		defer p.wg.Done()
		io.Copy(dst, src)
		dst.Close()
		client.Close()
		up.Close()
	}
	go pipe(up, rw.Reader)
	go pipe(client, up)
}
