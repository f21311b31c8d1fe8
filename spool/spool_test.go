package spool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/examples/proto/orderpb"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestConcurrentIngest: calls from many goroutines share syncs, get dense
// offsets from the log, and land once each, at their offsets.
func TestConcurrentIngest(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	sp := openSpool(t, c, t.TempDir(), ts.Table)
	ctx := context.Background()
	const goroutines, calls = 16, 40
	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				id := fmt.Sprintf("g%d-%d", g, i)
				var off int64
				var err error
				if i%3 == 0 {
					off, err = sp.IngestBatch(ctx, [][]byte{rec(id), rec(id + "b")})
				} else {
					off, err = sp.IngestRecord(ctx, rec(id))
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[off] = id
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if off, err := sp.IngestBatch(ctx, nil); off != spool.NoOffset || err != nil {
		t.Errorf("empty batch: %d, %v", off, err)
	}
	st := sp.Stats()
	id := sp.StreamID()
	closeSpool(t, sp)
	if len(got) != goroutines*calls {
		t.Fatalf("%d distinct offsets for %d calls", len(got), goroutines*calls)
	}
	data := stored(t, ts.Server, id)
	for off, pid := range got {
		if r := data[off]; len(r) == 0 || string(r[0]) != string(rec(pid)) {
			t.Fatalf("offset %d holds %q, want %s", off, r, pid)
		}
	}
	if len(data) != len(got) {
		t.Fatalf("server holds %d offsets, %d calls returned", len(data), len(got))
	}
	if st.Calls != goroutines*calls || st.Syncs == 0 || st.Syncs > st.Calls {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("%d calls in %d syncs (%.1f calls per sync)", st.Calls, st.Syncs, float64(st.Calls)/float64(st.Syncs))
}

// TestReopenResends: a spool abandoned with calls not yet durable (the
// server drops the connection) and a torn entry at its tail sends them on
// the next Open, under their offsets, with the torn entry cut off; new
// calls continue after the log's last entry.
func TestReopenResends(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	sp := openSpool(t, c, dir, ts.Table)
	id := sp.StreamID()
	ctx := context.Background()
	for i := range 5 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint("a", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDrop, After: 0, Times: server.Unlimited})
	for i := range 5 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint("b", i))); err != nil {
			t.Fatal(err)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_ = sp.Close(gone) // abandoned: the b calls are only in the log
	h.Remove()
	// A crash in the middle of a write leaves a torn entry at the tail.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n := len(stored(t, ts.Server, id))
	if n < 5 || n >= 10 {
		t.Fatalf("server holds %d offsets before the reopen, want 5 to 9", n)
	}

	sp = openSpool(t, c, dir, ts.Table)
	if st := sp.Stats(); st.Resent != int64(10-n) || st.Dropped != int64(n) {
		t.Errorf("resent %d, dropped %d at open, want %d and %d (%+v)", st.Resent, st.Dropped, 10-n, n, st)
	} else if st.TornBytes != 10 {
		t.Errorf("torn bytes %d, want 10", st.TornBytes)
	}
	off, err := sp.IngestRecord(ctx, rec("c0"))
	if err != nil || off != 10 {
		t.Fatalf("new call: %d, %v; want offset 10", off, err)
	}
	closeSpool(t, sp)
	data := stored(t, ts.Server, id)
	for i, want := range []string{"a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4", "c0"} {
		if r := data[int64(i)]; len(r) != 1 || string(r[0]) != string(rec(want)) {
			t.Fatalf("offset %d: %q, want %s", i, r, want)
		}
	}
	if len(data) != 11 {
		t.Fatalf("%d offsets stored, want 11", len(data))
	}
}

// TestWatermarkAboveLog: a spool restored from an older copy (its log ends
// below the server's watermark) is refused, and nothing is sent.
func TestWatermarkAboveLog(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	sp := openSpool(t, c, dir, ts.Table)
	id := sp.StreamID()
	ctx := context.Background()
	for i := range 3 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	closeSpool(t, sp)
	old := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	sp = openSpool(t, c, dir, ts.Table)
	for i := range 3 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint("n", i))); err != nil {
			t.Fatal(err)
		}
	}
	closeSpool(t, sp)

	_, err := spool.Open(ctx, c, spool.Options{Dir: old, Table: ts.Table})
	var we *spool.WatermarkError
	if !errors.As(err, &we) || !errors.Is(err, spool.ErrWatermark) || we.Watermark != 5 || we.Last != 2 {
		t.Fatalf("open of an older copy: %v", err)
	}
	if n := len(stored(t, ts.Server, id)); n != 6 {
		t.Fatalf("%d offsets stored, want 6", n)
	}
	// The spool still opens where it belongs.
	closeSpool(t, openSpool(t, c, dir, ts.Table))
}

// TestSecondOpener: a second opener of a spool in use gets ErrLocked; once
// the first has closed, it opens.
func TestSecondOpener(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	sp := openSpool(t, c, dir, ts.Table)
	_, err := spool.Open(context.Background(), c, spool.Options{Dir: dir, Table: ts.Table})
	if !errors.Is(err, spool.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	closeSpool(t, sp)
	closeSpool(t, openSpool(t, c, dir, ts.Table))
}

// TestMismatch: a spool opened with another table, record type, message
// or stream id is refused with a *MismatchError naming the field, before
// any stream is opened.
func TestMismatch(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	ctx := context.Background()
	jsonDir, protoDir := t.TempDir(), t.TempDir()
	closeSpool(t, openSpool(t, c, jsonDir, ts.Table))
	closeSpool(t, openSpool(t, c, protoDir, ts.Table, func(o *spool.Options) { o.ProtoMessage = &orderpb.Order{} }))
	for _, tc := range []struct {
		field string
		opts  spool.Options
	}{
		{"table", spool.Options{Dir: jsonDir, Table: "main.other.events"}},
		{"record type", spool.Options{Dir: jsonDir, Table: ts.Table, ProtoMessage: &orderpb.Order{}}},
		{"record type", spool.Options{Dir: protoDir, Table: ts.Table}},
		{"message", spool.Options{Dir: protoDir, Table: ts.Table, ProtoMessage: &wrapperspb.StringValue{}}},
		{"stream id", spool.Options{Dir: jsonDir, Table: ts.Table, StreamID: "another"}},
	} {
		_, err := spool.Open(ctx, c, tc.opts)
		var me *spool.MismatchError
		if !errors.As(err, &me) || me.Field != tc.field || !errors.Is(err, spool.ErrMismatch) {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
}

// TestBadDirectory: a directory that cannot be made or read is a clear
// error.
func TestBadDirectory(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "sub")} {
		if _, err := spool.Open(context.Background(), c, spool.Options{Dir: dir, Table: ts.Table}); err == nil {
			t.Errorf("open of %s: no error", dir)
		}
	}
	if os.Geteuid() != 0 {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o700)
		_, err := spool.Open(context.Background(), c, spool.Options{Dir: dir, Table: ts.Table})
		if !errors.Is(err, os.ErrPermission) {
			t.Errorf("open of an unreadable directory: %v", err)
		}
	}
	var ce *zbstream.ConfigError
	if _, err := spool.Open(context.Background(), c, spool.Options{Table: ts.Table}); !errors.As(err, &ce) {
		t.Errorf("no Dir: %v", err)
	}
}

// TestBackpressure: a full spool blocks calls (a call whose context ends
// while it waits fails and is not written) until the server makes entries
// durable and their segments are removed; the log never exceeds MaxBytes.
func TestBackpressure(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	const maxBytes = 64 << 10
	sp := openSpool(t, c, t.TempDir(), ts.Table, func(o *spool.Options) { o.MaxBytes, o.SegmentBytes = maxBytes, 8<<10 })
	id := sp.StreamID()
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDelayAcks, Delay: 400 * time.Millisecond, Times: server.Unlimited})
	ctx := context.Background()
	big := make([]byte, 2000)
	for i := range big {
		big[i] = 'x'
	}
	payload := func(i int) []byte { return fmt.Appendf(nil, `{"id":"%d","pad":"%s"}`, i, big) }
	var blocked bool
	n := 0
	for ; n < 200 && !blocked; n++ {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := sp.IngestRecord(short, payload(n))
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			blocked = true
			n--
		case err != nil:
			t.Fatal(err)
		}
		if b := sp.Stats().Bytes; b > maxBytes {
			t.Fatalf("log holds %d bytes, over %d", b, maxBytes)
		}
	}
	if !blocked {
		t.Fatal("the spool never filled")
	}
	h.Remove()
	for i := n; i < n+40; i++ {
		if _, err := sp.IngestRecord(ctx, payload(i)); err != nil {
			t.Fatal(err)
		}
		if b := sp.Stats().Bytes; b > maxBytes {
			t.Fatalf("log holds %d bytes, over %d", b, maxBytes)
		}
	}
	st := sp.Stats()
	closeSpool(t, sp)
	if st.RemovedSegments == 0 {
		t.Errorf("no segment removed: %+v", st)
	}
	// Every call that returned is stored; the one that timed out while it
	// waited for room is not (were it already being written when its
	// context ended, it would land at most once: allow that).
	if got := len(stored(t, ts.Server, id)); got != n+40 && got != n+41 {
		t.Errorf("%d offsets stored, want %d", got, n+40)
	}
}

// TestBadRecords: records the server would refuse never reach the log
// (they would be resent, and refused, at every Open); calls over the
// per-call limit neither.
func TestBadRecords(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	ctx := context.Background()
	sp := openSpool(t, c, t.TempDir(), ts.Table, func(o *spool.Options) { o.MaxCallBytes = 1000 })
	for _, r := range [][]byte{[]byte(`[1]`), []byte(`{"a":`), []byte("{\"a\":\"\xff\"}"), nil} {
		if _, err := sp.IngestRecord(ctx, r); !errors.Is(err, zbstream.ErrRecordType) {
			t.Errorf("record %q: %v", r, err)
		}
	}
	if _, err := sp.IngestBatch(ctx, [][]byte{rec("a"), []byte(`x`)}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Errorf("batch with a bad record: %v", err)
	}
	big := fmt.Appendf(nil, `{"pad":"%01000d"}`, 0)
	if _, err := sp.IngestRecord(ctx, big); !errors.Is(err, spool.ErrTooLarge) {
		t.Errorf("record over the limit: %v", err)
	}
	if off, err := sp.IngestRecord(ctx, rec("ok")); err != nil || off != 0 {
		t.Errorf("good record: %d, %v", off, err)
	}
	closeSpool(t, sp)

	pdir := t.TempDir()
	ps := openSpool(t, c, pdir, ts.Table, func(o *spool.Options) { o.ProtoMessage = &orderpb.Order{} })
	if _, err := ps.IngestRecord(ctx, []byte{0xff, 0xff}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Errorf("garbage proto: %v", err)
	}
	if _, err := ps.IngestRecord(ctx, []byte{0xf8, 0x07, 0x01}); !errors.Is(err, zbstream.ErrRecordType) { // field 127, unknown
		t.Errorf("unknown field: %v", err)
	}
	closeSpool(t, ps)
}

// TestAdoptStream: a new spool adopts an existing persistent stream and
// continues after its watermark; an unknown id leaves the spool new.
func TestAdoptStream(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	ctx := context.Background()
	s, err := c.CreatePersistentStream(ctx, ts.Table)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.IngestRecord(ctx, rec(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := spool.Open(ctx, c, spool.Options{Dir: dir, Table: ts.Table, StreamID: "ps-unknown", StreamOptions: []zbstream.StreamOption{zbstream.WithoutRecovery()}}); err == nil {
		t.Fatal("adopting an unknown stream: no error")
	}
	sp := openSpool(t, c, dir, ts.Table, func(o *spool.Options) { o.StreamID = s.StreamID() })
	if off, err := sp.IngestRecord(ctx, rec("3")); err != nil || off != 3 {
		t.Fatalf("first spooled call: %d, %v", off, err)
	}
	closeSpool(t, sp)
	sp = openSpool(t, c, dir, ts.Table) // the header keeps the id
	if sp.StreamID() != s.StreamID() {
		t.Fatalf("stream %s, adopted %s", sp.StreamID(), s.StreamID())
	}
	closeSpool(t, sp)
}

// TestOffsetMismatch: a record ingested into the spool's stream behind its
// back shifts the stream's offsets; the next spooled call sees the stream
// assign another offset than the log and fails the spool loudly.
func TestOffsetMismatch(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	ctx := context.Background()
	sp := openSpool(t, c, t.TempDir(), ts.Table)
	if _, err := sp.IngestRecord(ctx, rec("0")); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Stream().IngestRecord(ctx, rec("behind its back")); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.IngestRecord(ctx, rec("1")); !errors.Is(err, spool.ErrOffsetMismatch) || !errors.Is(err, spool.ErrFailed) {
		t.Fatalf("call after a foreign ingest: %v", err)
	}
	if _, err := sp.IngestRecord(ctx, rec("2")); !errors.Is(err, spool.ErrFailed) {
		t.Fatalf("call on a failed spool: %v", err)
	}
	if err := sp.Close(ctx); !errors.Is(err, spool.ErrOffsetMismatch) {
		t.Fatalf("close: %v", err)
	}
}
