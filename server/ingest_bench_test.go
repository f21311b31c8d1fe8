package server_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// BenchmarkServerIngest is end-to-end ingest throughput over real gRPC on
// loopback: persistent streams each send batches of 100 JSON records of
// 1 KiB, pipelined, and the benchmark ends when the last batch is
// acknowledged (durable). It runs, in one run, on the ack-only engine (the
// gRPC and protocol cost alone: the reference for the others), the memory
// engine and the durable bolt engine, whose group commit lets one sync
// cover the batches of every stream in flight. One op is one batch.
//
//	go test ./server -run '^$' -bench ServerIngest -benchtime 3000x -count 3
func BenchmarkServerIngest(b *testing.B) {
	const perBatch, recordSize = 100, 1024
	rec := `{"k":"` + strings.Repeat("x", recordSize-8) + `"}`
	if len(rec) != recordSize {
		b.Fatalf("record is %d bytes", len(rec))
	}
	batch := make([]string, perBatch)
	for i := range batch {
		batch[i] = rec
	}
	engines := map[string]func(b *testing.B) servertest.Option{
		"ackonly": func(*testing.B) servertest.Option { return servertest.AckOnly() },
		"memory":  func(*testing.B) servertest.Option { return servertest.WithStore(server.NewMemoryStore()) },
		"bolt": func(b *testing.B) servertest.Option {
			st, err := server.OpenBoltStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return servertest.WithStore(st)
		},
	}
	for _, engine := range []string{"ackonly", "memory", "bolt"} {
		for _, streams := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/streams=%d", engine, streams), func(b *testing.B) {
				ts := servertest.Start(b, engines[engine](b))
				c := ts.Client(b)
				b.SetBytes(perBatch * recordSize)
				b.ReportAllocs()
				cpu0 := processCPU(b)
				b.ResetTimer()
				var wg sync.WaitGroup
				errs := make([]error, streams)
				for s := range streams {
					n := b.N / streams
					if s < b.N%streams {
						n++
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[s] = benchStream(b, ts, c, fmt.Sprintf("bench-%d", s), n, batch)
					}()
				}
				wg.Wait()
				b.StopTimer()
				cpu := processCPU(b) - cpu0
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N*perBatch)/secs, "records/s")
				// CPU time of the whole process (server and client) per
				// record: steadier than records/s on a shared machine.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*perBatch), "cpu-ns/record")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// benchStream creates a persistent stream, pipelines n batches and waits for
// the ack of the last one.
func benchStream(b *testing.B, ts *servertest.Server, c ingestpb.ZerobusClient, reqID string, n int, batch []string) error {
	st, err := c.PersistentStream(withReqID(ts.Context(b.Context()), reqID))
	if err != nil {
		return err
	}
	err = st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{
		CreateStream: &ingestpb.CreatePersistentStreamRequest{
			CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table), RecordType: ingestpb.RecordType_JSON.Enum()},
		}}})
	if err != nil {
		return err
	}
	if _, err := st.Recv(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				done <- err
				return
			}
			if r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() == int64(n-1) {
				done <- nil
				return
			}
		}
	}()
	for o := range n {
		err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
			IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(int64(o)),
				Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: batch}}}}})
		if err != nil {
			break // the receiver reports why
		}
	}
	if n == 0 {
		return nil
	}
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	st.CloseSend()
	for {
		if _, err := st.Recv(); err != nil {
			return nil
		}
	}
}
