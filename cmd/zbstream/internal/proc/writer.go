package proc

import (
	"io"
	"sync"
)

// LockedWriter serializes writes to W: a child's stderr is copied by
// os/exec on a goroutine of its own while the parent may write too.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W, one call at a time.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
