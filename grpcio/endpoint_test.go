package grpcio_test

import (
	"errors"
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

func TestDialParseEndpoint(t *testing.T) {
	good := []struct {
		in   string
		want grpcio.Endpoint
		addr string
	}{
		{"https://example.com", grpcio.Endpoint{Host: "example.com", Port: "443"}, "example.com:443"},
		{"https://example.com/", grpcio.Endpoint{Host: "example.com", Port: "443"}, "example.com:443"},
		{"https://Example.COM:8443", grpcio.Endpoint{Host: "example.com", Port: "8443"}, "example.com:8443"},
		{"HTTPS://example.com", grpcio.Endpoint{Host: "example.com", Port: "443"}, "example.com:443"},
		{"http://localhost", grpcio.Endpoint{Host: "localhost", Port: "80", Plaintext: true}, "localhost:80"},
		{"http://127.0.0.1:9000", grpcio.Endpoint{Host: "127.0.0.1", Port: "9000", Plaintext: true}, "127.0.0.1:9000"},
		{"https://[::1]:7443", grpcio.Endpoint{Host: "::1", Port: "7443"}, "[::1]:7443"},
		{"https://[2001:db8::1]", grpcio.Endpoint{Host: "2001:db8::1", Port: "443"}, "[2001:db8::1]:443"},
		{"1234.zerobus.us-west-2.cloud.databricks.com:443", grpcio.Endpoint{Host: "1234.zerobus.us-west-2.cloud.databricks.com", Port: "443"}, "1234.zerobus.us-west-2.cloud.databricks.com:443"},
		{"1234.zerobus.us-west-2.cloud.databricks.com", grpcio.Endpoint{Host: "1234.zerobus.us-west-2.cloud.databricks.com", Port: "443"}, "1234.zerobus.us-west-2.cloud.databricks.com:443"},
		{"localhost:50051", grpcio.Endpoint{Host: "localhost", Port: "50051"}, "localhost:50051"},
		{"10.0.0.1:1", grpcio.Endpoint{Host: "10.0.0.1", Port: "1"}, "10.0.0.1:1"},
		{"[::1]:65535", grpcio.Endpoint{Host: "::1", Port: "65535"}, "[::1]:65535"},
		{"  https://example.com  ", grpcio.Endpoint{Host: "example.com", Port: "443"}, "example.com:443"},
		{"my_host.internal:443", grpcio.Endpoint{Host: "my_host.internal", Port: "443"}, "my_host.internal:443"},
	}
	for _, c := range good {
		got, err := grpcio.ParseEndpoint(c.in)
		if err != nil {
			t.Errorf("ParseEndpoint(%q): %v", c.in, err)
			continue
		}
		if got != c.want || got.Addr() != c.addr {
			t.Errorf("ParseEndpoint(%q) = %+v (addr %s), want %+v (addr %s)", c.in, got, got.Addr(), c.want, c.addr)
		}
	}

	bad := []string{
		"",
		"   ",
		"grpc://example.com",
		"ftp://example.com",
		"dns:///example.com:443",
		"unix:///tmp/sock",
		"https://",
		"https://:443",
		"http://",
		"https://example.com/api",
		"https://example.com/api/",
		"https://example.com?x=1",
		"https://example.com#frag",
		"https://user:pw@example.com",
		"https://example.com:0",
		"https://example.com:65536",
		"https://example.com:-1",
		"https://example.com:abc",
		"https://example.com:",
		"https://example.com:0443",
		"example.com:",
		"example.com:99999",
		"example.com:http",
		":443",
		"example.com/path",
		"example.com:443/",
		"user@example.com:443",
		"::1",
		"::1:443",
		"[::1",
		"[::1]x",
		"[example.com]:443",
		"https://exa mple.com",
		"exa mple.com:443",
		"https://-bad.example.com",
		"https://a..b",
		"https://example.com\x00",
	}
	for _, in := range bad {
		ep, err := grpcio.ParseEndpoint(in)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || ce.Field != "Endpoint" {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want a *core.ConfigError for Endpoint", in, ep, err)
			continue
		}
		if !errors.Is(err, core.ErrInvalidConfig) {
			t.Errorf("ParseEndpoint(%q): %v does not wrap ErrInvalidConfig", in, err)
		}
		t.Logf("%q: %v", in, err)
	}
}

func TestDialEndpointString(t *testing.T) {
	for in, want := range map[string]string{
		"example.com":            "https://example.com:443",
		"http://[::1]":           "http://[::1]:80",
		"https://example.com:81": "https://example.com:81",
	} {
		ep, err := grpcio.ParseEndpoint(in)
		if err != nil {
			t.Fatal(err)
		}
		if ep.String() != want {
			t.Errorf("%q: String() = %q, want %q", in, ep.String(), want)
		}
	}
}
