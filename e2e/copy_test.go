package e2e_test

import (
	"bytes"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
)

// TestRecordsCopiedByDefault: a stream keeps copies of what it is given,
// so Unacked after a failure returns memory of its own, holding the records
// as they were ingested though the caller has reused its buffer; with
// WithNoCopy it keeps, and returns, the caller's own slices.
func TestRecordsCopiedByDefault(t *testing.T) {
	for _, noCopy := range []bool{false, true} {
		name := "copy"
		opts := []zbstream.StreamOption{zbstream.WithoutRecovery()}
		if noCopy {
			name = "nocopy"
			opts = append(opts, zbstream.WithNoCopy())
		}
		t.Run(name, func(t *testing.T) {
			e := start(t)
			s := e.createPersistent(t, opts...)
			h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultCommitThenDrop, After: 1})
			buf := rec(0, 0)
			want := bytes.Clone(buf)
			ingest(t, s, buf)
			waitFired(t, h)
			_ = s.Close(ctx(t)) // failed: the lost ack is not recovered
			left := s.Unacked()
			if len(left) != 1 || len(left[0].Records) != 1 {
				t.Fatalf("Unacked: %d calls, want 1", len(left))
			}
			got := left[0].Records[0]
			if same := &got[0] == &buf[0]; same != noCopy {
				t.Fatalf("Unacked returns the caller's slice: %v, want %v", same, noCopy)
			}
			if !noCopy {
				scribble([][]byte{buf})
				if !bytes.Equal(s.Unacked()[0].Records[0], want) {
					t.Fatal("the stream's copy changed with the caller's buffer")
				}
			}
		})
	}
}
