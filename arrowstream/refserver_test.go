package arrowstream_test

// The stream against the reference server (servertest: its Flight DoPut
// over real gRPC on loopback), not the fake of the other tests.

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestReferenceServer: batches of every type, split into frames and
// compressed, are stored by the reference server once each, and read
// back from it equal to what was ingested.
func TestReferenceServer(t *testing.T) {
	for _, c := range []arrowstream.Compression{arrowstream.CompressionNone, arrowstream.CompressionLZ4, arrowstream.CompressionZstd} {
		ts := servertest.Start(t)
		ctx := testCtx(t)
		cl, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
		if err != nil {
			t.Fatal(err)
		}
		s, err := arrowstream.New(ctx, cl, ts.Table, wideSchema, arrowstream.WithCompression(c), arrowstream.WithMaxFrameBytes(8192))
		if err != nil {
			t.Fatal(err)
		}
		sent := []arrow.RecordBatch{wideBatch(t, 60), wideBatch(t, 7), wideBatch(t, 1)}
		for i, rec := range sent {
			if off, err := s.IngestBatch(ctx, rec); err != nil || off != int64(i) {
				t.Fatalf("IngestBatch %d: %d, %v", i, off, err)
			}
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if u := s.Unacked(); len(u) != 0 {
			t.Fatalf("%d batches unacknowledged after Close", len(u))
		}
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}

		metas, err := ts.Streams(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		for _, m := range metas {
			if m.RecordType == server.RecordTypeArrow {
				if id != "" {
					t.Fatalf("two Arrow streams on a fault-free run: %s and %s", id, m.ID)
				}
				id = m.ID
			}
		}
		schema, got, err := ts.ArrowRecords(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !schema.Equal(wideSchema) {
			t.Fatalf("stored schema %v", schema)
		}
		if c == arrowstream.CompressionNone && len(got) <= len(sent) {
			t.Fatalf("%d frames stored for %d batches: want the first split", len(got), len(sent))
		}
		want := array.NewTableFromRecords(wideSchema, sent)
		have := array.NewTableFromRecords(wideSchema, got)
		if want.NumRows() != have.NumRows() || !array.TableEqual(want, have) {
			t.Fatalf("compression %d: the server holds %d rows, not the %d sent as sent", c, have.NumRows(), want.NumRows())
		}
		want.Release()
		have.Release()
		for _, r := range append(sent, got...) {
			r.Release()
		}
	}
}
