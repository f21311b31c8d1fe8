package zbstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// fileStoreVersion is the version of FileStreamStore's format.
const fileStoreVersion = 1

// FileStreamStore is a StreamStore in one JSON file, crash-safe: every
// Save writes the whole file to a temporary file beside it, syncs it,
// renames it over the old one and syncs the directory, so that a crash
// leaves the old content or the new one, never a mix, and a Save that
// returned survives a power loss (if the disk honours fsync). The file is
// small: one line of ids per table.
//
// One process at a time: two processes writing the same tables through
// one file would fence each other's streams on the server (a resume ends
// the older connection), and the last Save would win.
type FileStreamStore struct {
	path string

	mu sync.Mutex
	m  map[string]StreamEntry // what the file holds
}

// fileStore is the file's content.
type fileStore struct {
	Version int                    `json:"version"`
	Tables  map[string]StreamEntry `json:"tables"`
}

// OpenFileStreamStore opens the store in the file at path; a file that
// does not exist yet is an empty store, created by the first Save. A file
// that cannot be read or decoded is an error naming it, never an empty
// store: a store that forgot its ids would make a second stream for every
// table, and replayed records would land twice.
func OpenFileStreamStore(path string) (*FileStreamStore, error) {
	s := &FileStreamStore{path: path, m: map[string]StreamEntry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zbstream: stream store: %w", err)
	}
	var f fileStore
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("zbstream: stream store %s is damaged (%w); it names the streams of its tables: restore it rather than delete it", path, err)
	}
	if f.Version != fileStoreVersion {
		return nil, fmt.Errorf("zbstream: stream store %s has version %d; this zbstream reads version %d", path, f.Version, fileStoreVersion)
	}
	for table, e := range f.Tables {
		if e.RequestID == "" && e.StreamID == "" {
			return nil, fmt.Errorf("zbstream: stream store %s: table %s has an empty entry", path, table)
		}
		s.m[table] = e
	}
	return s, nil
}

// Load returns table's entry, and false when there is none. It reads
// memory only and does not fail.
func (s *FileStreamStore) Load(_ context.Context, table string) (StreamEntry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[table]
	return e, ok, nil
}

// Save records table's entry and rewrites the file atomically and
// durably (see FileStreamStore) before it returns. It returns ctx's cause
// when ctx has ended, and the file system's error, naming the file, when
// writing fails; the store then holds what it held before.
func (s *FileStreamStore) Save(ctx context.Context, table string, e StreamEntry) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.m)
	next[table] = e
	b, err := json.MarshalIndent(fileStore{Version: fileStoreVersion, Tables: next}, "", "  ")
	if err != nil {
		return fmt.Errorf("zbstream: stream store %s: %w", s.path, err)
	}
	if err := writeFileAtomic(s.path, append(b, '\n')); err != nil {
		return fmt.Errorf("zbstream: stream store %w", err)
	}
	s.m = next
	return nil
}

// writeFileAtomic replaces path by b: a temporary file in the same
// directory, synced, renamed over path, and the directory synced, so that
// the rename itself is durable.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be synced there
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("%s: opening its directory to sync it: %w", path, err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("%s: syncing its directory: %w", path, err)
	}
	return nil
}
