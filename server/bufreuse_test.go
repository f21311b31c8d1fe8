package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The server reuses a request's receive buffer once the request is
// committed (bufpool.go), so a store that kept the records it was handed
// instead of copying them would see them overwritten by later requests.
// Batches large enough to be pooled, each with its own content, are sent
// pipelined; every one must be stored as sent, and a resent one (compared
// with the stored batch under strict duplicates) acknowledged.
func TestStoredRecordsSurviveBufferReuse(t *testing.T) {
	ts := startServer(t)
	c := ts.Client(t)
	st, id := pcreate(t, ts, c, "reuse")
	const batches, perBatch = 40, 4
	want := make([][]string, batches)
	for off := range want {
		for i := range perBatch {
			// 20 KiB a record: 80 KiB a batch, well over pooledMin.
			want[off] = append(want[off], fmt.Sprintf(`{"b":%d,"r":%d,"x":"%s"}`, off, i, strings.Repeat(string(rune('a'+(off+i)%26)), 20<<10)))
		}
		pjson(t, st, int64(off), want[off]...)
	}
	pwaitAck(t, st, batches-1)
	pjson(t, st, 3, want[3]...) // a duplicate, compared with what is stored
	pjson(t, st, batches, `{"last":true}`)
	pwaitAck(t, st, batches)
	pclose(t, st)

	got := records(t, ts.Server, id)
	if len(got) != batches+1 {
		t.Fatalf("%d batches stored, want %d", len(got), batches+1)
	}
	for off := range want {
		if !slices.Equal(got[off], want[off]) {
			t.Fatalf("batch %d stored differs from what was sent", off)
		}
	}
}
