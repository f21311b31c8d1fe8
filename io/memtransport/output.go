package memtransport

import (
	stdio "io"
	"time"

	"github.com/zbstream/zbstream/core"
)

// emit queues one server message for Recv, blocking while the queue is
// full, until the connection ends.
func (c *conn) emit(r core.Response) {
	select {
	case c.q <- r: // the common case, without the cost of a full select
		return
	default:
	}
	select {
	case c.q <- r:
	case <-c.ended:
	}
}

// out sends r in order, delay after now when delay > 0.
func (c *conn) out(r core.Response, delay time.Duration) {
	if delay <= 0 && !c.delayed.Load() {
		c.emit(r)
		return
	}
	c.delayed.Store(true)
	c.mu.Lock()
	for len(c.pending) >= cap(c.q) { // held-back messages count toward the bound too
		c.mu.Unlock()
		select {
		case <-c.space:
		case <-c.ended:
			return
		}
		c.mu.Lock()
	}
	if c.endErr != nil {
		c.mu.Unlock()
		return
	}
	c.seq++
	it := outItem{seq: c.seq, resp: r, due: delay <= 0}
	if delay > 0 {
		seq := it.seq
		it.timer = time.AfterFunc(delay, func() { c.markDue(seq) })
	}
	c.pending = append(c.pending, it)
	c.mu.Unlock()
	c.flush()
}

// end ends the call gracefully with err (nil: a clean end, io.EOF), after
// the messages queued before.
func (c *conn) end(err error) {
	if err == nil {
		err = stdio.EOF
	}
	c.stopped.Store(true)
	if !c.delayed.Load() {
		c.finish(err)
		return
	}
	c.mu.Lock()
	c.seq++
	c.pending = append(c.pending, outItem{seq: c.seq, due: true, end: true, err: err})
	c.mu.Unlock()
	c.flush()
}

// markDue is the timer of the delayed item seq.
func (c *conn) markDue(seq uint64) {
	c.mu.Lock()
	for i := range c.pending {
		if c.pending[i].seq == seq {
			c.pending[i].due = true
		}
	}
	c.mu.Unlock()
	c.flush()
}

// flush emits the pending items, in order, up to the first that is not
// due yet.
func (c *conn) flush() {
	select {
	case c.outLock <- struct{}{}:
	case <-c.ended:
		return
	}
	defer func() { <-c.outLock }()
	for {
		c.mu.Lock()
		if len(c.pending) == 0 || c.endErr != nil || !c.pending[0].due {
			c.mu.Unlock()
			return
		}
		it := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		select {
		case c.space <- struct{}{}:
		default:
		}
		if it.end {
			c.finish(it.err)
			return
		}
		c.emit(it.resp)
	}
}
