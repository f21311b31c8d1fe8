package grpcio

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/zbstream/zbstream/core"
)

// Endpoint is a parsed server endpoint: where to connect and whether to use
// TLS.
type Endpoint struct {
	// Host is the host name or IP address, without brackets. It is the
	// name the TLS certificate is verified against.
	Host string
	// Port is the decimal port, always set (defaults filled in).
	Port string
	// Plaintext is true only for an http:// endpoint.
	Plaintext bool
}

// Addr returns host:port, with brackets around an IPv6 address.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, e.Port) }

// String returns the endpoint in its canonical URL form, e.g.
// "https://example.com:443".
func (e Endpoint) String() string {
	if e.Plaintext {
		return "http://" + e.Addr()
	}
	return "https://" + e.Addr()
}

// ParseEndpoint parses a server endpoint. The accepted forms are:
//
//   - "https://host[:port]": TLS, port 443 by default;
//   - "http://host[:port]": plaintext, port 80 by default. This is the only
//     way to get a connection without TLS;
//   - "host:port" or "host": TLS, port 443 by default.
//
// The host is a DNS name or an IP address (an IPv6 address in brackets).
// A trailing "/" after the authority is allowed; any other path, a query,
// a fragment, user information, another scheme, an empty host or a port
// outside 1-65535 is an error, a *core.ConfigError for the field
// "Endpoint".
func ParseEndpoint(s string) (Endpoint, error) {
	bad := func(reason string) (Endpoint, error) {
		return Endpoint{}, &core.ConfigError{Field: "Endpoint", Reason: reason}
	}
	raw := strings.TrimSpace(s)
	if raw == "" {
		return bad("is empty")
	}
	var ep Endpoint
	var authority string
	if scheme, rest, ok := strings.Cut(raw, "://"); ok {
		u, err := url.Parse(raw)
		if err != nil {
			return bad(strconv.Quote(s) + " is not a valid URL: " + unwrapURLError(err))
		}
		switch strings.ToLower(scheme) {
		case "https":
		case "http":
			ep.Plaintext = true
		default:
			return bad(strconv.Quote(s) + ": scheme " + strconv.Quote(scheme) + " is not supported (use https://, http:// for plaintext, or host:port)")
		}
		switch {
		case u.User != nil:
			return bad(strconv.Quote(s) + " must not contain user information")
		case u.Path != "" && u.Path != "/", u.Opaque != "":
			return bad(strconv.Quote(s) + " must not have a path")
		case u.RawQuery != "" || u.ForceQuery:
			return bad(strconv.Quote(s) + " must not have a query")
		case u.Fragment != "" || strings.Contains(rest, "#"):
			return bad(strconv.Quote(s) + " must not have a fragment")
		}
		authority = u.Host
	} else {
		if strings.ContainsAny(raw, "/?#@") {
			return bad(strconv.Quote(s) + " is not host[:port] (no path, query or user information allowed without a scheme)")
		}
		authority = raw
	}
	host, port, err := splitAuthority(authority)
	if err != nil {
		return bad(strconv.Quote(s) + ": " + err.Error())
	}
	if port == "" {
		port = "443"
		if ep.Plaintext {
			port = "80"
		}
	}
	ep.Host, ep.Port = host, port
	return ep, nil
}

// unwrapURLError returns the innermost message of a *url.Error, without
// repeating the input.
func unwrapURLError(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

type endpointError string

func (e endpointError) Error() string { return string(e) }

// splitAuthority splits host[:port] and validates both parts. The port is
// "" when absent.
func splitAuthority(a string) (host, port string, err error) {
	if a == "" {
		return "", "", endpointError("empty host")
	}
	host = a
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", endpointError("missing ']' in IPv6 address")
		}
		host = a[1:end]
		rest := a[end+1:]
		switch {
		case rest == "":
		case rest[0] == ':':
			port = rest[1:]
			if port == "" {
				return "", "", endpointError("empty port")
			}
		default:
			return "", "", endpointError("unexpected " + strconv.Quote(rest) + " after IPv6 address")
		}
		addr, perr := netip.ParseAddr(host)
		if perr != nil || !addr.Is6() || addr.Zone() != "" {
			return "", "", endpointError(strconv.Quote(host) + " is not an IPv6 address")
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		if strings.Count(a, ":") > 1 {
			return "", "", endpointError("an IPv6 address must be in brackets, e.g. [::1]:443")
		}
		host, port = a[:i], a[i+1:]
		if port == "" {
			return "", "", endpointError("empty port")
		}
	}
	if port != "" {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '0' {
			return "", "", endpointError("bad port " + strconv.Quote(port) + " (want 1-65535)")
		}
	}
	if host == "" {
		return "", "", endpointError("empty host")
	}
	if !strings.HasPrefix(a, "[") && !validHostName(host) {
		return "", "", endpointError("bad host " + strconv.Quote(host))
	}
	return strings.ToLower(host), port, nil
}

// validHostName reports whether h is a plausible DNS name or IPv4 address:
// labels of letters, digits, '-' and '_' separated by single dots, with an
// optional trailing dot.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
