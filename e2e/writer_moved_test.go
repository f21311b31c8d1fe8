package e2e_test

import (
	"errors"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/writer"
)

// TestWriterReopenFindsStreamMoved: a second writer (another process on
// the same store: here a second Writer and Client) adds a call to a table
// while the first Writer has its stream closed for another table. The
// first Writer's reopen finds the watermark above anything it sent and
// fails the table with a *ProtocolError before anything is sent, where it
// used to number its next call after the other writer's and so put its
// records under an offset its source gives to other records (issue 25).
// Reset forgets the table's history: Watermark then says what the server
// holds, and the table goes on after it.
func TestWriterReopenFindsStreamMoved(t *testing.T) {
	e := startAllTables(t)
	store := &writer.MemoryStore{}
	first := newWriter(t, e.client, writer.Config{MaxOpenStreams: 1, Store: store, Options: fast()})
	x, y := wTable(0), wTable(1)
	batch := func(i, k int) [][]byte { return [][]byte{wRec(i, 2*k), wRec(i, 2*k+1)} }
	ingest := func(w *writer.Writer, table string, i, k int) {
		t.Helper()
		off, err := w.IngestBatch(ctx(t), table, batch(i, k))
		if err != nil || off != int64(k) {
			t.Fatalf("IngestBatch(%s, call %d) = %d, %v", table, k, off, err)
		}
	}
	for k := range 3 {
		ingest(first, x, 0, k)
	}
	ingest(first, y, 1, 0) // closes x's stream, everything durable

	second := newWriter(t, newClient(t, e.ts, e.ts.Token), writer.Config{Store: store, Options: fast()})
	if wm, err := second.Watermark(ctx(t), x); err != nil || wm != 2 {
		t.Fatalf("second writer: Watermark = %d, %v; want 2", wm, err)
	}
	ingest(second, x, 0, 3)
	if err := second.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}

	// The first writer's source is at call 3 too, but its records differ
	// (say the second writer was a newer file): they must not go in.
	off, err := first.IngestBatch(ctx(t), x, [][]byte{[]byte(`{"t":0,"stale":true}`)})
	var pe *zbstream.ProtocolError
	var te *writer.TableError
	if !errors.As(err, &pe) || pe.Rule != core.WatermarkAboveAttempted || !errors.Is(err, zbstream.ErrStreamFailed) ||
		!errors.As(err, &te) || te.Table != x {
		t.Fatalf("reopen of a moved stream: IngestBatch = %d, %v; want a *TableError for %s wrapping ErrStreamFailed and a WatermarkAboveAttempted *ProtocolError", off, err, x)
	}
	t.Logf("reopen of a moved stream: %v", err)
	if f := first.Failed(); len(f) != 1 || f[0].Table != x {
		t.Fatalf("Failed = %v, want %s", f, x)
	}
	if _, err := first.IngestBatch(ctx(t), x, batch(0, 4)); !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("a failed table's next call: %v, want ErrStreamFailed until Reset", err)
	}
	ingest(first, y, 1, 1) // the other tables go on

	if lost, err := first.Reset(x); err != nil || lost != nil {
		t.Fatalf("Reset = %v, %v; want nothing lost (nothing was accepted)", lost, err)
	}
	if wm, err := first.Watermark(ctx(t), x); err != nil || wm != 3 {
		t.Fatalf("after Reset: Watermark = %d, %v; want 3", wm, err)
	}
	ingest(first, x, 0, 4)
	if err := first.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	want := map[string][][]byte{y: append(batch(1, 0), batch(1, 1)...)}
	for k := range 5 {
		want[x] = append(want[x], batch(0, k)...)
	}
	wantTables(t, e.ts, want)
}
