package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"sync"

	"github.com/zbstream/zbstream/internal/atomicfile"
)

// fileStoreVersion is the version of FileStore's format.
const fileStoreVersion = 1

// FileStore is a Store in one JSON file, crash-safe: every Save writes
// the whole file to a temporary file beside it, syncs it, renames it over
// the old one and syncs the directory (not on Windows, where a directory
// cannot be synced), so that a crash leaves the old content or the new
// one, never a mix, and a Save that returned survives a power loss (if
// the disk honours fsync). The file is small: one line of ids per table.
//
// One process at a time: two processes writing the same tables through
// one file would fence each other's streams on the server (a resume ends
// the older connection), and the last Save would win.
type FileStore struct {
	path string

	mu sync.Mutex
	m  map[string]Entry // what the file holds
}

// fileStore is the file's content.
type fileStore struct {
	Version int              `json:"version"`
	Tables  map[string]Entry `json:"tables"`
}

// OpenFileStore opens the store in the file at path; a file that does
// not exist yet is an empty store, created by the first Save. A file
// that cannot be read or decoded is an error naming it, never an empty
// store: a store that forgot its ids would make a second stream for every
// table, and replayed records would land twice.
func OpenFileStore(path string) (*FileStore, error) {
	s := &FileStore{path: path, m: map[string]Entry{}}
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
func (s *FileStore) Load(_ context.Context, table string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[table]
	return e, ok, nil
}

// Save records table's entry and rewrites the file atomically and
// durably (see FileStore) before it returns. It returns ctx's cause
// when ctx has ended, and the file system's error, naming the file, when
// writing fails; the store then holds what it held before.
func (s *FileStore) Save(ctx context.Context, table string, e Entry) error {
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
	if err := atomicfile.WriteFile(s.path, append(b, '\n')); err != nil {
		return fmt.Errorf("zbstream: stream store %s: %w", s.path, err)
	}
	s.m = next
	return nil
}
