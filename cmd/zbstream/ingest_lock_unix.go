//go:build !windows

package main

import (
	"errors"
	"os"
	"syscall"
)

// ingestLockFile takes an exclusive, non-blocking flock on f.
func ingestLockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errIngestLocked
	}
	return err
}
