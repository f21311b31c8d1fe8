package servertest_test

import (
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ingestOne(t *testing.T, ts *servertest.Server, table string) (string, error) {
	t.Helper()
	c := ts.Client(t)
	st, err := c.PersistentStream(servertest.OutgoingContext(t.Context(), ts.Token, table))
	if err != nil {
		t.Fatal(err)
	}
	create := &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_JSON.Enum()}
	if err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{
		CreateStream: &ingestpb.CreatePersistentStreamRequest{CreateStream: create}}}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Recv()
	if err != nil {
		return "", err
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	if err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{
		IngestRecord: &ingestpb.IngestRecordRequest{OffsetId: proto.Int64(0), Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: `{"hello":"world"}`}}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() != 0 {
		t.Fatalf("ack: %v %v", r, err)
	}
	st.CloseSend()
	if _, err := st.Recv(); err == nil {
		t.Fatal("stream did not end")
	}
	return id, nil
}

func TestStart(t *testing.T) {
	ts := servertest.Start(t)
	if ts.Table != servertest.DefaultTable || ts.Token == "" || ts.Addr == "" {
		t.Fatalf("%+v", ts)
	}
	id, err := ingestOne(t, ts, ts.Table)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := ts.Records(t.Context(), id)
	if err != nil || len(bs) != 1 || string(bs[0].Records[0]) != `{"hello":"world"}` {
		t.Fatalf("%v %v", bs, err)
	}
	ms, _ := ts.Streams(t.Context())
	if len(ms) != 1 || ms[0].Table != ts.Table || ms[0].Kind != server.KindPersistent || ms[0].Watermark != 0 {
		t.Fatalf("%+v", ms)
	}
	// The default token may write only its table.
	if _, err := ingestOne(t, ts, "main.default.other"); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("other table: %v", err)
	}
}

func TestStartOptions(t *testing.T) {
	st := server.NewMemoryStore()
	defer st.Close()
	ts := servertest.Start(t, servertest.WithStore(st), servertest.WithTable("a.b.c"), servertest.WithToken("tok"))
	if ts.Token != "tok" || ts.Table != "a.b.c" {
		t.Fatalf("%+v", ts)
	}
	if _, err := ingestOne(t, ts, "a.b.c"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := st.Streams(t.Context()); len(ms) != 1 {
		t.Fatalf("given store not used: %v", ms)
	}
	open := servertest.Start(t, servertest.Open())
	open.Token = ""
	if _, err := ingestOne(t, open, "x.y.z"); err != nil {
		t.Fatal(err)
	}
}

func TestAckOnlyOption(t *testing.T) {
	ts := servertest.Start(t, servertest.AckOnly())
	id, err := ingestOne(t, ts, ts.Table)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ts.Stream(t.Context(), id)
	if err != nil || m.Watermark != 0 || m.Records != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	if bs, err := ts.Records(t.Context(), id); err != nil || len(bs) != 0 {
		t.Fatalf("ack-only stored %v (%v)", bs, err)
	}
}

func TestDuplicatesOptions(t *testing.T) {
	var strict, lenient server.Options
	servertest.Start(t, servertest.WithOptions(func(o *server.Options) { strict = *o }))
	servertest.Start(t, servertest.LenientDuplicates(), servertest.WithOptions(func(o *server.Options) { lenient = *o }))
	if !strict.StrictDuplicates || lenient.StrictDuplicates {
		t.Fatalf("StrictDuplicates: default %v, lenient %v", strict.StrictDuplicates, lenient.StrictDuplicates)
	}
}
