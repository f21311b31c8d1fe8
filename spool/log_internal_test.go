package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server/servertest"
)

// testEntries returns entries first.. of mixed kinds and sizes, written
// by one group commit, their encoding, and each entry's end in bytes.
func testEntries(first int64, n int) ([]entry, []byte, []int) {
	return testLog(first, n)
}

// testLog is testEntries with group commits of the given sizes.
func testLog(first int64, groups ...int) ([]entry, []byte, []int) {
	var (
		ents []entry
		buf  []byte
		ends []int
	)
	i := 0
	for _, size := range groups {
		g := first + int64(i)
		for range size {
			e := entry{offset: first + int64(i), batch: i%2 == 1, group: g}
			e.records = append(e.records, bytes.Repeat([]byte{byte('a' + i)}, 3+i*7))
			if e.batch {
				e.records = append(e.records, []byte(fmt.Sprintf(`{"i":%d}`, i)), nil)
			}
			buf = appendEntry(buf, &e)
			ents = append(ents, e)
			ends = append(ends, len(buf))
			i++
		}
	}
	return ents, buf, ends
}

func sameEntries(t *testing.T, got, want []entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.offset != w.offset || g.batch != w.batch || g.group != w.group || len(g.records) != len(w.records) {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
		for j := range g.records {
			if !bytes.Equal(g.records[j], w.records[j]) {
				t.Fatalf("entry %d record %d differs", i, j)
			}
		}
	}
}

// recoverBytes writes data as the only segment of a fresh spool directory
// and recovers it.
func recoverBytes(t *testing.T, first int64, data []byte) (*wal, []entry, int64) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, segmentName(first))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	w, ents, err := openWAL(dir, 1<<20, -1)
	if err != nil {
		t.Fatalf("openWAL: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return w, ents, info.Size()
}

// TestTornTail truncates the log after every byte of its last group
// commit (three entries), and corrupts every byte of it: recovery keeps
// exactly the entries before the damage, cuts the file there, and the log
// continues at the next offset.
func TestTornTail(t *testing.T) {
	const first = 40
	want, data, ends := testLog(first, 1, 2, 3)
	from := ends[2]             // the last three entries
	kept := func(pos int) int { // entries wholly before byte pos
		k := 0
		for k < len(ends) && ends[k] <= pos {
			k++
		}
		return k
	}
	for cut := from; cut <= len(data); cut++ {
		w, got, size := recoverBytes(t, first, data[:cut])
		k := kept(cut)
		sameEntries(t, got, want[:k])
		wantSize := int64(0)
		if k > 0 {
			wantSize = int64(ends[k-1])
		}
		if size != wantSize || w.next() != first+int64(k) || w.tornBytes != int64(cut)-wantSize {
			t.Fatalf("cut at %d: size %d (want %d), next %d, torn %d", cut, size, wantSize, w.next(), w.tornBytes)
		}
	}
	for pos := from; pos < len(data); pos++ {
		for _, flip := range []byte{0x01, 0xff} {
			bad := bytes.Clone(data)
			bad[pos] ^= flip
			_, got, size := recoverBytes(t, first, bad)
			k := kept(pos)
			sameEntries(t, got, want[:k])
			if size != int64(ends[k-1]) {
				t.Fatalf("byte %d corrupted: file cut to %d, want %d", pos, size, ends[k-1])
			}
		}
	}
	// Zeros after the last entry (a file extended but never written).
	_, got, _ := recoverBytes(t, first, append(bytes.Clone(data), make([]byte, 100)...))
	sameEntries(t, got, want)
}

// TestSealedSegmentCorrupt: damage in a segment that is not the last one
// cannot come from a crash: a *CorruptError, nothing cut.
func TestSealedSegmentCorrupt(t *testing.T) {
	_, data, ends := testEntries(0, 4)
	bad := bytes.Clone(data)
	bad[ends[1]+10] ^= 0x40
	dir := t.TempDir()
	path := filepath.Join(dir, segmentName(0))
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readSegment(&segment{first: 0, path: path})
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Offset != int64(ends[1]) {
		t.Fatalf("readSegment: %v", err)
	}
	// A valid entry with an offset out of sequence is corruption too.
	_, err = decodeSegment(data, 7, "x")
	if !errors.As(err, &ce) {
		t.Fatalf("offsets out of sequence: %v", err)
	}
}

// faultyFile fails writes (after half the bytes) or syncs on demand.
type faultyFile struct {
	*os.File
	failWrite, failSync *atomic.Bool
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.failWrite.Load() {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if f.failSync.Load() {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestDiskFull: a write that fails (a full disk) fails its calls and
// leaves the log valid: the next call gets the offset the failed one did
// not, and a reopen finds exactly the calls that returned. A failed sync
// fails the spool; the next Open recovers.
func TestDiskFull(t *testing.T) {
	var failWrite, failSync atomic.Bool
	orig := openSegmentFile
	openSegmentFile = func(path string, create bool) (logFile, error) {
		f, err := orig(path, create)
		if err != nil {
			return nil, err
		}
		return &faultyFile{File: f.(*os.File), failWrite: &failWrite, failSync: &failSync}, nil
	}
	defer func() { openSegmentFile = orig }()

	ts := servertest.Start(t)
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	dir := t.TempDir()
	sp, err := Open(ctx, c, Options{Dir: dir, Table: ts.Table})
	if err != nil {
		t.Fatal(err)
	}
	id := sp.StreamID()
	ingest := func(s string) (int64, error) { return sp.IngestRecord(ctx, []byte(`{"v":"`+s+`"}`)) }
	for i := range 3 {
		if off, err := ingest(fmt.Sprint(i)); err != nil || off != int64(i) {
			t.Fatalf("call %d: %d, %v", i, off, err)
		}
	}
	failWrite.Store(true)
	_, err = ingest("lost")
	var we *WriteError
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrWrite) || !errors.As(err, &we) || we.Op != "write" {
		t.Fatalf("write on a full disk: %v", err)
	}
	failWrite.Store(false)
	if off, err := ingest("3"); err != nil || off != 3 {
		t.Fatalf("after the full disk: %d, %v", off, err)
	}
	failSync.Store(true)
	if _, err := ingest("unsynced"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed sync: %v", err)
	}
	failSync.Store(false)
	if _, err := ingest("after"); !errors.Is(err, ErrFailed) {
		t.Fatalf("a call after a failed sync: %v, want ErrFailed", err)
	}
	if err := sp.Close(ctx); !errors.Is(err, syscall.EIO) {
		t.Fatalf("close: %v", err)
	}
	sp, err = Open(ctx, c, Options{Dir: dir, Table: ts.Table})
	if err != nil {
		t.Fatal(err)
	}
	// The entry whose sync failed was written: a call that did not return
	// lands at most once, here once.
	if off, err := ingest("5"); err != nil || off != 5 {
		t.Fatalf("after reopen: %d, %v", off, err)
	}
	if err := sp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	batches, err := ts.Records(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range batches {
		got = append(got, string(b.Records[0]))
	}
	want := []string{`{"v":"0"}`, `{"v":"1"}`, `{"v":"2"}`, `{"v":"3"}`, `{"v":"unsynced"}`, `{"v":"5"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
}

// TestDescriptorChanged: a proto spool whose message kept its name but
// changed its fields is refused.
func TestDescriptorChanged(t *testing.T) {
	dir := t.TempDir()
	m := meta{Table: "a.b.c", RecordType: "proto", Message: "x.M", Descriptor: []byte{0x0a, 0x01, 'M'}, RequestID: "r"}
	if err := writeMeta(dir, m); err != nil {
		t.Fatal(err)
	}
	got, ok, err := readMeta(dir)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := m
	want.Descriptor = []byte{0x0a, 0x01, 'M', 0x12, 0x00}
	var me *MismatchError
	if err := got.check(want, ""); !errors.As(err, &me) || me.Field != "descriptor" {
		t.Fatalf("changed descriptor: %v", err)
	}
	if err := got.check(m, ""); err != nil {
		t.Fatalf("same descriptor: %v", err)
	}
	// A damaged header is a *CorruptError.
	if err := os.WriteFile(filepath.Join(dir, metaFile), []byte(`{"meta":{"version":1},"crc32c":5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readMeta(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged header: %v", err)
	}
}

// FuzzDecodeSegment: any bytes decode to a valid prefix (entries that
// re-encode to exactly the bytes kept, with dense offsets, each starting
// a group or continuing the one before) and, after it, intact entries
// found by scanning the damaged rest (each within it, the proof among
// them), or a *CorruptError; never a panic. The seed corpus in testdata
// holds entries of the format without groups, which must stay readable.
func FuzzDecodeSegment(f *testing.F) {
	_, data, ends := testEntries(3, 4)
	f.Add(data)
	f.Add(data[:ends[1]+5])
	f.Add([]byte{})
	_, data, ends = testLog(3, 1, 2)
	bad := bytes.Clone(data)
	bad[ends[0]-1] ^= 1
	f.Add(bad)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSegment(data, -1, "fuzz")
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if s.valid < 0 || s.valid > len(data) {
			t.Fatalf("valid %d of %d", s.valid, len(data))
		}
		var re []byte
		for i, e := range s.ents {
			if i > 0 && e.offset != s.ents[i-1].offset+1 {
				t.Fatalf("offsets not dense")
			}
			if e.group >= 0 && e.group != e.offset && (i == 0 || e.group != s.ents[i-1].group) {
				t.Fatalf("entry %d: group %d continues no group", e.offset, e.group)
			}
			re = appendEntry(re, &s.ents[i])
		}
		if !bytes.Equal(re, data[:s.valid]) {
			t.Fatalf("the kept prefix does not re-encode to itself")
		}
		if s.valid == len(data) && (s.later > 0 || s.proof >= 0) {
			t.Fatalf("entries after no damage")
		}
		if s.proof >= 0 && (s.later == 0 || s.proofPos <= s.valid || s.proofPos >= len(data) || s.proof > s.last) {
			t.Fatalf("proof %d at byte %d, %d later entries up to %d, valid %d of %d", s.proof, s.proofPos, s.later, s.last, s.valid, len(data))
		}
	})
}
