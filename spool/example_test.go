package spool_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/spool"
)

// Example ingests through a spool. A process that dies after IngestRecord
// returned loses nothing: the next Open, in a new process, sends what the
// server does not have, and new calls continue after the log's last entry.
func Example() {
	srv, endpoint := startServer()
	defer srv.Stop()
	dir, _ := os.MkdirTemp("", "spool-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	for run := range 2 { // two runs of the application
		sp, err := spool.Open(ctx, client, spool.Options{Dir: dir, Table: "main.demo.events"})
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := range 2 {
			off, err := sp.IngestRecord(ctx, fmt.Appendf(nil, `{"run":%d,"i":%d}`, run, i))
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Println("run", run, "offset", off) // in the log: lands exactly once
		}
		if err := sp.Close(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// run 0 offset 0
	// run 0 offset 1
	// run 1 offset 2
	// run 1 offset 3
}

// startServer starts the reference server on loopback, accepting one token
// for main.demo.events.
func startServer() (*server.Server, string) {
	srv, err := server.New(server.Options{
		Auth: server.NewAuth(map[string]server.Principal{"demo-token": {Name: "demo", Tables: []string{"main.demo.events"}}}),
	})
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	return srv, "http://" + lis.Addr().String()
}
