package e2e_test

import (
	"bytes"
	"fmt"
	"testing"

	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/server"
)

// numbered is a JSON object of exactly n bytes (at least 16) that names
// call i: the records of different calls differ all through.
func numbered(i, n int) []byte {
	head := fmt.Sprintf(`{"i":%d,"p":"`, i)
	pad := bytes.Repeat([]byte{'a' + byte(i%26)}, n-len(head)-2)
	return append(append([]byte(head), pad...), '"', '}')
}

// TestLentRecordsReachTheServerWhole: the calls a stream lends to gRPC
// rather than have them copied (single records and batches of
// streamio.LendMin bytes or more: io.Loan) are stored by the server as
// they were ingested, record for record, while many times the lendable
// memory passes through it and after a dropped connection whose calls are
// sent again; the caller writes over its buffers as soon as each ingest
// returns.
func TestLentRecordsReachTheServerWhole(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDrop, After: 40})
	sizes := []int{streamio.LendMin - 1, streamio.LendMin, 10 << 10, 64 << 10, 300 << 10}
	var want [][][]byte
	lendable := 0
	for i := range 300 {
		n := sizes[i%len(sizes)]
		call := [][]byte{numbered(i, n)}
		if i%3 == 2 {
			call = append(call, numbered(i+1000, n/2+16))
		}
		want = append(want, [][]byte{bytes.Clone(call[0])})
		var err error
		if len(call) == 1 {
			_, err = s.IngestRecord(ctx(t), call[0])
		} else {
			want[i] = append(want[i], bytes.Clone(call[1]))
			_, err = s.IngestBatch(ctx(t), call)
		}
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		scribble(call)
		if n >= streamio.LendMin {
			lendable += n
		}
	}
	if lendable < 4*streamio.LendBytes {
		t.Fatalf("only %d bytes of lendable calls: want several times LendBytes", lendable)
	}
	mustFlush(t, s)
	waitFired(t, h)
	e.wantStored(t, s.StreamID(), want...)
	st := s.Stats()
	if st.Reconnects != 1 {
		t.Fatalf("%d reconnects, want 1 (the dropped connection)", st.Reconnects)
	}
	// Two in three calls are LendMin or more; the first connection's are
	// not all sent again, and calls beyond LendBytes in flight are copied.
	if st.Lent < 100 || st.Lent > st.Sent {
		t.Fatalf("%d of %d calls sent lent to gRPC: the stream does not lend over gRPC", st.Lent, st.Sent)
	}
	mustClose(t, s)
}
