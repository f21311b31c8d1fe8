package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/zbstream/zbstream/internal/atomicfile"
)

// names returns the names of dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteFile: a new file is created, an existing one replaced, with
// mode 0600 off Windows, and no temporary file stays behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, want := range []string{"first\n", "second, longer\n", ""} {
		if err := atomicfile.WriteFile(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if got := content(t, path); got != want {
			t.Fatalf("content %q, want %q", got, want)
		}
		if got := names(t, dir); len(got) != 1 || got[0] != "state.json" {
			t.Fatalf("directory holds %v, want state.json only", got)
		}
	}
	if info, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

// TestCreateCommitAbort: what is written reaches the file only at Commit;
// Abort leaves the old file and removes the temporary one; both are final.
func TestCreateCommitAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dead.jsonl")
	if err := atomicfile.WriteFile(path, []byte("old\n")); err != nil {
		t.Fatal(err)
	}

	a, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() != path {
		t.Fatalf("Path = %q, want %q", a.Path(), path)
	}
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := a.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := content(t, path); got != "old\n" {
		t.Fatalf("before Commit the file holds %q, want the old content", got)
	}
	if got := names(t, dir); len(got) != 2 || !strings.HasPrefix(got[0], ".dead.jsonl.tmp") {
		t.Fatalf("while writing the directory holds %v, want a hidden temporary file beside the file", got)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != "one\ntwo\n" {
		t.Fatalf("after Commit the file holds %q", got)
	}
	if err := a.Commit(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("a second Commit: %v, want fs.ErrClosed", err)
	}
	if _, err := a.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Commit: %v, want fs.ErrClosed", err)
	}
	a.Abort() // after Commit: nothing
	if got := content(t, path); got != "one\ntwo\n" {
		t.Fatalf("Abort after Commit changed the file: %q", got)
	}

	b, err := atomicfile.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("dropped\n")); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	b.Abort()
	if got := content(t, path); got != "one\ntwo\n" {
		t.Fatalf("after Abort the file holds %q, want the committed content", got)
	}
	if got := names(t, dir); len(got) != 1 {
		t.Fatalf("after Abort the directory holds %v, want the file only", got)
	}
}

// TestConcurrentReplacements: replacements of one path under way at once
// use their own temporary files, and the file ends whole, as one of them
// wrote it.
func TestConcurrentReplacements(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := atomicfile.WriteFile(path, []byte(strings.Repeat(string(rune('a'+i)), 4096))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := content(t, path)
	if len(got) != 4096 || strings.Count(got, got[:1]) != 4096 {
		t.Fatalf("the file is a mix of replacements (%d bytes)", len(got))
	}
	if n := names(t, dir); len(n) != 1 {
		t.Fatalf("directory holds %v, want the file only", n)
	}
}

// TestErrors: a missing directory fails Create, and a directory in the
// file's place fails Commit's rename; both are *fs.PathError naming the
// step, leave the old state and no temporary file.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "gone", "f")
	err := atomicfile.WriteFile(missing, []byte("x"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "create" || pe.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFile into a missing directory: %#v, want a create *fs.PathError naming %s", err, missing)
	}

	taken := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(taken, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = atomicfile.WriteFile(taken, []byte("x"))
	if !errors.As(err, &pe) || pe.Op != "rename" || !strings.HasPrefix(filepath.Base(pe.Path), ".taken.tmp") {
		t.Fatalf("WriteFile over a non-empty directory: %#v, want a rename *fs.PathError naming the temporary file", err)
	}
	if strings.Count(err.Error(), pe.Path) != 1 {
		t.Errorf("the message names the file more than once: %v", err)
	}
	if n := names(t, dir); len(n) != 1 || n[0] != "taken" {
		t.Fatalf("after a failed rename the directory holds %v", n)
	}

	if err := atomicfile.SyncDir(filepath.Join(dir, "gone")); err != nil && !errors.As(err, &pe) {
		t.Fatalf("SyncDir of a missing directory: %#v, want a *fs.PathError", err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}
