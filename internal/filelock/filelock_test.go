package filelock

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestLock: a held lock refuses a second taker with ErrLocked, in this
// process too (each Lock opens the file anew), and is free again once
// the holder closes its file.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if g, err := Lock(path); !errors.Is(err, ErrLocked) {
		if g != nil {
			g.Close()
		}
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	f.Close()
	g, err := Lock(path)
	if err != nil {
		t.Fatalf("Lock after the holder closed: %v", err)
	}
	g.Close()
	if _, err := Lock(filepath.Join(t.TempDir(), "missing", "x.lock")); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("Lock in a missing directory: %v", err)
	}
}
