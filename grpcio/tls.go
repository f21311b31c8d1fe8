package grpcio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// TLSMistake names how the client and the server disagree about TLS.
type TLSMistake uint8

// The TLS mistakes Dial's connections recognise.
const (
	// UntrustedCertificate: the server's certificate chains to no CA the
	// client trusts.
	UntrustedCertificate TLSMistake = iota + 1
	// HostnameMismatch: the server's certificate is not valid for the
	// name the client verifies (the endpoint's host by default).
	HostnameMismatch
	// PlaintextToTLS: the endpoint is plaintext http://, but the server
	// speaks TLS.
	PlaintextToTLS
	// TLSToPlaintext: the endpoint is TLS (https:// or host:port), but the
	// server does not speak TLS.
	TLSToPlaintext
)

// String names the mistake.
func (m TLSMistake) String() string {
	switch m {
	case UntrustedCertificate:
		return "untrusted certificate"
	case HostnameMismatch:
		return "hostname mismatch"
	case PlaintextToTLS:
		return "plaintext to a TLS server"
	case TLSToPlaintext:
		return "TLS to a plaintext server"
	}
	return "TLS mistake"
}

// TLSError is a call that failed because the client and the server
// disagree about TLS. gRPC reports it as UNAVAILABLE, as it does a server
// that is down, but no reconnect can fix it: Retryable is false, so a
// stream fails at once instead of retrying, and the message says what to
// change. The errors of the call carry it inside a *core.ConnectionError;
// errors.As finds it there, and finds through it Err (an
// x509.UnknownAuthorityError, an x509.HostnameError, a
// tls.RecordHeaderError) and the call's gRPC status error (status.FromError
// works on it).
type TLSError struct {
	// Mistake is what went wrong.
	Mistake TLSMistake
	// Endpoint is the endpoint as the client was given it, in its
	// canonical form (https://host:port or http://host:port).
	Endpoint string
	// Err is the handshake's error. It is nil for PlaintextToTLS, where
	// the plaintext connection only saw the server close it or answer
	// something that is not HTTP/2 (an io.EOF here would read as a clean
	// end of the call to Classify).
	Err error

	call error // the gRPC call's error
}

func (e *TLSError) Error() string {
	var cause string
	if e.Err != nil {
		cause = " (" + e.Err.Error() + ")"
	}
	switch e.Mistake {
	case UntrustedCertificate:
		return "zbstream: TLS: the certificate of " + e.Endpoint + " is not trusted" + cause +
			": give its CA with WithCAFile or WithCAPEM"
	case HostnameMismatch:
		return "zbstream: TLS: the certificate of " + e.Endpoint + " is not valid for its host name" + cause +
			": connect with a name the certificate is for, or name the one to verify with WithTLSConfig (ServerName)"
	case PlaintextToTLS:
		return "zbstream: TLS: " + e.Endpoint + " is plaintext but the server speaks TLS: use " + e.scheme("https://")
	case TLSToPlaintext:
		return "zbstream: TLS: the server at " + e.Endpoint + " does not speak TLS" + cause +
			": for a plaintext server use " + e.scheme("http://")
	}
	return "zbstream: TLS: " + e.Mistake.String() + cause
}

// scheme returns the endpoint with the other scheme.
func (e *TLSError) scheme(s string) string {
	if _, addr, ok := strings.Cut(e.Endpoint, "://"); ok {
		return s + addr
	}
	return s
}

// Unwrap exposes the connection's error and the call's gRPC status error.
func (e *TLSError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Err, e.call} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Retryable is false: a reconnect meets the same server with the same
// configuration (see core.ConnectionError.Retryable).
func (e *TLSError) Retryable() bool { return false }

// probeTimeout bounds the TLS probe of a plaintext connection that ended
// before the server spoke HTTP/2.
const probeTimeout = 5 * time.Second

// tlsWatch watches the connections of one ClientConn for TLS mistakes and
// gives the calls that fail because of one a *TLSError. gRPC flattens a
// handshake's error into the text of an UNAVAILABLE status, so the typed
// error is kept here, where the handshake and the dialer see it, and
// matched to the call by the interceptors: a ClientConn has one connection
// at a time, and a call that fails UNAVAILABLE while the last connection
// failed with a TLS mistake failed because of it.
type tlsWatch struct {
	ep   Endpoint
	dial func(ctx context.Context, addr string) (net.Conn, error)
	// last is the mistake of the latest connection attempt, nil when it
	// had none (or is still under way).
	last atomic.Pointer[TLSError]
}

// dialContext opens a connection for gRPC. Each attempt starts clean, so
// that a later failure of another kind (a refused connection) is not
// blamed on TLS. A plaintext connection is watched for a TLS server.
func (w *tlsWatch) dialContext(ctx context.Context, addr string) (net.Conn, error) {
	w.last.Store(nil)
	conn, err := w.dial(ctx, addr)
	if err != nil || !w.ep.Plaintext {
		return conn, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	return &plainConn{Conn: conn, w: w, addr: addr, ctx: pctx, cancel: cancel}, nil
}

// mistake records a connection's TLS mistake.
func (w *tlsWatch) mistake(m TLSMistake, err error) {
	w.last.Store(&TLSError{Mistake: m, Endpoint: w.ep.String(), Err: err})
}

// explain turns the error of a call that failed UNAVAILABLE because of the
// last connection's TLS mistake into a *TLSError.
func (w *tlsWatch) explain(err error) error {
	if err == nil || status.Code(err) != codes.Unavailable {
		return err
	}
	te := w.last.Load()
	if te == nil {
		return err
	}
	e := *te
	e.call = err
	return &e
}

// unary and stream are the interceptors that apply explain: a call fails
// for a connection's sake when it starts (the stream's first message waits
// for a connection), so the stream's later messages need no watching.
func (w *tlsWatch) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return w.explain(invoker(ctx, method, req, reply, cc, opts...))
}

func (w *tlsWatch) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, w.explain(err)
	}
	return cs, nil
}

// handshakeMistake recognises the TLS mistakes of a client handshake by
// their types, which crypto/tls and crypto/x509 keep in the chain.
func handshakeMistake(err error) TLSMistake {
	var (
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		record    tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &authority):
		return UntrustedCertificate
	case errors.As(err, &host):
		return HostnameMismatch
	case errors.As(err, &record):
		// The server's first bytes are not a TLS record: it speaks
		// something else, plaintext HTTP/2 for a gRPC server.
		return TLSToPlaintext
	}
	return 0
}

// watchedCreds are TLS credentials that report their handshakes' mistakes
// to a tlsWatch.
type watchedCreds struct {
	credentials.TransportCredentials
	w *tlsWatch
}

// ClientHandshake runs the TLS handshake and records a mistake.
func (c *watchedCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		if m := handshakeMistake(err); m != 0 {
			c.w.mistake(m, err)
		}
	}
	return tc, info, err
}

// Clone keeps the watch.
func (c *watchedCreds) Clone() credentials.TransportCredentials {
	return &watchedCreds{TransportCredentials: c.TransportCredentials.Clone(), w: c.w}
}

// plainConn is a plaintext connection that looks at the server's first
// answer. A plaintext gRPC server always speaks first after the client's
// preface, with a SETTINGS frame whose first byte (the high byte of its
// length) is 0. A TLS server instead closes the connection (crypto/tls
// sends nothing back to a record that is not TLS) or answers with a TLS
// alert or an HTTP/1 error. None of these proves TLS by itself: a server
// that stops closes connections too, and that must stay retryable. So the
// connection asks the server, on a second connection, for a TLS handshake,
// and reports PlaintextToTLS only if the server answers it.
type plainConn struct {
	net.Conn
	w    *tlsWatch
	addr string
	// checked is set once the first answer was looked at. Only gRPC's
	// reader goroutine reads a connection, so it needs no lock.
	checked bool
	// ctx bounds the probe; Close cancels it, so that closing the client
	// does not wait for a probe.
	ctx    context.Context
	cancel context.CancelFunc
}

// Read reads, and looks at the server's first answer.
func (c *plainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.checked || (n == 0 && err == nil) {
		return n, err
	}
	c.checked = true
	if n > 0 && p[0] == 0 {
		return n, err // an HTTP/2 frame: the server speaks plaintext HTTP/2
	}
	if c.speaksTLS() {
		c.w.mistake(PlaintextToTLS, nil)
	}
	return n, err
}

// Close closes the connection and ends a probe under way.
func (c *plainConn) Close() error {
	c.cancel()
	return c.Conn.Close()
}

// speaksTLS reports whether the server answers a TLS handshake, on a new
// connection (through the same proxy, if any). The probe verifies no
// certificate and sends nothing once the handshake is done: it only asks
// whether TLS is spoken, and a server that answers with a TLS alert speaks
// it too.
func (c *plainConn) speaksTLS() bool {
	ctx, cancel := context.WithTimeout(c.ctx, probeTimeout)
	defer cancel()
	conn, err := c.w.dial(ctx, c.addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{
		ServerName:         c.w.ep.Host,
		InsecureSkipVerify: true, // only whether TLS is spoken matters here
		NextProtos:         []string{"h2"},
		MinVersion:         tls.VersionTLS12,
	})
	err = tc.HandshakeContext(ctx)
	var alert tls.AlertError
	return err == nil || errors.As(err, &alert)
}
