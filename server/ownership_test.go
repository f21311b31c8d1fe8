package server_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// The sequence of issue 7, §2: alice and carol may both write the table;
// carol reuses alice's client_request_id. Carol gets her own stream,
// alice is not fenced, nothing of carol's lands in alice's stream, every
// acknowledged record is stored, and ids leak nothing.
func TestRequestIDIsScopedToPrincipalAndTable(t *testing.T) {
	const otherTable = "main.other.t"
	ts := startServer(t,
		servertest.WithPrincipal("tok-carol", server.Principal{Name: "carol", Tables: []string{servertest.DefaultTable}}),
		servertest.WithPrincipal("tok-dave", server.Principal{Name: "dave", Tables: []string{otherTable}}))
	c := ts.Client(t)

	// alice (the default token) creates "job-42" and writes 0-2.
	alice, aliceID := pcreate(t, ts, c, "job-42")
	for off := range int64(3) {
		pjson(t, alice, off, `{"who":"alice","n":`+string(rune('0'+off))+`}`)
	}
	pwaitAck(t, alice, 2)

	// carol: same table, same id: her own, new stream.
	carol := openPersistent(t, c, withReqID(ctxWith(t, "tok-carol", ts.Table), "job-42"))
	psend(t, carol, pcreateReq(jsonCreate(ts.Table)))
	r, err := carol.Recv()
	if err != nil {
		t.Fatalf("carol's create: %v", err)
	}
	carolID := r.GetCreateStreamResponse().GetStreamId()
	if carolID == "" || carolID == aliceID {
		t.Fatalf("carol got stream %q (alice's is %q)", carolID, aliceID)
	}
	pjson(t, carol, 0, `{"who":"carol"}`)
	pwaitAck(t, carol, 0)
	// carol's offset 3 is a gap in her stream, not alice's offset 3.
	pjson(t, carol, 3, `{"who":"carol","n":3}`)
	_, err = pend(t, carol)
	wantCode(t, err, codes.OutOfRange)

	// alice was not fenced: she goes on at 3.
	pjson(t, alice, 3, `{"who":"alice","n":3}`)
	pwaitAck(t, alice, 3)
	pclose(t, alice)

	// dave, on another table, reuses the id: his own stream too.
	dave := openPersistent(t, c, withReqID(ctxWith(t, "tok-dave", otherTable), "job-42"))
	psend(t, dave, pcreateReq(jsonCreate(otherTable)))
	r, err = dave.Recv()
	if err != nil {
		t.Fatalf("dave's create: %v", err)
	}
	if id := r.GetCreateStreamResponse().GetStreamId(); id == "" || id == aliceID || id == carolID {
		t.Fatalf("dave got stream %q", id)
	}
	pclose(t, dave)

	got := records(t, ts.Server, aliceID)
	if len(got) != 4 {
		t.Fatalf("alice's stream: %q", got)
	}
	for _, b := range got {
		if !strings.Contains(b[0], "alice") {
			t.Fatalf("alice's stream holds %q", got)
		}
	}
	if got := records(t, ts.Server, carolID); len(got) != 1 || got[0][0] != `{"who":"carol"}` {
		t.Fatalf("carol's stream: %q", got)
	}
	if m := meta(t, ts.Server, carolID); m.Principal != "carol" || m.RequestID != "job-42" {
		t.Fatalf("carol's stream meta %+v", m)
	}
	// alice repeating her create still finds her own stream.
	again, id := pcreate(t, ts, c, "job-42")
	if id != aliceID {
		t.Fatalf("alice's repeated create: %q, want %q", id, aliceID)
	}
	pclose(t, again)
}

// Resume and retire of another principal's stream are NOT_FOUND with the
// same message as for an id that does not exist (the id substituted), and
// change nothing.
func TestOtherPrincipalsStreamIsNotFound(t *testing.T) {
	ts := startServer(t,
		servertest.WithPrincipal("tok-carol", server.Principal{Name: "carol", Tables: []string{servertest.DefaultTable}}),
		servertest.WithPrincipal("tok-admin", server.Principal{Name: "admin", Tables: []string{server.AllTables}}))
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "job-42")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	// alice's connection stays open: a foreign resume must not fence it.
	before := takeSnapshot(t, ts.Server)
	const missing = "ps-00000000000000000000000000000000"

	resumeStatus := func(token, id string) *status.Status {
		t.Helper()
		s := openPersistent(t, c, ctxWith(t, token, ts.Table))
		psend(t, s, presumeReq(id, ingestpb.RecordType_JSON, nil))
		_, err := pend(t, s)
		return status.Convert(err)
	}
	retireStatus := func(token, id string) *status.Status {
		t.Helper()
		_, err := c.RetireStream(ctxWith(t, token, ts.Table), retireReq(ts.Table, id))
		return status.Convert(err)
	}
	for _, token := range []string{"tok-carol", "tok-admin"} {
		for name, call := range map[string]func(string, string) *status.Status{"resume": resumeStatus, "retire": retireStatus} {
			foreign, absent := call(token, id), call(token, missing)
			if foreign.Code() != codes.NotFound || absent.Code() != codes.NotFound {
				t.Fatalf("%s %s: %v and %v, want NOT_FOUND", token, name, foreign.Err(), absent.Err())
			}
			if strings.ReplaceAll(foreign.Message(), id, "ID") != strings.ReplaceAll(absent.Message(), missing, "ID") {
				t.Fatalf("%s %s: messages differ: %q and %q", token, name, foreign.Message(), absent.Message())
			}
		}
	}
	pjson(t, st, 1, `{}`)
	pwaitAck(t, st, 1) // not fenced
	pclose(t, st)
	after := takeSnapshot(t, ts.Server)
	if m := meta(t, ts.Server, id); m.Retired || m.Watermark != 1 || len(before.streams) != len(after.streams) {
		t.Fatalf("stream after foreign resume/retire: %+v", m)
	}
	// The owner may retire it.
	if _, err := c.RetireStream(ctxWith(t, ts.Token, ts.Table), retireReq(ts.Table, id)); err != nil {
		t.Fatal(err)
	}
}

// With strict duplicates (servertest's default) a resent offset is
// compared with the stored records: the same records are acknowledged
// again, different ones end the call with FAILED_PRECONDITION naming the
// offset, and nothing is written.
func TestStrictDuplicates(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "rid")
	pjson(t, st, 0, `{"v":0}`)
	pjson(t, st, 1, `{"v":1}`, `{"v":"1b"}`)
	pwaitAck(t, st, 1)
	// The same records again, on the same connection: acknowledged.
	pjson(t, st, 0, `{"v":0}`)
	pwaitAck(t, st, 1)
	pclose(t, st)
	before := takeSnapshot(t, ts.Server)

	for _, tc := range []struct {
		name string
		open func() pstream
		off  int64
		recs []string
	}{
		{"resume, other payload", func() pstream { s, _ := presume(t, ts, c, id); return s }, 0, []string{`{"v":"other"}`}},
		{"repeated create, other payload", func() pstream { s, _ := pcreate(t, ts, c, "rid"); return s }, 0, []string{`{"v":"other"}`}},
		{"repeated create, fewer records", func() pstream { s, _ := pcreate(t, ts, c, "rid"); return s }, 1, []string{`{"v":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.open()
			if tc.off == 1 {
				pjson(t, s, 0, `{"v":0}`) // the same: fine
			}
			pjson(t, s, tc.off, tc.recs...)
			_, err := pend(t, s)
			wantCode(t, err, codes.FailedPrecondition)
			if !strings.Contains(status.Convert(err).Message(), "offset "+string(rune('0'+tc.off))) {
				t.Fatalf("status does not name the offset: %v", err)
			}
		})
	}
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("store changed")
	}
	// The same records after a repeated create: acknowledged, not rewritten.
	s, _ := pcreate(t, ts, c, "rid")
	pjson(t, s, 0, `{"v":0}`)
	pjson(t, s, 1, `{"v":1}`, `{"v":"1b"}`)
	pwaitAck(t, s, 1)
	pjson(t, s, 2, `{"v":2}`)
	pwaitAck(t, s, 2)
	pclose(t, s)
	if got := records(t, ts.Server, id); len(got) != 3 || got[1][1] != `{"v":"1b"}` {
		t.Fatalf("records %q", got)
	}
}

// A closed (proto2) enum field with a value outside its enum does not
// match the descriptor: INVALID_ARGUMENT, nothing stored.
func TestClosedEnumOutOfRangeIsRefused(t *testing.T) {
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	enumType := descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum()
	desc := &descriptorpb.DescriptorProto{
		Name: proto.String("Order"),
		Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("state"), Number: proto.Int32(1), Label: opt, Type: enumType, TypeName: proto.String(".shop.Order.State")},
			{Name: proto.String("history"), Number: proto.Int32(2), Label: rep, Type: enumType, TypeName: proto.String(".shop.Order.State")},
		},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("State"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("NEW"), Number: proto.Int32(1)},
				{Name: proto.String("PAID"), Number: proto.Int32(2)},
			},
		}},
	}
	enc := func(field protowire.Number, vals ...uint64) []byte {
		var b []byte
		for _, v := range vals {
			b = protowire.AppendTag(b, field, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
		return b
	}
	packed := protowire.AppendTag(nil, 2, protowire.BytesType)
	packed = protowire.AppendBytes(packed, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 7))

	ts := startServer(t)
	c := ts.Client(t)
	st := openPersistent(t, c, withReqID(callCtx(t, ts), ""))
	psend(t, st, pcreateReq(protoCreate(ts.Table, mustMarshal(t, desc))))
	r, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	pproto(t, st, 0, enc(1, 2), enc(2, 1, 2, 1))
	pwaitAck(t, st, 0)
	pclose(t, st)
	before := takeSnapshot(t, ts.Server)
	for name, rec := range map[string][]byte{
		"singular":              enc(1, 3),
		"negative":              enc(1, uint64(0xffffffffffffffff)),
		"zero, not in the enum": enc(1, 0),
		"repeated":              enc(2, 1, 9),
		"packed":                packed,
	} {
		t.Run(name, func(t *testing.T) {
			s := openPersistent(t, c, callCtx(t, ts))
			psend(t, s, presumeReq(id, ingestpb.RecordType_PROTO, mustMarshal(t, desc)))
			if r, err := s.Recv(); err != nil || r.GetResumeStreamResponse() == nil {
				t.Fatalf("resume: %v %v", r, err)
			}
			pproto(t, s, 1, rec)
			_, err := pend(t, s)
			wantCode(t, err, codes.InvalidArgument)
		})
	}
	if !sameSnapshot(before, takeSnapshot(t, ts.Server)) {
		t.Fatal("store changed")
	}
}
