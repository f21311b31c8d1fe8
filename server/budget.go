package server

import (
	"context"
	"sync"
)

// DefaultReceiveBudget is the default of Options.ReceiveBudget: 256 MiB.
const DefaultReceiveBudget = 256 << 20

// budget is the server-wide bound on queued receive bytes (protocol.md
// §6.7): a receiver takes a checked request's size from it before
// queueing the request and the committer gives it back once the request is
// committed (or the connection ends). While it is spent, receivers stop
// calling Recv, so gRPC stops granting flow-control window and the
// senders are pushed back instead of the server growing.
//
// Waiters are served first come, first served, so that many small
// requests cannot starve a large one. A request larger than the whole
// budget takes the whole budget.
type budget struct {
	mu      sync.Mutex
	total   int64
	free    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n was taken for the waiter
}

func newBudget(total int64) *budget { return &budget{total: total, free: total} }

// clamp is what acquiring n really takes.
func (b *budget) clamp(n int64) int64 { return min(max(n, 0), b.total) }

// acquire takes n bytes, waiting while the budget is spent. It returns the
// amount taken (give it back with release), or false if ctx ended first
// (then nothing is taken).
func (b *budget) acquire(ctx context.Context, n int64) (int64, bool) {
	n = b.clamp(n)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return n, true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return n, true
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.free += n
			b.grant()
			return 0, false
		default:
		}
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
		b.grant() // the head may have changed
		return 0, false
	}
}

// release gives back n bytes taken by acquire.
func (b *budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	b.grant()
	b.mu.Unlock()
}

// grant serves waiters in order while the budget allows. b.mu is held.
func (b *budget) grant() {
	for len(b.waiters) > 0 && b.free >= b.waiters[0].n {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.free -= w.n
		close(w.ready)
	}
}

// inUse reports the bytes taken (for tests).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.free
}
