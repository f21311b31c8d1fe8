package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// writeLog writes segments (their first offsets and bytes) into a fresh
// directory and returns it.
func writeLog(t *testing.T, segs map[int64][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for first, data := range segs {
		if err := os.WriteFile(filepath.Join(dir, segmentName(first)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot returns every file of dir and its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
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

// wantCorrupt opens the log of dir, wants a *CorruptError at byte pos of
// the segment first with offsets stake at stake, and the directory
// unchanged.
func wantCorrupt(t *testing.T, dir string, first, pos int64, stake Offsets, what string) {
	t.Helper()
	before := snapshot(t, dir)
	_, _, err := openWAL(dir, 1<<20, -1)
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: openWAL: %v, want a *CorruptError", what, err)
	}
	if ce.File != filepath.Join(dir, segmentName(first)) || ce.Offset != pos || ce.AtStake != stake {
		t.Fatalf("%s: %s at byte %d, offsets %s at stake; want %s at byte %d, offsets %s",
			what, ce.File, ce.Offset, ce.AtStake, segmentName(first), pos, stake)
	}
	if after := snapshot(t, dir); !equalMaps(before, after) {
		t.Fatalf("%s: openWAL refused and changed the directory", what)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCorruptActive flips bytes in every entry of an active segment
// written by five calls (five group commits) and by calls whose last
// group holds two entries: damage with an intact entry of a later group
// after it is a *CorruptError naming the segment, the byte and the
// offsets at stake, and changes nothing; damage confined to the last group
// is cut as a torn tail.
func TestCorruptActive(t *testing.T) {
	const first = 10
	for _, groups := range [][]int{{1, 1, 1, 1, 1}, {1, 2, 2}} {
		want, data, ends := testLog(first, groups...)
		lastGroup := len(want) - groups[len(groups)-1]
		for i := range want {
			start := 0
			if i > 0 {
				start = ends[i-1]
			}
			for pos := start; pos < ends[i]; pos++ {
				for _, flip := range []byte{0x01, 0xff} {
					bad := bytes.Clone(data)
					bad[pos] ^= flip
					dir := writeLog(t, map[int64][]byte{first: bad})
					if i < lastGroup {
						wantCorrupt(t, dir, first, int64(start), span(first+int64(i), first+int64(len(want))-1), "entry of a synced group")
						continue
					}
					w, got, err := openWAL(dir, 1<<20, -1)
					if err != nil {
						t.Fatalf("groups %v, byte %d of entry %d: %v", groups, pos, i, err)
					}
					sameEntries(t, got, want[:i])
					if w.next() != first+int64(i) || w.active().size != int64(start) {
						t.Fatalf("groups %v, byte %d of entry %d: next %d, size %d", groups, pos, i, w.next(), w.active().size)
					}
				}
			}
		}
	}
}

// TestCorruptLength damages the length field of an entry in the middle:
// longer than the segment, or one byte short. Either is corruption.
func TestCorruptLength(t *testing.T) {
	const first = 0
	_, data, ends := testLog(first, 1, 1, 1, 1, 1)
	for _, n := range []uint32{0xffffffff, uint32(ends[2]-ends[1]-entryHeader) - 1, 0} {
		bad := bytes.Clone(data)
		binary.LittleEndian.PutUint32(bad[ends[1]:], n)
		wantCorrupt(t, writeLog(t, map[int64][]byte{first: bad}), first, int64(ends[1]), span(2, 4), "length field")
	}
}

// TestCorruptSealed flips bytes in every entry of a sealed segment, and
// cuts its tail short: always corruption (a sealed segment was synced
// whole), the offsets at stake running to the end of the log.
func TestCorruptSealed(t *testing.T) {
	_, sealed, ends := testLog(0, 1, 2, 1)
	_, active, _ := testLog(4, 1, 1)
	for i := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		for pos := start; pos < ends[i]; pos++ {
			bad := bytes.Clone(sealed)
			bad[pos] ^= 0x20
			dir := writeLog(t, map[int64][]byte{0: bad, 4: active})
			wantCorrupt(t, dir, 0, int64(start), span(int64(i), 5), "entry of a sealed segment")
		}
	}
	for cut := ends[2] + 1; cut < len(sealed); cut++ {
		dir := writeLog(t, map[int64][]byte{0: sealed[:cut], 4: active})
		wantCorrupt(t, dir, 0, int64(ends[2]), span(3, 5), "sealed segment cut short")
	}
	// A sealed segment that ends before the next begins: a gap.
	dir := writeLog(t, map[int64][]byte{0: sealed[:ends[2]], 4: active})
	wantCorrupt(t, dir, 0, int64(ends[2]), span(3, 5), "gap")
}

// TestCorruptOldFormat: entries written before groups were recorded stay
// readable; a damaged one with an intact one after it is refused (its
// group is unknown: refusing costs a repair, cutting could lose synced
// entries), a damaged last one is a torn tail; entries of the new format
// after old ones prove damage in the old ones.
func TestCorruptOldFormat(t *testing.T) {
	old, _, _ := testLog(0, 1, 1, 1, 1)
	var (
		data    []byte
		oldEnds []int
	)
	for i := range old {
		old[i].group = -1
		data = appendEntry(data, &old[i])
		oldEnds = append(oldEnds, len(data))
	}
	if data[entryHeader+8] != kindRecord {
		t.Fatalf("old entry kind %#x", data[entryHeader+8])
	}
	_, got, _ := recoverBytes(t, 0, data)
	sameEntries(t, got, old)

	bad := bytes.Clone(data)
	bad[oldEnds[0]+9] ^= 1
	wantCorrupt(t, writeLog(t, map[int64][]byte{0: bad}), 0, int64(oldEnds[0]), span(1, 3), "old entry")

	bad = bytes.Clone(data)
	bad[oldEnds[2]+9] ^= 1
	_, got, size := recoverBytes(t, 0, bad)
	sameEntries(t, got, old[:3])
	if size != int64(oldEnds[2]) {
		t.Fatalf("old torn tail: size %d, want %d", size, oldEnds[2])
	}

	// Old entries 0..3, then a new-format group at 4: damage to entry 3
	// is damage to synced data.
	_, more, _ := testLog(4, 1)
	bad = append(bytes.Clone(data), more...)
	bad[oldEnds[2]+9] ^= 1
	wantCorrupt(t, writeLog(t, map[int64][]byte{0: bad}), 0, int64(oldEnds[2]), span(3, 4), "old entry before a new group")
}

// TestTornTailScan: garbage of any length after the last group (zeros, or
// bytes that are no entry) is a torn tail; stale intact entries with
// offsets below the damage prove nothing.
func TestTornTailScan(t *testing.T) {
	want, data, _ := testLog(20, 1, 1, 2)
	for n := 1; n <= 200; n += 7 {
		for _, fill := range []byte{0, 0xff, 'x'} {
			_, got, _ := recoverBytes(t, 20, append(bytes.Clone(data), bytes.Repeat([]byte{fill}, n)...))
			sameEntries(t, got, want)
		}
	}
	// A stale copy of the log's own first entries after a torn one.
	_, stale, _ := testLog(20, 1, 1)
	_, got, _ := recoverBytes(t, 20, append(append(bytes.Clone(data), 9, 9, 9), stale...))
	sameEntries(t, got, want)
}
