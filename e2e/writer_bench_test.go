package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/writer"
)

// BenchmarkWriter measures a Writer with a cap of 16 streams beside one
// persistent stream (BenchmarkEndToEnd's client, same server setup and 1
// KiB records, one per call), in one run, against the ack-only engine, so
// that the figures are the client's: records/s until the last record is
// acknowledged, and CPU per record of the whole process.
//
// The tables: 1 (the routing's own cost: a map lookup and two uncontended
// mutex sections per call); 10 taken in turn, record by record (they fit
// under the cap: no stream is ever closed); 1,000 in runs of 100 records
// (a run goes to one table, the next run to the next table): every run
// past the 16th closes the least recently used stream (a flush and a
// close) and opens one (a create, or a resume later). Compare records/s of
// the stream and the writer at 1 table; best of several runs (-count) on
// a noisy machine.
func BenchmarkWriter(b *testing.B) {
	endpoint, stop := startBenchServer(b, server.EngineAckOnly)
	defer stop()
	b.Run("stream/tables=1", func(b *testing.B) { benchClient(b, endpoint, 1) })
	for _, c := range []struct{ tables, run int }{{1, 1}, {10, 1}, {1000, 100}} {
		b.Run(fmt.Sprintf("writer/tables=%d/run=%d", c.tables, c.run), func(b *testing.B) {
			benchWriter(b, endpoint, c.tables, c.run)
		})
	}
}

// benchWriter ingests b.N records through a Writer into tables, run
// records to a table before the next.
func benchWriter(b *testing.B, endpoint string, tables, run int) {
	ctx := context.Background()
	c, err := zbstream.NewClient(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	w, err := writer.New(c, writer.Config{MaxOpenStreams: 16})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, tables)
	for i := range names {
		names[i] = fmt.Sprintf("main.bench.w%04d", i)
	}
	rec := benchRecord()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range b.N {
		if _, err := w.IngestRecord(ctx, names[(i/run)%tables], rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRecords(b, 1, cpu0)
	b.ReportMetric(float64(w.Stats().Evictions)/float64(b.N), "evictions/record")
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
