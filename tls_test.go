package zbstream_test

// TLS end to end: the reference server with a certificate of a test CA
// (self-signed), the client trusting it by PEM or file; without the CA, or
// in plaintext, the open fails.

import (
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
	"testing"
	"time"

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
	retries := zbstream.WithRecovery(1, time.Millisecond, 2*time.Millisecond)
	for name, endpoint := range map[string]string{"no CA": "https://" + ts.Addr, "plaintext": "http://" + ts.Addr} {
		t.Run(name, func(t *testing.T) {
			cl, err := zbstream.NewClient(endpoint, zbstream.WithToken(ts.Token))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = cl.CreateStream(ctx(t), ts.Table, retries, zbstream.WithTimeouts(2*time.Second, 0, 0))
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
