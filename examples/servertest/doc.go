// Package servertest shows how an application tests its own ingestion code
// against the reference server running in the test process: see
// ingest_test.go. Run it with
//
//	go test ./examples/servertest
package servertest

import (
	"context"

	"github.com/zbstream/zbstream"
)

// Event is what the application ingests.
type Event struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Ingest is the application code under test: it writes events into a new
// persistent stream of table and returns the stream's id.
func Ingest(ctx context.Context, client *zbstream.Client, table string, events []Event) (string, error) {
	s, err := client.CreatePersistentStream(ctx, table)
	if err != nil {
		return "", err
	}
	for _, e := range events {
		if _, err := s.IngestJSON(ctx, e); err != nil {
			return "", err
		}
	}
	return s.StreamID(), s.Close(ctx)
}
