package memtransport_test

import (
	"context"
	"testing"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestReadBackAndStats(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	ce, re := openStream(t, srv, ephemeral)
	cp, rp := openStream(t, srv, createWith("r"))

	payload := []byte("p0")
	if err := cp.Send(streamio.Call{Wire: 0, Record: payload}); err != nil {
		t.Fatal(err)
	}
	payload[0] = 'X' // the server kept its own copy
	send(t, cp, 1, "p1", "p2")
	send(t, cp, 1, "p1", "p2") // duplicate: received, not stored
	send(t, ce, 0, "e0")
	cp.Abort()
	openStream(t, srv, resumeOf(rp.StreamID))
	srv.Transport().InvalidateCredentials()
	srv.Transport().InvalidateCredentials()
	if _, err := srv.Transport().Open(canceled(), ephemeral); err == nil {
		t.Fatal("Open with a done context succeeded")
	}

	if got := srv.Records(rp.StreamID); len(got) != 3 || string(got[0]) != "p0" || string(got[2]) != "p2" {
		t.Fatalf("records %q", got)
	}
	want := []memtransport.StreamInfo{
		{ID: re.StreamID, Kind: core.Ephemeral, RecordType: core.RecordJSON, Watermark: 0, Connections: 1},
		{ID: rp.StreamID, Kind: core.Persistent, RecordType: core.RecordJSON, RequestID: "r", Watermark: 1, Connections: 2},
	}
	got := srv.Streams()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("streams\n got %+v\nwant %+v", got, want)
	}
	if _, ok := srv.Stream("nope"); ok {
		t.Fatal("Stream of an unknown id")
	}
	if _, ok := srv.Watermark("nope"); ok {
		t.Fatal("Watermark of an unknown id")
	}
	if srv.Batches("nope") != nil {
		t.Fatal("Batches of an unknown id")
	}
	wantStats := memtransport.Stats{Opens: 4, Creates: 2, Resumes: 1, Calls: 4, Stored: 3, Records: 4, CredentialInvalidations: 2}
	if st := srv.Stats(); st != wantStats {
		t.Fatalf("stats\n got %+v\nwant %+v", st, wantStats)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestAckOnly(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{AckOnly: true})
	c, r := openStream(t, srv, createWith("r"))
	for i := range int64(5) {
		send(t, c, i, "x")
		wantAck(t, c, i)
	}
	send(t, c, 2, "x") // duplicate
	wantAck(t, c, 4)
	c.Abort()
	c2, rr := openStream(t, srv, resumeOf(r.StreamID))
	if !rr.HasOffset || rr.Offset != 4 {
		t.Fatalf("resume answered %+v", rr)
	}
	send(t, c2, 6, "gap")
	wantEnd(t, c2, core.CodeOutOfRange)

	_, r2 := openStream(t, srv, createWith("r"))
	if r2.StreamID != r.StreamID {
		t.Fatal("idempotent create broken in ack-only mode")
	}
	ce, _ := openStream(t, srv, ephemeral)
	send(t, ce, 0, "x")
	wantAck(t, ce, 0)
	send(t, ce, 0, "x")
	wantEnd(t, ce, core.CodeOutOfRange)

	if b := srv.Batches(r.StreamID); b != nil {
		t.Fatalf("ack-only stored %v", b)
	}
	if st := srv.Stats(); st.Stored != 0 || st.Records != 0 || st.Calls != 9 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAckOnlySendRecvDoesNotAllocate(t *testing.T) {
	for _, req := range []streamio.OpenRequest{ephemeral, persistent} {
		srv := memtransport.NewServer(memtransport.Options{AckOnly: true})
		c, _ := openStream(t, srv, req)
		call := streamio.Call{Record: []byte("{}")}
		allocs := testing.AllocsPerRun(1000, func() {
			if err := c.Send(call); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Recv(); err != nil {
				t.Fatal(err)
			}
			call.Wire++
		})
		if allocs != 0 {
			t.Fatalf("%s: %v allocations per Send+Recv", req.Kind, allocs)
		}
	}
}

func TestDropConnections(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	ce, _ := openStream(t, srv, ephemeral)
	cp, rp := openStream(t, srv, persistent)
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultHangOpen})
	ch := open(t, srv, persistent)
	ended, _ := openStream(t, srv, ephemeral)
	ended.Abort()
	send(t, cp, 0, "a")
	if n := srv.DropConnections(0); n != 3 {
		t.Fatalf("dropped %d connections, want 3", n)
	}
	wantEnd(t, ce, core.CodeUnavailable)
	wantAck(t, cp, 0)
	wantEnd(t, cp, core.CodeUnavailable)
	wantEnd(t, ch, core.CodeUnavailable)
	if n := srv.DropConnections(core.CodeInternal); n != 0 {
		t.Fatalf("dropped %d connections again", n)
	}
	c, r := openStream(t, srv, resumeOf(rp.StreamID))
	if r.Offset != 0 || !r.HasOffset {
		t.Fatalf("resume after the restart answered %+v", r)
	}
	send(t, c, 1, "b")
	wantAck(t, c, 1)
}
