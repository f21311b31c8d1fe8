package e2e_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/writer"
)

// injectWriterFaults programs faults on most of n tables, by table: lost
// acks after a commit and dropped connections on every connection (sticky),
// a lost create response, a session rotation, repeated acks.
func injectWriterFaults(srv *server.Server, n int) {
	for i := range n {
		m := server.Match{Table: wTable(i)}
		switch i % 6 {
		case 1:
			srv.Inject(m, server.Fault{Kind: server.FaultCommitThenDrop, After: 2, Times: server.Unlimited})
		case 2:
			srv.Inject(m, server.Fault{Kind: server.FaultDrop, After: 3, Times: server.Unlimited})
		case 3:
			srv.Inject(server.Match{Table: wTable(i), Kind: server.KindPersistent}, server.Fault{Kind: server.FaultLoseOpenResponse})
		case 4:
			srv.Inject(m, server.Fault{Kind: server.FaultCloseSignal, After: 1})
		case 5:
			srv.Inject(m, server.Fault{Kind: server.FaultRepeatAcks, Repeat: 2, Times: server.Unlimited})
		}
	}
}

// writerSource writes n tables' sources through w, perTable records each,
// in calls of 1 to 3 records, moving between tables at random (seeded)
// after a few calls, and flushing now and then. It checks that every call
// gets the next offset of its table, and returns what each table must
// hold. calls, if not nil, counts the calls made.
func writerSource(t *testing.T, w *writer.Writer, seed uint64, n, perTable int, calls *atomic.Int64) map[string][][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	want := map[string][][]byte{}
	next := make([]int, n)
	made := make([]int64, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		j := rng.IntN(len(pending))
		i := pending[j]
		for range 1 + rng.IntN(3) {
			k := min(1+rng.IntN(3), perTable-next[i])
			if k == 0 {
				break
			}
			batch := make([][]byte, k)
			for b := range batch {
				batch[b] = wRec(i, next[i]+b)
			}
			off, err := w.IngestBatch(ctx(t), wTable(i), batch)
			if err != nil {
				t.Fatalf("IngestBatch(%s): %v", wTable(i), err)
			}
			if off != made[i] {
				t.Fatalf("table %s: call %d got offset %d", wTable(i), made[i], off)
			}
			made[i]++
			if calls != nil {
				calls.Add(1)
			}
			next[i] += k
			want[wTable(i)] = append(want[wTable(i)], batch...)
		}
		if next[i] == perTable {
			pending = append(pending[:j], pending[j+1:]...)
		}
		if rng.IntN(50) == 0 {
			if err := w.Flush(ctx(t)); err != nil {
				t.Fatalf("Flush: %v", err)
			}
		}
	}
	return want
}

// TestWriterManyTablesUnderFaults: hundreds of tables through a few
// streams, with most tables' connections dropped, acks lost after
// commits, creates answered too late, sessions rotated: every table's
// stream holds its records exactly once, in order, and every persistent
// table has one stream (created once, resumed on every reopen).
// ZBSTREAM_WRITER_TABLES scales it (default 200).
func TestWriterManyTablesUnderFaults(t *testing.T) {
	n := envSize(t, "ZBSTREAM_WRITER_TABLES", 200)
	e := startAllTables(t)
	injectWriterFaults(e.ts.Server, n)
	w := newWriter(t, e.client, writer.Config{MaxOpenStreams: 4, Options: fast()})
	want := writerSource(t, w, 7, n, 8, nil)
	if err := w.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	t.Logf("%d tables: %+v", n, st)
	if st.Creates != int64(n) || st.Evictions == 0 {
		t.Fatalf("stats %+v: want %d creates and evictions", st, n)
	}
	wantTables(t, e.ts, want)
}

// TestWriterFailedTable: a table whose stream fails for good (the server
// refuses it) fails alone: its calls and every Flush report it, naming it,
// OnFail reports its offsets that did not land, the other tables go on.
// Reset gives back what did not land; Watermark says what the server
// holds, and replaying the table's source from there completes it once.
func TestWriterFailedTable(t *testing.T) {
	e := startAllTables(t)
	bad, good := wTable(0), wTable(1)
	var mu sync.Mutex
	failed := map[string][]int64{}
	w := newWriter(t, e.client, writer.Config{MaxOpenStreams: 2, Options: fast(),
		OnFail: func(table string, off int64, err error) {
			var te *writer.TableError
			if !errors.As(err, &te) || te.Table != table {
				t.Errorf("OnFail(%s, %d): %v does not name the table", table, off, err)
			}
			mu.Lock()
			failed[table] = append(failed[table], off)
			mu.Unlock()
		}})
	// The Drop waits at the 2nd request until the 5 records are queued:
	// without the hold, the failure could reach the client before its 3rd
	// call, whenever this goroutine is descheduled long enough.
	hold := make(chan struct{})
	h := e.ts.Inject(server.Match{Table: bad}, server.Fault{Kind: server.FaultDrop, After: 2, Code: codes.InvalidArgument, Message: "refused", Hold: hold})
	for n := range 5 {
		if _, err := w.IngestRecord(ctx(t), bad, wRec(0, n)); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
	}
	close(hold)
	waitFired(t, h)
	err := w.Flush(ctx(t))
	var te *writer.TableError
	if !errors.As(err, &te) || te.Table != bad || !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("Flush: %v, want a *TableError naming %s wrapping ErrStreamFailed", err, bad)
	}
	wantCode(t, err, codes.InvalidArgument)
	wantPrefixOnce(t, "Flush", err)
	// The table stays failed; the others go on.
	if _, err := w.IngestRecord(ctx(t), bad, wRec(0, 5)); !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("ingest into the failed table: %v", err)
	}
	for n := range 3 {
		if _, err := w.IngestRecord(ctx(t), good, wRec(1, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx(t)); !errors.As(err, &te) || te.Table != bad {
		t.Fatalf("second Flush: %v, want the failed table again", err)
	}
	if f := w.Failed(); len(f) != 1 || f[0].Table != bad {
		t.Fatalf("Failed() = %v", f)
	}

	lost, err := w.Reset(bad)
	if err != nil || len(lost) != 3 || lost[0].Offset != 2 {
		t.Fatalf("Reset: %v, %v; want offsets 2..4", lost, err)
	}
	mu.Lock()
	if got := failed[bad]; len(got) != 3 || got[0] != 2 || got[2] != 4 || len(failed) != 1 {
		t.Fatalf("OnFail offsets %v, want %s 2..4 only", failed, bad)
	}
	mu.Unlock()
	wm, err := w.Watermark(ctx(t), bad)
	if err != nil || wm != 1 {
		t.Fatalf("Watermark after Reset: %d, %v; want 1", wm, err)
	}
	for n := int(wm) + 1; n < 6; n++ {
		off, err := w.IngestRecord(ctx(t), bad, wRec(0, n))
		if err != nil || off != int64(n) {
			t.Fatalf("replay of record %d: offset %d, %v", n, off, err)
		}
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantTables(t, e.ts, map[string][][]byte{
		bad:  {wRec(0, 0), wRec(0, 1), wRec(0, 2), wRec(0, 3), wRec(0, 4), wRec(0, 5)},
		good: {wRec(1, 0), wRec(1, 1), wRec(1, 2)},
	})
}

// blockingStore is a writer.Store whose Load of one table blocks until
// released: an open that takes its time.
type blockingStore struct {
	writer.MemoryStore
	table   string
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) Load(ctx context.Context, table string) (writer.Entry, bool, error) {
	if table == s.table {
		close(s.entered)
		<-s.release
	}
	return s.MemoryStore.Load(ctx, table)
}

// TestWriterWaitsForSlot: with every slot held by a stream being opened,
// a call for another table waits and honours its context (a *TableError
// naming its table, wrapping the cause); the open under way is not
// disturbed and completes.
func TestWriterWaitsForSlot(t *testing.T) {
	e := startAllTables(t)
	st := &blockingStore{table: wTable(0), entered: make(chan struct{}), release: make(chan struct{})}
	w := newWriter(t, e.client, writer.Config{MaxOpenStreams: 1, Store: st, Options: fast()})
	done := make(chan error, 1)
	go func() {
		_, err := w.IngestRecord(ctx(t), wTable(0), wRec(0, 0))
		done <- err
	}()
	<-st.entered
	cause := errors.New("caller gave up")
	c, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	_, err := w.IngestRecord(c, wTable(1), wRec(1, 0))
	var te *writer.TableError
	if !errors.As(err, &te) || te.Table != wTable(1) || !errors.Is(err, cause) {
		t.Fatalf("waiting for a slot: %v, want a *TableError naming %s wrapping the cause", err, wTable(1))
	}
	close(st.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantTables(t, e.ts, map[string][][]byte{wTable(0): {wRec(0, 0)}})
}

// failingStore is a writer.Store whose saves of a stream id fail while
// fail is set.
type failingStore struct {
	writer.MemoryStore
	fail atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (s *failingStore) Save(ctx context.Context, table string, e writer.Entry) error {
	if e.StreamID != "" && s.fail.Load() {
		return errDiskFull
	}
	return s.MemoryStore.Save(ctx, table, e)
}

// TestWriterStoreSaveFails: when the store cannot save a new stream's id,
// nothing is sent into the stream and the call fails naming the table;
// the next call creates again with the saved request id, gets the same
// stream back, and the table ends with one stream.
func TestWriterStoreSaveFails(t *testing.T) {
	e := startAllTables(t)
	st := &failingStore{}
	st.fail.Store(true)
	w := newWriter(t, e.client, writer.Config{Store: st, Options: fast()})
	table := wTable(0)
	_, err := w.IngestRecord(ctx(t), table, wRec(0, 0))
	var te *writer.TableError
	if !errors.As(err, &te) || te.Table != table || !errors.Is(err, errDiskFull) {
		t.Fatalf("ingest with a failing store: %v", err)
	}
	if f := w.Failed(); len(f) != 0 {
		t.Fatalf("a failed open failed the table: %v", f)
	}
	st.fail.Store(false)
	if off, err := w.IngestRecord(ctx(t), table, wRec(0, 0)); err != nil || off != 0 {
		t.Fatalf("after the store recovered: %d, %v", off, err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	wantTables(t, e.ts, map[string][][]byte{table: {wRec(0, 0)}})
	if e, _, _ := st.Load(ctx(t), table); e.StreamID == "" || e.RequestID == "" {
		t.Fatalf("store entry %+v", e)
	}
}
