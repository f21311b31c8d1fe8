package server

import (
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream/internal/faults"
)

// A DoPut call's commits, acks and the faults injected on them
// (docs/server.md, "Faults on Arrow streams"): the schema frame is the
// open, each data frame a point (After = N: the Nth data frame of the
// call), a PutResult an ack.

// takeFault takes a fault due after the c.seq data frames processed.
func (c *arrowCall) takeFault(kinds ...FaultKind) (Fault, bool) {
	return c.s.takeFault(faults.At{Call: c.seq}, c.table, c.id, KindEphemeral, kinds...)
}

// commit stores and acknowledges frames in order, acting on the faults
// due at each frame; with atOpen (no frames) it acts on those due right
// after the ready signal (After = 0). done says a fault ends the call,
// with err; an err alone is a failed store or send, which ends it too.
func (c *arrowCall) commit(frames []arrowBatch, atOpen bool) (done bool, err error) {
	p := pending[arrowBatch]{store: c.store, ack: c.ack}
	// cut takes the frame just processed out of what is pending.
	cut := func() arrowBatch {
		last := p.items[len(p.items)-1]
		p.items = p.items[:len(p.items)-1]
		return last
	}
	point := func() (bool, error) {
		kinds := []FaultKind{FaultDrop, FaultCommitThenDrop, FaultCloseSignal}
		if !atOpen {
			// These two act on a frame; After = 0 means the first one.
			kinds = append(kinds, FaultDiscardThenDrop, FaultPartialAck)
		}
		f, ok := c.takeFault(kinds...)
		if !ok {
			return false, nil
		}
		if err := c.s.hold(c.ctx, f, c.ended); err != nil {
			return true, err
		}
		switch f.Kind {
		case FaultDiscardThenDrop:
			cut()
			if err := p.flush(true); err != nil {
				return true, err
			}
			return true, faultStatus(f, codes.Unavailable, "injected fault: frame discarded, connection dropped")
		case FaultPartialAck:
			last := cut()
			if err := p.flush(true); err != nil {
				return true, err
			}
			p.items = append(p.items, last)
			if err := p.flush(false); err != nil {
				return true, err
			}
			return true, faultStatus(f, codes.Unavailable, "injected fault: frame stored without ack, connection dropped")
		default:
			return p.act(f, c.startClose)
		}
	}
	if atOpen {
		return point()
	}
	for _, b := range frames {
		c.seq = int(b.batch.Offset) + 1
		p.items = append(p.items, b)
		if done, err := point(); done || err != nil {
			return true, err
		}
	}
	return false, p.flush(true)
}

// store appends frames, one batch each, and counts them stored.
func (c *arrowCall) store(frames []arrowBatch) error {
	c.stored = c.stored[:0]
	rows := int64(0)
	for _, f := range frames {
		c.stored = append(c.stored, f.batch)
		rows += f.rows
	}
	err := c.s.store.Append(c.ctx, c.id, c.stored)
	clear(c.stored) // the records are the receive queue's: keep no reference
	if err != nil {
		return storeStatus(err)
	}
	c.rows += rows
	c.durable = frames[len(frames)-1].batch.Offset
	c.tally.framesStored.Add(int64(len(frames)))
	c.tally.rowsStored.Add(rows)
	return nil
}

// ack sends the cumulative ack of what is stored, through the ack faults.
func (c *arrowCall) ack() error {
	if f, ok := c.takeFault(FaultDelayAcks); ok && f.Delay > 0 && !delayAck(c.ctx, f) {
		return c.ended()
	}
	if _, ok := c.takeFault(FaultLoseAcks); ok {
		return nil
	}
	meta, truthful := arrowAck(c.durable, c.rows), true
	if f, ok := c.takeFault(FaultAckAboveSent); ok {
		h := c.next - 1 // the highest offset_id received
		meta, truthful = arrowAck(h+min(max(f.Above, 1), math.MaxInt64-h), c.rows), false
	}
	n := 1
	if f, ok := c.takeFault(FaultRepeatAcks); ok {
		n += max(f.Repeat, 1)
	}
	if truthful {
		// Counted before it is sent: a client may act on it (and a test
		// read the counts) before Send returns.
		c.tally.framesAcked.Store(c.durable + 1)
		c.tally.rowsAcked.Store(c.rows)
	}
	for range n {
		if err := c.st.Send(&flight.PutResult{AppMetadata: meta}); err != nil {
			return err
		}
	}
	return nil
}

// startClose sends the close-only notice with duration d and ends the
// call d later (collect sees the timer); the frames that arrive meanwhile
// are stored and acknowledged.
func (c *arrowCall) startClose(d time.Duration) error {
	if c.endTimer != nil {
		return nil
	}
	if err := c.st.Send(&flight.PutResult{AppMetadata: arrowCloseOnly(d)}); err != nil {
		return err
	}
	c.endTimer = time.NewTimer(max(d, 0))
	return nil
}

// endC is the end of a close signal's grace, nil before one.
func (c *arrowCall) endC() <-chan time.Time {
	if c.endTimer == nil {
		return nil
	}
	return c.endTimer.C
}

// stopEnd stops the grace's timer when the call ends.
func (c *arrowCall) stopEnd() {
	if c.endTimer != nil {
		c.endTimer.Stop()
	}
}
