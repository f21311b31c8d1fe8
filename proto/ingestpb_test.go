package ingestpb_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream/internal/contract"
	ingestpb "github.com/zbstream/zbstream/proto"
)

func TestFullMethodNames(t *testing.T) {
	want := map[string]string{
		ingestpb.Zerobus_EphemeralStream_FullMethodName:  "/databricks.zerobus.Zerobus/EphemeralStream",
		ingestpb.Zerobus_PersistentStream_FullMethodName: "/databricks.zerobus.Zerobus/PersistentStream",
		ingestpb.Zerobus_RetireStream_FullMethodName:     "/databricks.zerobus.Zerobus/RetireStream",
	}
	for got, w := range want {
		if got != w {
			t.Errorf("full method name %q, want %q", got, w)
		}
	}
	if got := ingestpb.Zerobus_ServiceDesc.ServiceName; got != "databricks.zerobus.Zerobus" {
		t.Errorf("service name %q", got)
	}

	svc := ingestpb.File_zbstream_zerobus_service_proto.Services().ByName("Zerobus")
	if svc == nil {
		t.Fatal("service Zerobus not in file descriptor")
	}
	type shape struct{ client, server bool }
	methods := map[protoreflect.Name]shape{
		"EphemeralStream":  {true, true},
		"PersistentStream": {true, true},
		"RetireStream":     {false, false},
	}
	if n := svc.Methods().Len(); n != len(methods) {
		t.Errorf("service has %d methods, want %d", n, len(methods))
	}
	for name, s := range methods {
		m := svc.Methods().ByName(name)
		if m == nil {
			t.Errorf("method %s missing", name)
			continue
		}
		if m.IsStreamingClient() != s.client || m.IsStreamingServer() != s.server {
			t.Errorf("method %s streaming (client %v, server %v), want (%v, %v)",
				name, m.IsStreamingClient(), m.IsStreamingServer(), s.client, s.server)
		}
	}
}

// TestWireServiceNames checks the method paths the generated client sends
// and the service name the generated server registers with gRPC: the
// official ones, whatever the names in the protobuf registry.
func TestWireServiceNames(t *testing.T) {
	want := []string{
		"/databricks.zerobus.Zerobus/EphemeralStream",
		"/databricks.zerobus.Zerobus/PersistentStream",
		"/databricks.zerobus.Zerobus/RetireStream",
	}

	// The client: interceptors record each call's method and end it before
	// any connection is made.
	var sent []string
	errIntercepted := errors.New("intercepted")
	cc, err := grpc.NewClient("passthrough:///unused",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(_ context.Context, method string, _, _ any, _ *grpc.ClientConn, _ grpc.UnaryInvoker, _ ...grpc.CallOption) error {
			sent = append(sent, method)
			return errIntercepted
		}),
		grpc.WithStreamInterceptor(func(_ context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, method string, _ grpc.Streamer, _ ...grpc.CallOption) (grpc.ClientStream, error) {
			sent = append(sent, method)
			return nil, errIntercepted
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := ingestpb.NewZerobusClient(cc)
	ctx := context.Background()
	if _, err := client.EphemeralStream(ctx); !errors.Is(err, errIntercepted) {
		t.Errorf("EphemeralStream: %v", err)
	}
	if _, err := client.PersistentStream(ctx); !errors.Is(err, errIntercepted) {
		t.Errorf("PersistentStream: %v", err)
	}
	if _, err := client.RetireStream(ctx, &ingestpb.RetireStreamRequest{}); !errors.Is(err, errIntercepted) {
		t.Errorf("RetireStream: %v", err)
	}
	if !slices.Equal(sent, want) {
		t.Errorf("client called %q, want %q", sent, want)
	}

	// The server: the paths gRPC routes to the registered implementation.
	srv := grpc.NewServer()
	ingestpb.RegisterZerobusServer(srv, ingestpb.UnimplementedZerobusServer{})
	var served []string
	for svc, info := range srv.GetServiceInfo() {
		for _, m := range info.Methods {
			served = append(served, "/"+svc+"/"+m.Name)
		}
	}
	slices.Sort(served)
	if !slices.Equal(served, want) {
		t.Errorf("server serves %q, want %q", served, want)
	}
}

// TestRegisteredNames checks that the contract is registered under names of
// its own, not the official file path and package, so that another copy of
// the official proto can be linked into the same program (see package doc).
func TestRegisteredNames(t *testing.T) {
	fd := (&ingestpb.IngestRecordResponse{}).ProtoReflect().Descriptor().ParentFile()
	if fd != ingestpb.File_zbstream_zerobus_service_proto {
		t.Error("File_zbstream_zerobus_service_proto is not the file of the messages")
	}
	if got := fd.Path(); got != "zbstream/zerobus_service.proto" {
		t.Errorf("registered as %q", got)
	}
	if _, err := protoregistry.GlobalFiles.FindFileByPath("zerobus_service.proto"); !errors.Is(err, protoregistry.NotFound) {
		t.Errorf("official path zerobus_service.proto registered: %v", err)
	}
	for _, name := range []protoreflect.FullName{
		"databricks.zerobus.Zerobus",
		"databricks.zerobus.RecordType",
		"databricks.zerobus.IngestRecordResponse",
	} {
		if d, err := protoregistry.GlobalFiles.FindDescriptorByName(name); !errors.Is(err, protoregistry.NotFound) {
			t.Errorf("official name %s registered (%v, %v)", name, d, err)
		}
	}
	if got := (&ingestpb.IngestRecordResponse{}).ProtoReflect().Descriptor().FullName(); got != "zbstream.zerobus.v1.IngestRecordResponse" {
		t.Errorf("IngestRecordResponse registered as %s", got)
	}
}

// TestCanonicalContract holds the contract to the service's: every
// message, field name, number, type, label and oneof, every reserved
// number and name, the enum and the service, as internal/contract's table
// has them (written from the service's canonical schema). Any difference,
// a field of ours inside the service's messages included, fails it.
func TestCanonicalContract(t *testing.T) {
	fd := ingestpb.File_zbstream_zerobus_service_proto
	if got := fd.Package(); got != "zbstream.zerobus.v1" {
		t.Errorf("package %q", got)
	}
	if fd.Syntax() != protoreflect.Proto2 {
		t.Errorf("syntax %v, want proto2", fd.Syntax())
	}
	got, want := contract.Render(fd), contract.Normalize(contract.Canonical)
	if got == want {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	for _, l := range wantLines {
		if !slices.Contains(gotLines, l) {
			t.Errorf("missing: %s", l)
		}
	}
	for _, l := range gotLines {
		if !slices.Contains(wantLines, l) {
			t.Errorf("not in the service's contract: %s", l)
		}
	}
	t.Errorf("proto/zerobus_service.proto renders as\n%s\nwant\n%s", got, want)
}

func TestOptionalPresence(t *testing.T) {
	resp := &ingestpb.IngestRecordResponse{}
	if resp.DurabilityAckUpToOffset != nil || resp.GetDurabilityAckUpToOffset() != 0 {
		t.Fatal("unset durability_ack_up_to_offset is not absent")
	}
	fd := resp.ProtoReflect().Descriptor().Fields().ByName("durability_ack_up_to_offset")
	if !fd.HasPresence() {
		t.Fatal("durability_ack_up_to_offset has no presence")
	}
	if resp.ProtoReflect().Has(fd) {
		t.Error("unset field reported present")
	}

	// An explicit zero is present and survives the wire.
	resp.DurabilityAckUpToOffset = proto.Int64(0)
	if !resp.ProtoReflect().Has(fd) {
		t.Error("explicit zero reported absent")
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	got := &ingestpb.IngestRecordResponse{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if got.DurabilityAckUpToOffset == nil || got.GetDurabilityAckUpToOffset() != 0 {
		t.Errorf("explicit zero lost on the wire: %v", got)
	}

	// last_committed_offset is absent when nothing was committed.
	var resume ingestpb.ResumeIngestStreamResponse
	if err := proto.Unmarshal(nil, &resume); err != nil {
		t.Fatal(err)
	}
	if resume.LastCommittedOffset != nil {
		t.Error("last_committed_offset present in an empty message")
	}
}

func TestRoundTrip(t *testing.T) {
	create := &ingestpb.CreateIngestStreamRequest{
		TableName:       proto.String("main.default.events"),
		DescriptorProto: []byte{0x0a, 0x01, 'E'},
		RecordType:      ingestpb.RecordType_PROTO.Enum(),
	}
	record := &ingestpb.IngestRecordRequest{
		OffsetId: proto.Int64(7),
		Record:   &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: `{"a":1}`},
	}
	batch := &ingestpb.IngestRecordBatchRequest{
		OffsetId: proto.Int64(8),
		Batch: &ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch{
			ProtoEncodedBatch: &ingestpb.ProtoEncodedRecordBatch{Records: [][]byte{{1}, {}, {2, 3}}},
		},
	}
	jsonBatch := &ingestpb.IngestRecordBatchRequest{
		OffsetId: proto.Int64(9),
		Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{
			JsonBatch: &ingestpb.JsonRecordBatch{Records: []string{`{}`, `{"b":2}`}},
		},
	}
	created := &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("s-1")}
	ack := &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(9)}
	closing := &ingestpb.CloseStreamSignal{Duration: durationpb.New(30 * time.Second)}

	msgs := map[string]proto.Message{
		"ephemeral create": &ingestpb.EphemeralStreamRequest{
			Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: create},
		},
		"ephemeral record": &ingestpb.EphemeralStreamRequest{
			Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: record},
		},
		"ephemeral batch": &ingestpb.EphemeralStreamRequest{
			Payload: &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: batch},
		},
		"ephemeral created": &ingestpb.EphemeralStreamResponse{
			Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{CreateStreamResponse: created},
		},
		"ephemeral ack": &ingestpb.EphemeralStreamResponse{
			Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: ack},
		},
		"ephemeral close": &ingestpb.EphemeralStreamResponse{
			Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{CloseStreamSignal: closing},
		},
		"persistent create": &ingestpb.PersistentStreamRequest{
			Payload: &ingestpb.PersistentStreamRequest_CreateStream{
				CreateStream: &ingestpb.CreatePersistentStreamRequest{CreateStream: create},
			},
		},
		"persistent resume": &ingestpb.PersistentStreamRequest{
			Payload: &ingestpb.PersistentStreamRequest_ResumeStream{
				ResumeStream: &ingestpb.ResumeIngestStreamRequest{
					Identifier: &ingestpb.ResumeIngestStreamRequest_StreamId{StreamId: "s-1"},
					RecordType: ingestpb.RecordType_JSON.Enum(),
				},
			},
		},
		"persistent record": &ingestpb.PersistentStreamRequest{
			Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: record},
		},
		"persistent batch": &ingestpb.PersistentStreamRequest{
			Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: jsonBatch},
		},
		"persistent created": &ingestpb.PersistentStreamResponse{
			Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{CreateStreamResponse: created},
		},
		"persistent resumed": &ingestpb.PersistentStreamResponse{
			Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
				ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(0)},
			},
		},
		"persistent ack": &ingestpb.PersistentStreamResponse{
			Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: ack},
		},
		"persistent close": &ingestpb.PersistentStreamResponse{
			Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{CloseStreamSignal: closing},
		},
		"retire": &ingestpb.RetireStreamRequest{TableName: proto.String("main.default.t"),
			Identifier: &ingestpb.RetireStreamRequest_StreamId{StreamId: "s-1"}},
		"retired": &ingestpb.RetireStreamResponse{},
	}
	for name, m := range msgs {
		t.Run(name, func(t *testing.T) {
			b, err := proto.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got := m.ProtoReflect().Type().New().Interface()
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(m, got) {
				t.Errorf("round trip changed the message:\n sent %v\n  got %v", m, got)
			}
		})
	}
}

// TestBatchHasOneOffset checks on the wire that a batch carries exactly one
// offset, however many records it holds.
func TestBatchHasOneOffset(t *testing.T) {
	b, err := proto.Marshal(&ingestpb.IngestRecordBatchRequest{
		OffsetId: proto.Int64(5),
		Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{
			JsonBatch: &ingestpb.JsonRecordBatch{Records: []string{"{}", "{}", "{}"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Walk the top-level fields: one offset_id (field 1) and one batch.
	counts := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 {
			v, m := protowire.ConsumeVarint(b)
			if typ != protowire.VarintType || m < 0 || v != 5 {
				t.Errorf("offset_id: wire type %v, value %d", typ, v)
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			t.Fatal(protowire.ParseError(m))
		}
		b = b[m:]
		counts[num]++
	}
	if counts[1] != 1 || counts[3] != 1 || len(counts) != 2 {
		t.Errorf("top-level fields %v, want one offset_id (1) and one json_batch (3)", counts)
	}
}
