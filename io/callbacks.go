package io

import (
	"context"
	"sync/atomic"
	"time"
)

// callbacks runs Options.OnAck and Options.OnFail on one goroutine, in
// offset order, outside the stream's lock. Its queue holds ranges, not
// offsets, so it stays small; the number of offsets whose callback has not
// run is bounded by Options.CallbackQueue through backpressure on ingest.
// Fields are guarded by the stream's mutex except where noted.
type callbacks struct {
	s      *Stream
	onAck  func(int64)
	onFail func(int64, error)
	limit  int64

	items, spare []callbackRange
	pending      int64 // offsets queued and not yet called back
	finished     bool  // the stream ended: leave once the queue is empty
	idle         bool  // the goroutine waits for wake: only then is it woken
	wake         chan struct{}
	exited       chan struct{} // closed when the goroutine returns
	abandoned    atomic.Bool   // Close gave up waiting: stop calling
}

// callbackRange is offsets first..last, durable when err is nil.
type callbackRange struct {
	first, last int64
	err         error
}

func (cb *callbacks) init(s *Stream, o Options) {
	cb.s = s
	if o.OnAck == nil && o.OnFail == nil {
		return
	}
	cb.onAck, cb.onFail, cb.limit = o.OnAck, o.OnFail, int64(o.CallbackQueue)
	cb.wake = make(chan struct{}, 1)
	cb.exited = make(chan struct{})
	go cb.run()
}

func (cb *callbacks) enabled() bool { return cb.wake != nil }

// full reports whether ingest must wait for callbacks to catch up.
func (cb *callbacks) full() bool { return cb.enabled() && cb.pending >= cb.limit }

// push queues a range. The caller holds the stream's mutex.
func (cb *callbacks) push(first, last int64, err error) {
	if !cb.enabled() {
		return
	}
	cb.pending += last - first + 1
	if n := len(cb.items); n > 0 && err == nil && cb.items[n-1].err == nil && cb.items[n-1].last+1 == first {
		cb.items[n-1].last = last
	} else {
		cb.items = append(cb.items, callbackRange{first, last, err})
	}
	cb.notify()
}

// finish lets the goroutine leave once it has called back everything
// queued. The caller holds the stream's mutex.
func (cb *callbacks) finish() {
	if cb.enabled() {
		cb.finished = true
		cb.notify()
	}
}

func (cb *callbacks) notify() {
	if !cb.idle {
		return
	}
	cb.idle = false
	select {
	case cb.wake <- struct{}{}:
	default:
	}
}

// drain waits for the goroutine to call back everything queued, for at most
// d or until ctx ends; then it stops further callbacks.
func (cb *callbacks) drain(ctx context.Context, d time.Duration) {
	if !cb.enabled() {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-cb.exited:
	case <-t.C:
	case <-ctx.Done():
	}
	cb.abandoned.Store(true)
}

func (cb *callbacks) run() {
	defer close(cb.exited)
	s := cb.s
	for {
		s.mu.Lock()
		for len(cb.items) == 0 && !cb.finished {
			cb.idle = true
			s.mu.Unlock()
			<-cb.wake
			s.mu.Lock()
		}
		if len(cb.items) == 0 {
			s.mu.Unlock()
			return
		}
		batch := cb.items
		cb.items, cb.spare = cb.spare[:0], nil
		s.mu.Unlock()

		for _, r := range batch {
			for o := r.first; o <= r.last; o++ {
				if cb.abandoned.Load() {
					return
				}
				cb.call(o, r.err)
			}
			s.mu.Lock()
			wasFull := cb.full()
			cb.pending -= r.last - r.first + 1
			if wasFull && !cb.full() {
				signal(&s.space) // only callers held back by the callbacks
			}
			s.mu.Unlock()
		}
		s.mu.Lock()
		clear(batch)
		cb.spare = batch[:0]
		s.mu.Unlock()
	}
}

// call runs one callback; a panic fails the stream instead of the process.
func (cb *callbacks) call(o int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			cb.s.abandon(&CallbackPanicError{Offset: o, Value: v})
		}
	}()
	switch {
	case err == nil && cb.onAck != nil:
		cb.onAck(o)
	case err != nil && cb.onFail != nil:
		cb.onFail(o, err)
	}
}
