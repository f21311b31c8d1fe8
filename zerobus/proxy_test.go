package zerobus_test

import (
	"testing"

	"github.com/zbstream/zbstream/internal/proxytest"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// TestProxyVariables: grpc_proxy (the official SDK's first variable)
// carries the stream through a CONNECT proxy, and no_grpc_proxy excepts
// the host.
func TestProxyVariables(t *testing.T) {
	for _, v := range []string{"grpc_proxy", "GRPC_PROXY", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_grpc_proxy", "NO_GRPC_PROXY", "no_proxy", "NO_PROXY"} {
		t.Setenv(v, "")
	}
	l := startLocalT(t)
	p := proxytest.Start(t, false)
	t.Setenv("grpc_proxy", p.URL())
	ingest := func() {
		t.Helper()
		sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		defer sdk.Free()
		st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.IngestRecordOffset(`{"via": "proxy"}`); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ingest()
	if n := p.Tunnels(); n != 1 {
		t.Fatalf("%d tunnels through the proxy, want 1", n)
	}
	t.Setenv("no_grpc_proxy", "127.0.0.1")
	ingest()
	if n := p.Tunnels(); n != 1 {
		t.Fatalf("%d tunnels after no_grpc_proxy, want still 1", n)
	}
}
