package memtransport_test

import (
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestEphemeralIngestAndReadBack(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, r := openStream(t, srv, ephemeral)
	send(t, c, 0, "a")
	send(t, c, 1, "b", "c")
	wantAcks(t, c, 0, 1)
	if err := c.CloseSend(); err != nil {
		t.Fatal(err)
	}
	wantEnd(t, c, core.CodeOK)
	if got := batchesString(srv.Batches(r.StreamID)); got != "|0:a|1:b,c" {
		t.Fatalf("batches %q", got)
	}

	// A new connection is a new stream; offsets start at 0 again.
	c2, r2 := openStream(t, srv, ephemeral)
	if r2.StreamID == r.StreamID {
		t.Fatalf("second create reused stream id %q", r.StreamID)
	}
	send(t, c2, 0, "d")
	wantAck(t, c2, 0)
	if got := batchesString(srv.Batches(r2.StreamID)); got != "|0:d" {
		t.Fatalf("batches %q", got)
	}
}

func TestEphemeralOffsetOutOfRange(t *testing.T) {
	for _, wires := range [][]int64{{1}, {0, 0}, {0, 2}} {
		srv := memtransport.NewServer(memtransport.Options{})
		c, r := openStream(t, srv, ephemeral)
		for _, w := range wires {
			send(t, c, w, "x")
		}
		if len(wires) > 1 {
			wantAck(t, c, 0)
		}
		wantEnd(t, c, core.CodeOutOfRange)
		if err := c.Send(streamCall(9)); err == nil {
			t.Fatalf("%v: Send after the end succeeded", wires)
		} else {
			wantCode(t, err, core.CodeOutOfRange)
		}
		if w, _ := srv.Watermark(r.StreamID); w != int64(len(wires))-2 {
			t.Fatalf("%v: watermark %d", wires, w)
		}
	}
}

func TestNegativeOffsetIsInvalid(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, _ := openStream(t, srv, persistent)
	send(t, c, -1, "x")
	wantEnd(t, c, core.CodeInvalidArgument)
}

func TestBadOpenRequests(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	for _, tc := range []struct {
		name string
		req  streamioOpenRequest
		code core.Code
	}{
		{"no kind", streamioOpenRequest{RecordType: core.RecordJSON}, core.CodeUnimplemented},
		{"no record type", streamioOpenRequest{Kind: core.Ephemeral}, core.CodeInvalidArgument},
		{"ephemeral resume", streamioOpenRequest{Kind: core.Ephemeral, RecordType: core.RecordJSON, Resume: true, StreamID: "x"}, core.CodeInvalidArgument},
		{"resume without id", streamioOpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, Resume: true}, core.CodeInvalidArgument},
		{"unknown id", resumeOf("nope"), core.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantEnd(t, open(t, srv, tc.req), tc.code)
		})
	}
	if n := len(srv.Streams()); n != 0 {
		t.Fatalf("%d streams after refused opens", n)
	}
}
