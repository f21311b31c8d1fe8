package e2e_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

const benchTable = "main.bench.events"

// BenchmarkEndToEnd measures ingestion over real gRPC on loopback: the
// zbstream client (a persistent stream: offsets, window, ack validation,
// until the last record is acknowledged) beside rawgrpc, a plain bidi
// stream that sends the same protobuf messages with no client logic and
// reads the acks, as the ceiling. Records are 1 KiB JSON objects, one per
// call or in batches of 100. The peer is the server's ack-only engine
// (nothing validated or stored), so the figures measure the clients; the
// memory engine is measured too. zbstream-nocopy is the client with
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

func startBenchServer(b *testing.B, e server.Engine) (string, func()) {
	srv, err := server.New(server.Options{Engine: e})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(lis)
	return "http://" + lis.Addr().String(), srv.Stop
}

// benchRecord is a 1 KiB JSON object.
func benchRecord() []byte {
	rec := make([]byte, 1024)
	copy(rec, `{"pad":"`)
	for i := 8; i < len(rec)-2; i++ {
		rec[i] = 'x'
	}
	copy(rec[len(rec)-2:], `"}`)
	return rec
}

// reportRecords reports records/s, and the CPU time the whole process
// (client and server) spent per record since cpu0: the cost of the work,
// less sensitive than wall time to other load on the machine.
func reportRecords(b *testing.B, batch int, cpu0 time.Duration) {
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/record")
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
	b.SetBytes(int64(1024 * batch))
}

func benchClient(b *testing.B, endpoint string, batch int, opts ...zbstream.StreamOption) {
	ctx := context.Background()
	c, err := zbstream.NewClient(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := c.CreatePersistentStream(ctx, benchTable, opts...)
	if err != nil {
		b.Fatal(err)
	}
	rec := benchRecord()
	recs := make([][]byte, batch)
	for i := range recs {
		recs[i] = rec
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for range b.N {
		if batch == 1 {
			_, err = s.IngestRecord(ctx, rec)
		} else {
			_, err = s.IngestBatch(ctx, recs)
		}
		if err != nil {
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

// benchRaw is the ceiling: a persistent stream driven by hand with the
// generated gRPC client, the same messages, no window, no validation.
func benchRaw(b *testing.B, endpoint string, batch int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc, err := grpc.NewClient(endpoint[len("http://"):], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	st, err := ingestpb.NewZerobusClient(cc).PersistentStream(servertestContext(ctx))
	if err != nil {
		b.Fatal(err)
	}
	table, rt, id := benchTable, ingestpb.RecordType_JSON, "raw-bench"
	err = st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{
		CreateStream: &ingestpb.CreatePersistentStreamRequest{
			CreateStream:    &ingestpb.CreateIngestStreamRequest{TableName: &table, RecordType: &rt},
			ClientRequestId: &id,
		}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		b.Fatal(err)
	}
	rec := string(benchRecord())
	recs := make([]string, batch)
	for i := range recs {
		recs[i] = rec
	}
	var off int64
	one := &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{
		IngestRecord: &ingestpb.IngestRecordRequest{OffsetId: &off, Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: rec}}}}
	many := &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
		IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{OffsetId: &off, Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{
			JsonBatch: &ingestpb.JsonRecordBatch{Records: recs}}}}}
	msg := one
	if batch > 1 {
		msg = many
	}
	last := int64(b.N - 1)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	go func() { // the acks, until the last one
		var resp ingestpb.PersistentStreamResponse
		for {
			if err := st.RecvMsg(&resp); err != nil {
				done <- err
				return
			}
			if a := resp.GetIngestRecordResponse(); a != nil && a.GetDurabilityAckUpToOffset() >= last {
				done <- nil
				return
			}
		}
	}()
	for i := range b.N {
		off = int64(i)
		if err := st.SendMsg(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportRecords(b, batch, cpu0)
	_ = st.CloseSend()
}

// servertestContext attaches the table header the server expects.
func servertestContext(ctx context.Context) context.Context {
	return grpcMetadata(ctx, "x-databricks-zerobus-table-name", benchTable)
}

func grpcMetadata(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
