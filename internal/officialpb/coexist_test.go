package officialpb_test

// This test binary links zbstream (its client, the reference server and
// package ingestpb under them) beside officialpb, a copy of the contract
// registered under the official names. Were both registered under the same
// file path or full names, protobuf-go would panic while initializing the
// binary, before any test ran.

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/officialpb"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// callCtx bounds a test's calls, so that a hung call fails the test instead
// of the whole run; it carries the server's token and table.
func callCtx(t *testing.T, ts *servertest.Server) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ts.Context(ctx)
}

// TestRegisteredApart checks the premise of the other tests: officialpb is
// registered as the official code is, and ingestpb is not.
func TestRegisteredApart(t *testing.T) {
	for _, c := range []struct {
		name      string
		fd        protoreflect.FileDescriptor
		path, pkg string
	}{
		{"officialpb", officialpb.File_zerobus_service_proto, "zerobus_service.proto", "databricks.zerobus"},
		// Through a message, not the file's variable, whose name follows
		// the path: the test then builds against any registration of
		// ingestpb, and fails at start against a conflicting one.
		{"ingestpb", (&ingestpb.IngestRecordResponse{}).ProtoReflect().Descriptor().ParentFile(), "zbstream/zerobus_service.proto", "zbstream.zerobus.v1"},
	} {
		if c.fd.Path() != c.path || c.fd.Package() != protoreflect.FullName(c.pkg) {
			t.Errorf("%s registered as %s, package %s; want %s, package %s", c.name, c.fd.Path(), c.fd.Package(), c.path, c.pkg)
		}
	}
	if officialpb.Zerobus_ServiceDesc.ServiceName != ingestpb.Zerobus_ServiceDesc.ServiceName {
		t.Errorf("service names differ on the wire: official %s, zbstream %s",
			officialpb.Zerobus_ServiceDesc.ServiceName, ingestpb.Zerobus_ServiceDesc.ServiceName)
	}
}

// TestClientBesideOfficialCode ingests through the zbstream client into the
// reference server, in the binary that also holds officialpb, and retires
// the stream with officialpb's client: the unary call of the official stub
// reaches the server built on ingestpb.
func TestClientBesideOfficialCode(t *testing.T) {
	ts := servertest.Start(t)
	ctx := callCtx(t, ts)
	client, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	s, err := client.CreatePersistentStream(ctx, ts.Table)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.IngestJSON(ctx, map[string]int{"seq": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, last := s.Stats().Acknowledged, s.LastDurable(); got != 3 || last != 2 {
		t.Fatalf("acknowledged %d records up to offset %d, want 3 up to 2", got, last)
	}

	_, err = officialpb.NewZerobusClient(ts.Dial(t)).RetireStream(ctx, &officialpb.RetireStreamRequest{
		TableName: proto.String(ts.Table), Identifier: &officialpb.RetireStreamRequest_StreamId{StreamId: s.StreamID()}})
	if err != nil {
		t.Fatalf("RetireStream with the official stub: %v", err)
	}
	if m, err := ts.Stream(ctx, s.StreamID()); err != nil || !m.Retired || m.Watermark != 2 {
		t.Errorf("after RetireStream the server has %+v, %v; want retired at watermark 2", m, err)
	}
}

// TestOfficialStubStreams runs an ephemeral stream with officialpb's client
// and messages, which name the service and messages as the official code
// does, against the reference server, which serves ingestpb: the records
// are acknowledged and stored as sent.
func TestOfficialStubStreams(t *testing.T) {
	ts := servertest.Start(t)
	ctx := callCtx(t, ts)
	st, err := officialpb.NewZerobusClient(ts.Dial(t)).EphemeralStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&officialpb.EphemeralStreamRequest{Payload: &officialpb.EphemeralStreamRequest_CreateStream{
		CreateStream: &officialpb.CreateIngestStreamRequest{
			TableName:  proto.String(ts.Table),
			RecordType: officialpb.RecordType_JSON.Enum(),
		},
	}}); err != nil {
		t.Fatal(err)
	}
	created, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetCreateStreamResponse().GetStreamId()
	if id == "" {
		t.Fatalf("first response %v, want create_stream_response with a stream id", created)
	}

	records := []string{`{"seq":0}`, `{"seq":1}`}
	if err := st.Send(&officialpb.EphemeralStreamRequest{Payload: &officialpb.EphemeralStreamRequest_IngestRecord{
		IngestRecord: &officialpb.IngestRecordRequest{
			OffsetId: proto.Int64(0),
			Record:   &officialpb.IngestRecordRequest_JsonRecord{JsonRecord: records[0]},
		},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&officialpb.EphemeralStreamRequest{Payload: &officialpb.EphemeralStreamRequest_IngestRecordBatch{
		IngestRecordBatch: &officialpb.IngestRecordBatchRequest{
			OffsetId: proto.Int64(1),
			Batch: &officialpb.IngestRecordBatchRequest_JsonBatch{
				JsonBatch: &officialpb.JsonRecordBatch{Records: records[1:]},
			},
		},
	}}); err != nil {
		t.Fatal(err)
	}
	for acked := int64(-1); acked < 1; {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("waiting for the ack of offset 1 (acked up to %d): %v", acked, err)
		}
		if a := r.GetIngestRecordResponse(); a != nil {
			acked = a.GetDurabilityAckUpToOffset()
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("end of call: %v", err)
		}
	}

	batches, err := ts.Records(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, b := range batches {
		for _, r := range b.Records {
			stored = append(stored, string(r))
		}
	}
	if !slices.Equal(stored, records) {
		t.Errorf("stored %q, want %q", stored, records)
	}
}
