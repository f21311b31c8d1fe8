// Package atomicfile replaces files whole, atomically and durably: the new
// content is written to a temporary file in the same directory, synced,
// renamed over the file, and the directory is synced so that the rename
// itself survives a power loss (if the disk honours fsync). A crash at any
// point leaves the old file or the new one, never a mix; at worst a
// temporary file stays behind, hidden (its name starts with a dot) and
// never taken for the file.
//
// On Windows a directory cannot be synced: there the rename is the last
// step, durable as far as the file system makes it.
//
// It serves the Writer's FileStore (package writer), the spool's header
// and segment rewrites (package spool) and the command's state and
// dead-letter files (cmd/zbstream). It imports the standard library only.
//
// Every error is a *fs.PathError: Op is the step that failed ("create",
// "write", "sync" or "rename"), Path the file it acted on (the temporary
// file; the file being replaced when its temporary file could not be
// created; the directory for the directory's sync), Err the cause.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// File is a replacement of the file at Path being written: Write to it,
// then Commit to put it in place, or Abort to drop it. It is not safe for
// concurrent use.
type File struct {
	path string
	f    *os.File // nil once committed or aborted
}

// Create starts a replacement of the file at path: a temporary file beside
// it, named "."+base+".tmp" and a random suffix, with mode 0600, so that
// two replacements of one path under way at once never share a temporary
// file. Nothing happens to path until Commit.
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: cause(err)}
	}
	return &File{path: path, f: f}, nil
}

// Path returns the path of the file being replaced.
func (a *File) Path() string { return a.path }

// Write writes p to the temporary file. A failed Write leaves the
// replacement to Abort.
func (a *File) Write(p []byte) (int, error) {
	if a.f == nil {
		return 0, &fs.PathError{Op: "write", Path: a.path, Err: fs.ErrClosed}
	}
	n, err := a.f.Write(p)
	if err != nil {
		return n, &fs.PathError{Op: "write", Path: a.f.Name(), Err: cause(err)}
	}
	return n, nil
}

// Commit puts the new content in place: it syncs and closes the temporary
// file, renames it over Path and syncs the directory (not on Windows).
// Once it returns nil the new content survives a crash or a power loss.
// If it fails before the rename, the temporary file is removed and the old
// file stays; a failed directory sync comes after the rename, so the new
// content is in place but may not survive a power loss. A File is done
// after Commit, whatever it returns.
func (a *File) Commit() error {
	if a.f == nil {
		return &fs.PathError{Op: "rename", Path: a.path, Err: fs.ErrClosed}
	}
	f := a.f
	a.f = nil
	op, err := "sync", f.Sync()
	if cerr := f.Close(); err == nil && cerr != nil {
		op, err = "write", cerr
	}
	if err == nil {
		op, err = "rename", os.Rename(f.Name(), a.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return &fs.PathError{Op: op, Path: f.Name(), Err: cause(err)}
	}
	return SyncDir(filepath.Dir(a.path))
}

// Abort drops the replacement: the temporary file is closed and removed,
// and the old file, if any, stays. It does nothing after Commit or an
// earlier Abort.
func (a *File) Abort() {
	if a.f == nil {
		return
	}
	a.f.Close()
	os.Remove(a.f.Name())
	a.f = nil
}

// WriteFile replaces the file at path by data, atomically and durably
// (Create, Write, Commit).
func WriteFile(path string, data []byte) error {
	a, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// SyncDir makes the entries of directory dir (files created, renamed or
// removed in it) durable. On Windows, where a directory cannot be synced,
// it does nothing.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: cause(err)}
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return &fs.PathError{Op: "sync", Path: dir, Err: cause(err)}
	}
	return nil
}

// cause peels the *fs.PathError or *os.LinkError that the os package
// wraps its causes in, whose path the caller's error names already.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
