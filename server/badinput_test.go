package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// seeded starts a server holding one persistent stream with two committed
// batches, and returns it with the stream id.
func seeded(t *testing.T) (*servertest.Server, string) {
	t.Helper()
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "seed")
	pjson(t, st, 0, `{"seed":0}`)
	pjson(t, st, 1, `{"seed":1}`, `{"seed":2}`)
	pwaitAck(t, st, 1)
	pclose(t, st)
	return ts, id
}

func eph(p *ingestpb.EphemeralStreamRequest) *ingestpb.EphemeralStreamRequest { return p }

func TestBadFirstMessages(t *testing.T) {
	ts, id := seeded(t)
	cc := ts.Dial(t)
	before := takeSnapshot(t, ts.Server)
	ingest := jsonRec(0, `{}`)
	batch := jsonBatch(0, `{}`, `{}`)
	malformed := []byte{0x0a, 0x05, 0x01} // field 1, length 5, 1 byte
	for _, tc := range []struct {
		name   string
		method string
		msgs   []any
	}{
		{"ephemeral ingest first", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: ingest}})}},
		{"ephemeral batch first", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: batch}})}},
		{"ephemeral empty message", "EphemeralStream", []any{&ingestpb.EphemeralStreamRequest{}}},
		{"ephemeral resume", "EphemeralStream", []any{presumeReq(id, ingestpb.RecordType_JSON, nil)}},
		{"ephemeral malformed", "EphemeralStream", []any{malformed}},
		{"ephemeral nothing", "EphemeralStream", nil},
		{"ephemeral no table", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: &ingestpb.CreateIngestStreamRequest{RecordType: ingestpb.RecordType_JSON.Enum()}}})}},
		{"ephemeral bad table", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate("main..events")}})}},
		{"ephemeral two-part table", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate("main.events")}})}},
		{"ephemeral unspecified type", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table), RecordType: ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED.Enum()}}})}},
		{"ephemeral missing type", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table)}}})}},
		{"ephemeral unknown type", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table), RecordType: ingestpb.RecordType(9).Enum()}}})}},
		{"ephemeral proto without descriptor", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: protoCreate(ts.Table, nil)}})}},
		{"ephemeral proto bad descriptor", "EphemeralStream", []any{eph(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: protoCreate(ts.Table, malformed)}})}},
		{"persistent ingest first", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: ingest}}}},
		{"persistent batch first", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: batch}}}},
		{"persistent empty message", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{}}},
		{"persistent malformed", "PersistentStream", []any{malformed}},
		{"persistent nothing", "PersistentStream", nil},
		{"persistent create without body", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{}}}}},
		{"persistent create bad table", "PersistentStream", []any{pcreateReq(jsonCreate("a.b.c.d"))}},
		{"persistent create no type", "PersistentStream", []any{pcreateReq(&ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table)})}},
		{"persistent resume without id", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_ResumeStream{ResumeStream: &ingestpb.ResumeIngestStreamRequest{RecordType: ingestpb.RecordType_JSON.Enum()}}}}},
		{"persistent resume without type", "PersistentStream", []any{&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_ResumeStream{ResumeStream: &ingestpb.ResumeIngestStreamRequest{Identifier: &ingestpb.ResumeIngestStreamRequest_StreamId{StreamId: id}}}}}},
		{"persistent resume wrong type", "PersistentStream", []any{presumeReq(id, ingestpb.RecordType_PROTO, nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rawCall(t, cc, callCtx(t, ts), tc.method, tc.msgs...)
			wantCode(t, err, codes.InvalidArgument)
			if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
				t.Fatal("store changed")
			}
		})
	}
}

func TestBadMessagesAfterOpen(t *testing.T) {
	ts, seedID := seeded(t)
	c := ts.Client(t)
	seedBefore := records(t, ts.Server, seedID)
	protoRec := &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: &ingestpb.IngestRecordRequest{
		OffsetId: proto.Int64(1), Record: &ingestpb.IngestRecordRequest_ProtoEncodedRecord{ProtoEncodedRecord: []byte{}}}}}
	rec := func(r *ingestpb.IngestRecordRequest) *ingestpb.PersistentStreamRequest {
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: r}}
	}
	bat := func(r *ingestpb.IngestRecordBatchRequest) *ingestpb.PersistentStreamRequest {
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: r}}
	}
	for _, tc := range []struct {
		name string
		req  *ingestpb.PersistentStreamRequest
		code codes.Code
	}{
		{"second create", pcreateReq(jsonCreate(ts.Table)), codes.InvalidArgument},
		{"resume after open", presumeReq(seedID, ingestpb.RecordType_JSON, nil), codes.InvalidArgument},
		{"empty message", &ingestpb.PersistentStreamRequest{}, codes.InvalidArgument},
		{"missing offset", rec(&ingestpb.IngestRecordRequest{Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: `{}`}}), codes.InvalidArgument},
		{"negative offset", rec(jsonRec(-1, `{}`)), codes.InvalidArgument},
		{"no record", rec(&ingestpb.IngestRecordRequest{OffsetId: proto.Int64(1)}), codes.InvalidArgument},
		{"batch without records", bat(&ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(1)}), codes.InvalidArgument},
		{"empty batch", bat(jsonBatch(1)), codes.InvalidArgument},
		{"proto record on json stream", protoRec, codes.InvalidArgument},
		{"bad json", rec(jsonRec(1, `{"a":}`)), codes.InvalidArgument},
		{"json array", rec(jsonRec(1, `[{}]`)), codes.InvalidArgument},
		{"bad json in batch", bat(jsonBatch(1, `{}`, `nope`)), codes.InvalidArgument},
		{"gap", rec(jsonRec(2, `{}`)), codes.OutOfRange},
		// Over the limit (but under gRPC's own limit, 9/8 of it): a client bug, not retryable.
		{"oversize", rec(jsonRec(1, `{"x":"`+strings.Repeat("y", server.DefaultMaxMessageBytes)+`"}`)), codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id := pcreate(t, ts, c, "")
			pjson(t, st, 0, `{"ok":0}`)
			pwaitAck(t, st, 0)
			psend(t, st, tc.req)
			acks, err := pend(t, st)
			wantCode(t, err, tc.code)
			if len(acks) != 0 {
				t.Fatalf("acks %v", acks)
			}
			if got := records(t, ts.Server, id); len(got) != 1 || got[0][0] != `{"ok":0}` {
				t.Fatalf("records %q", got)
			}
			if got := records(t, ts.Server, seedID); len(got) != len(seedBefore) {
				t.Fatalf("seed changed: %q", got)
			}
			// The stream stays usable: a resume continues after the valid record.
			st2, w := presume(t, ts, c, id)
			if w == nil || *w != 0 {
				t.Fatalf("watermark %v", w)
			}
			pjson(t, st2, 1, `{"ok":1}`)
			pwaitAck(t, st2, 1)
			pclose(t, st2)
		})
	}
}

func TestBadMessagesOnEphemeral(t *testing.T) {
	ts, _ := seeded(t)
	c := ts.Client(t)
	before := takeSnapshot(t, ts.Server)
	for _, tc := range []struct {
		name string
		req  *ingestpb.EphemeralStreamRequest
		code codes.Code
	}{
		{"second create", &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(ts.Table)}}, codes.InvalidArgument},
		{"bad json", &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: jsonRec(1, `{`)}}, codes.InvalidArgument},
		{"gap", &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: jsonRec(3, `{}`)}}, codes.OutOfRange},
		{"oversize", &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: jsonRec(1, strings.Repeat(" ", server.DefaultMaxMessageBytes)+`{}`)}}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id := ecreate(t, ts, c, jsonCreate(ts.Table))
			ejson(t, st, 0, `{"ok":0}`)
			ewaitAck(t, st, 0)
			esend(t, st, tc.req)
			wantCode(t, eend(st), tc.code)
			if got := records(t, ts.Server, id); len(got) != 1 {
				t.Fatalf("records %q", got)
			}
			for _, m := range before.streams {
				if got, _ := ts.Records(t.Context(), m.ID); len(got) != len(before.records[m.ID]) {
					t.Fatalf("stream %s changed", m.ID)
				}
			}
		})
	}
}

func TestBadCredentialsAndHeaders(t *testing.T) {
	ts, id := seeded(t)
	c := ts.Client(t)
	before := takeSnapshot(t, ts.Server)
	for _, tc := range []struct {
		name         string
		token, table string
		code         codes.Code
	}{
		{"no token", "", ts.Table, codes.Unauthenticated},
		{"bad token", "bad", ts.Table, codes.Unauthenticated},
		{"wrong table header", ts.Token, "main.default.other", codes.InvalidArgument},
		{"no table header", ts.Token, "", codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []*ingestpb.PersistentStreamRequest{
				pcreateReq(jsonCreate(ts.Table)),
				presumeReq(id, ingestpb.RecordType_JSON, nil),
			} {
				st := openPersistent(t, c, ctxWith(t, tc.token, tc.table))
				psend(t, st, req)
				pjson(t, st, 2, `{"intruder":true}`)
				_, err := pend(t, st)
				wantCode(t, err, tc.code)
			}
			if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
				t.Fatal("store changed")
			}
		})
	}
	// Malformed authorization values.
	for _, v := range []string{"Basic abc", "Bearer", "Bearer   ", ts.Token} {
		ctx := callCtx(t, ts)
		st := openPersistent(t, c, withReqID(ctxWithAuthValue(ctx, v, ts.Table), ""))
		psend(t, st, pcreateReq(jsonCreate(ts.Table)))
		_, err := pend(t, st)
		wantCode(t, err, codes.Unauthenticated)
	}
}

func TestMalformedMessageAfterOpen(t *testing.T) {
	ts, _ := seeded(t)
	cc := ts.Dial(t)
	before := takeSnapshot(t, ts.Server)
	err := rawCall(t, cc, callCtx(t, ts), "PersistentStream", pcreateReq(jsonCreate(ts.Table)),
		&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: jsonRec(0, `{}`)}},
		[]byte{0x1a, 0x7f})
	wantCode(t, err, codes.InvalidArgument)
	after := takeSnapshot(t, ts.Server)
	if len(after.streams) != len(before.streams)+1 {
		t.Fatalf("streams %v", after.streams)
	}
	for id, bs := range before.records {
		if len(after.records[id]) != len(bs) {
			t.Fatalf("stream %s changed", id)
		}
	}
	// A malformed RetireStream request.
	st, err := cc.NewStream(callCtx(t, ts), &grpc.StreamDesc{}, "/databricks.zerobus.Zerobus/RetireStream", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg([]byte{0x0a, 0x09}); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	var resp ingestpb.RetireStreamResponse
	wantCode(t, st.RecvMsg(&resp), codes.InvalidArgument)
}
