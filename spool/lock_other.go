//go:build !unix

package spool

import (
	"errors"
	"os"
)

// lockDir is not implemented off Unix: a spool without its lock could be
// opened by two processes at once, so it is refused.
func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("spool: not supported on this platform (it needs flock)")
}
