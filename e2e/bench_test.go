package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/rawclient"
	"github.com/zbstream/zbstream/server"
)

const benchTable = "main.bench.events"

// BenchmarkEndToEnd measures ingestion over real gRPC on loopback: the
// zbstream client (a persistent stream: offsets, window, ack validation,
// until the last record is acknowledged) beside rawgrpc, a plain bidi
// stream that sends the same protobuf messages with no client logic and
// reads the acks, as the ceiling. Records are 1 KiB JSON objects (or
// -record-size bytes), one per call or in batches of 100. The peer is the server's ack-only engine
// (nothing validated or stored) in a process of its own
// (startBenchServer), so the figures, CPU per record included, measure
// the clients; the memory engine is measured too. zbstream-nocopy is the client with
// WithNoCopy: what the stream's copy of every record costs. Compare
// records/s of the clients in the same run; best of several runs (-count)
// on a noisy machine.
func BenchmarkEndToEnd(b *testing.B) {
	for _, engine := range []struct {
		name string
		e    server.Engine
	}{{"ackonly", server.EngineAckOnly}, {"memory", server.EngineStore}} {
		endpoint, stop := startBenchServer(b, engine.e)
		for _, batch := range []int{1, 100} {
			name := fmt.Sprintf("%s/batch=%d", engine.name, batch)
			b.Run("zbstream/"+name, func(b *testing.B) { benchClient(b, endpoint, batch) })
			b.Run("zbstream-nocopy/"+name, func(b *testing.B) { benchClient(b, endpoint, batch, zbstream.WithNoCopy()) })
			b.Run("rawgrpc/"+name, func(b *testing.B) { benchRaw(b, endpoint, batch) })
		}
		stop()
	}
}

// minRecordSize is the smallest benchRecord: {"pad":""}.
const minRecordSize = 10

// recordSize is the size of benchRecord: 1 KiB, or what -record-size says
// (go test ./e2e -run '^$' -bench EndToEnd -args -record-size 20), for the
// record sizes zbstream bench measures. TestMain checks it.
var recordSize = flag.Int("record-size", 1024, "bytes of the benchmarks' JSON record (at least 10)")

// benchRecord is a JSON object of recordSize bytes.
func benchRecord() []byte {
	rec := make([]byte, *recordSize)
	copy(rec, `{"pad":"`)
	for i := 8; i < len(rec)-2; i++ {
		rec[i] = 'x'
	}
	copy(rec[len(rec)-2:], `"}`)
	return rec
}

// reportRecords reports records/s, and the CPU time the process (the
// client: the server runs in a process of its own) spent per record since
// cpu0: the cost of the work, less sensitive than wall time to other load
// on the machine.
func reportRecords(b *testing.B, batch int, cpu0 time.Duration) {
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/record")
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
	b.SetBytes(int64(*recordSize * batch))
}

// openBenchStream opens a persistent stream for a client benchmark and
// returns it with the function that makes one call: batch records of
// benchRecord (one record per call when batch is 1). The client is closed
// when the benchmark function returns.
func openBenchStream(b *testing.B, endpoint string, batch int, opts ...zbstream.StreamOption) (*zbstream.Stream, func(context.Context) (int64, error)) {
	c, err := zbstream.NewClient(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	s, err := c.CreatePersistentStream(context.Background(), benchTable, opts...)
	if err != nil {
		b.Fatal(err)
	}
	rec := benchRecord()
	recs := make([][]byte, batch)
	for i := range recs {
		recs[i] = rec
	}
	return s, func(ctx context.Context) (int64, error) {
		if batch == 1 {
			return s.IngestRecord(ctx, rec)
		}
		return s.IngestBatch(ctx, recs)
	}
}

func benchClient(b *testing.B, endpoint string, batch int, opts ...zbstream.StreamOption) {
	ctx := context.Background()
	s, call := openBenchStream(b, endpoint, batch, opts...)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		if _, err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRecords(b, batch, cpu0)
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// benchRaw is the ceiling: the shared raw gRPC client (internal/rawclient),
// the same messages, no window, no validation, acks read on one goroutine.
func benchRaw(b *testing.B, endpoint string, batch int) {
	st, err := rawclient.Open(context.Background(), rawclient.Config{Endpoint: endpoint, Table: benchTable, RequestID: "raw-bench", Record: benchRecord(), Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	st.StartReader()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		if err := st.Send(); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.WaitAcked(context.Background(), int64(b.N-1)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRecords(b, batch, cpu0)
}
