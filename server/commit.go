package server

import (
	"bytes"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// run is the committer loop.
func (c *conn) run() error {
	s := c.s
	defer func() {
		if c.endTimer != nil {
			c.endTimer.Stop()
		}
	}()
	var sessionC <-chan time.Time
	if s.opts.SessionAge > 0 {
		t := time.NewTimer(s.opts.SessionAge)
		defer t.Stop()
		sessionC = t.C
	}
	idle := time.NewTimer(s.opts.IdleTimeout)
	defer idle.Stop()
	seen := c.recvN.Load()
	if done, err := c.process(nil, true); done {
		return err
	}
	for {
		var endC <-chan time.Time
		if c.endTimer != nil {
			endC = c.endTimer.C
		}
		select {
		case <-c.q.ready:
			if done, err := c.processQueued(); done {
				return err
			}
		case <-idle.C:
			// Idle: nothing received for IdleTimeout and nothing queued (so
			// nothing in flight). Rotate, as a session rotation does.
			if n := c.recvN.Load(); n != seen || c.q.len() > 0 {
				seen = n
				idle.Reset(s.opts.IdleTimeout)
				continue
			}
			if err := c.startClose(s.opts.CloseGrace); err != nil {
				return err
			}
		case <-c.yieldC:
			// The receive budget is spent and this call's receiver has been
			// waiting for a message, holding its share: rotate, as idle.
			if err := c.startClose(s.opts.CloseGrace); err != nil {
				return err
			}
		case <-sessionC:
			sessionC = nil
			if err := c.startClose(s.opts.CloseGrace); err != nil {
				return err
			}
		case <-endC:
			if done, err := c.processQueued(); done {
				return err
			}
			return nil
		case <-c.ctx.Done():
			return c.fencedErr()
		case <-s.draining:
			if done, err := c.processQueued(); done {
				return err
			}
			return status.Error(codes.Unavailable, "server shutting down")
		}
	}
}

// processQueued processes what the receiver queued and gives its budget
// back. Once processed, the items' records are referenced by nothing (the
// store copied what it keeps, duplicates were compared): their receive
// buffers are reused.
func (c *conn) processQueued() (bool, error) {
	items := c.q.take()
	defer func() {
		c.q.release(items)
		for _, it := range items {
			it.buf.free()
		}
	}()
	return c.process(items, false)
}

// startClose sends close_stream_signal{d} and ends the call d later.
func (c *conn) startClose(d time.Duration) error {
	if c.closing {
		return nil
	}
	c.closing = true
	c.out.post(outMsg{close: true, dur: d})
	c.endTimer = time.NewTimer(max(d, 0))
	return nil
}

// process commits and acknowledges items in order, acting on faults at
// each request. With atOpen it only acts on the faults due right after the
// open (After = 0).
func (c *conn) process(items []item, atOpen bool) (done bool, err error) {
	p := pending[Batch]{store: c.commit, ack: c.ack}
	point := func() (bool, error) {
		f, ok := c.takeFault(FaultCommitThenDrop, FaultDrop, FaultCloseSignal)
		if !ok {
			return false, nil
		}
		if err := c.s.hold(c.ctx, f, c.fencedErr); err != nil {
			return true, err
		}
		return p.act(f, c.startClose)
	}
	if atOpen {
		done, err := point()
		return done || err != nil, err
	}
	for _, it := range items {
		if it.end {
			if err := p.flush(true); err != nil {
				return true, err
			}
			return true, it.err
		}
		c.seq = it.seq
		if it.dup {
			if c.strictDuplicates() {
				// Compare with what is stored: commit what precedes first.
				if err := p.flush(false); err != nil {
					return true, err
				}
				if err := c.sameAsStored(it.batch); err != nil {
					if err2 := p.flush(true); err2 != nil {
						return true, err2
					}
					return true, err
				}
			}
			p.needAck = true
		} else {
			p.items = append(p.items, it.batch)
		}
		if done, err := point(); done || err != nil {
			return true, err
		}
	}
	if err := p.flush(true); err != nil {
		return true, err
	}
	return false, nil
}

// commit appends batches, if c still owns the stream. Returns only once
// they are durable.
func (c *conn) commit(batches []Batch) error {
	e := c.entry
	e.appendMu.Lock()
	defer e.appendMu.Unlock()
	if e.owner.Load() != c || c.ctx.Err() != nil {
		return c.fencedErr()
	}
	if err := c.s.store.Append(c.ctx, c.id, batches); err != nil {
		if c.ctx.Err() != nil {
			return c.fencedErr()
		}
		return storeStatus(err)
	}
	c.watermark = batches[len(batches)-1].Offset
	return nil
}

// strictDuplicates says whether duplicates are compared with the stored
// batch (Options.StrictDuplicates; the ack-only engine stores nothing).
func (c *conn) strictDuplicates() bool { return c.s.opts.StrictDuplicates && !c.ackOnly }

// sameAsStored checks a duplicate against the batch stored at its offset:
// FAILED_PRECONDITION, naming the offset, when the records differ.
func (c *conn) sameAsStored(dup Batch) error {
	stored, err := readBatch(c, dup.Offset)
	if err != nil {
		if errors.Is(err, ErrBatchNotFound) {
			return status.Errorf(codes.Internal, "offset %d is at or below the watermark %d but not stored", dup.Offset, c.watermark)
		}
		return storeStatus(err)
	}
	if !slices.EqualFunc(stored.Records, dup.Records, bytes.Equal) {
		return status.Errorf(codes.FailedPrecondition,
			"offset %d is already stored with other records (%d stored, %d resent): a resent offset must carry the same records",
			dup.Offset, len(stored.Records), len(dup.Records))
	}
	return nil
}

// readBatch reads one stored batch of c's stream.
func readBatch(c *conn, offset int64) (Batch, error) {
	if r, ok := c.s.store.(BatchReader); ok {
		return r.Batch(c.ctx, c.id, offset)
	}
	all, err := c.s.store.Records(c.ctx, c.id)
	if err != nil {
		return Batch{}, err
	}
	i, ok := slices.BinarySearchFunc(all, offset, func(b Batch, o int64) int {
		switch {
		case b.Offset < o:
			return -1
		case b.Offset > o:
			return 1
		}
		return 0
	})
	if !ok {
		return Batch{}, ErrBatchNotFound
	}
	return all[i], nil
}
