package servertest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/zbstream/zbstream"
	example "github.com/zbstream/zbstream/examples/servertest"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

func TestIngest(t *testing.T) {
	ts := servertest.Start(t) // on loopback; stops when the test ends
	client, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// Make the server lose one ack after committing, as real networks do:
	// the client must reconcile it, not write it twice.
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})

	events := []example.Event{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}
	id, err := example.Ingest(context.Background(), client, ts.Table, events)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := ts.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []example.Event
	for _, b := range batches {
		for _, r := range b.Records {
			var e example.Event
			if err := json.Unmarshal(r, &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
	}
	if len(got) != len(events) {
		t.Fatalf("stored %v, want %v", got, events)
	}
	for i := range events {
		if got[i] != events[i] {
			t.Fatalf("stored %v, want %v", got, events)
		}
	}
}
