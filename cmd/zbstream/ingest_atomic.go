package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// ingestAtomicFile writes a file whole and atomically: into a temporary
// file beside it, renamed over it by commit. A crash leaves either the old
// file or the new one, never a mix, and once commit returns the new one
// survives a power loss. The state file and the dead-letter file are
// written so: both are rewritten whole, which is what keeps a rerun from
// ever duplicating their content.
type ingestAtomicFile struct {
	path string
	*os.File
}

func ingestCreateAtomic(path string) (*ingestAtomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &ingestAtomicFile{path: path, File: f}, nil
}

// abort removes the temporary file; the old file, if any, stays.
func (a *ingestAtomicFile) abort() {
	a.Close()
	os.Remove(a.Name())
}

// commit syncs the temporary file and renames it over path.
func (a *ingestAtomicFile) commit() error {
	err := a.Sync()
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(a.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.Name())
		return fmt.Errorf("%s: %w", a.path, err)
	}
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be synced there; the rename is durable enough
	}
	if d, err := os.Open(filepath.Dir(a.path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("%s: syncing its directory: %w", a.path, err)
		}
	}
	return nil
}
