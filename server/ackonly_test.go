package server_test

import (
	"net"
	"testing"

	"google.golang.org/grpc/codes"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// The ack-only engine does the handshake of both kinds (create, resume
// with the watermark, ownership), checks offsets and record types and
// acknowledges cumulatively; it validates no payload and stores no record.
func TestAckOnlyEngine(t *testing.T) {
	ts := servertest.Start(t, servertest.AckOnly())
	c := ts.Client(t)

	st, id := pcreate(t, ts, c, "rid")
	pjson(t, st, 0, `not json at all`) // not validated
	pjson(t, st, 1, `{}`, `{}`, `{}`)
	pjson(t, st, 2, `{}`)
	pwaitAck(t, st, 2)
	pjson(t, st, 1, `{"other":1}`) // a duplicate: acknowledged again, not compared
	pwaitAck(t, st, 2)
	pclose(t, st)
	if m := meta(t, ts.Server, id); m.Watermark != 2 || m.Records != 5 {
		t.Fatalf("meta %+v", m)
	}
	if got := records(t, ts.Server, id); len(got) != 0 {
		t.Fatalf("ack-only stored %q", got)
	}

	// Resume tells the watermark; the next offset is checked.
	st2, w := presume(t, ts, c, id)
	if w == nil || *w != 2 {
		t.Fatalf("watermark %v", w)
	}
	pjson(t, st2, 3, `{}`)
	pwaitAck(t, st2, 3)
	pjson(t, st2, 5, `{}`)
	_, err := pend(t, st2)
	wantCode(t, err, codes.OutOfRange)

	// Wrong record type and unknown ids are refused as by the real engine.
	st3 := openPersistent(t, c, callCtx(t, ts))
	psend(t, st3, presumeReq(id, ingestpb.RecordType_PROTO, mustMarshal(t, eventDescriptor())))
	_, err = pend(t, st3)
	wantCode(t, err, codes.InvalidArgument)
	st4 := openPersistent(t, c, callCtx(t, ts))
	psend(t, st4, presumeReq("ps-missing", ingestpb.RecordType_JSON, nil))
	_, err = pend(t, st4)
	wantCode(t, err, codes.NotFound)

	// Ephemeral: offsets from 0, cumulative acks.
	est, _ := ecreate(t, ts, c, jsonCreate(ts.Table))
	for off := range int64(10) {
		ejson(t, est, off, `x`)
	}
	ewaitAck(t, est, 9)
	ejson(t, est, 11, `x`)
	wantCode(t, eend(est), codes.OutOfRange)
}

// server.New with EngineAckOnly serves as it is, and refuses a Store.
func TestAckOnlyEngineWithNew(t *testing.T) {
	if _, err := server.New(server.Options{Engine: server.EngineAckOnly, Store: server.NewMemoryStore()}); err == nil {
		t.Fatal("EngineAckOnly with a Store: no error")
	}
	if _, err := server.New(server.Options{Engine: server.Engine(7)}); err == nil {
		t.Fatal("unknown engine: no error")
	}
	srv, err := server.New(server.Options{Engine: server.EngineAckOnly})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	ts := &servertest.Server{Server: srv, Addr: lis.Addr().String(), Table: servertest.DefaultTable}
	c := ts.Client(t)
	st, _ := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{}`)
	pwaitAck(t, st, 0)
	pclose(t, st)
}
