package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// ---- ephemeral helpers ----

func ecreate(t *testing.T, ts *servertest.Server, c ingestpb.ZerobusClient, cr *ingestpb.CreateIngestStreamRequest) (estream, string) {
	t.Helper()
	st, err := c.EphemeralStream(callCtx(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	esend(t, st, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: cr}})
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("ephemeral create: %v", err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	if id == "" {
		t.Fatalf("create answered with %v", r)
	}
	return st, id
}

func esend(t *testing.T, st estream, req *ingestpb.EphemeralStreamRequest) {
	t.Helper()
	if err := st.Send(req); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("send: %v", err)
	}
}

func ejson(t *testing.T, st estream, off int64, recs ...string) {
	t.Helper()
	if len(recs) == 1 {
		esend(t, st, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: jsonRec(off, recs[0])}})
		return
	}
	esend(t, st, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: jsonBatch(off, recs...)}})
}

func ewaitAck(t *testing.T, st estream, want int64) {
	t.Helper()
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("waiting for ack %d: %v", want, err)
		}
		a := r.GetIngestRecordResponse().GetDurabilityAckUpToOffset()
		if a > want {
			t.Fatalf("ack %d above %d", a, want)
		}
		if a == want {
			return
		}
	}
}

func eend(st estream) error {
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// ---- proto fixtures ----

// eventDescriptor is message acme.Event { required string name = 1;
// optional int64 n = 2; optional Inner inner = 3; message Inner { optional
// int32 x = 1; } }.
func eventDescriptor() *descriptorpb.DescriptorProto {
	opt, req := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
	return &descriptorpb.DescriptorProto{
		Name: proto.String("Event"),
		Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("name"), Number: proto.Int32(1), Label: req, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
			{Name: proto.String("n"), Number: proto.Int32(2), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()},
			{Name: proto.String("inner"), Number: proto.Int32(3), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".acme.Event.Inner")},
		},
		NestedType: []*descriptorpb.DescriptorProto{{
			Name:  proto.String("Inner"),
			Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("x"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}},
		}},
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func eventType(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("acme/event.proto"), Package: proto.String("acme"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{eventDescriptor()},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

func eventRecord(t *testing.T, name string, n int64) []byte {
	t.Helper()
	md := eventType(t)
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(name))
	m.Set(md.Fields().ByName("n"), protoreflect.ValueOfInt64(n))
	inner := m.Mutable(md.Fields().ByName("inner")).Message()
	inner.Set(md.Fields().ByNumber(3).Message().Fields().ByName("x"), protoreflect.ValueOfInt32(7))
	return mustMarshal(t, m)
}

func protoCreate(table string, desc []byte) *ingestpb.CreateIngestStreamRequest {
	return &ingestpb.CreateIngestStreamRequest{TableName: proto.String(table), RecordType: ingestpb.RecordType_PROTO.Enum(), DescriptorProto: desc}
}

func pproto(t *testing.T, st pstream, off int64, recs ...[]byte) {
	t.Helper()
	if len(recs) == 1 {
		psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: &ingestpb.IngestRecordRequest{
			OffsetId: proto.Int64(off), Record: &ingestpb.IngestRecordRequest_ProtoEncodedRecord{ProtoEncodedRecord: recs[0]}}}})
		return
	}
	psend(t, st, &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{
		OffsetId: proto.Int64(off), Batch: &ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch{ProtoEncodedBatch: &ingestpb.ProtoEncodedRecordBatch{Records: recs}}}}})
}

// ---- stream kinds ----

func TestEphemeralCreateIngestAck(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := ecreate(t, ts, c, jsonCreate(ts.Table))
	ejson(t, st, 0, `{"a":1}`)
	ejson(t, st, 1, `{"a":2}`, `{"a":3}`, `{"a":4}`)
	ewaitAck(t, st, 1)
	st.CloseSend()
	if err := eend(st); err != nil {
		t.Fatal(err)
	}
	got := records(t, ts.Server, id)
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 3 || got[1][2] != `{"a":4}` {
		t.Fatalf("records %q", got)
	}
	m := meta(t, ts.Server, id)
	if m.Kind != server.KindEphemeral || m.Table != ts.Table || m.Watermark != 1 || m.Records != 4 || m.Principal != "servertest" {
		t.Fatalf("meta %+v", m)
	}
}

func TestEphemeralEachConnectionIsANewStream(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ids := map[string]bool{}
	for i := range 3 {
		st, id := ecreate(t, ts, c, jsonCreate(ts.Table))
		if ids[id] {
			t.Fatalf("id %s reused", id)
		}
		ids[id] = true
		ejson(t, st, 0, `{"conn":`+string(rune('0'+i))+`}`) // offsets restart at 0
		ewaitAck(t, st, 0)
		st.CloseSend()
		if err := eend(st); err != nil {
			t.Fatal(err)
		}
	}
	ms, _ := ts.Streams(t.Context())
	if len(ms) != 3 {
		t.Fatalf("%d streams", len(ms))
	}
	// Acks are cumulative: one ack may cover several requests.
	st, _ := ecreate(t, ts, c, jsonCreate(ts.Table))
	for off := range int64(50) {
		ejson(t, st, off, `{}`)
	}
	ewaitAck(t, st, 49)
	st.CloseSend()
	eend(st)
}

func TestPersistentCreateIngestResume(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{"i":0}`)
	pjson(t, st, 1, `{"i":1}`, `{"i":2}`)
	pwaitAck(t, st, 1)
	pclose(t, st)

	st2, w := presume(t, ts, c, id)
	if w == nil || *w != 1 {
		t.Fatalf("watermark %v, want 1", w)
	}
	pjson(t, st2, 2, `{"i":3}`)
	pwaitAck(t, st2, 2)
	pclose(t, st2)
	if got := records(t, ts.Server, id); len(got) != 3 || got[2][0] != `{"i":3}` {
		t.Fatalf("records %q", got)
	}
	m := meta(t, ts.Server, id)
	if m.Kind != server.KindPersistent || m.Watermark != 2 || m.Records != 4 {
		t.Fatalf("meta %+v", m)
	}
}

func TestPersistentResumeEmptyHasNoWatermark(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pclose(t, st)
	st2, w := presume(t, ts, c, id)
	if w != nil {
		t.Fatalf("watermark %d, want absent", *w)
	}
	pjson(t, st2, 0, `{}`)
	pwaitAck(t, st2, 0)
	pclose(t, st2)
}

func TestIdempotentCreate(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st1, id1 := pcreate(t, ts, c, "req-1")
	pjson(t, st1, 0, `{}`)
	pwaitAck(t, st1, 0)
	pclose(t, st1)
	st2, id2 := pcreate(t, ts, c, "req-1")
	if id1 != id2 {
		t.Fatalf("repeated client_request_id: %s then %s", id1, id2)
	}
	// A create repeated after a lost response resends from 0: re-acked, not rewritten.
	pjson(t, st2, 0, `{}`)
	pwaitAck(t, st2, 0)
	pjson(t, st2, 1, `{"new":1}`)
	pwaitAck(t, st2, 1)
	pclose(t, st2)
	st3, id3 := pcreate(t, ts, c, "req-2")
	pclose(t, st3)
	st4, id4 := pcreate(t, ts, c, "")
	pclose(t, st4)
	if id3 == id1 || id4 == id1 || id3 == id4 {
		t.Fatalf("ids %s %s %s", id1, id3, id4)
	}
	if got := records(t, ts.Server, id1); len(got) != 2 {
		t.Fatalf("records %q", got)
	}
	if m := meta(t, ts.Server, id1); m.RequestID != "req-1" {
		t.Fatalf("meta %+v", m)
	}
	// The same id for another table or record type is refused.
	pst := openPersistent(t, c, withReqID(callCtx(t, ts), "req-1"))
	psend(t, pst, pcreateReq(protoCreate(ts.Table, mustMarshal(t, eventDescriptor()))))
	_, err := pend(t, pst)
	wantCode(t, err, codes.InvalidArgument)
}

// A repeated create tells the client nothing about the stream's
// watermark, so the client starts again at 0: acks must not exceed what it
// sent on the new connection.
func TestRepeatedCreateAcksOnlyWhatWasSent(t *testing.T) {
	// Different records under a resent offset: lenient duplicates (see
	// TestStrictDuplicates for the default).
	ts := startServer(t, servertest.LenientDuplicates())
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "rid")
	for off := range int64(5) {
		pjson(t, st, off, fmt.Sprintf(`{"v":%d}`, off))
	}
	pwaitAck(t, st, 4)
	pclose(t, st)
	before := records(t, ts.Server, id)

	st2, id2 := pcreate(t, ts, c, "rid")
	if id2 != id {
		t.Fatalf("id %s, want %s", id2, id)
	}
	pjson(t, st2, 0, `{"v":"again 0"}`)
	pwaitAck(t, st2, 0) // fails on an ack above 0
	pjson(t, st2, 1, `{"v":"again 1"}`, `{"v":"again 1b"}`)
	pwaitAck(t, st2, 1)
	for off := int64(2); off <= 4; off++ {
		pjson(t, st2, off, `{"v":"again"}`)
	}
	pwaitAck(t, st2, 4)
	pjson(t, st2, 5, `{"v":5}`)
	pwaitAck(t, st2, 5)
	pclose(t, st2)
	got := records(t, ts.Server, id)
	if len(got) != 6 || got[5][0] != `{"v":5}` {
		t.Fatalf("records %q", got)
	}
	for i := range before {
		if len(got[i]) != 1 || got[i][0] != before[i][0] {
			t.Fatalf("batch %d rewritten: %q", i, got[i])
		}
	}
	// A resume is told the watermark: a resent offset below it is acked with
	// the watermark, as before.
	st3, w := presume(t, ts, c, id)
	if w == nil || *w != 5 {
		t.Fatalf("watermark %v", w)
	}
	pjson(t, st3, 0, `{}`)
	pwaitAck(t, st3, 5)
	pclose(t, st3)
}

func TestResumeUnknownIsNotFound(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st := openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq("ps-doesnotexist", ingestpb.RecordType_JSON, nil))
	_, err := pend(t, st)
	wantCode(t, err, codes.NotFound)
	// An ephemeral stream cannot be resumed either.
	est, eid := ecreate(t, ts, c, jsonCreate(ts.Table))
	est.CloseSend()
	eend(est)
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(eid, ingestpb.RecordType_JSON, nil))
	_, err = pend(t, st)
	wantCode(t, err, codes.NotFound)
}

func TestResumeMismatchIsInvalidArgument(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	desc := mustMarshal(t, eventDescriptor())
	st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
	psend(t, st, pcreateReq(protoCreate(ts.Table, desc)))
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	pproto(t, st, 0, eventRecord(t, "a", 1))
	pwaitAck(t, st, 0)
	pclose(t, st)
	before := takeSnapshot(t, ts.Server)

	other := eventDescriptor()
	other.Field[1].Type = descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	cases := map[string]*ingestpb.PersistentStreamRequest{
		"json on proto":      presumeReq(id, ingestpb.RecordType_JSON, nil),
		"other descriptor":   presumeReq(id, ingestpb.RecordType_PROTO, mustMarshal(t, other)),
		"missing descriptor": presumeReq(id, ingestpb.RecordType_PROTO, nil),
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			st := openPersistent(t, c, callCtx(t, ts))
			psend(t, st, req)
			_, err := pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	// The same descriptor, serialized again, resumes.
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(id, ingestpb.RecordType_PROTO, mustMarshal(t, eventDescriptor())))
	if r, err := st.Recv(); err != nil || r.GetResumeStreamResponse().GetLastCommittedOffset() != 0 {
		t.Fatalf("resume: %v %v", r, err)
	}
	pclose(t, st)
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("store changed")
	}
}

func TestRetire(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ctx := callCtx(t, ts)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pjson(t, st, 1, `{}`)
	pwaitAck(t, st, 1)
	// Retiring fences the live writer.
	resp, err := c.RetireStream(ctx, retireReq(ts.Table, id))
	if err != nil || proto.Size(resp) != 0 {
		t.Fatalf("retire: %v %v (the answer is empty)", resp, err)
	}
	if m := meta(t, ts.Server, id); m.Watermark != 1 {
		t.Fatalf("retired at watermark %d, want 1", m.Watermark)
	}
	// ABORTED, not NOT_FOUND: the writer is fenced before the retire is
	// done; its resume tells it the outcome.
	_, err = pend(t, st)
	wantCode(t, err, codes.Aborted)
	if !strings.Contains(err.Error(), "being retired") {
		t.Fatalf("message %v", err)
	}
	if !meta(t, ts.Server, id).Retired {
		t.Fatal("not retired")
	}
	// Retired streams cannot be resumed.
	rst := openPersistent(t, c, callCtx(t, ts))
	psend(t, rst, presumeReq(id, ingestpb.RecordType_JSON, nil))
	_, err = pend(t, rst)
	wantCode(t, err, codes.NotFound)
	if !strings.Contains(err.Error(), "retired") {
		t.Fatalf("message %v", err)
	}
	// Retire is idempotent; unknown ids are NOT_FOUND; the table must be
	// the stream's.
	if resp, err := c.RetireStream(ctx, retireReq(ts.Table, id)); err != nil {
		t.Fatalf("retire again: %v %v", resp, err)
	}
	_, err = c.RetireStream(ctx, retireReq(ts.Table, "nope"))
	wantCode(t, err, codes.NotFound)
	_, err = c.RetireStream(ctx, &ingestpb.RetireStreamRequest{})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.RetireStream(ctx, &ingestpb.RetireStreamRequest{Identifier: &ingestpb.RetireStreamRequest_StreamId{StreamId: id}})
	wantCode(t, err, codes.InvalidArgument) // no table_name
	_, err = c.RetireStream(callCtx(t, ts), retireReq("main.other.table", id))
	wantCode(t, err, codes.InvalidArgument)
	if err != nil && !strings.Contains(err.Error(), "is not the table of stream") {
		t.Fatalf("another table: %v", err)
	}
	est, _ := pcreate(t, ts, c, "")
	pclose(t, est)
	ms, _ := ts.Streams(t.Context())
	for _, m := range ms {
		if m.ID != id {
			resp, err := c.RetireStream(ctx, retireReq(ts.Table, m.ID))
			if err != nil || !meta(t, ts.Server, m.ID).Retired {
				t.Fatalf("retire empty: %v %v", resp, err)
			}
		}
	}
	// A repeated create of a retired stream's request id is refused.
	st5, _ := pcreate(t, ts, c, "r")
	pclose(t, st5)
	ms, _ = ts.Streams(t.Context())
	for _, m := range ms {
		if m.RequestID == "r" {
			c.RetireStream(ctx, retireReq(ts.Table, m.ID))
		}
	}
	st6 := openPersistent(t, c, withReqID(callCtx(t, ts), "r"))
	psend(t, st6, pcreateReq(jsonCreate(ts.Table)))
	_, err = pend(t, st6)
	wantCode(t, err, codes.NotFound)
	// Ephemeral streams cannot be retired.
	es, eid := ecreate(t, ts, c, jsonCreate(ts.Table))
	_, err = c.RetireStream(ctx, retireReq(ts.Table, eid))
	wantCode(t, err, codes.InvalidArgument)
	es.CloseSend()
	eend(es)
}

// ---- offsets ----

func TestOffsetsAtOrBelowWatermarkAreReackedNotWritten(t *testing.T) {
	// Different records under a resent offset: lenient duplicates (see
	// TestStrictDuplicates for the default).
	ts := startServer(t, servertest.LenientDuplicates())
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{"v":0}`)
	pjson(t, st, 1, `{"v":1}`)
	pjson(t, st, 2, `{"v":2}`)
	pwaitAck(t, st, 2)
	// On the same connection.
	pjson(t, st, 1, `{"v":"other"}`)
	pwaitAck(t, st, 2)
	pclose(t, st)
	// After a resume.
	st2, w := presume(t, ts, c, id)
	if *w != 2 {
		t.Fatalf("watermark %d", *w)
	}
	pjson(t, st2, 0, `{"v":"again"}`)
	pwaitAck(t, st2, 2)
	pjson(t, st2, 3, `{"v":3}`)
	pwaitAck(t, st2, 3)
	pclose(t, st2)
	got := records(t, ts.Server, id)
	if len(got) != 4 || got[0][0] != `{"v":0}` || got[1][0] != `{"v":1}` {
		t.Fatalf("records %q", got)
	}
}

func TestOffsetGapIsOutOfRange(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pjson(t, st, 2, `{}`)
	acks, err := pend(t, st)
	wantCode(t, err, codes.OutOfRange)
	if len(acks) != 1 || acks[0] != 0 {
		t.Fatalf("acks %v", acks)
	}
	st2, _ := presume(t, ts, c, id)
	pjson(t, st2, 5, `{}`)
	_, err = pend(t, st2)
	wantCode(t, err, codes.OutOfRange)
	if got := records(t, ts.Server, id); len(got) != 1 {
		t.Fatalf("records %q", got)
	}
	// Ephemeral: the first offset must be 0.
	est, eid := ecreate(t, ts, c, jsonCreate(ts.Table))
	ejson(t, est, 1, `{}`)
	wantCode(t, eend(est), codes.OutOfRange)
	if got := records(t, ts.Server, eid); len(got) != 0 {
		t.Fatalf("records %q", got)
	}
}

// ---- payload validation ----

func TestJSONRecordsMustBeObjects(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	for _, bad := range []string{`[1]`, `42`, `"s"`, `{"a":`, ``, `{} {}`, `null`, "{\"a\":\"\xff\"}", "{\"\xc3\":1}"} {
		t.Run(bad, func(t *testing.T) {
			st, id := pcreate(t, ts, c, "")
			pjson(t, st, 0, ` {"ok":true} `)
			pjson(t, st, 1, `{"x":1}`, bad)
			acks, err := pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
			if len(acks) != 1 || acks[0] != 0 {
				t.Fatalf("acks %v", acks)
			}
			if got := records(t, ts.Server, id); len(got) != 1 {
				t.Fatalf("records %q", got)
			}
		})
	}
}

func TestProtoRecordsAreValidated(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	desc := mustMarshal(t, eventDescriptor())
	md := eventType(t)
	missing := dynamicpb.NewMessage(md)
	missing.Set(md.Fields().ByName("n"), protoreflect.ValueOfInt64(3))
	partial, err := proto.MarshalOptions{AllowPartial: true}.Marshal(missing)
	if err != nil {
		t.Fatal(err)
	}
	unknown := append(eventRecord(t, "u", 1), 0x78, 0x01) // field 15 varint
	for name, bad := range map[string][]byte{
		"garbage":          {0x0a, 0x05, 0x01},
		"missing required": partial,
		"unknown field":    unknown,
		"wrong wire type":  {0x08, 0x01}, // field 1 as varint, declared string
	} {
		t.Run(name, func(t *testing.T) {
			st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
			psend(t, st, pcreateReq(protoCreate(ts.Table, desc)))
			r, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			id := r.GetCreateStreamResponse().GetStreamId()
			good := eventRecord(t, "good", 2)
			pproto(t, st, 0, eventRecord(t, "good", 1), good)
			pwaitAck(t, st, 0)
			pproto(t, st, 1, bad)
			_, err = pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
			bs, _ := ts.Records(t.Context(), id)
			if len(bs) != 1 || len(bs[0].Records) != 2 || !bytes.Equal(bs[0].Records[1], good) {
				t.Fatalf("records %v", bs)
			}
		})
	}
	// Invalid descriptors are refused at create.
	unresolved := eventDescriptor()
	unresolved.Field[2].TypeName = proto.String(".acme.Missing")
	for name, d := range map[string][]byte{
		"none":       nil,
		"garbage":    {0x0a, 0x05, 0x01},
		"unresolved": mustMarshal(t, unresolved),
		"no name":    mustMarshal(t, &descriptorpb.DescriptorProto{}),
	} {
		t.Run("descriptor "+name, func(t *testing.T) {
			st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
			psend(t, st, pcreateReq(protoCreate(ts.Table, d)))
			_, err := pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	// Recursive and nested messages: the server infers the package from
	// the message's references to itself, also when its name occurs in the
	// package.
	for _, tc := range recursiveCases() {
		t.Run("recursive "+tc.name, func(t *testing.T) {
			md := tc.build(t)
			st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
			psend(t, st, pcreateReq(protoCreate(ts.Table, mustMarshal(t, tc.desc))))
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			id := r.GetCreateStreamResponse().GetStreamId()
			good := mustMarshal(t, tc.fill(md))
			pproto(t, st, 0, good, mustMarshal(t, dynamicpb.NewMessage(md)))
			pwaitAck(t, st, 0)
			pproto(t, st, 1, []byte{0x0a, 0x05, 0x01})
			_, err = pend(t, st)
			wantCode(t, err, codes.InvalidArgument)
			bs, _ := ts.Records(t.Context(), id)
			if len(bs) != 1 || len(bs[0].Records) != 2 || !bytes.Equal(bs[0].Records[0], good) {
				t.Fatalf("records %v", bs)
			}
		})
	}
}

type recursiveCase struct {
	name string
	pkg  string
	desc *descriptorpb.DescriptorProto
	fill func(md protoreflect.MessageDescriptor) proto.Message // a non-trivial record
}

func (tc recursiveCase) build(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("test/" + tc.name + ".proto"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{tc.desc},
	}
	if tc.pkg != "" {
		fdp.Package = proto.String(tc.pkg)
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

// recursiveCases: message Node { optional string name = 1; repeated Node
// kids = 2; } in several packages, and message Tree { repeated Branch
// branches = 1; message Branch { optional int32 x = 1; repeated Branch sub
// = 2; } }.
func recursiveCases() []recursiveCase {
	opt, rep := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	msgT := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	node := func(pkg string) recursiveCase {
		self := "." + pkg + ".Node"
		if pkg == "" {
			self = ".Node"
		}
		label := pkg
		if pkg == "" {
			label = "(none)"
		}
		return recursiveCase{
			name: "Node in package " + label, pkg: pkg,
			desc: &descriptorpb.DescriptorProto{
				Name: proto.String("Node"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("name"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
					{Name: proto.String("kids"), Number: proto.Int32(2), Label: rep, Type: msgT, TypeName: proto.String(self)},
				},
			},
			fill: func(md protoreflect.MessageDescriptor) proto.Message {
				m := dynamicpb.NewMessage(md)
				m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("root"))
				kids := m.Mutable(md.Fields().ByName("kids")).List()
				kid := kids.NewElement().Message()
				kid.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("kid"))
				kid.Mutable(md.Fields().ByName("kids")).List().Append(protoreflect.ValueOfMessage(dynamicpb.NewMessage(md)))
				kids.Append(protoreflect.ValueOfMessage(kid))
				return m
			},
		}
	}
	tree := func(pkg string) recursiveCase {
		branch := "." + pkg + ".Tree.Branch"
		return recursiveCase{
			name: "nested Tree.Branch in package " + pkg, pkg: pkg,
			desc: &descriptorpb.DescriptorProto{
				Name:  proto.String("Tree"),
				Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("branches"), Number: proto.Int32(1), Label: rep, Type: msgT, TypeName: proto.String(branch)}},
				NestedType: []*descriptorpb.DescriptorProto{{
					Name: proto.String("Branch"),
					Field: []*descriptorpb.FieldDescriptorProto{
						{Name: proto.String("x"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()},
						{Name: proto.String("sub"), Number: proto.Int32(2), Label: rep, Type: msgT, TypeName: proto.String(branch)},
					},
				}},
			},
			fill: func(md protoreflect.MessageDescriptor) proto.Message {
				m := dynamicpb.NewMessage(md)
				bd := md.Fields().ByName("branches").Message()
				b := dynamicpb.NewMessage(bd)
				b.Set(bd.Fields().ByName("x"), protoreflect.ValueOfInt32(3))
				sub := dynamicpb.NewMessage(bd)
				sub.Set(bd.Fields().ByName("x"), protoreflect.ValueOfInt32(4))
				b.Mutable(bd.Fields().ByName("sub")).List().Append(protoreflect.ValueOfMessage(sub))
				m.Mutable(md.Fields().ByName("branches")).List().Append(protoreflect.ValueOfMessage(b))
				return m
			},
		}
	}
	return []recursiveCase{node("acme"), node(""), node("acme.Node.v1"), node("Node"), tree("acme"), tree("trees.Tree")}
}

func TestOversizeMessageRefused(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	big := `{"b":"` + strings.Repeat("x", server.DefaultMaxMessageBytes) + `"}`
	pjson(t, st, 1, big)
	_, err := pend(t, st)
	// INVALID_ARGUMENT, not RESOURCE_EXHAUSTED: clients retry the latter and
	// would resend the same message forever.
	wantCode(t, err, codes.InvalidArgument)
	n := proto.Size(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: jsonRec(1, big)}})
	if msg, want := status.Convert(err).Message(), fmt.Sprintf("message of %d bytes exceeds the 10485760-byte limit", n); msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	if got := records(t, ts.Server, id); len(got) != 1 {
		t.Fatalf("records %d", len(got))
	}
	// Just under the limit is fine.
	st2, _ := presume(t, ts, c, id)
	pjson(t, st2, 1, `{"b":"`+strings.Repeat("x", server.DefaultMaxMessageBytes-100)+`"}`)
	pwaitAck(t, st2, 1)
	pclose(t, st2)
}

func TestOversizeMessageLimits(t *testing.T) {
	const limit = 1024
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.MaxMessageBytes = limit }))
	c := ts.Client(t)
	for _, tc := range []struct {
		name string
		size int // record bytes
		code codes.Code
		msg  string
	}{
		{"just over the limit", limit + 1, codes.InvalidArgument, "-byte limit"},
		{"under 9/8 of the limit", limit + limit/8 - 40, codes.InvalidArgument, "-byte limit"},
		// Over 9/8 of it gRPC refuses the message itself, before reading it,
		// to bound memory (a receiver takes that much of the budget before
		// it reads): RESOURCE_EXHAUSTED (which clients retry).
		{"over 9/8 of the limit", limit + limit/8 + 1, codes.ResourceExhausted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id := pcreate(t, ts, c, "")
			pjson(t, st, 0, `{}`)
			pwaitAck(t, st, 0)
			pjson(t, st, 1, `{"b":"`+strings.Repeat("x", tc.size)+`"}`)
			acks, err := pend(t, st)
			wantCode(t, err, tc.code)
			if msg := status.Convert(err).Message(); tc.msg != "" && !strings.Contains(msg, fmt.Sprintf("exceeds the %d-byte limit", limit)) {
				t.Fatalf("message %q", msg)
			}
			if len(acks) != 0 {
				t.Fatalf("acks %v", acks)
			}
			if got := records(t, ts.Server, id); len(got) != 1 {
				t.Fatalf("records %q", got)
			}
		})
	}
	// An oversize first message is refused the same way.
	st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
	psend(t, st, pcreateReq(jsonCreate(ts.Table+strings.Repeat("x", limit))))
	_, err := pend(t, st)
	wantCode(t, err, codes.InvalidArgument)
	if !strings.Contains(err.Error(), "byte limit") {
		t.Fatal(err)
	}
}

// ---- auth ----

func TestAuth(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := startServer(t,
		servertest.WithPrincipal("tok-other", server.Principal{Name: "other", Tables: []string{"main.other.t"}}),
		servertest.WithPrincipal("tok-admin", server.Principal{Name: "admin", Tables: []string{server.AllTables}}),
		servertest.WithOptions(func(o *server.Options) { o.Logger = logger }))
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	pclose(t, st)
	before := takeSnapshot(t, ts.Server)

	create := pcreateReq(jsonCreate(ts.Table))
	resume := presumeReq(id, ingestpb.RecordType_JSON, nil)
	for _, tc := range []struct {
		name         string
		token, table string
		req          *ingestpb.PersistentStreamRequest
		code         codes.Code
	}{
		{"no token", "", ts.Table, create, codes.Unauthenticated},
		{"bad token", "nope", ts.Table, create, codes.Unauthenticated},
		{"no token resume", "", ts.Table, resume, codes.Unauthenticated},
		{"other table create", "tok-other", ts.Table, create, codes.PermissionDenied},
		// Another principal's stream is NOT_FOUND, as a missing one (§6.6),
		// even for a principal that may write every table.
		{"other principal resume", "tok-other", ts.Table, resume, codes.NotFound},
		{"other principal resume own header", "tok-other", "main.other.t", resume, codes.NotFound},
		{"admin resume", "tok-admin", ts.Table, resume, codes.NotFound},
		{"header mismatch create", ts.Token, "main.other.t", create, codes.InvalidArgument},
		{"header mismatch resume", ts.Token, "main.other.t", resume, codes.InvalidArgument},
		{"header missing", ts.Token, "", create, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openPersistent(t, c, ctxWith(t, tc.token, tc.table))
			psend(t, st, tc.req)
			pjson(t, st, 1, `{}`)
			_, err := pend(t, st)
			wantCode(t, err, tc.code)
			// PERMISSION_DENIED does not name another principal's table.
			noTable := func(err error) {
				t.Helper()
				if status.Code(err) == codes.PermissionDenied && strings.Contains(err.Error(), ts.Table) {
					t.Fatalf("PERMISSION_DENIED names the table: %v", err)
				}
			}
			noTable(err)
			// Ephemeral and retire too.
			if tc.req == create {
				est, err := c.EphemeralStream(ctxWith(t, tc.token, tc.table))
				if err != nil {
					t.Fatal(err)
				}
				esend(t, est, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(ts.Table)}})
				err = eend(est)
				wantCode(t, err, tc.code)
				noTable(err)
			} else {
				_, err := c.RetireStream(ctxWith(t, tc.token, tc.table), retireReq(ts.Table, id))
				wantCode(t, err, tc.code)
				noTable(err)
			}
		})
	}
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("store changed")
	}
	// The owner may resume with the right header.
	st2 := openPersistent(t, c, ctxWith(t, ts.Token, ts.Table))
	psend(t, st2, resume)
	if _, err := st2.Recv(); err != nil {
		t.Fatal(err)
	}
	pclose(t, st2)
	// RetireStream checks the table header only when present.
	if _, err := c.RetireStream(ctxWith(t, ts.Token, ""), retireReq(ts.Table, id)); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if logs.Len() == 0 {
		t.Fatal("nothing logged")
	}
	for _, tok := range []string{ts.Token, "tok-other", "tok-admin"} {
		if strings.Contains(logs.String(), tok) {
			t.Fatalf("token %q logged", tok)
		}
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestOpenModeNeedsNoToken(t *testing.T) {
	ts := startServer(t, servertest.Open())
	c := ts.Client(t)
	st := openPersistent(t, c, withReqID(ctxWith(t, "", ""), ""))
	psend(t, st, pcreateReq(jsonCreate("any.table.here")))
	if r, err := st.Recv(); err != nil || r.GetCreateStreamResponse().GetStreamId() == "" {
		t.Fatalf("create: %v %v", r, err)
	}
	pclose(t, st)
	// A present header must still match.
	st = openPersistent(t, c, ctxWith(t, "", "x.y.z"))
	psend(t, st, pcreateReq(jsonCreate("any.table.here")))
	_, err := pend(t, st)
	wantCode(t, err, codes.InvalidArgument)
}

// ---- rotation ----

func TestSessionRotation(t *testing.T) {
	const grace = 300 * time.Millisecond
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) {
		o.SessionAge, o.CloseGrace = 200*time.Millisecond, grace
	}))
	c := ts.Client(t)
	for _, persistent := range []bool{false, true} {
		var recv func() (*ingestpb.CloseStreamSignal, *ingestpb.IngestRecordResponse, error)
		var send func(off int64)
		var id string
		if persistent {
			st, pid := pcreate(t, ts, c, "")
			id = pid
			recv = func() (*ingestpb.CloseStreamSignal, *ingestpb.IngestRecordResponse, error) {
				r, err := st.Recv()
				return r.GetCloseStreamSignal(), r.GetIngestRecordResponse(), err
			}
			send = func(off int64) { pjson(t, st, off, `{}`) }
		} else {
			st, eid := ecreate(t, ts, c, jsonCreate(ts.Table))
			id = eid
			recv = func() (*ingestpb.CloseStreamSignal, *ingestpb.IngestRecordResponse, error) {
				r, err := st.Recv()
				return r.GetCloseStreamSignal(), r.GetIngestRecordResponse(), err
			}
			send = func(off int64) { ejson(t, st, off, `{}`) }
		}
		start := time.Now()
		send(0)
		var sig *ingestpb.CloseStreamSignal
		for sig == nil {
			s, _, err := recv()
			if err != nil {
				t.Fatalf("before signal: %v", err)
			}
			sig = s
		}
		if d := sig.GetDuration().AsDuration(); d != grace {
			t.Fatalf("signal duration %v", d)
		}
		signalled := time.Now()
		send(1) // still accepted during the grace
		var last int64 = -1
		for {
			_, ack, err := recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("after signal: %v", err)
			}
			if ack != nil {
				last = ack.GetDurabilityAckUpToOffset()
			}
		}
		if last != 1 {
			t.Fatalf("last ack %d", last)
		}
		if time.Since(signalled) < grace-50*time.Millisecond || signalled.Sub(start) < 150*time.Millisecond {
			t.Fatalf("timing: signal after %v, end %v after signal", signalled.Sub(start), time.Since(signalled))
		}
		if got := records(t, ts.Server, id); len(got) != 2 {
			t.Fatalf("records %q", got)
		}
	}
}

// ---- fencing ----

func TestResumeFencesOlderConnection(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	old, id := pcreate(t, ts, c, "")
	pjson(t, old, 0, `{}`)
	pwaitAck(t, old, 0)
	st2, w := presume(t, ts, c, id)
	if *w != 0 {
		t.Fatalf("watermark %d", *w)
	}
	_, err := pend(t, old)
	wantCode(t, err, codes.Aborted)
	pjson(t, st2, 1, `{"new":1}`)
	pwaitAck(t, st2, 1)
	// A repeated create by request id fences too.
	pclose(t, st2)
	a, aid := pcreate(t, ts, c, "same")
	b, bid := pcreate(t, ts, c, "same")
	if aid != bid {
		t.Fatal("ids differ")
	}
	_, err = pend(t, a)
	wantCode(t, err, codes.Aborted)
	pclose(t, b)
}

// blockingStore blocks Append of one stream until released.
type blockingStore struct {
	server.Store
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
	appends atomic.Int64
	delay   time.Duration
}

func (s *blockingStore) Append(ctx context.Context, id string, batches []server.Batch) error {
	s.appends.Add(1)
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	if s.block.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.release
	}
	return s.Store.Append(ctx, id, batches)
}

func TestFencingWaitsForAnAppendInProgress(t *testing.T) {
	bs := &blockingStore{Store: newTestStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	ts := startServer(t, servertest.WithStore(bs))
	c := ts.Client(t)
	old, id := pcreate(t, ts, c, "")
	bs.block.Store(true)
	pjson(t, old, 0, `{}`)
	<-bs.entered
	type res struct {
		w   *int64
		err error
	}
	done := make(chan res, 1)
	st2 := openPersistent(t, c, callCtx(t, ts))
	go func() {
		st2.Send(presumeReq(id, ingestpb.RecordType_JSON, nil))
		r, err := st2.Recv()
		if err != nil {
			done <- res{nil, err}
			return
		}
		done <- res{r.GetResumeStreamResponse().LastCommittedOffset, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("resume answered during the old connection's append: %v", r)
	case <-time.After(100 * time.Millisecond):
	}
	close(bs.release)
	r := <-done
	// The fence cancels the old append's context: a MemoryStore completes it
	// anyway, a BoltStore may give up. Either way the resume reports what
	// is stored.
	if r.err != nil || (r.w != nil && *r.w != 0) {
		t.Fatalf("resume: %v %v", r.w, r.err)
	}
	stored := 0
	if r.w != nil {
		stored = 1
	}
	// The old connection, fenced during its append, sends nothing more and
	// writes nothing more.
	pjson(t, old, 1, `{}`)
	acks, err := pend(t, old)
	wantCode(t, err, codes.Aborted)
	if len(acks) != 0 {
		t.Fatalf("fenced connection acked %v", acks)
	}
	pclose(t, st2)
	if got := records(t, ts.Server, id); len(got) != stored {
		t.Fatalf("records %q, watermark %v", got, r.w)
	}
}

// ---- group commit ----

func TestSeveralRequestsPerAppend(t *testing.T) {
	bs := &blockingStore{Store: newTestStore(t), delay: 5 * time.Millisecond}
	ts := startServer(t, servertest.WithStore(bs))
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	const n = 200
	for off := range int64(n) {
		pjson(t, st, off, `{}`)
	}
	pwaitAck(t, st, n-1)
	pclose(t, st)
	if a := bs.appends.Load(); a > n/4 {
		t.Fatalf("%d Appends for %d requests", a, n)
	}
	if m := meta(t, ts.Server, id); m.Records != n {
		t.Fatalf("meta %+v", m)
	}
}

// ---- faults ----

func TestFaultFailOpen(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	h := ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultFailOpen, Code: codes.PermissionDenied, Message: "nope", Times: server.Unlimited})
	for range 2 {
		st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
		psend(t, st, pcreateReq(jsonCreate(ts.Table)))
		_, err := pend(t, st)
		wantCode(t, err, codes.PermissionDenied)
	}
	if h.Hits() != 2 {
		t.Fatalf("hits %d", h.Hits())
	}
	if ms, _ := ts.Streams(t.Context()); len(ms) != 0 {
		t.Fatalf("streams %v", ms)
	}
	h.Remove()
	st, id := pcreate(t, ts, c, "")
	pclose(t, st)
	// By stream id on resume, one-shot with default code.
	h = ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultFailOpen})
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, presumeReq(id, ingestpb.RecordType_JSON, nil))
	_, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	<-h.Fired()
	st, _ = presume(t, ts, c, id)
	pclose(t, st)
}

func TestFaultLoseOpenResponseThenIdempotentCreate(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ts.Inject(server.Match{Table: ts.Table, Kind: server.KindPersistent}, server.Fault{Kind: server.FaultLoseOpenResponse})
	st := openPersistent(t, c, withReqID(callCtx(t, ts), "lost"))
	psend(t, st, pcreateReq(jsonCreate(ts.Table)))
	_, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	ms, _ := ts.Streams(t.Context())
	if len(ms) != 1 {
		t.Fatalf("streams %v", ms)
	}
	st, id := pcreate(t, ts, c, "lost")
	if id != ms[0].ID {
		t.Fatalf("id %s, stored %s", id, ms[0].ID)
	}
	pclose(t, st)
}

func TestFaultDrop(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 2})
	st, id := pcreate(t, ts, c, "")
	for off := range int64(4) {
		pjson(t, st, off, `{}`)
	}
	acks, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	if len(acks) == 0 || acks[len(acks)-1] != 1 {
		t.Fatalf("acks %v", acks)
	}
	if m := meta(t, ts.Server, id); m.Watermark != 1 {
		t.Fatalf("watermark %d", m.Watermark)
	}
	// One-shot: the resume works normally.
	st, w := presume(t, ts, c, id)
	if *w != 1 {
		t.Fatal(*w)
	}
	pclose(t, st)
}

func TestFaultDropWithCode(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ts.Inject(server.Match{}, server.Fault{Kind: server.FaultDrop, After: 1, Code: codes.Internal, Message: "boom"})
	st, id := ecreate(t, ts, c, jsonCreate(ts.Table))
	ejson(t, st, 0, `{}`)
	ejson(t, st, 1, `{}`)
	err := eend(st)
	wantCode(t, err, codes.Internal)
	if !strings.Contains(err.Error(), "boom") {
		t.Fatal(err)
	}
	if got := records(t, ts.Server, id); len(got) != 1 {
		t.Fatalf("records %q", got)
	}
	// After 0: right after the open.
	ts.Inject(server.Match{}, server.Fault{Kind: server.FaultDrop, Code: codes.ResourceExhausted})
	st, _ = ecreate(t, ts, c, jsonCreate(ts.Table))
	wantCode(t, eend(st), codes.ResourceExhausted)
}

func TestFaultCommitThenDrop(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	pjson(t, st, 1, `{"lost-ack":true}`)
	acks, err := pend(t, st)
	wantCode(t, err, codes.Unavailable)
	if len(acks) != 0 {
		t.Fatalf("acks %v", acks)
	}
	st, w := presume(t, ts, c, id)
	if w == nil || *w != 1 {
		t.Fatalf("watermark %v", w)
	}
	pjson(t, st, 1, `{"lost-ack":true}`) // a client resending is re-acked
	pwaitAck(t, st, 1)
	pclose(t, st)
	if got := records(t, ts.Server, id); len(got) != 2 {
		t.Fatalf("records %q", got)
	}
}

func TestFaultDelayAndRepeatAcks(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	h := ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDelayAcks, Delay: 200 * time.Millisecond, Times: server.Unlimited})
	st, _ := pcreate(t, ts, c, "")
	start := time.Now()
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("ack after %v", d)
	}
	h.Remove()
	// After: 2, so that it cannot race with the ack of the first request.
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultRepeatAcks, Repeat: 2, After: 2})
	pjson(t, st, 1, `{}`)
	st.CloseSend()
	acks, err := pend(t, st)
	if err != nil || len(acks) != 3 || acks[0] != 1 || acks[2] != 1 {
		t.Fatalf("acks %v %v", acks, err)
	}
}

// TestFaultDelayAcksKeepsStoring: while every ack is held back, the server
// goes on reading and storing what the client sends, as a distant server
// does; the acks come Delay later, in order. (The delay used to be waited
// out in the committer, which then stored nothing, and the server stopped
// reading.)
func TestFaultDelayAcksKeepsStoring(t *testing.T) {
	const budget = 64 << 10
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.ReceiveBudget = budget }))
	c := ts.Client(t)
	const delay = 2 * time.Second
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDelayAcks, Delay: delay, Times: server.Unlimited})
	st, id := pcreate(t, ts, c, "")
	start := time.Now()
	// Sixteen times the receive budget: the server takes it only by
	// storing and taking more while the acks wait.
	const n = 64
	rec := `{"pad":"` + strings.Repeat("x", 16<<10) + `"}`
	for i := range int64(n) {
		pjson(t, st, i, rec)
	}
	for {
		bs, err := ts.Records(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == n {
			break
		}
		if time.Since(start) >= delay {
			t.Fatalf("%d of %d calls stored before the first held-back ack was due", len(bs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	pwaitAck(t, st, n-1)
	if d := time.Since(start); d < delay {
		t.Fatalf("acks held back %v, want %v", d, delay)
	}
}

func TestFaultCloseSignal(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	ts.Inject(server.Match{Kind: server.KindEphemeral}, server.Fault{Kind: server.FaultCloseSignal, After: 1, Delay: 50 * time.Millisecond})
	st, _ := ecreate(t, ts, c, jsonCreate(ts.Table))
	ejson(t, st, 0, `{}`)
	ewaitAck(t, st, 0)
	r, err := st.Recv()
	if err != nil || r.GetCloseStreamSignal().GetDuration().AsDuration() != 50*time.Millisecond {
		t.Fatalf("%v %v", r, err)
	}
	if err := eend(st); err != nil {
		t.Fatal(err)
	}
}

func TestFaultHostileAcks(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	m := server.Match{StreamID: id}
	next := func(off int64) *int64 {
		pjson(t, st, off, `{}`)
		r, err := st.Recv()
		if err != nil || r.GetIngestRecordResponse() == nil {
			t.Fatalf("%v %v", r, err)
		}
		return r.GetIngestRecordResponse().DurabilityAckUpToOffset
	}
	ts.Inject(m, server.Fault{Kind: server.FaultAckAboveSent})
	if a := next(1); a == nil || *a != 2 {
		t.Fatalf("above: %v", a)
	}
	ts.Inject(m, server.Fault{Kind: server.FaultAckBelowFloor})
	if a := next(2); a == nil || *a != 0 {
		t.Fatalf("below floor: %v", a)
	}
	ts.Inject(m, server.Fault{Kind: server.FaultAckMissing})
	if a := next(3); a != nil {
		t.Fatalf("missing: %v", *a)
	}
	if a := next(4); a == nil || *a != 4 {
		t.Fatalf("normal again: %v", a)
	}
	pclose(t, st)
	if mt := meta(t, ts.Server, id); mt.Watermark != 4 {
		t.Fatalf("watermark %d", mt.Watermark)
	}
}

func TestFaultOpenResponses(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	pclose(t, st)
	resumeWith := func(f server.Fault) *ingestpb.PersistentStreamResponse {
		ts.Inject(server.Match{StreamID: id}, f)
		st := openPersistent(t, c, callCtx(t, ts))
		psend(t, st, presumeReq(id, ingestpb.RecordType_JSON, nil))
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		pclose(t, st)
		return r
	}
	for _, w := range []int64{-5, 0, 7, math.MaxInt64} {
		r := resumeWith(server.Fault{Kind: server.FaultResumeWatermark, Watermark: w})
		if got := r.GetResumeStreamResponse().LastCommittedOffset; got == nil || *got != w {
			t.Fatalf("watermark %v, want %d", got, w)
		}
	}
	if r := resumeWith(server.Fault{Kind: server.FaultResumeWithoutWatermark}); r.GetResumeStreamResponse() == nil || r.GetResumeStreamResponse().LastCommittedOffset != nil {
		t.Fatalf("no watermark: %v", r)
	}
	if r := resumeWith(server.Fault{Kind: server.FaultOpenResponseKind}); r.GetCreateStreamResponse().GetStreamId() != id {
		t.Fatalf("resume answered %v", r)
	}
	// Creates.
	createWith := func(f server.Fault) *ingestpb.PersistentStreamResponse {
		ts.Inject(server.Match{Table: ts.Table}, f)
		st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
		psend(t, st, pcreateReq(jsonCreate(ts.Table)))
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		pclose(t, st)
		return r
	}
	if r := createWith(server.Fault{Kind: server.FaultOpenResponseKind}); r.GetResumeStreamResponse() == nil {
		t.Fatalf("create answered %v", r)
	}
	if r := createWith(server.Fault{Kind: server.FaultStreamIDMissing}); r.GetCreateStreamResponse() == nil || r.GetCreateStreamResponse().StreamId != nil {
		t.Fatalf("create answered %v", r)
	}
	// Ephemeral create without id.
	ts.Inject(server.Match{Kind: server.KindEphemeral}, server.Fault{Kind: server.FaultStreamIDMissing})
	est, err := c.EphemeralStream(callCtx(t, ts))
	if err != nil {
		t.Fatal(err)
	}
	esend(t, est, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(ts.Table)}})
	if r, err := est.Recv(); err != nil || r.GetCreateStreamResponse() == nil || r.GetCreateStreamResponse().StreamId != nil {
		t.Fatalf("%v %v", r, err)
	}
	est.CloseSend()
	eend(est)
}

func TestFaultMatchesOnlyItsStream(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	a, aid := pcreate(t, ts, c, "")
	b, _ := pcreate(t, ts, c, "")
	h := ts.Inject(server.Match{StreamID: aid}, server.Fault{Kind: server.FaultDrop, Times: server.Unlimited})
	pjson(t, b, 0, `{}`)
	pwaitAck(t, b, 0)
	pjson(t, a, 0, `{}`)
	_, err := pend(t, a)
	wantCode(t, err, codes.Unavailable)
	pjson(t, b, 1, `{}`)
	pwaitAck(t, b, 1)
	pclose(t, b)
	if h.Hits() != 1 {
		t.Fatalf("hits %d", h.Hits())
	}
	// Another table does not match a table fault.
	ts.Inject(server.Match{Table: "x.y.z"}, server.Fault{Kind: server.FaultFailOpen})
	st, _ := pcreate(t, ts, c, "")
	pclose(t, st)
}

// ---- TLS, stop, entry point ----

func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestTLS(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cf, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := server.LoadTLS(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.LoadTLS(cf, cf); err == nil {
		t.Fatal("LoadTLS accepted a certificate as key")
	}
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.TLS = cfg }))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	c := ts.Client(t, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost"})))
	st, _ := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	pclose(t, st)
	// Plaintext is refused.
	plain := ts.Client(t)
	_, err = plain.RetireStream(callCtx(t, ts), retireReq(ts.Table, "x"))
	wantCode(t, err, codes.Unavailable)
}

func TestGracefulStopAcksWhatWasReceived(t *testing.T) {
	srv, err := server.New(server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	ts := &servertest.Server{Server: srv, Addr: lis.Addr().String(), Table: "a.b.c"}
	c := ts.Client(t)
	st, _ := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	srv.GracefulStop()
	_, err = pend(t, st)
	wantCode(t, err, codes.Unavailable)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	srv.Stop() // idempotent
}

func TestListenAndServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.ListenAndServe(ctx, "127.0.0.1:0", server.Options{
			Auth:     server.NewAuth(map[string]server.Principal{"tok": {Name: "p", Tables: []string{"a.b.c"}}}),
			OnListen: func(a net.Addr) { addrc <- a },
		})
	}()
	addr := <-addrc
	ts := &servertest.Server{Addr: addr.String(), Token: "tok", Table: "a.b.c"}
	c := ts.Client(t)
	st, _ := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	pclose(t, st)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := server.ListenAndServe(t.Context(), "256.0.0.1:1", server.Options{}); err == nil {
		t.Fatal("bad address accepted")
	}
}

func TestNewRejectsNegativeOptions(t *testing.T) {
	if _, err := server.New(server.Options{SessionAge: -1}); err == nil {
		t.Fatal("accepted")
	}
}
