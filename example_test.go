package zbstream_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
)

// Example creates a persistent stream, or resumes it when the application
// already has its id (here from an environment variable), ingests JSON
// records and closes it.
func Example() {
	srv, endpoint := startServer() // a local reference server, plaintext
	defer srv.Stop()
	ctx := context.Background()

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	const table = "main.demo.events"
	var s *zbstream.Stream
	if id := os.Getenv("ZBSTREAM_EXAMPLE_STREAM_ID"); id != "" {
		s, err = client.ResumeStream(ctx, table, id)
	} else {
		s, err = client.CreatePersistentStream(ctx, table)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	// The position in the source to ingest from: one record per offset, so
	// replay after the watermark (a new stream has none: NoOffset+1 is 0).
	next := int(s.LastDurable() + 1)
	for i := next; i < 3; i++ {
		if _, err := s.IngestJSON(ctx, map[string]int{"seq": i}); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := s.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	st := s.Stats()
	fmt.Println("acknowledged:", st.Acknowledged, "last durable:", s.LastDurable())
	// Output:
	// acknowledged: 3 last durable: 2
}

// ExampleStream_Wait ingests records, waits until one of them is durable
// on the server, then flushes the rest: Wait is for one offset, Flush for
// every call accepted so far. Both block, bounded by their context, and
// neither ends the stream.
func ExampleStream_Wait() {
	srv, endpoint := startServer() // a local reference server, plaintext
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	s, err := client.CreateStream(ctx, "main.demo.events")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)

	var offsets []int64
	for i := range 3 {
		off, err := s.IngestJSON(ctx, map[string]int{"seq": i})
		if err != nil {
			fmt.Println(err)
			return
		}
		offsets = append(offsets, off)
	}
	fmt.Println("accepted:", offsets)

	// The first record is durable once Wait returns nil.
	if err := s.Wait(ctx, offsets[0]); err != nil {
		fmt.Println(err) // ErrStreamFailed and the cause, or ctx's
		return
	}
	fmt.Println("durable:", s.LastDurable() >= offsets[0])

	// Flush returns once every call accepted before it is durable.
	if err := s.Flush(ctx); err != nil {
		fmt.Println(err) // ErrFlushTimeout, ErrStreamFailed and the cause, or ctx's
		return
	}
	fmt.Println("after flush, last durable:", s.LastDurable(), "unacked:", len(s.Unacked()))

	// An offset no call was given cannot become durable.
	err = s.Wait(ctx, s.LastAssigned()+1)
	fmt.Println("never assigned:", errors.Is(err, zbstream.ErrNeverAssigned))
	// Output:
	// accepted: [0 1 2]
	// durable: true
	// after flush, last durable: 2 unacked: 0
	// never assigned: true
}

// startServer starts the reference server on loopback, accepting one token
// for tables (by default main.demo.events; server.AllTables for any).
func startServer(tables ...string) (*server.Server, string) {
	if len(tables) == 0 {
		tables = []string{"main.demo.events"}
	}
	srv, err := server.New(server.Options{
		Auth: server.NewAuth(map[string]server.Principal{
			"demo-token": {Name: "demo", Tables: tables},
		}),
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
