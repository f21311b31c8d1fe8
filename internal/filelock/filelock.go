// Package filelock takes an exclusive, non-blocking lock on a file, held
// until the file is closed. The operating system releases it when the
// process ends, however it ends, so a killed process never leaves a stale
// lock behind: the spool locks its directory with it, and the command its
// ingestion state files.
package filelock

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is what Lock returns (wrapped) while another process, or
// another open file in this one, holds the lock.
var ErrLocked = errors.New("locked")

// Lock opens path (created if missing) and takes its lock. Close the file
// to release it.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}
