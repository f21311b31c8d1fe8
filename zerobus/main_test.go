package zerobus_test

import (
	"context"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zbstream/zbstream/server"
)

// Every test and example must leave no goroutine behind: the SDK's
// connections, the streams' goroutines, the servers'.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The service principal of the local workspace, and the one table it may
// write.
const (
	testClientID     = "etl-sp"
	testClientSecret = "etl-secret"
	testTable        = "main.default.air_quality"
	otherTable       = "main.default.other"
)

// local is a Zerobus server and its workspace's token endpoint, in process
// on loopback, as `zbstream serve -oauth` runs them.
type local struct {
	Endpoint  string // the Zerobus endpoint, http://127.0.0.1:port
	Workspace string // the workspace (Unity Catalog) URL
	Server    *server.Server
	stop      func()
}

// startLocal starts the server (memory engine, strict duplicates) with no
// static token, and the token endpoint minting tokens into its Auth for
// testClientID, limited to testTable.
func startLocal() (*local, error) {
	auth := server.NewAuth(nil)
	ep, err := server.NewTokenEndpoint(auth, []server.OAuthClient{
		{ID: testClientID, Secret: testClientSecret, Tables: []string{testTable}},
	}, server.TokenEndpointOptions{})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{Store: server.NewMemoryStore(), Auth: auth, StrictDuplicates: true})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Stop()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	hs := httptest.NewServer(ep)
	return &local{
		Endpoint:  "http://" + lis.Addr().String(),
		Workspace: hs.URL,
		Server:    srv,
		stop: func() {
			hs.Close()
			srv.Stop()
			<-done
		},
	}, nil
}

// startLocalT starts a local workspace for the duration of t.
func startLocalT(t *testing.T) *local {
	t.Helper()
	l, err := startLocal()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.stop)
	return l
}

// storedRecords returns every record the server holds for table, in
// offset order.
func storedRecords(t *testing.T, srv *server.Server, table string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	streams, err := srv.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, m := range streams {
		if m.Table != table {
			continue
		}
		batches, err := srv.Records(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			out = append(out, b.Records...)
		}
	}
	return out
}
