package spool

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// damagedSpool is a spool directory with a header, a sealed segment of
// offsets 0..3 whose entry 2 is damaged, and an active segment 4..5.
func damagedSpool(t *testing.T) (dir string, sealed, bad, active []byte, ends []int) {
	t.Helper()
	_, sealed, ends = testLog(0, 1, 2, 1)
	_, active, _ = testLog(4, 1, 1)
	bad = bytes.Clone(sealed)
	bad[ends[1]+entryHeader+3] ^= 0x10
	dir = writeLog(t, map[int64][]byte{0: bad, 4: active})
	withHeader(t, dir)
	return dir, sealed, bad, active, ends
}

// withHeader gives dir a header and a lock file, as Open leaves them.
func withHeader(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, lockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeMeta(dir, meta{Table: "a.b.c", RecordType: "json", RequestID: "r", StreamID: "ps-1"}); err != nil {
		t.Fatal(err)
	}
}

// TestCheck reports the segments, entries and offsets of a log and its
// damage, without changing anything.
func TestCheck(t *testing.T) {
	dir, _, _, _, ends := damagedSpool(t)
	before := snapshot(t, dir)
	r, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Clean() || len(r.Damage) != 1 || len(r.Segments) != 2 || r.Offsets != span(0, 5) || r.Entries != 2+2 {
		t.Fatalf("report %+v", r)
	}
	d := r.Damage[0]
	if d.File != filepath.Join(dir, segmentName(0)) || d.Offset != int64(ends[1]) || d.AtStake != span(2, 5) {
		t.Fatalf("damage %+v", d)
	}
	if !r.Segments[0].Damaged || r.Segments[1].Damaged || r.Segments[0].Entries != 2 || r.Segments[1].First != 4 {
		t.Fatalf("segments %+v", r.Segments)
	}
	if !equalMaps(before, snapshot(t, dir)) {
		t.Fatal("Check changed the directory")
	}

	// A torn tail is not damage.
	_, data, ends := testLog(0, 1, 1)
	dir = writeLog(t, map[int64][]byte{0: data[:ends[1]-3]})
	withHeader(t, dir)
	if r, err := Check(dir); err != nil || !r.Clean() || r.TornBytes != int64(ends[1]-3-ends[0]) || r.Offsets != span(0, 0) {
		t.Fatalf("torn tail: %+v, %v", r, err)
	}
	if _, err := Check(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Check of a missing directory: no error")
	}
}

// TestRepair moves the damaged segment aside (a link: its bytes kept) with
// every later one, rewrites its name with its intact entries, records the
// offsets at stake in the header, and leaves a log Open accepts.
func TestRepair(t *testing.T) {
	dir, sealed, bad, active, ends := damagedSpool(t)
	r, err := Repair(dir)
	if err != nil {
		t.Fatal(err)
	}
	seg0, seg4 := filepath.Join(dir, segmentName(0)), filepath.Join(dir, segmentName(4))
	if r.Damage == nil || r.AtStake != span(2, 5) || r.Kept != span(0, 1) ||
		len(r.Moved) != 2 || r.Moved[0] != seg0+".damaged" || r.Moved[1] != seg4+".damaged" {
		t.Fatalf("report %+v", r)
	}
	files := snapshot(t, dir)
	if files[segmentName(0)] != string(sealed[:ends[1]]) || files[segmentName(0)+".damaged"] != string(bad) ||
		files[segmentName(4)+".damaged"] != string(active) {
		t.Fatalf("files after the repair: %v", keys(files))
	}
	if _, ok := files[segmentName(4)]; ok {
		t.Fatal("the segment after the damage is still in the log")
	}
	m, _, err := readMeta(dir)
	if err != nil || m.Repair == nil || m.Repair.From != 2 || m.Repair.To != 5 || len(m.Repair.Files) != 2 {
		t.Fatalf("header after the repair: %+v, %v", m.Repair, err)
	}
	if _, ents, err := openWAL(dir, 1<<20, m.Repair.From); err != nil || len(ents) != 2 {
		t.Fatalf("openWAL after the repair: %d entries, %v", len(ents), err)
	}
	c, err := Check(dir)
	if err != nil || !c.Clean() || c.Repaired != span(2, 5) {
		t.Fatalf("check after the repair: %+v, %v", c, err)
	}
	// Nothing left to repair: nothing changes.
	before := snapshot(t, dir)
	if r, err := Repair(dir); err != nil || r.Damage != nil || len(r.Moved) != 0 {
		t.Fatalf("second repair: %+v, %v", r, err)
	}
	if !equalMaps(before, snapshot(t, dir)) {
		t.Fatal("a repair of a clean log changed it")
	}
}

// TestRepairInterrupted: a repair a crash stopped after it linked the
// damaged segment aside is finished by the next one, which reuses the
// link; another file already named NAME.damaged is not overwritten.
func TestRepairInterrupted(t *testing.T) {
	dir, sealed, bad, _, ends := damagedSpool(t)
	seg0 := filepath.Join(dir, segmentName(0))
	if err := os.Link(seg0, seg0+".damaged"); err != nil {
		t.Fatal(err)
	}
	if r, err := Repair(dir); err != nil || r.Moved[0] != seg0+".damaged" {
		t.Fatalf("repair after a crash: %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(seg0); !bytes.Equal(b, sealed[:ends[1]]) {
		t.Fatal("the damaged segment's intact prefix was not kept")
	}
	if b, _ := os.ReadFile(seg0 + ".damaged"); !bytes.Equal(b, bad) {
		t.Fatal("the link made before the crash no longer holds the damaged segment")
	}

	dir, _, bad, _, _ = damagedSpool(t)
	seg0 = filepath.Join(dir, segmentName(0))
	if err := os.WriteFile(seg0+".damaged", []byte("another"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Repair(dir)
	if err != nil || r.Moved[0] != seg0+".damaged.1" {
		t.Fatalf("repair beside another .damaged file: %+v, %v", r, err)
	}
	if b, _ := os.ReadFile(seg0 + ".damaged.1"); !bytes.Equal(b, bad) {
		t.Fatal("the damaged segment was not kept")
	}
}

// TestRepairRefuses: a log without its header, or a spool in use, is not
// repaired.
func TestRepairRefuses(t *testing.T) {
	_, data, ends := testLog(0, 1, 1, 1)
	data[ends[0]+entryHeader] ^= 1
	dir := writeLog(t, map[int64][]byte{0: data})
	if _, err := Repair(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("repair without a header: %v", err)
	}
	if r, err := Check(dir); err != nil || len(r.Damage) != 2 {
		t.Fatalf("check without a header: %+v, %v", r, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := Repair(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("repair of a spool in use: %v", err)
	}
	if _, err := Check(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("check of a spool in use: %v", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
