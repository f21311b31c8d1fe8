package e2e_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zbstream/zbstream"
)

// padded is a JSON object of exactly n bytes (at least 10).
func padded(n int) []byte {
	return []byte(`{"pad":"` + string(bytes.Repeat([]byte("x"), n-10)) + `"}`)
}

// TestBatchesReachTheServerWhole: batches of records whose lengths cross
// the varint boundaries (127/128, 16383/16384 bytes), span the encoding's
// 32 KiB chunks or come in the hundreds, sent by a stream that keeps them
// framed in its arena (and by one that does not, NoCopy), are stored by
// the server record for record.
func TestBatchesReachTheServerWhole(t *testing.T) {
	var edges [][]byte
	for _, n := range []int{10, 127, 128, 300, 16383, 16384, 40 << 10} {
		edges = append(edges, padded(n))
	}
	many := make([][]byte, 300)
	for i := range many {
		many[i] = padded(10 + i%200)
	}
	for _, noCopy := range []bool{false, true} {
		t.Run(fmt.Sprintf("nocopy=%v", noCopy), func(t *testing.T) {
			e := start(t)
			var opts []zbstream.StreamOption
			if noCopy {
				opts = append(opts, zbstream.WithNoCopy())
			}
			s := e.createPersistent(t, opts...)
			ingestBatches(t, s, edges, many, edges[:2])
			mustFlush(t, s)
			e.wantStored(t, s.StreamID(), edges, many, edges[:2])
			mustClose(t, s)
		})
	}
}

// ingestBatches ingests each batch as one call.
func ingestBatches(t *testing.T, s *zbstream.Stream, batches ...[][]byte) {
	t.Helper()
	for i, b := range batches {
		if _, err := s.IngestBatch(ctx(t), b); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
}
