// Command ephemeral ingests JSON records into an ephemeral stream (the
// official Zerobus contract: at-least-once), with a callback per
// acknowledged offset and a flush before close.
//
//	go run ./examples/ephemeral
package main

import (
	"context"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/examples/internal/target"
)

type event struct {
	Seq  int       `json:"seq"`
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
}

func main() {
	ctx := context.Background()
	tg, err := target.Get()
	if err != nil {
		log.Fatal(err)
	}
	defer tg.Close()
	client, err := zbstream.NewClient(tg.Endpoint, zbstream.WithToken(tg.Token), zbstream.WithAppName("ephemeral-example"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var acked atomic.Int64
	s, err := client.CreateStream(ctx, tg.Table,
		zbstream.WithOnAck(func(int64) { acked.Add(1) }), // once per offset, in order
	)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 500 {
		if _, err := s.IngestJSON(ctx, event{Seq: i, At: time.Now(), Kind: "view"}); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil { // everything so far is durable
		log.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stream %s: %d records acknowledged\n", s.StreamID(), acked.Load())
}
