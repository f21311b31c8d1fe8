package io_test

import (
	"context"
	"fmt"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// Example runs a persistent stream over the in-memory transport: create,
// ingest, flush, close; then a new "process" resumes the stream by id and
// continues after the server's watermark.
func Example() {
	ctx := context.Background()
	srv := memtransport.NewServer(memtransport.Options{})

	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "example-7f3a" // unique per stream: crypto/rand in real use
	var durable []int64                  // written by the callback goroutine, read after Close
	s, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{
		OnAck: func(offset int64) { durable = append(durable, offset) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, rec := range []string{`{"id":1}`, `{"id":2}`} {
		if _, err := s.IngestRecord(ctx, []byte(rec)); err != nil {
			fmt.Println(err)
		}
	}
	off, _ := s.IngestBatch(ctx, [][]byte{[]byte(`{"id":3}`), []byte(`{"id":4}`)})
	fmt.Println("batch offset:", off)
	if err := s.Close(ctx); err != nil { // flushes, and waits for callbacks
		fmt.Println(err)
	}
	fmt.Println("durable:", durable)
	id := s.StreamID()

	// Later, in another process: resume by id.
	cfg.StreamID = id
	r, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("resumed at watermark:", r.LastDurable())
	off, _ = r.IngestRecord(ctx, []byte(`{"id":5}`))
	fmt.Println("next offset:", off)
	_ = r.Close(ctx)
	fmt.Println("records on the server:", len(srv.Records(id)))
	// Output:
	// batch offset: 2
	// durable: [0 1 2]
	// resumed at watermark: 2
	// next offset: 3
	// records on the server: 5
}
