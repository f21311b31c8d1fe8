package server

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultReceiveBudget is the default of Options.ReceiveBudget: 256 MiB.
const DefaultReceiveBudget = 256 << 20

// budget is the server-wide bound on the bytes of requests being read or
// queued (protocol.md §6.7, docs/server.md, "Memory"). A receiver takes the most
// one message can be (readHold) before it calls Recv, because gRPC lets a
// whole message in as soon as it is asked to read one; once the message is
// read it keeps what the decoded request weighs (record bytes plus their
// overhead) and gives back the rest, and the committer gives that back
// once the request is committed (or the connection ends). While it is
// spent, receivers do not read, so gRPC grants no flow-control window
// beyond the fixed per-call window and the senders are pushed back.
//
// Fairness between principals: a principal that holds more than its share
// (the total divided by the principals holding or waiting) gets nothing
// more while others wait, except that a principal holding nothing is
// always served next. Within that, waiters are served first come, first
// served, so that many small requests cannot starve a large one. A
// request larger than the whole budget takes the whole budget.
//
// The floor: a principal that holds less than one read hold may always
// read one more message, even when the budget is spent by others: its read
// hold is granted at once, beyond the total if need be. So one principal
// filling the budget delays another's next message by nothing rather than
// by the time the store takes to commit what fills it (a commit of
// 16 MiB, twice: the open, then the record). A principal takes the floor
// only while it holds less than one read hold, so the budget is exceeded
// by at most two read holds a principal, and principals are configured
// (tokens, OAuth clients; one in open mode): the bound stays a function of
// the configuration.
//
// Idle reads: a receiver waiting in Recv holds the most a message can be
// although nothing may come for minutes. When a waiter has waited
// preemptAfter, the budget asks the longest-idle reader (of the principal
// holding the most) to end its call politely (yield), which gives its hold
// back; so that many open, quiet calls cannot keep others from being read.
//
// Idle receive buffers: the server's pool of receive buffers (bufpool.go)
// keeps buffers idle only in the bytes of the budget that nobody holds, up
// to an eighth of it (poolShareDiv); taking bytes drops idle buffers that
// no longer fit. The receive buffers in use (held) and the idle ones
// (within what is free) so never add up to more than the budget.
//
// Cost: every operation under mu is O(1) in the number of waiters, or
// O(principals), except the in-order scan of grant, which skips the
// waiters of principals over their share and stops at the first eligible
// one that does not fit (at once when one principal waits). Thousands of calls of one
// principal may wait at once (each call waits for its read hold); when
// grant scanned them all on every release and a cancelled waiter was
// searched for in a slice, mu became a convoy that delayed another
// principal's floor grant, and the release of its ended calls' holds, by
// seconds (TestSoakHostileClients under -race).
type budget struct {
	mu      sync.Mutex
	total   int64
	free    int64
	held    map[string]int64       // by principal
	waiting map[string]int         // waiters by principal
	waiters list.List              // *budgetWaiter, first come first served
	floors  map[string]*list.List  // the floor waiters (read holds) by principal, in order
	readers map[*readHold]struct{} // receivers in Recv, holding

	pool    *bufPool // nil: none
	poolMax int64    // the cap last set on pool
}

// poolShareDiv: the receive buffers kept idle are at most the budget over
// poolShareDiv (32 MiB of the default budget).
const poolShareDiv = 8

type budgetWaiter struct {
	who   string
	n     int64
	floor bool          // a read hold: granted while who holds less than n
	ready chan struct{} // closed once n was taken for the waiter
	elem  *list.Element // in budget.waiters
	felem *list.Element // in budget.floors[who] (floor only)
}

// readHold is what a receiver holds while it waits in Recv.
type readHold struct {
	who   string
	n     int64
	since time.Time
	yield func() // asks the call to end (at most once)
}

// preemptAfter is how long a waiter waits before an idle reader is asked
// to yield, and how long a reader must have been idle to be asked. A
// variable for tests.
var preemptAfter = time.Second

func newBudget(total int64) *budget {
	return &budget{total: total, free: total, held: map[string]int64{}, waiting: map[string]int{},
		floors: map[string]*list.List{}, readers: map[*readHold]struct{}{}, poolMax: -1}
}

// capPool makes the budget cap what pool keeps idle (see budget).
func (b *budget) capPool(pool *bufPool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pool = pool
	b.fitPool()
}

// fitPool caps the pool's idle bytes at the free bytes, up to the pool's
// share of the budget. b.mu is held.
func (b *budget) fitPool() {
	if b.pool == nil {
		return
	}
	n := min(max(b.free, 0), b.total/poolShareDiv)
	if n != b.poolMax {
		b.poolMax = n
		b.pool.setMax(int(n))
	}
}

// clamp is what acquiring n really takes.
func (b *budget) clamp(n int64) int64 { return min(max(n, 0), b.total) }

// acquire takes n bytes for principal who, waiting while the budget is
// spent or who is over its share. It returns the amount taken (give it
// back with release), or false if ctx ended first (then nothing is taken).
func (b *budget) acquire(ctx context.Context, who string, n int64) (int64, bool) {
	return b.acquireFloor(ctx, who, n, false)
}

// acquireFloor is acquire; with floor, the amount is granted at once while
// who holds less than it (the floor, see budget).
func (b *budget) acquireFloor(ctx context.Context, who string, n int64, floor bool) (int64, bool) {
	n = b.clamp(n)
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.free >= n || floor && b.held[who] < n {
		b.take(who, n)
		b.mu.Unlock()
		return n, true
	}
	w := &budgetWaiter{who: who, n: n, floor: floor, ready: make(chan struct{})}
	w.elem = b.waiters.PushBack(w)
	if floor {
		fl := b.floors[who]
		if fl == nil {
			fl = list.New()
			b.floors[who] = fl
		}
		w.felem = fl.PushBack(w)
	}
	b.waiting[who]++
	b.grant()
	b.mu.Unlock()
	t := time.NewTimer(preemptAfter)
	defer t.Stop()
	for {
		select {
		case <-w.ready:
			return n, true
		case <-t.C:
			b.preemptOne()
			t.Reset(preemptAfter)
		case <-ctx.Done():
			b.mu.Lock()
			defer b.mu.Unlock()
			select {
			case <-w.ready: // granted meanwhile: give it back
				b.give(who, n)
				b.grant()
				return 0, false
			default:
			}
			b.dropWaiter(w)
			b.grant() // the head may have changed
			return 0, false
		}
	}
}

// acquireRead takes a read hold of n bytes for a receiver about to call
// Recv, on the floor if who holds less than n; yield is how the budget asks
// its call to end when others wait. Give it back with doneReading.
func (b *budget) acquireRead(ctx context.Context, who string, n int64, yield func()) (*readHold, bool) {
	got, ok := b.acquireFloor(ctx, who, n, true)
	if !ok {
		return nil, false
	}
	h := &readHold{who: who, n: got, since: time.Now(), yield: yield}
	b.mu.Lock()
	b.readers[h] = struct{}{}
	b.mu.Unlock()
	return h, true
}

// doneReading ends h's idle time: the message arrived (or the call ended).
// The bytes stay taken.
func (b *budget) doneReading(h *readHold) {
	b.mu.Lock()
	delete(b.readers, h)
	b.mu.Unlock()
}

// release gives back n bytes taken by who.
func (b *budget) release(who string, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.give(who, n)
	b.grant()
	b.mu.Unlock()
}

func (b *budget) take(who string, n int64) {
	b.free -= n
	b.held[who] += n
	b.fitPool()
}

func (b *budget) give(who string, n int64) {
	b.free += n
	if b.held[who] -= n; b.held[who] <= 0 {
		delete(b.held, who)
	}
	b.fitPool()
}

// dropWaiter removes w from the queues, in O(1). b.mu is held.
func (b *budget) dropWaiter(w *budgetWaiter) {
	b.waiters.Remove(w.elem)
	if w.felem != nil {
		fl := b.floors[w.who]
		fl.Remove(w.felem)
		if fl.Len() == 0 {
			delete(b.floors, w.who)
		}
	}
	if b.waiting[w.who]--; b.waiting[w.who] <= 0 {
		delete(b.waiting, w.who)
	}
}

// share is what one principal may hold while others wait. b.mu is held.
func (b *budget) share() int64 {
	active := len(b.held)
	for who := range b.waiting {
		if _, ok := b.held[who]; !ok {
			active++
		}
	}
	return b.total / int64(max(active, 1))
}

// eligible reports whether w may be served now: no other principal
// waits, or its principal holds nothing, or stays within its share.
// b.mu is held.
func (b *budget) eligible(w *budgetWaiter, share int64) bool {
	if len(b.waiting) == 1 && b.waiting[w.who] > 0 {
		return true
	}
	h := b.held[w.who]
	return h == 0 || h+w.n <= share
}

// grant serves the waiters on the floor, then eligible waiters in order
// while the budget allows; the first eligible one that does not fit keeps
// the free bytes for itself. b.mu is held.
//
// A principal's floor waiters are served in order, from the first, while
// it holds less than the first one's read hold (read holds are all of one
// size): so this costs O(principals), not O(waiters), however many calls
// of a principal over the floor wait.
func (b *budget) grant() {
	for who, fl := range b.floors {
		for fl.Len() > 0 {
			w := fl.Front().Value.(*budgetWaiter)
			if b.held[who] >= w.n {
				break
			}
			b.serve(w) // may delete b.floors[who]: fl stays valid
		}
	}
	for e := b.waiters.Front(); e != nil; {
		w, next := e.Value.(*budgetWaiter), e.Next()
		if b.eligible(w, b.share()) {
			if b.free < w.n {
				return
			}
			b.serve(w)
		}
		e = next
	}
}

// serve grants w what it waits for. b.mu is held.
func (b *budget) serve(w *budgetWaiter) {
	b.dropWaiter(w)
	b.take(w.who, w.n)
	close(w.ready)
}

// preemptOne asks one reader that has been idle for preemptAfter to yield:
// of the principal holding the most, the longest idle. The reader leaves
// the registry, so that it is asked once.
func (b *budget) preemptOne() {
	b.mu.Lock()
	var pick *readHold
	cutoff := time.Now().Add(-preemptAfter)
	for h := range b.readers {
		if h.since.After(cutoff) {
			continue
		}
		if pick == nil || b.held[h.who] > b.held[pick.who] ||
			(b.held[h.who] == b.held[pick.who] && h.since.Before(pick.since)) {
			pick = h
		}
	}
	if pick != nil {
		delete(b.readers, pick)
	}
	b.mu.Unlock()
	if pick != nil && pick.yield != nil {
		pick.yield()
	}
}

// inUse reports the bytes taken (for tests).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total - b.free
}

// heldBy reports the bytes principal who holds (for tests).
func (b *budget) heldBy(who string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[who]
}
