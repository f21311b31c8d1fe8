package e2e_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/writer"
)

// TestWriterLRU: at the cap, the least recently used table's stream is
// closed, not the one written just before; the closed table is resumed by
// its id when it is written again (no second stream), and its offsets go
// on where they were.
func TestWriterLRU(t *testing.T) {
	e := startAllTables(t)
	w := newWriter(t, e.client, writer.Config{MaxOpenStreams: 2, Options: fast()})
	a, b, c := wTable(0), wTable(1), wTable(2)
	write := func(table string, i, n int, wantOff int64) {
		t.Helper()
		off, err := w.IngestRecord(ctx(t), table, wRec(i, n))
		if err != nil || off != wantOff {
			t.Fatalf("IngestRecord(%s) = %d, %v; want offset %d", table, off, err, wantOff)
		}
	}
	write(a, 0, 0, 0)
	write(b, 1, 0, 0)
	write(a, 0, 1, 1) // a is now the most recently used
	write(c, 2, 0, 0) // evicts b
	if got := w.OpenTables(); !slices.Equal(got, []string{a, c}) {
		t.Fatalf("open tables %v, want [%s %s]", got, a, c)
	}
	write(b, 1, 1, 1) // resumes b, evicts a
	if got := w.OpenTables(); !slices.Equal(got, []string{b, c}) {
		t.Fatalf("open tables %v, want [%s %s]", got, b, c)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Creates != 3 || st.Resumes != 1 || st.Evictions != 2 || st.Open != 0 || st.Tables != 3 {
		t.Fatalf("stats %+v, want 3 creates, 1 resume, 2 evictions, none open", st)
	}
	wantTables(t, e.ts, map[string][][]byte{
		a: {wRec(0, 0), wRec(0, 1)}, b: {wRec(1, 0), wRec(1, 1)}, c: {wRec(2, 0)},
	})
}

// TestWriterConcurrent: goroutines write to overlapping tables through few
// streams, flushing now and then; every table holds every record once,
// each goroutine's records in its order, and OnAck reports every offset
// of every table once, in order.
func TestWriterConcurrent(t *testing.T) {
	const goroutines, tables, perG = 8, 24, 60
	e := startAllTables(t)
	var mu sync.Mutex
	acks := map[string][]int64{}
	w := newWriter(t, e.client, writer.Config{MaxOpenStreams: 3, Options: fast(),
		OnAck: func(table string, off int64) {
			mu.Lock()
			acks[table] = append(acks[table], off)
			mu.Unlock()
		}})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for n := range perG {
				// Goroutine g writes tables g, g+1, g+2 (mod tables) in
				// turn: neighbours share tables.
				table := wTable((g + n%3) % tables)
				if _, err := w.IngestRecord(context.Background(), table, rec(g, n)); err != nil {
					errs <- err
					return
				}
				if n%20 == 19 {
					if err := w.Flush(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	streams, err := e.ts.Streams(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]bool{}
	perTable := map[string]int{}
	for _, m := range streams {
		if perTable[m.Table]++; perTable[m.Table] > 1 {
			t.Fatalf("table %s has more than one stream", m.Table)
		}
		last := map[int]int{}
		var n int64
		for _, b := range e.stored(t, m.ID) {
			for _, r := range b.Records {
				p, k := parse(t, r)
				if seen[[2]int{p, k}] {
					t.Fatalf("record %s stored twice", r)
				}
				seen[[2]int{p, k}] = true
				if l, ok := last[p]; ok && k <= l {
					t.Fatalf("table %s: goroutine %d's record %d after its record %d", m.Table, p, k, l)
				}
				last[p] = k
				n++
			}
		}
		mu.Lock()
		got := acks[m.Table]
		mu.Unlock()
		if int64(len(got)) != n || !slices.IsSorted(got) || (n > 0 && got[n-1] != n-1) {
			t.Fatalf("table %s: OnAck offsets %v, want 0..%d once each, in order", m.Table, got, n-1)
		}
	}
	if len(seen) != goroutines*perG {
		t.Fatalf("%d records stored, want %d", len(seen), goroutines*perG)
	}
	if st := w.Stats(); st.Evictions == 0 {
		t.Fatalf("no eviction with %d tables and 3 streams: %+v", tables, st)
	}
}

// TestWriterBadInput: a call with an invalid table name, a value that is
// not a JSON object, a record over the per-call limit, a table the
// application refuses: each a typed error naming the table, none fails
// the table or opens anything it should not; calls after Close are
// ErrClosed.
func TestWriterBadInput(t *testing.T) {
	e := startAllTables(t)
	refused := errors.New("not routed here")
	w := newWriter(t, e.client, writer.Config{Options: fast(zbstream.WithMaxCallBytes(64)),
		Table: func(table string) (writer.TableConfig, error) {
			if table == "main.writer.refused" {
				return writer.TableConfig{}, refused
			}
			return writer.TableConfig{}, nil
		}})
	wantTableErr := func(err error, table string, target error) {
		t.Helper()
		var te *writer.TableError
		if !errors.As(err, &te) || te.Table != table {
			t.Fatalf("error %v (%T) is not a *TableError naming %q", err, err, table)
		}
		if target != nil && !errors.Is(err, target) {
			t.Fatalf("error %v does not wrap %v", err, target)
		}
		wantPrefixOnce(t, table, err)
	}
	for _, bad := range []string{"", "events", "main.events", "main..events", "a.b.c.d"} {
		_, err := w.IngestRecord(ctx(t), bad, rec(0, 0))
		var ce *zbstream.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("table %q: %v is not a *ConfigError", bad, err)
		}
		wantTableErr(err, bad, zbstream.ErrInvalidConfig)
		_, err = w.Watermark(ctx(t), bad)
		wantTableErr(err, bad, zbstream.ErrInvalidConfig)
	}
	_, err := w.IngestRecord(ctx(t), "main.writer.refused", rec(0, 0))
	wantTableErr(err, "main.writer.refused", refused)
	if st := w.Stats(); st.Tables != 0 || st.Creates != 0 {
		t.Fatalf("refused tables were registered: %+v", st)
	}

	good := wTable(0)
	_, err = w.IngestJSON(ctx(t), good, []int{1})
	wantTableErr(err, good, zbstream.ErrRecordType)
	_, err = w.IngestRecord(ctx(t), good, make([]byte, 65))
	wantTableErr(err, good, zbstream.ErrCallTooLarge)
	if off, err := w.IngestRecord(ctx(t), good, rec(0, 0)); err != nil || off != 0 {
		t.Fatalf("after refused records: %d, %v", off, err)
	}
	if off, err := w.IngestBatch(ctx(t), good, nil); err != nil || off != zbstream.NoOffset {
		t.Fatalf("empty batch: %d, %v", off, err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = w.IngestRecord(ctx(t), good, rec(0, 1))
	wantTableErr(err, good, zbstream.ErrClosed)
	if err := w.Close(ctx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantTables(t, e.ts, map[string][][]byte{good: {rec(0, 0)}})

	if _, err := writer.New(e.client, writer.Config{MaxOpenStreams: -1}); !errors.Is(err, zbstream.ErrInvalidConfig) {
		t.Fatalf("MaxOpenStreams -1: %v", err)
	}
	if _, err := writer.New(nil, writer.Config{}); !errors.Is(err, zbstream.ErrInvalidConfig) {
		t.Fatalf("nil client: %v", err)
	}
}
