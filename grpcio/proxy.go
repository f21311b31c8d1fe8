package grpcio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zbstream/zbstream/core"
)

// ProxyFunc chooses the HTTP CONNECT proxy for an endpoint. A nil URL (and
// nil error) means a direct connection. Dial calls it once; the choice
// holds for every connection of the returned *grpc.ClientConn.
type ProxyFunc func(ep Endpoint) (*url.URL, error)

// ProxyURL returns a ProxyFunc that always chooses u, whatever the
// environment says. ProxyURL(nil) disables proxying.
func ProxyURL(u *url.URL) ProxyFunc {
	return func(Endpoint) (*url.URL, error) { return u, nil }
}

// ProxyFromEnvironment chooses the proxy from the environment variables
// as they are when it is called (Dial calls it at Dial time; unlike
// net/http's ProxyFromEnvironment, nothing is cached for the life of the
// process):
//
//   - HTTPS_PROXY (or https_proxy) for a TLS endpoint, HTTP_PROXY (or
//     http_proxy) for a plaintext http:// endpoint; the upper-case name
//     wins when both are set, and an empty value means no proxy. There is
//     no fall-back from one to the other. A value without a scheme, such
//     as "proxy.corp:3128", is taken as http://. Only http:// proxies are
//     supported; user information in the URL is sent as Basic
//     Proxy-Authorization.
//   - NO_PROXY (or no_proxy): a comma-separated list of exceptions, as in
//     Go's golang.org/x/net/http/httpproxy: "*" matches every host; an IP
//     address or a CIDR block matches IP-literal hosts; "example.com"
//     matches example.com and its subdomains, ".example.com" and
//     "*.example.com" only its subdomains; any entry but a CIDR may carry a
//     port ("example.com:443", "[::1]:443") and then matches that port
//     only. Matching ignores case and a trailing dot. Non-ASCII names are
//     compared as given (no IDNA conversion).
//
// Decision: unlike net/http, loopback hosts ("localhost", 127.0.0.1, ::1)
// are not exempted implicitly; list them in NO_PROXY to connect to them
// directly.
func ProxyFromEnvironment(ep Endpoint) (*url.URL, error) {
	name := "HTTPS_PROXY"
	if ep.Plaintext {
		name = "HTTP_PROXY"
	}
	val := getenvAny(name, strings.ToLower(name))
	if val == "" {
		return nil, nil
	}
	if noProxyMatch(getenvAny("NO_PROXY", "no_proxy"), ep.Host, ep.Port) {
		return nil, nil
	}
	u, err := parseProxyURL(val)
	if err != nil {
		return nil, &core.ConfigError{Field: "Proxy", Reason: fmt.Sprintf("%s: %v", name, err)}
	}
	return u, nil
}

// getenvAny returns the first non-empty value among the named variables.
func getenvAny(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// parseProxyURL parses a proxy setting; a value without a scheme is taken
// as http://.
func parseProxyURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %v", unwrapURLError(err))
	}
	return u, checkProxyURL(u)
}

// checkProxyURL accepts only http:// proxies with a host.
func checkProxyURL(u *url.URL) error {
	if u.Scheme != "http" {
		return fmt.Errorf("proxy scheme %q is not supported (want http://)", u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("proxy URL %q has no host", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("proxy URL %q has a bad port", u.Redacted())
		}
	}
	return nil
}

// noProxyMatch reports whether host:port is exempted by the NO_PROXY
// value list (the rules are in ProxyFromEnvironment's documentation).
func noProxyMatch(list, host, port string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	hostIP, ipErr := netip.ParseAddr(host)
	isIP := ipErr == nil
	if isIP {
		hostIP = hostIP.Unmap().WithZone("")
	}
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		if entry == "" {
			continue
		}
		if entry == "*" {
			return true
		}
		if pfx, err := netip.ParsePrefix(entry); err == nil {
			if isIP && pfx.Masked().Contains(hostIP) {
				return true
			}
			continue
		}
		ehost, eport := entry, ""
		if h, p, err := net.SplitHostPort(entry); err == nil {
			ehost, eport = h, p
		}
		if eport != "" && eport != port {
			continue
		}
		ehost = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(ehost, "["), "]"), ".")
		if ip, err := netip.ParseAddr(ehost); err == nil {
			if isIP && ip.Unmap().WithZone("") == hostIP {
				return true
			}
			continue
		}
		if ehost == "" {
			continue
		}
		ehost = strings.TrimPrefix(ehost, "*")
		if strings.HasPrefix(ehost, ".") {
			// Subdomains only.
			if strings.HasSuffix(host, ehost) {
				return true
			}
			continue
		}
		if host == ehost || strings.HasSuffix(host, "."+ehost) {
			return true
		}
	}
	return false
}

// connectDialer opens TCP connections, through an HTTP CONNECT proxy when
// proxy is set.
type connectDialer struct {
	proxy     *url.URL // nil: direct
	userAgent string
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DialContext connects to addr (host:port, unresolved), directly or
// through the proxy. Its errors carry no "zbstream: " (core.Prefix): gRPC
// quotes them inside the status message of the calls that fail.
func (d *connectDialer) DialContext(ctx context.Context, addr string) (net.Conn, error) {
	if d.proxy == nil {
		return d.dial(ctx, "tcp", addr)
	}
	proxyAddr := d.proxy.Host
	if d.proxy.Port() == "" {
		proxyAddr = net.JoinHostPort(d.proxy.Hostname(), "80")
	}
	conn, err := d.dial(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("connect to proxy %s: %w", proxyAddr, err)
	}
	c, err := d.handshake(ctx, conn, addr)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("proxy %s: CONNECT %s: %w", proxyAddr, addr, err)
	}
	return c, nil
}

// handshake sends CONNECT addr on conn and reads the proxy's answer. ctx
// bounds it.
func (d *connectDialer) handshake(ctx context.Context, conn net.Conn, addr string) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Opaque: addr},
		Host:   addr,
		Header: http.Header{},
	}
	if d.userAgent != "" {
		req.Header.Set("User-Agent", d.userAgent)
	}
	if u := d.proxy.User; u != nil {
		pw, _ := u.Password()
		cred := base64.StdEncoding.EncodeToString([]byte(u.Username() + ":" + pw))
		req.Header.Set("Proxy-Authorization", "Basic "+cred)
	}
	if err := req.Write(conn); err != nil {
		return nil, ctxErr(ctx, err)
	}
	// The response header is bounded; its body, if any, is not read.
	br := bufio.NewReader(&io.LimitedReader{R: conn, N: maxProxyResponseHeader})
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("reading the proxy's response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("proxy refused the tunnel: %s", resp.Status)
	}
	if !stop() {
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		// The server spoke first (an HTTP/2 preface on a plaintext
		// connection): keep what was read past the response.
		early, _ := br.Peek(n)
		return &bufferedConn{Conn: conn, r: io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn)}, nil
	}
	return conn, nil
}

// maxProxyResponseHeader bounds the proxy's answer to CONNECT.
const maxProxyResponseHeader = 64 << 10

// ctxErr prefers the context's error when it ended the exchange.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// bufferedConn reads first what a bufio.Reader already holds.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
