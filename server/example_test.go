package server_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// Example runs the reference server on loopback with a token for one table,
// writes two records to a persistent stream over gRPC, and reads them back.
func Example() {
	const table = "main.sales.orders"
	srv, err := server.New(server.Options{
		Store: server.NewMemoryStore(),
		Auth:  server.NewAuth(map[string]server.Principal{"s3cret": {Name: "etl", Tables: []string{table}}}),
	})
	if err != nil {
		panic(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	ctx := servertest.OutgoingContext(context.Background(), "s3cret", table)
	// The create's idempotency key is metadata: a retried create with the
	// same key gets the same stream.
	ctx = metadata.AppendToOutgoingContext(ctx, server.HeaderRequestID, "example-1")
	st, err := ingestpb.NewZerobusClient(cc).PersistentStream(ctx)
	if err != nil {
		panic(err)
	}
	st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{
		CreateStream: &ingestpb.CreatePersistentStreamRequest{
			CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_JSON.Enum()},
		}}})
	created, err := st.Recv()
	if err != nil {
		panic(err)
	}
	id := created.GetCreateStreamResponse().GetStreamId()
	for o, rec := range []string{`{"order":1}`, `{"order":2}`} {
		st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{
			IngestRecord: &ingestpb.IngestRecordRequest{OffsetId: proto.Int64(int64(o)),
				Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: rec}}}})
	}
	for {
		r, err := st.Recv()
		if err != nil {
			panic(err)
		}
		if r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() == 1 {
			break // durable up to offset 1: both records
		}
	}
	st.CloseSend()
	st.Recv() // the server ends the call cleanly

	meta, _ := srv.Stream(ctx, id)
	batches, _ := srv.Records(ctx, id)
	fmt.Println(meta.Table, "watermark", meta.Watermark, "records", meta.Records)
	for _, b := range batches {
		fmt.Println(b.Offset, string(b.Records[0]))
	}
	// Output:
	// main.sales.orders watermark 1 records 2
	// 0 {"order":1}
	// 1 {"order":2}
}
