package e2e_test

// TLS end to end: the reference server with a certificate of a test CA
// (self-signed), the client trusting it by PEM or file; without the CA, or
// in plaintext, the open fails.

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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// testCert returns a self-signed certificate for 127.0.0.1 and localhost
// and its server TLS configuration.
func testCert(t *testing.T) (certPEM []byte, cfg *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

// TestTLS: ingest over TLS with the test CA given as PEM or as a file, to
// an https:// endpoint and to a bare host:port (TLS by default); without
// the CA the certificate is refused, and plaintext gets nowhere.
func TestTLS(t *testing.T) {
	certPEM, cfg := testCert(t)
	ts := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS = cfg }))
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		endpoint string
		opt      zbstream.Option
	}{
		"https CAPEM":        {"https://" + ts.Addr, zbstream.WithCAPEM(certPEM)},
		"host:port CAFile":   {ts.Addr, zbstream.WithCAFile(caFile)},
		"localhost TLS conf": {"https://localhost:" + ts.Addr[strings.LastIndex(ts.Addr, ":")+1:], zbstream.WithTLSConfig(&tls.Config{RootCAs: pool(t, certPEM)})},
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := zbstream.NewClient(c.endpoint, zbstream.WithToken(ts.Token), c.opt)
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
	retries := []zbstream.StreamOption{zbstream.WithRetries(1), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond})}
	for name, endpoint := range map[string]string{"no CA": "https://" + ts.Addr, "plaintext": "http://" + ts.Addr} {
		t.Run(name, func(t *testing.T) {
			cl, err := zbstream.NewClient(endpoint, zbstream.WithToken(ts.Token))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = cl.CreateStream(ctx(t), ts.Table, append(retries, zbstream.WithOpenTimeout(2*time.Second))...)
			var ce *zbstream.ConnectionError
			if err == nil || (!errors.As(err, &ce) && !errors.Is(err, zbstream.ErrOpenTimeout)) {
				t.Fatalf("CreateStream: %v, want a connection failure", err)
			}
			t.Logf("%s: %v", name, err)
			if name == "no CA" && !strings.Contains(err.Error(), "certificate") {
				t.Errorf("the error does not say the certificate was refused: %v", err)
			}
		})
	}
}

func pool(t *testing.T, certPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(certPEM) {
		t.Fatal("bad PEM")
	}
	return p
}

// countingHeaders authenticates with token and counts the opens: one per
// attempt, so the count is 1 plus the reconnects recovery made.
type countingHeaders struct {
	token string
	opens atomic.Int64
}

func (h *countingHeaders) Headers(context.Context) (map[string]string, error) {
	h.opens.Add(1)
	return map[string]string{"authorization": "Bearer " + h.token}, nil
}

func (h *countingHeaders) Invalidate() {}

// TestTLSMistakes: each way of getting TLS wrong fails the first open at
// once, with a *TLSError that names the fix, and is not retried (one open
// attempt where recovery allows five); RetireStream says the same. A
// refused connection is still retried until the retries are exhausted.
// The opens are counted, not the server's accepts: gRPC reconnects on its
// own schedule, and the http:// case probes the server with a TLS
// handshake on a connection of its own.
func TestTLSMistakes(t *testing.T) {
	certPEM, cfg := testCert(t)
	tlsTS := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS = cfg }))
	plainTS := servertest.Start(t)
	otherName := zbstream.WithTLSConfig(&tls.Config{RootCAs: pool(t, certPEM), ServerName: "zerobus.example"})
	for _, c := range []struct {
		name     string
		endpoint string
		opt      zbstream.Option
		mistake  zbstream.TLSMistake
		hint     string
		cause    any // a pointer to the type errors.As must find, or nil
	}{
		{"untrusted", "https://" + tlsTS.Addr, nil, zbstream.UntrustedCertificate, "WithCAFile", new(x509.UnknownAuthorityError)},
		{"hostname", "https://" + tlsTS.Addr, otherName, zbstream.HostnameMismatch, "ServerName", new(x509.HostnameError)},
		{"http to TLS", "http://" + tlsTS.Addr, nil, zbstream.PlaintextToTLS, "use https://" + tlsTS.Addr, nil},
		{"https to plaintext", "https://" + plainTS.Addr, zbstream.WithCAPEM(certPEM), zbstream.TLSToPlaintext, "use http://" + plainTS.Addr, new(tls.RecordHeaderError)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &countingHeaders{token: tlsTS.Token}
			opts := []zbstream.Option{zbstream.WithHeadersProvider(h)}
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			cl, err := zbstream.NewClient(c.endpoint, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = cl.CreatePersistentStream(ctx(t), tlsTS.Table, zbstream.WithRetries(4), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}))
			t.Logf("%v", err)
			wantTLSError(t, err, c.mistake, c.hint, c.cause)
			if errors.Is(err, zbstream.ErrRetriesExhausted) {
				t.Errorf("the open was retried: %v", err)
			}
			if n := h.opens.Load(); n != 1 {
				t.Errorf("%d open attempts, want 1 (no retry)", n)
			}
			if st, ok := status.FromError(err); !ok || st.Code() != codes.Unavailable {
				t.Errorf("status.FromError: %v %v, want UNAVAILABLE", st.Code(), ok)
			}
			err = cl.RetireStream(ctx(t), tlsTS.Table, "some-stream")
			wantTLSError(t, err, c.mistake, c.hint, c.cause)
		})
	}
	t.Run("refused", func(t *testing.T) {
		addr := freeAddr(t)
		for _, endpoint := range []string{"http://" + addr, "https://" + addr} {
			h := &countingHeaders{token: "t"}
			cl, err := zbstream.NewClient(endpoint, zbstream.WithHeadersProvider(h))
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.CreateStream(ctx(t), "a.b.c", zbstream.WithRetries(4), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}))
			cl.Close()
			var re *zbstream.RetryError
			var te *zbstream.TLSError
			switch {
			case !errors.As(err, &re) || re.Attempts != 4:
				t.Errorf("%s: %v, want a RetryError after 4 attempts", endpoint, err)
			case errors.As(err, &te):
				t.Errorf("%s: a refused connection blamed on TLS: %v", endpoint, err)
			}
			if n := h.opens.Load(); n != 5 {
				t.Errorf("%s: %d open attempts, want 5", endpoint, n)
			}
		}
	})
}

// wantTLSError checks that err is a non-retryable *TLSError for mistake
// inside a *ConnectionError, whose message holds hint and whose chain
// holds an error of cause's type.
func wantTLSError(t *testing.T, err error, mistake zbstream.TLSMistake, hint string, cause any) {
	t.Helper()
	var te *zbstream.TLSError
	var ce *zbstream.ConnectionError
	switch {
	case !errors.As(err, &te):
		t.Fatalf("%v, want a *TLSError", err)
	case te.Mistake != mistake:
		t.Errorf("mistake %v, want %v", te.Mistake, mistake)
	case !errors.As(err, &ce) || ce.Retryable():
		t.Errorf("%v: want a ConnectionError that is not retryable", err)
	case !strings.Contains(err.Error(), hint):
		t.Errorf("the message does not say %q: %v", hint, err)
	case cause != nil && !errors.As(err, cause):
		t.Errorf("%v: no %T in the chain", err, cause)
	}
}
