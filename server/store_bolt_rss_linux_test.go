package server

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The bolt engine drops its mapping of the database file's pages every
// dropMappedEvery bytes of pages written (store_bolt_rss_linux.go): an
// append rewrites the stream's last leaf, up to four earlier batches and
// the new one, reading it through the mapping, so without the drop every
// batch stored stays in the process's resident set (about 1.15 x what was
// written), and with drops counted by the records appended the mapping
// held up to four times dropMappedEvery (issue 25). While
// 2.5 x dropMappedEvery of records is written, what the mapping holds
// resident must stay under dropMappedEvery and one such leaf.
func TestBoltDropsMappedPages(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// Four streams appended to in turn, each leaf reread as it grows.
	var ids []string
	for i := range 4 {
		ids = append(ids, mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", RequestID: strconv.Itoa(i)}).ID)
	}
	rec := make([]byte, 1<<20)
	for i := range rec {
		rec[i] = byte(i)
	}
	batch := Batch{Records: [][]byte{rec, rec, rec, rec}} // 4 MiB
	path := filepath.Join(dir, BoltFileName)
	var peak int64
	n := int64(dropMappedEvery * 5 / 2 / (4 << 20))
	for i := range n {
		batch.Offset = i / int64(len(ids))
		if err := s.Append(ctx, ids[i%int64(len(ids))], []Batch{batch}); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, mappedRSS(t, path))
	}
	t.Logf("%d MiB written, at most %d MiB of the database file resident in the mapping", n*4, peak>>20)
	if limit := int64(dropMappedEvery + 5*(4<<20)); peak >= limit {
		t.Fatalf("%d bytes of the database file resident while %d MiB were written, want under %d", peak, n*4, limit)
	}
}

// mappedRSS returns the resident bytes of this process's mappings of the
// file at path (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rss int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping's header line
			in = fields[len(fields)-1] == path
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) == 3 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rss += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rss
}
