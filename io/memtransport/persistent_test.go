package memtransport_test

import (
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestPersistentCreateResumeAndDuplicates(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, r := openStream(t, srv, persistent)
	id := r.StreamID
	send(t, c, 0, "a")
	send(t, c, 1, "b", "c")
	wantAcks(t, c, 0, 1)
	c.Abort()

	c2, rr := openStream(t, srv, resumeOf(id))
	if !rr.HasOffset || rr.Offset != 1 {
		t.Fatalf("resume answered %+v, want watermark 1", rr)
	}
	send(t, c2, 1, "b", "c") // at the watermark: acknowledged again, not stored
	send(t, c2, 2, "d")
	send(t, c2, 2, "d") // again
	wantAcks(t, c2, 1, 2, 2)
	send(t, c2, 4, "gap")
	wantEnd(t, c2, core.CodeOutOfRange)

	if got := batchesString(srv.Batches(id)); got != "|0:a|1:b,c|2:d" {
		t.Fatalf("batches %q", got)
	}
	if w, ok := srv.Watermark(id); !ok || w != 2 {
		t.Fatalf("watermark %d %v", w, ok)
	}
}

func TestPersistentResumeOfEmptyStream(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, r := openStream(t, srv, persistent)
	c.Abort()
	c2, rr := openStream(t, srv, resumeOf(r.StreamID))
	if rr.HasOffset {
		t.Fatalf("resume of an empty stream answered %+v", rr)
	}
	send(t, c2, 0, "a")
	wantAck(t, c2, 0)
}

func TestPersistentResumeRefusals(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	_, r := openStream(t, srv, persistent)
	_, re := openStream(t, srv, ephemeral)

	wrongType := resumeOf(r.StreamID)
	wrongType.RecordType = core.RecordProto
	wantEnd(t, open(t, srv, wrongType), core.CodeInvalidArgument)
	wantEnd(t, open(t, srv, resumeOf("stream-999")), core.CodeNotFound)
	wantEnd(t, open(t, srv, resumeOf(re.StreamID)), core.CodeNotFound)
}

func TestIdempotentCreate(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c1, r1 := openStream(t, srv, createWith("req-1"))
	send(t, c1, 0, "a")
	send(t, c1, 1, "b")

	// The same request id: the same stream; the older connection is
	// fenced after what it had queued.
	c2, r2 := openStream(t, srv, createWith("req-1"))
	if r2.StreamID != r1.StreamID {
		t.Fatalf("repeated create made %q, want %q", r2.StreamID, r1.StreamID)
	}
	wantAcks(t, c1, 0, 1)
	wantEnd(t, c1, core.CodeAborted)

	// The client starts again at 0: acknowledged up to what it sent, not
	// beyond, and nothing is stored twice.
	send(t, c2, 0, "a")
	wantAck(t, c2, 0)
	send(t, c2, 1, "b")
	send(t, c2, 2, "c")
	wantAcks(t, c2, 1, 2)
	if got := batchesString(srv.Batches(r1.StreamID)); got != "|0:a|1:b|2:c" {
		t.Fatalf("batches %q", got)
	}

	_, r3 := openStream(t, srv, createWith("req-2"))
	_, r4 := openStream(t, srv, persistent)
	_, r5 := openStream(t, srv, persistent)
	if r3.StreamID == r1.StreamID || r4.StreamID == r5.StreamID {
		t.Fatalf("creates share ids: %q %q %q %q", r1.StreamID, r3.StreamID, r4.StreamID, r5.StreamID)
	}

	other := createWith("req-1")
	other.RecordType = core.RecordProto
	wantEnd(t, open(t, srv, other), core.CodeInvalidArgument)
}

func TestResumeFencesOlderConnection(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	old, r := openStream(t, srv, persistent)
	send(t, old, 0, "a")

	cur, rr := openStream(t, srv, resumeOf(r.StreamID))
	if rr.Offset != 0 || !rr.HasOffset {
		t.Fatalf("resume answered %+v", rr)
	}
	wantAck(t, old, 0) // queued before the fence: delivered first
	wantEnd(t, old, core.CodeAborted)
	err := old.Send(streamCall(1))
	wantCode(t, err, core.CodeAborted)

	send(t, cur, 1, "b")
	wantAck(t, cur, 1)
	if got := batchesString(srv.Batches(r.StreamID)); got != "|0:a|1:b" {
		t.Fatalf("batches %q", got)
	}
	if info, _ := srv.Stream(r.StreamID); info.Connections != 2 {
		t.Fatalf("info %+v", info)
	}
}
