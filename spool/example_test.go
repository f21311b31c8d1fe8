package spool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

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

// ExampleRepair damages a synced entry of a spool (a flipped byte, as a
// failing disk leaves it): Open refuses and changes nothing, Check says
// where the damage is and which offsets are at stake, Repair moves the
// damaged segment aside, and the next Open continues after the server's
// watermark.
func ExampleRepair() {
	srv, endpoint := startServer()
	defer srv.Stop()
	dir, _ := os.MkdirTemp("", "spool-repair-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	opts := spool.Options{Dir: dir, Table: "main.demo.events"}

	sp, err := spool.Open(ctx, client, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 3 {
		if _, err := sp.IngestRecord(ctx, fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := sp.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	seg := filepath.Join(dir, "00000000000000000000.seg")
	data, _ := os.ReadFile(seg)
	data[len(data)/2] ^= 1 // in the second of three entries
	_ = os.WriteFile(seg, data, 0o600)

	_, err = spool.Open(ctx, client, opts)
	var ce *spool.CorruptError
	fmt.Println("open refused:", errors.As(err, &ce))

	report, err := spool.Check(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := report.Damage[0]
	fmt.Printf("damage in %s at byte %d, offsets %s at stake\n", filepath.Base(d.File), d.Offset, d.AtStake)

	repaired, err := spool.Repair(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("moved aside %s, kept offsets %s\n", filepath.Base(repaired.Moved[0]), repaired.Kept)

	sp, err = spool.Open(ctx, client, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	off, err := sp.IngestRecord(ctx, []byte(`{"i":3}`))
	fmt.Println("lost:", sp.Stats().Lost, "next offset:", off, err)
	_ = sp.Close(ctx)
	// Output:
	// open refused: true
	// damage in 00000000000000000000.seg at byte 27, offsets 1..2 at stake
	// moved aside 00000000000000000000.seg.damaged, kept offsets 0
	// lost: none next offset: 3 <nil>
}
