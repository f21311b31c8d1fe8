package server_test

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestMain checks that no test of package server (store tests included)
// leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Helpers shared by conformance_test.go and badinput_test.go.

// storeEnv selects the store under the conformance tests (conformance_test.go,
// badinput_test.go): unset or "memory", a MemoryStore; "bolt", a BoltStore
// in t.TempDir():
//
//	ZBSTREAM_SERVER_STORE=bolt go test -race ./server/...
const storeEnv = "ZBSTREAM_SERVER_STORE"

// newTestStore returns a store of the kind storeEnv selects, closed when
// the test ends (after the server using it has stopped, if that server was
// started later).
func newTestStore(t *testing.T) server.Store {
	t.Helper()
	var st server.Store
	switch v := os.Getenv(storeEnv); v {
	case "", "memory":
		st = server.NewMemoryStore()
	case "bolt":
		b, err := server.OpenBoltStore(t.TempDir())
		if err != nil {
			t.Fatalf("bolt store: %v", err)
		}
		st = b
	default:
		t.Fatalf("%s=%q: want memory or bolt", storeEnv, v)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return st
}

// startServer is servertest.Start on the store storeEnv selects (an
// explicit servertest.WithStore among opts wins).
func startServer(t *testing.T, opts ...servertest.Option) *servertest.Server {
	t.Helper()
	if os.Getenv(storeEnv) == "" {
		return servertest.Start(t, opts...)
	}
	return servertest.Start(t, append([]servertest.Option{servertest.WithStore(newTestStore(t))}, opts...)...)
}

type pstream = ingestpb.Zerobus_PersistentStreamClient
type estream = ingestpb.Zerobus_EphemeralStreamClient

func callCtx(t *testing.T, ts *servertest.Server) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ts.Context(ctx)
}

func ctxWith(t *testing.T, token, table string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return servertest.OutgoingContext(ctx, token, table)
}

func jsonCreate(table string) *ingestpb.CreateIngestStreamRequest {
	return &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_JSON.Enum()}
}

func openPersistent(t *testing.T, c ingestpb.ZerobusClient, ctx context.Context) pstream {
	t.Helper()
	st, err := c.PersistentStream(ctx)
	if err != nil {
		t.Fatalf("PersistentStream: %v", err)
	}
	return st
}

func psend(t *testing.T, st pstream, req *ingestpb.PersistentStreamRequest) {
	t.Helper()
	if err := st.Send(req); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("send: %v", err)
	}
}

// pcreateReq is a persistent create; its request id, if any, is the
// call's metadata (withReqID).
func pcreateReq(cr *ingestpb.CreateIngestStreamRequest) *ingestpb.PersistentStreamRequest {
	c := &ingestpb.CreatePersistentStreamRequest{CreateStream: cr}
	return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: c}}
}

// retireReq retires stream id of table.
func retireReq(table, id string) *ingestpb.RetireStreamRequest {
	return &ingestpb.RetireStreamRequest{TableName: &table, Identifier: &ingestpb.RetireStreamRequest_StreamId{StreamId: id}}
}

// withReqID adds a persistent create's idempotency key to the call's
// metadata ("": none).
func withReqID(ctx context.Context, reqID string) context.Context {
	if reqID == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, server.HeaderRequestID, reqID)
}

func presumeReq(id string, typ ingestpb.RecordType, desc []byte) *ingestpb.PersistentStreamRequest {
	return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_ResumeStream{ResumeStream: &ingestpb.ResumeIngestStreamRequest{
		Identifier: &ingestpb.ResumeIngestStreamRequest_StreamId{StreamId: id}, RecordType: typ.Enum(), DescriptorProto: desc}}}
}

// pcreate opens a persistent JSON stream on ts.Table and returns it with
// its id.
func pcreate(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient, reqID string) (pstream, string) {
	t.Helper()
	st := openPersistent(t, c, withReqID(callCtx(t, ts), reqID))
	psend(t, st, pcreateReq(jsonCreate(ts.Table)))
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := r.GetCreateStreamResponse().StreamId
	if id == nil || *id == "" {
		t.Fatalf("create response without id: %v", r)
	}
	return st, *id
}

// presume resumes a JSON stream and returns the watermark (nil: absent).
func presume(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient, id string) (pstream, *int64) {
	t.Helper()
	return presumeAs(t, ts, c, id, ingestpb.RecordType_JSON)
}

// presumeAs resumes a stream of record type typ and returns the watermark
// (nil: absent).
func presumeAs(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient, id string, typ ingestpb.RecordType) (pstream, *int64) {
	t.Helper()
	st := openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(id, typ, nil))
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	rr := r.GetResumeStreamResponse()
	if rr == nil {
		t.Fatalf("resume answered with %v", r)
	}
	return st, rr.LastCommittedOffset
}

func jsonRec(off int64, rec string) *ingestpb.IngestRecordRequest {
	return &ingestpb.IngestRecordRequest{OffsetId: proto.Int64(off), Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: rec}}
}

func jsonBatch(off int64, recs ...string) *ingestpb.IngestRecordBatchRequest {
	return &ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(off), Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: recs}}}
}

func pjson(t *testing.T, st pstream, off int64, recs ...string) {
	t.Helper()
	if len(recs) == 1 {
		psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: jsonRec(off, recs[0])}})
		return
	}
	psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: jsonBatch(off, recs...)}})
}

// pwaitAck reads until an ack >= want arrives.
func pwaitAck(t *testing.T, st pstream, want int64) {
	t.Helper()
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("waiting for ack %d: %v", want, err)
		}
		a := r.GetIngestRecordResponse()
		if a == nil {
			t.Fatalf("waiting for ack %d: got %v", want, r)
		}
		if a.DurabilityAckUpToOffset == nil {
			t.Fatalf("ack without value")
		}
		if *a.DurabilityAckUpToOffset > want {
			t.Fatalf("ack %d above %d", *a.DurabilityAckUpToOffset, want)
		}
		if *a.DurabilityAckUpToOffset == want {
			return
		}
	}
}

// pend reads until the call ends; it returns the status error (nil for a
// clean end) and every ack seen.
func pend(t *testing.T, st pstream) ([]int64, error) {
	t.Helper()
	var acks []int64
	for {
		r, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return acks, nil
			}
			return acks, err
		}
		if a := r.GetIngestRecordResponse(); a != nil {
			acks = append(acks, a.GetDurabilityAckUpToOffset())
		}
	}
}

// pclose half-closes and expects a clean end.
func pclose(t *testing.T, st pstream) {
	t.Helper()
	if err := st.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	if _, err := pend(t, st); err != nil {
		t.Fatalf("end: %v", err)
	}
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("status %v, want %v", err, code)
	}
	if code != codes.OK && status.Convert(err).Message() == "" {
		t.Fatalf("status %v without message", err)
	}
}

// records returns the stored records of a stream as strings per batch.
func records(t *testing.T, srv *server.Server, id string) [][]string {
	t.Helper()
	bs, err := srv.Records(t.Context(), id)
	if err != nil {
		t.Fatalf("Records(%s): %v", id, err)
	}
	out := make([][]string, len(bs))
	for i, b := range bs {
		if b.Offset != int64(i) {
			t.Fatalf("batch %d has offset %d", i, b.Offset)
		}
		for _, r := range b.Records {
			out[i] = append(out[i], string(r))
		}
	}
	return out
}

func meta(t *testing.T, srv *server.Server, id string) server.StreamMeta {
	t.Helper()
	m, err := srv.Stream(t.Context(), id)
	if err != nil {
		t.Fatalf("Stream(%s): %v", id, err)
	}
	return m
}

// snapshot is everything the store holds, for before/after comparisons.
type snapshot struct {
	streams []server.StreamMeta
	records map[string][]server.Batch
}

func takeSnapshot(t *testing.T, srv *server.Server) snapshot {
	t.Helper()
	ms, err := srv.Streams(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{streams: ms, records: map[string][]server.Batch{}}
	for _, m := range ms {
		bs, err := srv.Records(t.Context(), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		s.records[m.ID] = bs
	}
	return s
}

func sameSnapshot(a, b snapshot) bool {
	if !slices.EqualFunc(a.streams, b.streams, func(x, y server.StreamMeta) bool {
		return x.ID == y.ID && x.Kind == y.Kind && x.Table == y.Table && x.Watermark == y.Watermark &&
			x.Records == y.Records && x.Retired == y.Retired && x.RecordType == y.RecordType
	}) {
		return false
	}
	for id, bs := range a.records {
		if !slices.EqualFunc(bs, b.records[id], func(x, y server.Batch) bool {
			return x.Offset == y.Offset && slices.EqualFunc(x.Records, y.Records, func(p, q []byte) bool { return string(p) == string(q) })
		}) {
			return false
		}
	}
	return len(a.records) == len(b.records)
}

// rawCodec sends []byte as is (malformed messages) and proto messages
// normally, under the "proto" content subtype.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch v := v.(type) {
	case []byte:
		return mem.BufferSlice{mem.SliceBuffer(v)}, nil
	case proto.Message:
		b, err := proto.Marshal(v)
		return mem.BufferSlice{mem.SliceBuffer(b)}, err
	}
	return nil, errors.New("rawCodec: unsupported type")
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// rawCall opens method ("EphemeralStream" or "PersistentStream") with the
// raw codec, sends msgs and returns the status that ends the call.
func rawCall(t *testing.T, cc *grpc.ClientConn, ctx context.Context, method string, msgs ...any) error {
	t.Helper()
	st, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
		"/databricks.zerobus.Zerobus/"+method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := st.SendMsg(m); err != nil {
			break
		}
	}
	st.CloseSend()
	for {
		var resp ingestpb.PersistentStreamResponse
		if err := st.RecvMsg(&resp); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// ctxWithAuthValue replaces the authorization value of ctx.
func ctxWithAuthValue(ctx context.Context, auth, table string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Set(server.HeaderAuthorization, auth)
	md.Set(server.HeaderTable, table)
	return metadata.NewOutgoingContext(ctx, md)
}
