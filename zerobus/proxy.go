package zerobus

import (
	"net/url"
	"os"
	"strings"

	"github.com/zbstream/zbstream"
)

// The environment variables the official SDK reads for its proxy, in its
// order: the first one set (not empty) wins.
var (
	proxyVars   = []string{"grpc_proxy", "GRPC_PROXY", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"}
	noProxyVars = []string{"no_grpc_proxy", "NO_GRPC_PROXY", "no_proxy", "NO_PROXY"}
)

// proxyFromEnvironment chooses the HTTP CONNECT proxy of the gRPC
// connection as the official SDK does, when the connection is made: the
// first of grpc_proxy, GRPC_PROXY, https_proxy, HTTPS_PROXY, http_proxy and
// HTTP_PROXY that is set, for TLS and plaintext endpoints alike, unless the
// endpoint's host is excepted by the first of no_grpc_proxy, NO_GRPC_PROXY,
// no_proxy and NO_PROXY that is set. A proxy value without a scheme is
// taken as http://; a value that is not a URL is ignored (a direct
// connection), as the official SDK does.
func proxyFromEnvironment(ep zbstream.Endpoint) (*url.URL, error) {
	raw := firstEnv(proxyVars)
	if raw == "" || noProxy(ep.Host, firstEnv(noProxyVars)) {
		return nil, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, nil
	}
	return u, nil
}

// firstEnv returns the first non-empty value among the named variables.
func firstEnv(names []string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// noProxy reports whether host is excepted by list, the official SDK's
// rule: "*" excepts every host; otherwise a comma-separated list of names,
// each (a leading dot removed) excepting itself and its subdomains. Ports
// and address ranges are not understood.
func noProxy(host, list string) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimPrefix(strings.TrimSpace(entry), ".")
		if entry != "" && (host == entry || strings.HasSuffix(host, "."+entry)) {
			return true
		}
	}
	return false
}
