// Package target tells the examples where to ingest: the server named by
// ZBSTREAM_ENDPOINT (with ZBSTREAM_TOKEN and ZBSTREAM_TABLE), for instance
// one started with "zbstream serve"; or, when it is not set, a reference
// server started in the example's own process, so that every example runs
// as it is.
package target

import (
	"fmt"
	"net"
	"os"

	"github.com/zbstream/zbstream/server"
)

// Target is a server to ingest into.
type Target struct {
	Endpoint, Token, Table string
	stop                   func()
}

// Get returns the target; Close it when done.
func Get() (*Target, error) {
	if ep := os.Getenv("ZBSTREAM_ENDPOINT"); ep != "" {
		return &Target{Endpoint: ep, Token: os.Getenv("ZBSTREAM_TOKEN"), Table: os.Getenv("ZBSTREAM_TABLE"), stop: func() {}}, nil
	}
	const token, table = "example-token", "main.examples.events"
	srv, err := server.New(server.Options{Auth: server.NewAuth(map[string]server.Principal{
		token: {Name: "examples", Tables: []string{table}},
	})})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go srv.Serve(lis)
	fmt.Fprintf(os.Stderr, "(no ZBSTREAM_ENDPOINT: using a reference server in this process at %s)\n", lis.Addr())
	return &Target{Endpoint: "http://" + lis.Addr().String(), Token: token, Table: table, stop: srv.Stop}, nil
}

// Close stops the in-process server, if one was started.
func (t *Target) Close() { t.stop() }
