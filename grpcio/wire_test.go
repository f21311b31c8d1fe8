package grpcio_test

import (
	"bytes"
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// rawCodec hands the server each message's bytes as they arrived.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "raw" }

// openRaw starts a server whose every call is handler, reading messages
// with rawCodec, and opens a persistent JSON conn of table to it through
// the transport; everything ends with the test.
func openRaw(t *testing.T, table string, handler grpc.StreamHandler) streamio.Conn {
	t.Helper()
	srv := grpc.NewServer(grpc.ForceServerCodecV2(rawCodec{}), grpc.UnknownServiceHandler(handler))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	tr, err := grpcio.NewTransport(cc, grpcio.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := tr.Open(ctx, streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	return c
}

// TestSendWireUnchanged: what the transport puts on the wire is what gRPC's
// own proto codec would: content-type application/grpc, and each ingest
// message byte for byte the proto encoding of the call.
func TestSendWireUnchanged(t *testing.T) {
	type seen struct {
		contentType []string
		msgs        [][]byte
	}
	got := make(chan seen, 1)
	handler := func(_ any, st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		s := seen{contentType: md.Get("content-type")}
		for len(s.msgs) < 3 { // the create, then two calls
			var b []byte
			if err := st.RecvMsg(&b); err != nil {
				break
			}
			s.msgs = append(s.msgs, b)
		}
		got <- s
		return nil
	}
	c := openRaw(t, "main.wire.events", handler)
	one, batch := []byte(`{"a":1}`), [][]byte{[]byte(`{"b":2}`), []byte(`{"c":3}`)}
	if err := c.Send(streamio.Call{Wire: 0, Record: one}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(streamio.Call{Wire: 1, Records: batch}); err != nil {
		t.Fatal(err)
	}
	s := <-got

	if len(s.contentType) != 1 || s.contentType[0] != "application/grpc" {
		t.Errorf("content-type %q, want [application/grpc] as with gRPC's default codec", s.contentType)
	}
	off0, off1 := int64(0), int64(1)
	want := []proto.Message{
		nil, // the create: checked for its table only
		&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: &ingestpb.IngestRecordRequest{
			OffsetId: &off0, Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: string(one)}}}},
		&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{
			OffsetId: &off1, Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: []string{string(batch[0]), string(batch[1])}}}}}},
	}
	if len(s.msgs) != len(want) {
		t.Fatalf("server read %d messages, want %d", len(s.msgs), len(want))
	}
	var create ingestpb.PersistentStreamRequest
	if err := proto.Unmarshal(s.msgs[0], &create); err != nil || create.GetCreateStream().GetCreateStream().GetTableName() != "main.wire.events" {
		t.Errorf("first message %v (%v), want the create of main.wire.events", &create, err)
	}
	for i := 1; i < len(want); i++ {
		w, err := proto.MarshalOptions{Deterministic: true}.Marshal(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.msgs[i], w) {
			t.Errorf("message %d on the wire\n %x\nwant the proto encoding\n %x", i, s.msgs[i], w)
		}
	}
}
