package spool_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
)

// flipEntry flips a byte in the body of entry i of the spool's only
// segment and returns the segment's path and the entry's byte position.
func flipEntry(t *testing.T, dir string, i int) (string, int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for range i {
		pos += 8 + int(binary.LittleEndian.Uint32(data[pos:]))
	}
	data[pos+12] ^= 0x01 // in the entry's offset field
	if err := os.WriteFile(segs[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	return segs[0], int64(pos)
}

// dirBytes returns every file of dir and its bytes.
func dirBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// refuseAndRepair flips a byte in the third of five synced entries:
// Open refuses with a *CorruptError and changes nothing, Check reports the
// damage, Repair moves it aside and reports offsets 2..4 at stake.
func refuseAndRepair(t *testing.T, c *zbstream.Client, dir, table string) {
	t.Helper()
	seg, pos := flipEntry(t, dir, 2)
	before := dirBytes(t, dir)
	_, err := spool.Open(context.Background(), c, spool.Options{Dir: dir, Table: table})
	var ce *spool.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, spool.ErrCorrupt) {
		t.Fatalf("open of a spool with a damaged synced entry: %v", err)
	}
	if ce.File != seg || ce.Offset != pos || ce.AtStake != (spool.Offsets{First: 2, Count: 3}) {
		t.Fatalf("corrupt error %+v", ce)
	}
	t.Logf("Open: %v", err)
	if after := dirBytes(t, dir); !maps.Equal(before, after) {
		t.Fatal("Open refused and changed the spool's directory")
	}
	r, err := spool.Check(dir)
	if err != nil || r.Clean() || r.Damage[0].AtStake != ce.AtStake {
		t.Fatalf("check: %+v, %v", r, err)
	}
	rr, err := spool.Repair(dir)
	if err != nil || rr.AtStake != ce.AtStake || len(rr.Moved) != 1 || rr.Moved[0] != seg+".damaged" {
		t.Fatalf("repair: %+v, %v", rr, err)
	}
}

// TestCorruptSyncedEntryServerHasAll is the case: a flipped byte
// in the third of five synced entries used to cut entries 2-4 (calls that
// had returned) and give the next call offset 2. Open now refuses; after
// the repair, the server holding 0..4, nothing is lost and the next call
// gets offset 5, not an offset the server holds.
func TestCorruptSyncedEntryServerHasAll(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	sp := openSpool(t, c, dir, ts.Table)
	id := sp.StreamID()
	ctx := context.Background()
	for i := range 5 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	closeSpool(t, sp)
	refuseAndRepair(t, c, dir, ts.Table)

	sp = openSpool(t, c, dir, ts.Table)
	if st := sp.Stats(); st.Lost.Count != 0 {
		t.Errorf("lost %s, the server holds everything", st.Lost)
	}
	if off, err := sp.IngestRecord(ctx, rec("5")); err != nil || off != 5 {
		t.Fatalf("first call after the repair: %d, %v; want offset 5", off, err)
	}
	closeSpool(t, sp)
	data := stored(t, ts.Server, id)
	for i := range 6 {
		if r := data[int64(i)]; len(r) != 1 || string(r[0]) != string(rec(fmt.Sprint(i))) {
			t.Fatalf("offset %d holds %q", i, r)
		}
	}
	// The record of the repair is gone: the spool opens as any other.
	sp = openSpool(t, c, dir, ts.Table)
	if st := sp.Stats(); st.Lost.Count != 0 {
		t.Errorf("second open after the repair: lost %s", st.Lost)
	}
	closeSpool(t, sp)
}

// TestCorruptSyncedEntryServerLacks: the server holds only a prefix of the
// calls (the rest were in the log only); after the repair Open reports
// exactly the offsets lost (at stake and not on the server) and continues
// after the server's watermark.
func TestCorruptSyncedEntryServerLacks(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	sp := openSpool(t, c, dir, ts.Table)
	id := sp.StreamID()
	ctx := context.Background()
	for i := range 2 {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDrop, After: 0, Times: server.Unlimited})
	for i := 2; i < 5; i++ {
		if _, err := sp.IngestRecord(ctx, rec(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_ = sp.Close(gone) // abandoned: calls 2..4 may be in the log only
	h.Remove()
	refuseAndRepair(t, c, dir, ts.Table)

	sp = openSpool(t, c, dir, ts.Table)
	w := sp.LastDurable()
	want := spool.Offsets{First: max(2, w+1), Count: 4 - max(2, w+1) + 1}
	if want.Count <= 0 {
		want = spool.Offsets{}
	}
	if st := sp.Stats(); st.Lost != want {
		t.Errorf("lost %s, want %s (watermark %d)", st.Lost, want, w)
	}
	off, err := sp.IngestRecord(ctx, rec("new"))
	if err != nil || off != w+1 {
		t.Fatalf("first call after the repair: %d, %v; want %d", off, err, w+1)
	}
	closeSpool(t, sp)
	t.Logf("watermark %d at the open after the repair; lost %s", w, want)
	data := stored(t, ts.Server, id)
	for i := range w + 1 {
		if r := data[i]; len(r) != 1 || string(r[0]) != string(rec(fmt.Sprint(i))) {
			t.Fatalf("offset %d holds %q", i, r)
		}
	}
	if r := data[w+1]; len(r) != 1 || string(r[0]) != string(rec("new")) || len(data) != int(w+2) {
		t.Fatalf("offset %d holds %q, %d offsets stored", w+1, r, len(data))
	}
}
