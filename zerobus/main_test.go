package zerobus_test

import (
	"context"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
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
	Conns     *countingListener // the server's listener: its connections
	stop      func()
}

// countingListener counts the connections it accepts and those still open
// (not yet closed by the server, which closes its side when the client
// closes the connection).
type countingListener struct {
	net.Listener
	accepted, open atomic.Int64
}

// Accept accepts a connection and counts it.
func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

// countedConn counts its first Close.
type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

// Close closes the connection and counts it out.
func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// eventually waits up to 10 seconds for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
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
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Stop()
		return nil, err
	}
	lis := &countingListener{Listener: tcp}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	hs := httptest.NewServer(ep)
	return &local{
		Endpoint:  "http://" + lis.Addr().String(),
		Workspace: hs.URL,
		Server:    srv,
		Conns:     lis,
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
