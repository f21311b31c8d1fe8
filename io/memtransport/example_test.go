package memtransport_test

import (
	"context"
	"fmt"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// A persistent stream over the in-memory transport: create, ingest, lose
// an ack to an injected fault, resume from the server's watermark, and
// read back what the server stored.
func Example() {
	srv := memtransport.NewServer(memtransport.Options{})
	tr := srv.Transport()
	ctx := context.Background()

	// The second call is stored, but the connection drops before its ack.
	lost := srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 2})

	conn, _ := tr.Open(ctx, streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, RequestID: "req-1"})
	created, _ := conn.Recv()
	fmt.Println("created", created.StreamID)
	_ = conn.Send(streamio.Call{Wire: 0, Record: []byte(`{"n":0}`)})
	_ = conn.Send(streamio.Call{Wire: 1, Records: [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}})
	for {
		r, err := conn.Recv()
		if err != nil {
			fmt.Println("connection ended:", err)
			break
		}
		fmt.Println("ack", r.Offset)
	}
	conn.Abort()
	<-lost.Fired()

	conn, _ = tr.Open(ctx, streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON,
		Resume: true, StreamID: created.StreamID})
	resumed, _ := conn.Recv()
	fmt.Println("resumed at", resumed.Offset)
	_ = conn.Send(streamio.Call{Wire: resumed.Offset + 1, Record: []byte(`{"n":3}`)})
	_ = conn.CloseSend()
	for {
		r, err := conn.Recv()
		if err != nil {
			fmt.Println("connection ended:", err)
			break
		}
		fmt.Println("ack", r.Offset)
	}
	conn.Abort()

	for _, b := range srv.Batches(created.StreamID) {
		fmt.Printf("offset %d: %q\n", b.Offset, b.Records)
	}
	st := srv.Stats()
	fmt.Println("opens", st.Opens, "calls", st.Calls, "records", st.Records)
	// Output:
	// created stream-1
	// ack 0
	// connection ended: zbstream: connection failed (UNAVAILABLE): memtransport: UNAVAILABLE: injected fault: connection dropped after commit, before ack
	// resumed at 1
	// ack 2
	// connection ended: EOF
	// offset 0: ["{\"n\":0}"]
	// offset 1: ["{\"n\":1}" "{\"n\":2}"]
	// offset 2: ["{\"n\":3}"]
	// opens 2 calls 3 records 4
}
