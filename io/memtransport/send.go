package memtransport

import (
	"math"
	"strconv"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// Send delivers one ingest call to the server, which handles it before
// Send returns: it checks the offset, stores the records and queues the
// cumulative ack. A call the server refuses (an offset out of range, say)
// ends the connection; its status arrives through Recv, and Send returns
// nil, as the message was written. Send blocks while the response queue
// is full; it returns the connection's end once the connection has ended
// (an Abort unblocks it with CodeCanceled).
func (c *conn) Send(call streamio.Call) error {
	if c.sendClosed {
		return errSendAfter
	}
	if c.over.Load() {
		return c.err()
	}
	if c.hung || c.stopped.Load() {
		return nil // never read: the server does not answer, or has ended the call
	}
	c.srv.stats.calls.Add(1)
	c.calls++
	var f Fault
	var hit bool
	if c.srv.faults.Armed() {
		f, hit = c.takePoint()
	}
	if hit && f.Kind == FaultDiscardThenDrop {
		c.end(f.status("injected fault: connection dropped"))
		return nil
	}
	ack, err := c.apply(call)
	if err != nil {
		c.end(err)
		return nil
	}
	if hit && f.Kind == FaultCommitThenDrop {
		c.end(f.status("injected fault: connection dropped after commit, before ack"))
		return nil
	}
	c.ack(ack)
	if c.over.Load() {
		// Aborted or fenced meanwhile (while the queue was full, say): the
		// call was received, but the connection is gone.
		return c.err()
	}
	if hit {
		c.act(f)
	}
	return nil
}

func (c *conn) point() point { return point{kind: c.kind, stream: c.st.id, call: c.calls} }

// takePoint takes a connection-ending or close-signal fault due at this
// point.
func (c *conn) takePoint() (Fault, bool) {
	if c.closing {
		return c.srv.takeFault(c.point(), FaultDrop, FaultDiscardThenDrop, FaultCommitThenDrop)
	}
	return c.srv.takeFault(c.point(), FaultDrop, FaultDiscardThenDrop, FaultCommitThenDrop, FaultCloseSignal)
}

// atPoint acts on the faults due right after the open response.
func (c *conn) atPoint() {
	if f, ok := c.takePoint(); ok {
		c.act(f)
	}
}

// act performs a connection-ending or close-signal fault once the call
// that triggered it (if any) was answered.
func (c *conn) act(f Fault) {
	if f.Kind == FaultCloseSignal {
		c.closeSignal(f)
		return
	}
	c.end(f.status("injected fault: connection dropped"))
}

// closeSignal sends RespCloseSignal and ends the call: after the grace on
// an ephemeral stream, at once on a persistent one or without a duration.
func (c *conn) closeSignal(f Fault) {
	c.closing = true
	c.out(core.Response{Kind: core.RespCloseSignal, Duration: f.Delay, HasDuration: !f.NoDuration}, 0)
	if c.kind == core.Persistent || f.NoDuration || f.Delay <= 0 {
		c.end(nil)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr == nil {
		c.grace = time.AfterFunc(f.Delay, func() { c.end(nil) })
	}
}

// apply checks the call's offset against the stream and stores it; it
// returns the cumulative ack to send.
func (c *conn) apply(call streamio.Call) (int64, error) {
	st := c.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.owner != c {
		return 0, errFenced
	}
	off := call.Wire
	switch {
	case off < 0:
		return 0, connError(core.CodeInvalidArgument, "offset_id "+strconv.FormatInt(off, 10)+" is negative")
	case off <= st.watermark && c.kind == core.Persistent:
		// Already stored: acknowledged again, never stored twice.
	case st.watermark == math.MaxInt64 || off != st.watermark+1:
		return 0, connError(core.CodeOutOfRange, "offset_id "+strconv.FormatInt(off, 10)+
			" is not the next expected offset "+strconv.FormatInt(st.watermark+1, 10))
	default:
		if !c.srv.opts.AckOnly {
			b := copyBatch(off, call)
			st.batches = append(st.batches, b)
			c.srv.stats.stored.Add(1)
			c.srv.stats.records.Add(int64(len(b.Records)))
		}
		st.watermark = off
	}
	c.maxRecv = max(c.maxRecv, off)
	return min(st.watermark, max(c.told, c.maxRecv)), nil
}

// copyBatch copies a call's records into one buffer the server owns.
func copyBatch(off int64, call streamio.Call) Batch {
	if len(call.Records) == 0 {
		return Batch{Offset: off, Records: [][]byte{append([]byte{}, call.Record...)}}
	}
	size := 0
	for _, r := range call.Records {
		size += len(r)
	}
	buf := make([]byte, 0, size)
	recs := make([][]byte, len(call.Records))
	for i, r := range call.Records {
		start := len(buf)
		buf = append(buf, r...)
		recs[i] = buf[start:len(buf):len(buf)]
	}
	return Batch{Offset: off, Records: recs}
}

// ack sends the cumulative ack v, through the ack faults.
func (c *conn) ack(v int64) {
	r := core.Response{Kind: core.RespAck, Offset: v, HasOffset: true}
	if !c.srv.faults.Armed() {
		c.lastAck = v
		c.out(r, 0)
		return
	}
	p, srv := c.point(), c.srv
	if _, ok := srv.takeFault(p, FaultLoseAcks); ok {
		return
	}
	if f, ok := srv.takeFault(p, FaultAckAboveSent, FaultAckBelowFloor, FaultAckMissing); ok {
		switch f.Kind {
		case FaultAckAboveSent:
			r.Offset = max(c.maxRecv, v)
			r.Offset += min(max(f.Above, 1), math.MaxInt64-r.Offset) // saturating
		case FaultAckBelowFloor:
			r.Offset = min(c.lastAck, v) - 1
		default: // FaultAckMissing
			r.Offset, r.HasOffset = 0, false
		}
	}
	c.lastAck = v
	var delay time.Duration
	if f, ok := srv.takeFault(p, FaultDelayAcks); ok {
		delay = f.Delay
	}
	c.out(r, delay)
	if f, ok := srv.takeFault(p, FaultRepeatAcks); ok {
		for range max(f.Repeat, 1) {
			c.out(r, delay)
		}
	}
}

// SendsWhenIdle reports that Send returns at once when every call sent
// before it was acknowledged: the server answers within Send, and the
// one wait in it, for room in the queue of messages not yet read, is
// short then, since the connection's reader has read every ack.
func (c *conn) SendsWhenIdle() bool { return true }
