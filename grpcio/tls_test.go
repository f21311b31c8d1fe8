package grpcio_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/zbstream/zbstream/grpcio"
)

// wantTLSMistake checks that err is a *grpcio.TLSError for m, not
// retryable, that still reads as an UNAVAILABLE status.
func wantTLSMistake(t *testing.T, err error, m grpcio.TLSMistake) {
	t.Helper()
	var te *grpcio.TLSError
	if !errors.As(err, &te) {
		t.Fatalf("%v, want a *TLSError", err)
	}
	if te.Mistake != m || te.Retryable() {
		t.Fatalf("%v: mistake %v, retryable %v; want %v, not retryable", err, te.Mistake, te.Retryable(), m)
	}
	wantUnavailable(t, err)
}

// TestDialTLSMistakes: the calls that fail because of a TLS mistake carry
// a *TLSError naming it: no CA, a CA that did not sign the certificate, a
// name the certificate does not hold, TLS to a plaintext server, and
// plaintext to a TLS server, directly and through a CONNECT proxy (the
// probe that tells a TLS server goes through the proxy too).
func TestDialTLSMistakes(t *testing.T) {
	clearProxyEnv(t)
	pki := newTestPKI(t)
	tlsTS := startServer(t, pki)
	plainTS := startServer(t, nil)
	toTLS := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, tlsTS.Addr)
	}
	proxy := startProxy(t, map[string]string{fakeHost + ":80": tlsTS.Addr}, 0)
	proxyURL, err := url.Parse(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		endpoint string
		opts     grpcio.DialOptions
		want     grpcio.TLSMistake
	}{
		{"no CA", "https://localhost:" + port(t, tlsTS.Addr), grpcio.DialOptions{}, grpcio.UntrustedCertificate},
		{"other CA", "https://localhost:" + port(t, tlsTS.Addr), grpcio.DialOptions{CAPEM: newTestPKI(t).caPEM}, grpcio.UntrustedCertificate},
		{"other name", "https://other.test:443", grpcio.DialOptions{CAPEM: pki.caPEM, DialContext: toTLS}, grpcio.HostnameMismatch},
		{"TLS to plaintext", "https://" + plainTS.Addr, grpcio.DialOptions{}, grpcio.TLSToPlaintext},
		{"plaintext to TLS", "http://" + tlsTS.Addr, grpcio.DialOptions{}, grpcio.PlaintextToTLS},
		{"plaintext to TLS by proxy", "http://" + fakeHost, grpcio.DialOptions{Proxy: grpcio.ProxyURL(proxyURL)}, grpcio.PlaintextToTLS},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := dial(t, c.endpoint, c.opts)
			_, err := createStream(t, tlsTS, cc)
			wantTLSMistake(t, err, c.want)
		})
	}
	// The probe's connection went through the proxy as well.
	if connects, _ := proxy.log(); len(connects) < 2 || slices.ContainsFunc(connects, func(s string) bool { return s != fakeHost+":80" }) {
		t.Errorf("proxy saw CONNECT %q, want the call's and the probe's to %s", connects, fakeHost+":80")
	}
}

// TestDialPlaintextClosedIsNotTLS: a plaintext server that closes every
// connection without a word (one that is stopping, say) is not taken for
// a TLS server: the probe finds no TLS there, and the call fails with a
// plain, retryable UNAVAILABLE.
func TestDialPlaintextClosedIsNotTLS(t *testing.T) {
	clearProxyEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer wg.Wait()
	defer lis.Close()
	cc := dial(t, "http://"+lis.Addr().String(), grpcio.DialOptions{})
	_, err = createStreamAs(t, cc, "token", "main.default.events")
	var te *grpcio.TLSError
	if errors.As(err, &te) {
		t.Fatalf("a closed connection taken for TLS: %v", err)
	}
	wantUnavailable(t, err)
}
