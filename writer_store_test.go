package zbstream_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zbstream/zbstream"
)

// TestFileStreamStore: entries survive a reopen; a missing file is an
// empty store; concurrent saves all land; no temporary file is left.
func TestFileStreamStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "streams.json")
	s, err := zbstream.OpenFileStreamStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load(ctx, "a.b.c"); ok || err != nil {
		t.Fatalf("empty store: Load = %v, %v", ok, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			e := zbstream.StreamEntry{RequestID: fmt.Sprint("req", i), StreamID: fmt.Sprint("id", i)}
			if err := s.Save(ctx, fmt.Sprintf("main.s.t%d", i), e); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := s.Save(ctx, "main.s.t0", zbstream.StreamEntry{RequestID: "req0"}); err != nil {
		t.Fatal(err)
	}
	again, err := zbstream.OpenFileStreamStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		e, ok, err := again.Load(ctx, fmt.Sprintf("main.s.t%d", i))
		want := zbstream.StreamEntry{RequestID: fmt.Sprint("req", i), StreamID: fmt.Sprint("id", i)}
		if i == 0 {
			want.StreamID = ""
		}
		if !ok || err != nil || e != want {
			t.Fatalf("table %d after reopen: %+v, %v, %v; want %+v", i, e, ok, err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d files, want the store only: %v", len(entries), entries)
	}
}

// TestFileStreamStoreRefuses: a damaged file, another version or an empty
// entry is an error naming the file, never an empty store (which would
// make second streams); a save that cannot be written is an error and
// leaves the store as it was, on disk and in memory; a cancelled context
// saves nothing.
func TestFileStreamStoreRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"torn":    `{"version":1,"tables":{"a.b.c":{"request_id":"r"`,
		"version": `{"version":2,"tables":{}}`,
		"unknown": `{"version":1,"tables":{},"extra":1}`,
		"empty":   `{"version":1,"tables":{"a.b.c":{}}}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := zbstream.OpenFileStreamStore(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: OpenFileStreamStore = %v, want an error naming %s", name, err, path)
		}
	}
	if _, err := zbstream.OpenFileStreamStore(dir); err == nil {
		t.Error("a directory opened as a store")
	}

	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "streams.json")
	s, err := zbstream.OpenFileStreamStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "a.b.c", zbstream.StreamEntry{RequestID: "r", StreamID: "s"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := os.RemoveAll(sub); err != nil { // the directory disappears under the store
		t.Fatal(err)
	}
	err = s.Save(ctx, "a.b.d", zbstream.StreamEntry{RequestID: "r2"})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("save into a missing directory: %v, want an error naming %s", err, path)
	}
	if _, ok, _ := s.Load(ctx, "a.b.d"); ok {
		t.Fatal("a failed save changed the store in memory")
	}
	if !strings.Contains(string(before), `"s"`) {
		t.Fatalf("first save wrote %s", before)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Save(cctx, "a.b.e", zbstream.StreamEntry{RequestID: "r3"}); err == nil {
		t.Fatal("a save with a cancelled context succeeded")
	}
}
