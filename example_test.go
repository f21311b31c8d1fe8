package zbstream_test

import (
	"context"
	"fmt"
	"net"
	"os"

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
	next := 0 // position in the source to ingest from
	if id := os.Getenv("ZBSTREAM_EXAMPLE_STREAM_ID"); id != "" {
		s, err = client.ResumeStream(ctx, table, id)
		next = int(s.LastDurable() + 1) // one record per offset: replay after the watermark
	} else {
		s, err = client.CreatePersistentStream(ctx, table)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
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

// startServer starts the reference server on loopback, accepting one token
// for main.demo.events.
func startServer() (*server.Server, string) {
	srv, err := server.New(server.Options{
		Auth: server.NewAuth(map[string]server.Principal{
			"demo-token": {Name: "demo", Tables: []string{"main.demo.events"}},
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
