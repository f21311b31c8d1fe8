package memtransport_test

import (
	"context"
	"testing"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// TestMergeAcks: with MergeAcks, acks the client has not read yet are
// merged into the latest; a hostile ack (below the one before it, or
// without an offset) and other messages still arrive as sent, in order.
func TestMergeAcks(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{MergeAcks: true})
	ctx := context.Background()
	c, err := srv.Transport().Open(ctx, streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, RequestID: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort()
	if r, err := c.Recv(); err != nil || r.Kind != core.RespCreate {
		t.Fatalf("open response: %+v, %v", r, err)
	}
	for w := range int64(5) {
		if err := c.Send(streamio.Call{Wire: w, Record: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultAckBelowFloor})
	if err := c.Send(streamio.Call{Wire: 5, Record: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(streamio.Call{Wire: 6, Record: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for range 3 {
		r, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != core.RespAck || !r.HasOffset {
			t.Fatalf("got %+v, want an ack", r)
		}
		got = append(got, r.Offset)
	}
	// Acks 0..4 merge into 4; the regressive ack for call 5 stays; 6 follows.
	if got[0] != 4 || got[1] >= 4 || got[2] != 6 {
		t.Fatalf("acks %v, want [4 <4 6]", got)
	}
}
