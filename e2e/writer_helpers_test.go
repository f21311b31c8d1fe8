package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/writer"
)

// wTable is table i of the Writer tests.
func wTable(i int) string { return fmt.Sprintf("main.writer.t%04d", i) }

// wRec is record n of table i's source.
func wRec(i, n int) []byte { return []byte(fmt.Sprintf(`{"t":%d,"n":%d}`, i, n)) }

// startAllTables starts a reference server whose token writes every table.
func startAllTables(t *testing.T, opts ...servertest.Option) *env {
	t.Helper()
	return start(t, append([]servertest.Option{servertest.WithTable(server.AllTables)}, opts...)...)
}

// newWriter returns a Writer over c, closed when the test ends (before
// the client), whatever the test did with it.
func newWriter(t *testing.T, c *zbstream.Client, cfg writer.Config) *writer.Writer {
	t.Helper()
	w, err := writer.New(c, cfg)
	if err != nil {
		t.Fatalf("writer.New: %v", err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w
}

// envSize is the integer in environment variable name, or def: how the
// Writer tests are scaled up.
func envSize(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// readBack is what a test reads a server's streams with: a running
// server, or a store opened after its process was killed.
type readBack interface {
	Streams(ctx context.Context) ([]server.StreamMeta, error)
	Records(ctx context.Context, id string) ([]server.Batch, error)
}

// wantTables checks that every table of want has exactly one stream on
// the server, which holds want[table]'s records once each, in order, under
// offsets contiguous from 0, and that no other table has a stream.
func wantTables(t *testing.T, rb readBack, want map[string][][]byte) {
	t.Helper()
	ctx := context.Background()
	streams, err := rb.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byTable := map[string][]server.StreamMeta{}
	for _, m := range streams {
		byTable[m.Table] = append(byTable[m.Table], m)
	}
	for table := range byTable {
		if _, ok := want[table]; !ok {
			t.Errorf("table %s has a stream, and nothing was written to it", table)
		}
	}
	for table, recs := range want {
		ms := byTable[table]
		if len(ms) != 1 {
			t.Errorf("table %s has %d streams, want 1", table, len(ms))
			continue
		}
		batches, err := rb.Records(ctx, ms[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		for i, b := range batches {
			if b.Offset != int64(i) {
				t.Fatalf("table %s: batch %d stored at offset %d", table, i, b.Offset)
			}
			got = append(got, b.Records...)
		}
		if !equalRecords(got, recs) {
			t.Errorf("table %s holds %d records %.200q, want %d %.200q", table, len(got), got, len(recs), recs)
		}
	}
}
