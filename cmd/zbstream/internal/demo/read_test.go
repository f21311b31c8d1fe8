package demo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
	"github.com/zbstream/zbstream/server"
)

// countingStore is a batchStore that counts what the verification reads:
// every read is one Batch call (batchStore has no whole-stream read), and
// it notes each offset read and the most records one call returned.
type countingStore struct {
	batchStore
	calls      int
	maxRecords int
	reads      map[string]map[int64]int // stream -> offset -> times read
}

func (c *countingStore) Batch(ctx context.Context, id string, offset int64) (server.Batch, error) {
	b, err := c.batchStore.Batch(ctx, id, offset)
	c.calls++
	c.maxRecords = max(c.maxRecords, len(b.Records))
	if c.reads == nil {
		c.reads = map[string]map[int64]int{}
	}
	if c.reads[id] == nil {
		c.reads[id] = map[int64]int{}
	}
	c.reads[id][offset]++
	return b, err
}

// stream describes a stored stream for a test: its table (demoTable
// if empty) and its batches, each the seqs of its records.
type stream struct {
	table   string
	batches [][]int
}

// seqBatches cuts seqs into batches of n.
func seqBatches(seqs []int, n int) [][]int {
	var out [][]int
	for len(seqs) > n {
		out = append(out, seqs[:n])
		seqs = seqs[n:]
	}
	return append(out, seqs)
}

// seqRange is from, from+1, ..., to-1.
func seqRange(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// newStore stores the streams in a memory store, in order, each
// batch at the next offset, and returns the store and their ids.
func newStore(t *testing.T, kind server.StreamKind, streams ...stream) (*server.MemoryStore, []string) {
	t.Helper()
	ctx := t.Context()
	st := server.NewMemoryStore()
	t.Cleanup(func() { st.Close() })
	var ids []string
	for i, s := range streams {
		table := s.table
		if table == "" {
			table = demoTable
		}
		m, _, err := st.CreateStream(ctx, server.StreamMeta{ID: fmt.Sprintf("s%03d", i), Kind: kind, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		for off, seqs := range s.batches {
			recs := make([][]byte, len(seqs))
			for j, seq := range seqs {
				recs[j] = record(seq, 64)
			}
			if err := st.Append(ctx, m.ID, []server.Batch{{Offset: int64(off), Records: recs}}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, m.ID)
	}
	return st, ids
}

// TestScanStreamMissingBatch: a batch missing below the watermark, or
// records the store counts but the batches do not hold, fail the read.
func TestDemoScanStreamMissingBatch(t *testing.T) {
	st, ids := newStore(t, server.KindPersistent, stream{batches: seqBatches(seqRange(0, 30), 10)})
	m, err := st.Stream(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var p readProgress
	nop := func(server.Batch) error { return nil }
	if err := scanStream(t.Context(), st, m, &p, nop); err != nil {
		t.Fatalf("scan: %v", err)
	}
	if got := p.read.Load(); got != 30 {
		t.Errorf("progress read %d records, want 30", got)
	}
	short := m
	short.Watermark++ // a batch the store does not have
	if err := scanStream(t.Context(), st, short, &p, nop); !errors.Is(err, server.ErrBatchNotFound) {
		t.Errorf("scan past the batches: %v, want ErrBatchNotFound", err)
	}
	more := m
	more.Records++ // a record outside the batches read
	if err := scanStream(t.Context(), st, more, &p, nop); err == nil {
		t.Error("scan of a stream counting more records than its batches hold: no error")
	}
}

// TestDemoBoltBatches: the bolt reader reopens the store after each
// window read, and reads the same as one opening.
func TestDemoBoltBatches(t *testing.T) {
	dir := t.TempDir()
	st, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	m, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "s", Kind: server.KindPersistent, Table: demoTable})
	if err != nil {
		t.Fatal(err)
	}
	for off, seqs := range seqBatches(seqRange(0, 2000), 10) {
		recs := make([][]byte, len(seqs))
		for j, seq := range seqs {
			recs[j] = record(seq, 100)
		}
		if err := st.Append(ctx, m.ID, []server.Batch{{Offset: int64(off), Records: recs}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := config{Records: 2000, DataDir: dir}
	var results []verification
	for _, window := range []int64{1 << 40, 8 << 10} {
		b, err := openBoltBatches(dir, window)
		if err != nil {
			t.Fatal(err)
		}
		v, err := verifyStore(ctx, b, cfg, &readProgress{})
		if err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		t.Logf("window %d: %d opening(s)", window, b.opens)
		if window == 8<<10 && b.opens < 20 { // 200 KB of records
			t.Errorf("window %d: %d opening(s), want one per window read", window, b.opens)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		results = append(results, v)
	}
	want := verification{stored: 2000, streams: 1}
	for _, v := range results {
		if v != want {
			t.Errorf("verification %+v, want %+v", v, want)
		}
	}
	// The demo's own entry point reads the same.
	v, err := verify(ctx, cfg, &readProgress{})
	if err != nil || v != want {
		t.Errorf("verify: %+v, %v; want %+v", v, err, want)
	}
}

// TestDemoVMHWM: the peak RSS reads as a positive size where /proc has
// it (this is Linux in CI); elsewhere the demo leaves the line out.
func TestDemoVMHWM(t *testing.T) {
	peak, ok := proc.VmHWM("self")
	if !ok {
		t.Skip("no /proc/self/status VmHWM here")
	}
	if peak <= 0 {
		t.Errorf("VmHWM %d", peak)
	}
	if _, ok := proc.VmHWM("not-a-pid"); ok {
		t.Error("VmHWM of a process that does not exist")
	}
}
