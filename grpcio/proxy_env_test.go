package grpcio_test

import (
	"errors"
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

// clearProxyEnv empties every proxy variable for the test.
func clearProxyEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"} {
		t.Setenv(k, "")
	}
}

func mustEndpoint(t *testing.T, s string) grpcio.Endpoint {
	t.Helper()
	ep, err := grpcio.ParseEndpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// TestProxyNoProxyMatching drives NO_PROXY through ProxyFromEnvironment:
// proxied reports whether the endpoint still goes through the proxy.
func TestProxyNoProxyMatching(t *testing.T) {
	cases := []struct {
		noProxy  string
		endpoint string
		proxied  bool
	}{
		{"", "https://example.com", true},
		{"*", "https://example.com", false},
		{"*", "https://10.1.2.3", false},
		{" * ", "https://example.com", false},
		// Names: "example.com" matches itself and subdomains.
		{"example.com", "https://example.com", false},
		{"example.com", "https://api.example.com", false},
		{"example.com", "https://a.b.example.com", false},
		{"example.com", "https://notexample.com", true},
		{"example.com", "https://example.com.evil.net", true},
		{"EXAMPLE.com", "https://Api.Example.COM", false},
		{"example.com.", "https://api.example.com", false},
		{"example.com", "https://api.example.com.:443", false},
		// ".example.com" and "*.example.com": subdomains only.
		{".example.com", "https://api.example.com", false},
		{".example.com", "https://example.com", true},
		{"*.example.com", "https://api.example.com", false},
		{"*.example.com", "https://example.com", true},
		{".example.com", "https://notexample.com", true},
		// Lists, spaces, empty entries.
		{"foo.org, ,example.com", "https://api.example.com", false},
		{"foo.org,bar.org", "https://api.example.com", true},
		{",,", "https://example.com", true},
		// Ports.
		{"example.com:443", "https://example.com", false},
		{"example.com:443", "https://example.com:8443", true},
		{"example.com:8443", "https://example.com:8443", false},
		{".example.com:443", "https://api.example.com:443", false},
		{".example.com:443", "https://api.example.com:444", true},
		// IP addresses.
		{"10.1.2.3", "https://10.1.2.3:443", false},
		{"10.1.2.3", "https://10.1.2.4:443", true},
		{"10.1.2.3:443", "https://10.1.2.3:443", false},
		{"10.1.2.3:443", "https://10.1.2.3:8443", true},
		{"::1", "https://[::1]:443", false},
		{"[::1]", "https://[::1]:443", false},
		{"[::1]:443", "https://[::1]:443", false},
		{"[::1]:443", "https://[::1]:444", true},
		{"2001:db8::1", "https://[2001:db8:0::1]", false},
		// An IP entry does not match names, nor a name entry IPs.
		{"127.0.0.1", "https://localhost", true},
		{"localhost", "https://127.0.0.1", true},
		// CIDR blocks.
		{"10.0.0.0/8", "https://10.200.3.4", false},
		{"10.0.0.0/8", "https://11.0.0.1", true},
		{"10.0.0.0/8", "https://ten.example.com", true},
		{"192.168.1.0/24,example.org", "https://192.168.1.77:9000", false},
		{"2001:db8::/32", "https://[2001:db8:ffff::1]", false},
		{"2001:db8::/32", "https://[2001:db9::1]", true},
		{"10.1.2.3/32", "https://10.1.2.3", false},
		// Loopback is not exempted implicitly.
		{"", "https://localhost:443", true},
		{"", "https://127.0.0.1:443", true},
		{"localhost", "https://localhost:50051", false},
		{"127.0.0.0/8", "https://127.0.0.1:50051", false},
	}
	for _, c := range cases {
		clearProxyEnv(t)
		t.Setenv("HTTPS_PROXY", "http://proxy.corp:3128")
		t.Setenv("NO_PROXY", c.noProxy)
		u, err := grpcio.ProxyFromEnvironment(mustEndpoint(t, c.endpoint))
		if err != nil {
			t.Fatalf("NO_PROXY=%q %s: %v", c.noProxy, c.endpoint, err)
		}
		if got := u != nil; got != c.proxied {
			t.Errorf("NO_PROXY=%q %s: proxied %v, want %v", c.noProxy, c.endpoint, got, c.proxied)
		}
	}
}

func TestProxyFromEnvironment(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		endpoint string
		want     string // "" = direct
	}{
		{"nothing set", nil, "https://example.com", ""},
		{"HTTPS_PROXY", map[string]string{"HTTPS_PROXY": "http://p1:3128"}, "https://example.com", "http://p1:3128"},
		{"https_proxy", map[string]string{"https_proxy": "http://p2:3128"}, "https://example.com", "http://p2:3128"},
		{"upper case wins", map[string]string{"HTTPS_PROXY": "http://up:1", "https_proxy": "http://low:1"}, "https://example.com", "http://up:1"},
		{"bare host:port is http", map[string]string{"HTTPS_PROXY": "proxy.corp:3128"}, "https://example.com", "http://proxy.corp:3128"},
		{"bare host is http", map[string]string{"HTTPS_PROXY": "proxy.corp"}, "https://example.com", "http://proxy.corp"},
		{"userinfo kept", map[string]string{"HTTPS_PROXY": "http://u:p@proxy:8080"}, "https://example.com", "http://u:p@proxy:8080"},
		{"TLS endpoint ignores HTTP_PROXY", map[string]string{"HTTP_PROXY": "http://p:1"}, "https://example.com", ""},
		{"bare endpoint is TLS", map[string]string{"HTTPS_PROXY": "http://p:1", "HTTP_PROXY": "http://q:1"}, "example.com:443", "http://p:1"},
		{"http endpoint uses HTTP_PROXY", map[string]string{"HTTPS_PROXY": "http://p:1", "HTTP_PROXY": "http://q:1"}, "http://example.com", "http://q:1"},
		{"http endpoint, http_proxy", map[string]string{"http_proxy": "http://q2:1"}, "http://example.com", "http://q2:1"},
		{"http endpoint ignores HTTPS_PROXY", map[string]string{"HTTPS_PROXY": "http://p:1"}, "http://example.com", ""},
		{"no_proxy lower case", map[string]string{"HTTPS_PROXY": "http://p:1", "no_proxy": "example.com"}, "https://example.com", ""},
		{"NO_PROXY wins over no_proxy", map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.com", "no_proxy": "example.com"}, "https://example.com", "http://p:1"},
		{"NO_PROXY for http endpoints", map[string]string{"HTTP_PROXY": "http://q:1", "NO_PROXY": ".example.com"}, "http://api.example.com", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearProxyEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			u, err := grpcio.ProxyFromEnvironment(mustEndpoint(t, c.endpoint))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if u != nil {
				got = u.String()
			}
			if got != c.want {
				t.Errorf("proxy %q, want %q", got, c.want)
			}
		})
	}
}

func TestProxyFromEnvironmentBadValues(t *testing.T) {
	for _, v := range []string{"socks5://p:1080", "https://p:443", "http://", "http://p:0", "http://p:99999", "http://p:x", "://"} {
		clearProxyEnv(t)
		t.Setenv("HTTPS_PROXY", v)
		_, err := grpcio.ProxyFromEnvironment(mustEndpoint(t, "https://example.com"))
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != "Proxy" {
			t.Errorf("HTTPS_PROXY=%q: %v, want a *core.ConfigError for Proxy", v, err)
			continue
		}
		t.Logf("HTTPS_PROXY=%q: %v", v, err)
		// Dial reports it too.
		if _, err := grpcio.Dial("https://example.com", grpcio.DialOptions{}); !errors.As(err, &ce) || ce.Field != "Proxy" {
			t.Errorf("Dial with HTTPS_PROXY=%q: %v, want a *core.ConfigError for Proxy", v, err)
		}
	}
}
