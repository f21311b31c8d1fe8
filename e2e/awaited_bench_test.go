package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zbstream/zbstream/internal/rawclient"
	"github.com/zbstream/zbstream/server"
)

// BenchmarkAwaited measures awaited calls over real gRPC on loopback: one
// call (one 1 KiB record, or a batch of 100) whose ack is waited for
// before the next is made, the pattern of a caller that needs each call
// durable before it goes on. zbstream ingests and waits with Stream.Wait;
// rawgrpc sends the same message and reads the responses on the same
// goroutine until the ack covers it, which no client can beat: nothing to
// wake but the sender itself. So the ratio is what zbstream's machinery
// costs in latency: the hand-off to its sender goroutine, the ack's way
// through its receiver, and Wait's wake-up. The server setup and records
// are BenchmarkEndToEnd's.
func BenchmarkAwaited(b *testing.B) {
	for _, engine := range []struct {
		name string
		e    server.Engine
	}{{"ackonly", server.EngineAckOnly}, {"memory", server.EngineStore}} {
		endpoint, stop := startBenchServer(b, engine.e)
		for _, batch := range []int{1, 100} {
			name := fmt.Sprintf("%s/batch=%d", engine.name, batch)
			b.Run("zbstream/"+name, func(b *testing.B) { awaitClient(b, endpoint, batch) })
			b.Run("rawgrpc/"+name, func(b *testing.B) { awaitRaw(b, endpoint, batch) })
		}
		stop()
	}
}

// reportAwaited reports the records/s and CPU of reportRecords, and the
// time of one awaited call in µs.
func reportAwaited(b *testing.B, batch int, cpu0 time.Duration) {
	reportRecords(b, batch, cpu0)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}

func awaitClient(b *testing.B, endpoint string, batch int) {
	ctx := context.Background()
	s, call := openBenchStream(b, endpoint, batch)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		off, err := call(ctx)
		if err == nil {
			err = s.Wait(ctx, off)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportAwaited(b, batch, cpu0)
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

func awaitRaw(b *testing.B, endpoint string, batch int) {
	st, err := rawclient.Open(context.Background(), rawclient.Config{Endpoint: endpoint, Table: benchTable, RequestID: "raw-await", Record: benchRecord(), Batch: batch})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		off := st.Sent()
		if err := st.Send(); err != nil {
			b.Fatal(err)
		}
		if err := st.Await(off); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportAwaited(b, batch, cpu0)
}
