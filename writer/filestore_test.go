package writer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zbstream/zbstream/writer"
)

// TestFileStore: entries survive a reopen; a missing file is an
// empty store; concurrent saves all land; no temporary file is left.
func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "streams.json")
	s, err := writer.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load(ctx, "a.b.c"); ok || err != nil {
		t.Fatalf("empty store: Load = %v, %v", ok, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			e := writer.Entry{RequestID: fmt.Sprint("req", i), StreamID: fmt.Sprint("id", i)}
			if err := s.Save(ctx, fmt.Sprintf("main.s.t%d", i), e); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := s.Save(ctx, "main.s.t0", writer.Entry{RequestID: "req0"}); err != nil {
		t.Fatal(err)
	}
	again, err := writer.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		e, ok, err := again.Load(ctx, fmt.Sprintf("main.s.t%d", i))
		want := writer.Entry{RequestID: fmt.Sprint("req", i), StreamID: fmt.Sprint("id", i)}
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

// TestFileStoreRefuses: a damaged file, another version or an empty
// entry is an error naming the file, never an empty store (which would
// make second streams); a save that cannot be written is an error and
// leaves the store as it was, on disk and in memory; a cancelled context
// saves nothing.
func TestFileStoreRefuses(t *testing.T) {
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
		if _, err := writer.OpenFileStore(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: OpenFileStore = %v, want an error naming %s", name, err, path)
		}
	}
	if _, err := writer.OpenFileStore(dir); err == nil {
		t.Error("a directory opened as a store")
	}

	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "streams.json")
	s, err := writer.OpenFileStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "a.b.c", writer.Entry{RequestID: "r", StreamID: "s"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := os.RemoveAll(sub); err != nil { // the directory disappears under the store
		t.Fatal(err)
	}
	err = s.Save(ctx, "a.b.d", writer.Entry{RequestID: "r2"})
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
	if err := s.Save(cctx, "a.b.e", writer.Entry{RequestID: "r3"}); err == nil {
		t.Fatal("a save with a cancelled context succeeded")
	}
}
