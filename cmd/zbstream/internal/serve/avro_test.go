package serve

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestServeAvroStream: an Avro stream ingested over gRPC into serve is
// shown by "streams show" with its type and schema, and "streams records"
// prints its records as JSON lines.
func TestServeAvroStream(t *testing.T) {
	const schema = `{"type": "record", "name": "Click", "fields": [{"name": "user", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}`
	srv := cmds.StartServe(t, "-data", filepath.Join(t.TempDir(), "data"), "-log-level", "warn", "-token", "alice:tok-alice:"+clitest.TableA)

	cc := dialServe(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := ingestpb.NewZerobusClient(cc).PersistentStream(servertest.OutgoingContext(ctx, "tok-alice", clitest.TableA))
	if err != nil {
		t.Fatal(err)
	}
	send := func(req *ingestpb.PersistentStreamRequest) {
		t.Helper()
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{
		CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(clitest.TableA), RecordType: ingestpb.RecordType_AVRO.Enum(), AvroSchemaJson: proto.String(schema)}}}})
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	ann := []byte{0x06, 'a', 'n', 'n', 0x02, 0x02, 'x', 0x00} // {"user":"ann","tags":["x"]}
	bob := []byte{0x06, 'b', 'o', 'b', 0x00}                  // {"user":"bob","tags":[]}
	send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{
		OffsetId: proto.Int64(0), Batch: &ingestpb.IngestRecordBatchRequest_AvroBatch{AvroBatch: &ingestpb.AvroRecordBatch{Records: [][]byte{ann, bob}}}}}})
	if r, err := st.Recv(); err != nil || r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() != 0 {
		t.Fatalf("ack: %v %v", r, err)
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			break
		}
	}

	out := cmds.WantCode(t, 0, "streams", "show", id, "-admin", srv.Admin, "-token", "tok-alice")
	for _, want := range []string{`record type:\s+avro\n`, `avro schema:\s+\{"type":"record","name":"Click"`, `records:\s+2\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("show: no %s in\n%s", want, out)
		}
	}
	out = cmds.WantCode(t, 0, "streams", "records", id, "-admin", srv.Admin, "-token", "tok-alice")
	if want := `{"user":"ann","tags":["x"]}` + "\n" + `{"user":"bob","tags":[]}` + "\n"; out != want {
		t.Fatalf("records: %q, want %q", out, want)
	}
}
