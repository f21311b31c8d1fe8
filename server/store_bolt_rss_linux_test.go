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
// dropMappedEvery bytes committed (store_bolt_rss_linux.go): an append
// reads the stream's last leaf, the previous batch whole, through the
// mapping, so without the drop every batch stored stays in the process's
// resident set (here about 1.15 x what was written). While 2.5 x
// dropMappedEvery is written, what the mapping holds resident must stay
// under 2 x dropMappedEvery.
func TestBoltDropsMappedPages(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	m := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t"})
	rec := make([]byte, 1<<20)
	for i := range rec {
		rec[i] = byte(i)
	}
	batch := Batch{Records: [][]byte{rec, rec, rec, rec}} // 4 MiB
	path := filepath.Join(dir, BoltFileName)
	var peak int64
	n := int64(dropMappedEvery * 5 / 2 / (4 << 20))
	for off := range n {
		batch.Offset = off
		if err := s.Append(ctx, m.ID, []Batch{batch}); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, mappedRSS(t, path))
	}
	t.Logf("%d MiB written, at most %d MiB of the database file resident in the mapping", n*4, peak>>20)
	if peak >= 2*dropMappedEvery {
		t.Fatalf("%d bytes of the database file resident while %d MiB were written, want under %d", peak, n*4, 2*dropMappedEvery)
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
