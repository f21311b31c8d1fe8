package writer_test

import (
	"net"
	"testing"

	"go.uber.org/goleak"

	"github.com/zbstream/zbstream/server"
)

// The runnable example starts a reference server, a client and a Writer:
// the tests must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startServer starts the reference server on loopback, plaintext, with one
// token, demo-token, that may write tables.
func startServer(tables ...string) (*server.Server, string) {
	auth := server.NewAuth(map[string]server.Principal{"demo-token": {Name: "demo", Tables: tables}})
	srv, err := server.New(server.Options{Auth: auth})
	if err == nil {
		var lis net.Listener
		if lis, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			go srv.Serve(lis)
			return srv, "http://" + lis.Addr().String()
		}
	}
	panic(err)
}
