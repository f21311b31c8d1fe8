package grpcio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/internal/version"
)

// sdkName is the library's name in the user agent.
const sdkName = "zbstream"

// Defaults of DialOptions.
const (
	// DefaultMaxRecvMsgSize bounds a message received from the server.
	// Server messages are small (acks, create and resume responses).
	DefaultMaxRecvMsgSize = 4 << 20
	// DefaultKeepaliveTime is the idle time after which the client pings
	// the server, while a stream is open. It is not shorter because gRPC
	// servers refuse pings more frequent than their enforcement policy
	// allows: grpc-go's default (which the reference server keeps) is 5
	// minutes, and a client that pings more often while the stream is
	// quiet gets GOAWAY "too_many_pings" after three pings. A dead
	// connection under load is found by the core's lack-of-ack timeout
	// anyway.
	DefaultKeepaliveTime = 5 * time.Minute
	// DefaultKeepaliveTimeout is how long the client waits for a ping's
	// answer before it closes the connection.
	DefaultKeepaliveTimeout = 20 * time.Second
)

// UserAgent returns the name and version of the library, with appName in
// front when it is not empty: "zbstream/0.1.0" or "myapp
// zbstream/0.1.0". It is the value of the x-zerobus-sdk header and the
// start of the user-agent header (gRPC appends its own "grpc-go/…").
func UserAgent(appName string) string {
	ua := sdkName + "/" + version.Version
	if appName = strings.TrimSpace(appName); appName != "" {
		ua = appName + " " + ua
	}
	return ua
}

// DialOptions configures Dial. The zero value is a TLS connection with the
// system roots, through the proxy the environment names, with the default
// limits and keepalive.
type DialOptions struct {
	// AppName names the application in the user agent, in front of
	// zbstream/Version. Printable ASCII only.
	AppName string

	// TLSConfig, when set, is the base TLS configuration (it is cloned,
	// never modified). Its MinVersion is raised to TLS 1.2 if lower, and
	// ServerName defaults to the endpoint's host. Nil, and without CAFile
	// or CAPEM: the system roots. On Linux and the BSDs, crypto/x509 reads
	// them from SSL_CERT_FILE (a PEM bundle, replacing the distribution's
	// bundle) and SSL_CERT_DIR (colon-separated directories) when set,
	// once per process; macOS and Windows use the platform verifier.
	TLSConfig *tls.Config
	// CAFile names a PEM file of CA certificates that replaces the system
	// roots.
	CAFile string
	// CAPEM holds PEM CA certificates that replace the system roots;
	// with CAFile too, both are trusted. With TLSConfig, CAFile and CAPEM
	// need its RootCAs to be nil.
	CAPEM []byte

	// Proxy chooses the HTTP CONNECT proxy. Nil: ProxyFromEnvironment.
	// ProxyURL(nil) connects directly whatever the environment says.
	Proxy ProxyFunc
	// DialContext opens the TCP connection to the server or to the proxy.
	// Nil: a net.Dialer. addr is host:port, unresolved.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// Keepalive overrides the client keepalive parameters. Nil: pings
	// after DefaultKeepaliveTime of silence, DefaultKeepaliveTimeout to
	// answer, and only while a stream is open. A zero Time disables
	// pings; gRPC raises a Time under 10 s to 10 s. Pinging more often
	// than the server's policy allows gets the connection closed.
	Keepalive *keepalive.ClientParameters
	// MaxRecvMsgSize bounds a received message. 0: DefaultMaxRecvMsgSize.
	MaxRecvMsgSize int
	// GRPCOptions are appended after zbstream's own options, so they win
	// where they conflict (replacing the transport credentials or the
	// dialer, for instance, bypasses the TLS and proxy handling above).
	GRPCOptions []grpc.DialOption
}

// Dial returns a client connection for the Zerobus service at endpoint
// (see ParseEndpoint for its forms). The connection is lazy, as with
// grpc.NewClient: nothing is dialed until the first call, and connection
// failures surface as the calls' status errors.
//
// Security: TLS (1.2 at least) for https:// and bare host[:port]
// endpoints, verified against the endpoint's host; plaintext only for an
// explicit http:// endpoint (and then TLSConfig, CAFile and CAPEM are
// refused).
//
// Proxies: the proxy is chosen once, here (opts.Proxy, by default the
// environment as it is now). A proxy is reached with HTTP CONNECT carrying
// the endpoint's unresolved host:port, so names are resolved by the proxy;
// gRPC's own proxy support is disabled, so this is the only proxy path.
//
// TLS mistakes: a call that fails because the server's certificate is not
// trusted or not valid for the host, because an http:// endpoint names a
// TLS server or a TLS endpoint a plaintext one, fails with a *TLSError
// (inside the usual *core.ConnectionError), which is not retryable.
//
// Invalid options are *core.ConfigError values naming the field.
func Dial(endpoint string, opts DialOptions) (*grpc.ClientConn, error) {
	ep, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if err := checkAppName(opts.AppName); err != nil {
		return nil, err
	}
	if opts.MaxRecvMsgSize < 0 {
		return nil, &core.ConfigError{Field: "MaxRecvMsgSize", Reason: "is negative"}
	}
	if k := opts.Keepalive; k != nil && (k.Time < 0 || k.Timeout < 0) {
		return nil, &core.ConfigError{Field: "Keepalive", Reason: "has a negative duration"}
	}
	creds, err := transportCredentials(ep, opts)
	if err != nil {
		return nil, err
	}
	proxyFn := opts.Proxy
	if proxyFn == nil {
		proxyFn = ProxyFromEnvironment
	}
	proxy, err := proxyFn(ep)
	if err != nil {
		return nil, err
	}
	if proxy != nil {
		if err := checkProxyURL(proxy); err != nil {
			return nil, &core.ConfigError{Field: "Proxy", Reason: "chosen by DialOptions.Proxy: " + err.Error()}
		}
	}
	ua := UserAgent(opts.AppName)
	d := &connectDialer{proxy: proxy, userAgent: ua, dial: opts.DialContext}
	if d.dial == nil {
		d.dial = (&net.Dialer{}).DialContext
	}
	// The watch gives the calls that fail because of a TLS mistake a
	// *TLSError, which is not retried: see tlsWatch.
	w := &tlsWatch{ep: ep, dial: d.DialContext}
	if !ep.Plaintext {
		creds = &watchedCreds{TransportCredentials: creds, w: w}
	}
	ka := keepalive.ClientParameters{Time: DefaultKeepaliveTime, Timeout: DefaultKeepaliveTimeout}
	if opts.Keepalive != nil {
		ka = *opts.Keepalive
	}
	maxRecv := opts.MaxRecvMsgSize
	if maxRecv == 0 {
		maxRecv = DefaultMaxRecvMsgSize
	}
	gopts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithNoProxy(),
		grpc.WithContextDialer(w.dialContext),
		grpc.WithChainUnaryInterceptor(w.unary),
		grpc.WithChainStreamInterceptor(w.stream),
		grpc.WithUserAgent(ua),
		grpc.WithKeepaliveParams(ka),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)),
		// The driver retries with its own backoff: keep gRPC's
		// reconnection backoff short so that it does not add minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 10 * time.Second},
			MinConnectTimeout: 20 * time.Second,
		}),
	}
	gopts = append(gopts, opts.GRPCOptions...)
	// passthrough: the dialer gets host:port as written; it resolves the
	// name itself, or the proxy does.
	return grpc.NewClient("passthrough:///"+ep.Addr(), gopts...)
}

// checkAppName refuses names that cannot travel in a header.
func checkAppName(name string) error {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c > 0x7e {
			return &core.ConfigError{Field: "AppName", Reason: "must be printable ASCII"}
		}
	}
	return nil
}

// transportCredentials builds the TLS (or, for http://, insecure)
// credentials.
func transportCredentials(ep Endpoint, opts DialOptions) (credentials.TransportCredentials, error) {
	if ep.Plaintext {
		if opts.TLSConfig != nil || opts.CAFile != "" || opts.CAPEM != nil {
			return nil, &core.ConfigError{Field: "Endpoint", Reason: "is plaintext http:// but TLS options are set (use https://)"}
		}
		return insecure.NewCredentials(), nil
	}
	cfg, err := tlsConfig(ep, opts.TLSConfig, opts.CAFile, opts.CAPEM)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// tlsConfig returns the client TLS configuration Dial uses for ep: a clone
// of base (or a new one), TLS 1.2 at least, ServerName ep.Host unless base
// sets one, and RootCAs from caFile and caPEM when either is given (base's
// RootCAs must then be nil). Without any of them the system roots are
// used.
func tlsConfig(ep Endpoint, base *tls.Config, caFile string, caPEM []byte) (*tls.Config, error) {
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if cfg.ServerName == "" {
		cfg.ServerName = ep.Host
	}
	if caFile == "" && caPEM == nil {
		return cfg, nil
	}
	if cfg.RootCAs != nil {
		return nil, &core.ConfigError{Field: "TLSConfig", Reason: "sets RootCAs and CAFile or CAPEM is set too: choose one"}
	}
	pool := x509.NewCertPool()
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, &core.ConfigError{Field: "CAFile", Reason: err.Error()}
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, &core.ConfigError{Field: "CAFile", Reason: caFile + " holds no PEM certificate"}
		}
	}
	if caPEM != nil && !pool.AppendCertsFromPEM(caPEM) {
		return nil, &core.ConfigError{Field: "CAPEM", Reason: "holds no PEM certificate"}
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// WorkspaceTLSConfig returns the TLS configuration for HTTPS requests to
// a workspace (its OAuth token endpoint, its Unity Catalog API) that trust
// what Dial trusts with opts: TLSConfig's settings and roots, CAFile and
// CAPEM, so that a workspace behind the same private CA as the Zerobus
// endpoint is reached with the same options. TLSConfig's ServerName is
// the endpoint's and is left out (the HTTP client verifies each URL's
// host). It returns nil when opts set none of the three: the HTTP
// client's defaults, the system roots.
func WorkspaceTLSConfig(opts DialOptions) (*tls.Config, error) {
	if opts.TLSConfig == nil && opts.CAFile == "" && opts.CAPEM == nil {
		return nil, nil
	}
	cfg, err := tlsConfig(Endpoint{}, opts.TLSConfig, opts.CAFile, opts.CAPEM)
	if err != nil {
		return nil, err
	}
	cfg.ServerName = ""
	return cfg, nil
}
