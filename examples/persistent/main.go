// Command persistent creates a persistent stream, or resumes the one named
// by ZBSTREAM_STREAM_ID, and ingests a source exactly once: on resume it
// replays the source from the server's watermark.
//
//	go run ./examples/persistent                        # creates; prints the id
//	ZBSTREAM_STREAM_ID=<id> go run ./examples/persistent # resumes it
//
// Resuming needs a server that outlives the process: set ZBSTREAM_ENDPOINT,
// ZBSTREAM_TOKEN and ZBSTREAM_TABLE (for instance for "zbstream serve").
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/examples/internal/target"
)

// source is the application's data: record i is at position i. One record
// per call makes offset i stand for source position i, which is what the
// application must be able to tell to replay after a restart.
func source(i int) map[string]any { return map[string]any{"seq": i, "event": "click"} }

const total = 1000

func main() {
	ctx := context.Background()
	tg, err := target.Get()
	if err != nil {
		log.Fatal(err)
	}
	defer tg.Close()
	client, err := zbstream.NewClient(tg.Endpoint, zbstream.WithToken(tg.Token))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	var s *zbstream.Stream
	next := 0
	if id := os.Getenv("ZBSTREAM_STREAM_ID"); id != "" {
		s, err = client.ResumeStream(ctx, tg.Table, id)
		if err != nil {
			log.Fatal(err)
		}
		next = int(s.LastDurable() + 1) // the server has everything up to its watermark
		fmt.Printf("resumed stream %s at watermark %d\n", id, s.LastDurable())
	} else {
		s, err = client.CreatePersistentStream(ctx, tg.Table)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("created stream %s (set ZBSTREAM_STREAM_ID to resume it)\n", s.StreamID())
	}
	for i := next; i < total; i++ {
		if _, err := s.IngestJSON(ctx, source(i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	st := s.Stats()
	fmt.Printf("done: %d records sent, %d acknowledged, last durable offset %d\n", st.Records, st.Acknowledged, s.LastDurable())
}
