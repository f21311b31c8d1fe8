package server_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// ---- Avro streams over gRPC ----

const avroSchema = `{"type": "record", "name": "Click", "namespace": "acme", "fields": [
	{"name": "user", "type": "string"},
	{"name": "n", "type": "long"},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "ref", "type": ["null", "string"]}
]}`

type click struct {
	User string   `avro:"user"`
	N    int64    `avro:"n"`
	Tags []string `avro:"tags"`
	Ref  *string  `avro:"ref"`
}

// avroDatum encodes a click with hamba/avro.
func avroDatum(t *testing.T, user string, n int64) []byte {
	t.Helper()
	ref := "r-" + user
	b, err := avro.Marshal(avro.MustParse(avroSchema), click{User: user, N: n, Tags: []string{"a", user}, Ref: &ref})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func avroCreate(table, schema string) *ingestpb.CreateIngestStreamRequest {
	return &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_AVRO.Enum(), AvroSchemaJson: proto.String(schema)}
}

func avroRec(off int64, d []byte) *ingestpb.IngestRecordRequest {
	return &ingestpb.IngestRecordRequest{OffsetId: proto.Int64(off), Record: &ingestpb.IngestRecordRequest_AvroEncodedRecord{AvroEncodedRecord: d}}
}

func avroBatch(off int64, ds ...[]byte) *ingestpb.IngestRecordBatchRequest {
	return &ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(off), Batch: &ingestpb.IngestRecordBatchRequest_AvroBatch{AvroBatch: &ingestpb.AvroRecordBatch{Records: ds}}}
}

// pavro sends one datum as a record, several as a batch.
func pavro(t *testing.T, st pstream, off int64, ds ...[]byte) {
	t.Helper()
	if len(ds) == 1 {
		psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: avroRec(off, ds[0])}})
		return
	}
	psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: avroBatch(off, ds...)}})
}

// pcreateAvro creates a persistent Avro stream of schema on ts.Table.
func pcreateAvro(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient, reqID, schema string) (pstream, string) {
	t.Helper()
	st := openPersistent(t, c, withReqID(callCtx(t, ts), reqID))
	psend(t, st, pcreateReq(avroCreate(ts.Table, schema)))
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	if id == "" {
		t.Fatalf("create response without id: %v", r)
	}
	return st, id
}

// wantMessage checks an error's status code and that its message holds
// each of parts.
func wantMessage(t *testing.T, err error, code codes.Code, parts ...string) {
	t.Helper()
	wantCode(t, err, code)
	for _, p := range parts {
		if msg := status.Convert(err).Message(); !strings.Contains(msg, p) {
			t.Fatalf("message %q lacks %q", msg, p)
		}
	}
}

func storedRecords(t *testing.T, ts *servertest.Server, id string) []server.Batch {
	t.Helper()
	bs, err := ts.Records(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func TestAvroCreate(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreateAvro(t, ts, c, "", avroSchema)
	pclose(t, st)
	m := meta(t, ts.Server, id)
	if m.RecordType != int32(ingestpb.RecordType_AVRO) || m.AvroSchema != avroSchema || m.Descriptor != nil {
		t.Fatalf("stored %+v", m)
	}
	est, eid := ecreate(t, ts, c, avroCreate(ts.Table, avroSchema))
	est.CloseSend()
	if err := eend(est); err != nil {
		t.Fatal(err)
	}
	if m := meta(t, ts.Server, eid); m.AvroSchema != avroSchema {
		t.Fatalf("ephemeral stream stored %+v", m)
	}

	before := takeSnapshot(t, ts.Server)
	for name, tc := range map[string]struct {
		cr   *ingestpb.CreateIngestStreamRequest
		want string
	}{
		"missing schema": {&ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table), RecordType: ingestpb.RecordType_AVRO.Enum()},
			"create_stream: record_type AVRO requires avro_schema_json"},
		"empty schema":        {avroCreate(ts.Table, ""), "record_type AVRO requires avro_schema_json"},
		"invalid JSON":        {avroCreate(ts.Table, `{"type": "record",`), "create_stream: avro_schema_json is not valid JSON"},
		"a bare name":         {avroCreate(ts.Table, `string`), "avro_schema_json is not valid JSON"},
		"not a record":        {avroCreate(ts.Table, `"string"`), `create_stream: avro_schema_json must be an Avro record schema; it is of type "string"`},
		"an array":            {avroCreate(ts.Table, `{"type": "array", "items": "long"}`), `it is of type "array"`},
		"invalid Avro":        {avroCreate(ts.Table, `{"type": "record", "name": "R", "fields": [{"name": "a", "type": "nope"}]}`), "create_stream: invalid avro_schema_json: avro: unknown type: nope"},
		"infinite record":     {avroCreate(ts.Table, `{"type": "record", "name": "R", "fields": [{"name": "r", "type": "R"}]}`), "record R contains itself"},
		"invalid UTF-8":       {avroCreate(ts.Table, "{\"type\": \"record\", \"name\": \"R\", \"doc\": \"\xff\", \"fields\": []}"), "avro_schema_json is not valid UTF-8"},
		"proto with a schema": {&ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table), RecordType: ingestpb.RecordType_PROTO.Enum(), AvroSchemaJson: proto.String(avroSchema)}, "record_type PROTO requires descriptor_proto"},
	} {
		t.Run(name, func(t *testing.T) {
			st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
			psend(t, st, pcreateReq(tc.cr))
			_, err := pend(t, st)
			wantMessage(t, err, codes.InvalidArgument, tc.want)
		})
	}
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("a refused create changed the store")
	}
}

func TestAvroRecordsAcknowledgedAndStored(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreateAvro(t, ts, c, "", avroSchema)
	one, two, three := avroDatum(t, "ann", 1), avroDatum(t, "bob", 2), avroDatum(t, "", -3)
	pavro(t, st, 0, one)
	pavro(t, st, 1, two, three)
	pwaitAck(t, st, 1)
	pclose(t, st)
	bs := storedRecords(t, ts, id)
	if len(bs) != 2 || len(bs[0].Records) != 1 || len(bs[1].Records) != 2 ||
		!bytes.Equal(bs[0].Records[0], one) || !bytes.Equal(bs[1].Records[0], two) || !bytes.Equal(bs[1].Records[1], three) {
		t.Fatalf("stored %v", bs)
	}
	if m := meta(t, ts.Server, id); m.Watermark != 1 || m.Records != 3 {
		t.Fatalf("meta %+v", m)
	}
	// An ephemeral Avro stream takes them too.
	est, eid := ecreate(t, ts, c, avroCreate(ts.Table, avroSchema))
	esend(t, est, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: avroBatch(0, one, two)}})
	ewaitAck(t, est, 0)
	est.CloseSend()
	if err := eend(est); err != nil {
		t.Fatal(err)
	}
	if bs := storedRecords(t, ts, eid); len(bs) != 1 || len(bs[0].Records) != 2 {
		t.Fatalf("ephemeral stored %v", bs)
	}
}

// TestAvroBadDatumRefused: a datum that does not decode completely under
// the writer schema ends the call with INVALID_ARGUMENT naming the offset
// and, in a batch, the datum; what was acknowledged before stays.
func TestAvroBadDatumRefused(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	good := avroDatum(t, "good", 7)
	other, err := avro.Marshal(avro.MustParse(`{"type":"record","name":"O","fields":[{"name":"x","type":"double"}]}`), map[string]any{"x": 1.5})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		bad  []byte
		want string
	}{
		"truncated":      {good[:len(good)-2], "datum ends inside a string of 6 bytes: 4 left"},
		"trailing bytes": {append(bytes.Clone(good), 0, 0), "2 bytes left over after the datum"},
		"wrong type":     {other, "4 bytes left over after the datum (byte 4)"},
		"a JSON text":    {[]byte(`{"user":"x","n":1}`), "(byte 0, field user)"},
		"union branch":   {append(bytes.Clone(good[:len(good)-len("r-good")-2]), 4), "union has no branch 2 (it has 2)"},
		"empty":          {nil, "datum ends inside a long (byte 0, field user)"},
	} {
		t.Run(name, func(t *testing.T) {
			st, id := pcreateAvro(t, ts, c, "", avroSchema)
			pavro(t, st, 0, good, good)
			pwaitAck(t, st, 0)
			pavro(t, st, 1, good, tc.bad)
			acks, err := pend(t, st)
			wantMessage(t, err, codes.InvalidArgument, "offset 1: invalid AVRO record 1 of the batch: ", tc.want)
			if len(acks) != 0 {
				t.Fatalf("acks %v after the refusal", acks)
			}
			if bs := storedRecords(t, ts, id); len(bs) != 1 || len(bs[0].Records) != 2 {
				t.Fatalf("stored %v", bs)
			}
			// Alone, the datum is refused as a single record.
			st, _ = presumeAs(t, ts, c, id, ingestpb.RecordType_AVRO)
			pavro(t, st, 1, tc.bad)
			_, err = pend(t, st)
			wantMessage(t, err, codes.InvalidArgument, "offset 1: invalid AVRO record: ", tc.want)
		})
	}
}

func TestAvroRecordKindMismatch(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, _ := pcreateAvro(t, ts, c, "", avroSchema)
	pjson(t, st, 0, `{"user":"x"}`)
	_, err := pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "JSON record at offset 0 on a AVRO stream")

	st, _ = pcreate(t, ts, c, "")
	pavro(t, st, 0, avroDatum(t, "x", 1), avroDatum(t, "y", 2))
	_, err = pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "AVRO record at offset 0 on a JSON stream")

	est, _ := ecreate(t, ts, c, avroCreate(ts.Table, avroSchema))
	esend(t, est, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: &ingestpb.IngestRecordRequest{
		OffsetId: proto.Int64(0), Record: &ingestpb.IngestRecordRequest_ProtoEncodedRecord{ProtoEncodedRecord: []byte{0x08, 0x01}}}}})
	wantMessage(t, eend(est), codes.InvalidArgument, "PROTO record at offset 0 on a AVRO stream")
}

func TestAvroResume(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreateAvro(t, ts, c, "", avroSchema)
	pavro(t, st, 0, avroDatum(t, "a", 1))
	pwaitAck(t, st, 0)
	pclose(t, st)
	before := takeSnapshot(t, ts.Server)
	for name, req := range map[string]*ingestpb.PersistentStreamRequest{
		"json":        presumeReq(id, ingestpb.RecordType_JSON, nil),
		"proto":       presumeReq(id, ingestpb.RecordType_PROTO, mustMarshal(t, eventDescriptor())),
		"unspecified": presumeReq(id, ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED, nil),
	} {
		t.Run(name, func(t *testing.T) {
			st := openPersistent(t, c, callCtx(t, ts))
			psend(t, st, req)
			_, err := pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("a refused resume changed the store")
	}
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(id, ingestpb.RecordType_JSON, nil))
	_, err := pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "resume_stream: record_type JSON does not match the stream's AVRO")

	// With record_type AVRO the stream continues, its datums checked with
	// the stored schema.
	st, w := presumeAs(t, ts, c, id, ingestpb.RecordType_AVRO)
	if w == nil || *w != 0 {
		t.Fatalf("watermark %v", w)
	}
	pavro(t, st, 1, avroDatum(t, "b", 2), avroDatum(t, "c", 3))
	pwaitAck(t, st, 1)
	pavro(t, st, 2, []byte{0x02})
	_, err = pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "offset 2: invalid AVRO record: datum ends inside a string")
	if m := meta(t, ts.Server, id); m.Watermark != 1 || m.Records != 3 {
		t.Fatalf("meta %+v", m)
	}

	// An AVRO resume of a JSON stream is refused too.
	jst, jid := pcreate(t, ts, c, "")
	pclose(t, jst)
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(jid, ingestpb.RecordType_AVRO, nil))
	_, err = pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "record_type AVRO does not match the stream's JSON")
}

func TestAvroIdempotentCreate(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreateAvro(t, ts, c, "req-1", avroSchema)
	pavro(t, st, 0, avroDatum(t, "a", 1))
	pwaitAck(t, st, 0)
	pclose(t, st)
	// The same schema, written otherwise, is the same stream.
	again := strings.Join(strings.Fields(avroSchema), "")
	st, id2 := pcreateAvro(t, ts, c, "req-1", again)
	if id2 != id {
		t.Fatalf("repeated create gave %s, want %s", id2, id)
	}
	pclose(t, st)
	if m := meta(t, ts.Server, id); m.AvroSchema != avroSchema {
		t.Fatalf("schema replaced by %s", m.AvroSchema)
	}
	other := strings.Replace(avroSchema, `"type": "long"`, `"type": "int"`, 1)
	for name, cr := range map[string]*ingestpb.CreateIngestStreamRequest{
		"another schema": avroCreate(ts.Table, other),
		"json":           jsonCreate(ts.Table),
	} {
		t.Run(name, func(t *testing.T) {
			st := openPersistent(t, c, withReqID(callCtx(t, ts), "req-1"))
			psend(t, st, pcreateReq(cr))
			_, err := pend(t, st)
			wantMessage(t, err, codes.InvalidArgument, `"req-1" already names a stream with another record type, descriptor or Avro schema`)
		})
	}
}

// TestAvroFaults: fault injection acts on Avro streams as on others: a
// lost create response is recovered by the idempotent create, a commit
// without its ack by the resume.
func TestAvroFaults(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ts.Inject(server.Match{Table: ts.Table, Kind: server.KindPersistent}, server.Fault{Kind: server.FaultLoseOpenResponse})
	st := openPersistent(t, c, withReqID(callCtx(t, ts), "lost"))
	psend(t, st, pcreateReq(avroCreate(ts.Table, avroSchema)))
	_, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	st, id := pcreateAvro(t, ts, c, "lost", avroSchema)
	ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	pavro(t, st, 0, avroDatum(t, "a", 1))
	pavro(t, st, 1, avroDatum(t, "b", 2), avroDatum(t, "c", 3))
	acks, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	if len(acks) > 0 && acks[len(acks)-1] >= 1 {
		t.Fatalf("acks %v: the fault lets no ack of offset 1 out", acks)
	}
	st, w := presumeAs(t, ts, c, id, ingestpb.RecordType_AVRO)
	if w == nil || *w != 1 {
		t.Fatalf("watermark %v, want 1", w)
	}
	pavro(t, st, 2, avroDatum(t, "d", 4))
	pwaitAck(t, st, 2)
	pclose(t, st)
	if m := meta(t, ts.Server, id); m.Records != 4 {
		t.Fatalf("meta %+v", m)
	}
}

// TestAvroBoltRestart: the durable engine keeps an Avro stream's schema
// across a restart, and the resumed stream checks datums with it.
func TestAvroBoltRestart(t *testing.T) {
	dir := t.TempDir()
	token := "restart-token"
	var id string
	t.Run("before", func(t *testing.T) {
		st, err := server.OpenBoltStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() }) // after the server's cleanup (LIFO)
		ts := servertest.Start(t, servertest.WithStore(st), servertest.WithToken(token))
		c := ts.Client(t)
		var pst pstream
		pst, id = pcreateAvro(t, ts, c, "durable", avroSchema)
		pavro(t, pst, 0, avroDatum(t, "a", 1), avroDatum(t, "b", 2))
		pwaitAck(t, pst, 0)
		pclose(t, pst)
	})
	st, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := servertest.Start(t, servertest.WithStore(st), servertest.WithToken(token))
	c := ts.Client(t)
	if m := meta(t, ts.Server, id); m.AvroSchema != avroSchema || m.RecordType != int32(ingestpb.RecordType_AVRO) || m.Records != 2 {
		t.Fatalf("after the restart: %+v", m)
	}
	pst, w := presumeAs(t, ts, c, id, ingestpb.RecordType_AVRO)
	if w == nil || *w != 0 {
		t.Fatalf("watermark %v", w)
	}
	pavro(t, pst, 1, avroDatum(t, "c", 3))
	pwaitAck(t, pst, 1)
	pavro(t, pst, 2, append(avroDatum(t, "d", 4), 0))
	_, err = pend(t, pst)
	wantMessage(t, err, codes.InvalidArgument, "offset 2: invalid AVRO record: 1 bytes left over after the datum")
	// The idempotent create still knows the stream and its schema.
	pst, id2 := pcreateAvro(t, ts, c, "durable", avroSchema)
	if id2 != id {
		t.Fatalf("create after the restart: %s, want %s", id2, id)
	}
	pclose(t, pst)
	if bs := storedRecords(t, ts, id); len(bs) != 2 {
		t.Fatalf("stored %v", bs)
	}
}
