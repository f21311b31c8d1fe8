//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zbstream/zbstream/internal/filelock"
)

// lockDir takes an exclusive, non-blocking lock on dir's lock file
// (internal/filelock: released by the kernel however the process dies).
func lockDir(dir string) (*os.File, error) {
	f, err := filelock.Lock(filepath.Join(dir, lockFile))
	switch {
	case errors.Is(err, filelock.ErrLocked):
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	case err != nil:
		return nil, fmt.Errorf("spool: %w", err)
	}
	return f, nil
}
