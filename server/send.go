package server

import (
	"context"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// outMsg is one message for the sender: an ack (val, nil for a missing
// value) or a close signal.
type outMsg struct {
	close bool
	dur   time.Duration // close: the announced grace
	val   *int64        // ack
	plain bool          // a true cumulative ack: a later one may replace it
	due   time.Time     // FaultDelayAcks: not sent before; zero: at once
}

// outbox passes the committer's acks and close signals to the sender
// goroutine, in order. A plain ack replaces a plain ack still waiting
// (acks are cumulative), so the outbox stays small however slowly the
// client reads: a client that never reads its acks blocks only its
// sender, never the committer, which goes on committing and giving back
// the receive budget. Acks held back by FaultDelayAcks are not plain: each
// waits its turn, so a fault on every ack keeps one message per commit
// until it is sent (a test server's fault: per Delay while the client
// reads, without limit while it does not).
type outbox struct {
	mu      sync.Mutex
	msgs    []outMsg
	busy    bool          // the sender is sending a message taken from msgs
	wake    chan struct{} // something was posted
	idle    chan struct{} // msgs became empty and the sender is not busy
	stopped chan struct{} // closed by stop
}

func (o *outbox) init() {
	o.wake = make(chan struct{}, 1)
	o.idle = make(chan struct{}, 1)
	o.stopped = make(chan struct{})
}

func (o *outbox) post(m outMsg) {
	o.mu.Lock()
	if n := len(o.msgs); m.plain && n > 0 && o.msgs[n-1].plain {
		o.msgs[n-1] = m
	} else {
		o.msgs = append(o.msgs, m)
	}
	o.mu.Unlock()
	notify(o.wake)
}

// next takes the first message; false when there is none (then the sender
// is idle).
func (o *outbox) next() (outMsg, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.msgs) == 0 {
		o.busy = false
		notify(o.idle)
		return outMsg{}, false
	}
	m := o.msgs[0]
	o.msgs = o.msgs[1:]
	o.busy = true
	return m, true
}

// drain waits until everything posted was sent or ctx ended.
func (o *outbox) drain(ctx context.Context) {
	for {
		o.mu.Lock()
		empty := len(o.msgs) == 0 && !o.busy
		o.mu.Unlock()
		if empty {
			return
		}
		select {
		case <-o.idle:
		case <-ctx.Done():
			return
		}
	}
}

// stop ends the sender after its current message.
func (o *outbox) stop() { close(o.stopped) }

// send is the sender goroutine, tracked by Server.wg: the only goroutine
// that sends once the stream is open. A failed send ends the connection
// with the send's error; a fenced connection sends nothing more.
func (c *conn) send() {
	defer c.s.wg.Done()
	for {
		select {
		case <-c.out.wake:
		case <-c.out.stopped:
			return
		}
		for {
			m, ok := c.out.next()
			if !ok {
				break
			}
			if c.ctx.Err() != nil || !c.waitDue(m.due) {
				continue // fenced or ended: drop, keep draining
			}
			var err error
			if m.close {
				err = c.w.sendClose(m.dur)
			} else {
				err = c.w.sendAck(m.val)
			}
			if err != nil {
				c.cancel(recvStatus(err))
			}
		}
	}
}

// waitDue waits until due, a held-back ack's time, and reports whether it
// came before the call ended or the sender was stopped.
func (c *conn) waitDue(due time.Time) bool {
	d := time.Until(due)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	case <-c.out.stopped:
		return false
	}
}

// ack posts the cumulative ack of the committed watermark, capped at what
// the client sent on this connection or was told at open (see told),
// through the ack faults.
//
// An ack that FaultDelayAcks holds back is posted with its due time: the
// sender waits for it, and everything posted after it waits behind it, while
// the committer goes on storing and acknowledging, as a distant server
// does. (Waited out here, it stopped the committer, and so the server's
// reading: a client's window then never filled.) It is not merged with the
// acks after it, which would hold those back too.
func (c *conn) ack() error {
	if c.ctx.Err() != nil {
		return c.fencedErr() // a fenced connection sends nothing more
	}
	v := min(c.watermark, max(c.told, c.maxRecv.Load()))
	m := outMsg{val: proto.Int64(v), plain: true}
	if f, ok := c.takeFault(FaultDelayAcks); ok && f.Delay > 0 {
		m.due, m.plain = time.Now().Add(f.Delay), false
	}
	if f, ok := c.takeFault(FaultAckAboveSent, FaultAckBelowFloor, FaultAckMissing); ok {
		m.plain = false
		switch f.Kind {
		case FaultAckAboveSent:
			h := max(c.maxRecv.Load(), v)
			m.val = proto.Int64(h + min(max(f.Above, 1), math.MaxInt64-h)) // saturating
		case FaultAckBelowFloor:
			m.val = proto.Int64(min(c.lastAck, v) - 1)
		case FaultAckMissing:
			m.val = nil
		}
	}
	c.out.post(m)
	c.lastAck = v
	if f, ok := c.takeFault(FaultRepeatAcks); ok {
		m.plain = false
		for range max(f.Repeat, 1) {
			c.out.post(m)
		}
	}
	return nil
}
