package io

// The writing side of a connection: the sender goroutine, the report of
// each send to the machine, and the bound on how far it may fall behind.

// SendBacklog bounds the bytes a connection's sender may be behind: handed
// to it and not yet written, and SendBacklogCalls the calls. Ingest waits
// while a live connection is further behind than either, until its sender
// has caught up to SendBacklogLow and SendBacklogCallsLow (7/8 of each, so
// that waiting callers are woken once per MiB or 8,192 calls written, not
// once per call). Neither bound holds back a call while the sender has at
// most one to write: a call larger than SendBacklog (up to MaxCallBytes,
// 10 MiB by default) is copied while the one before it is written, as
// smaller ones are.
//
// Why: a producer faster than the network would otherwise fill the whole
// in-flight window (256 MiB or 1,000,000 calls by default) with calls that
// wait their turn to be written. Queueing them adds nothing to throughput,
// since the sender is the bottleneck, only latency and memory, and the
// stream's copies would cycle through memory far larger than the caches:
// the sender would read every record cold, long after the caller wrote it.
// Measured with BenchmarkEndToEnd on a 2-core VM (32 MiB of L3), in
// interleaved runs:
//
//   - batches of 100 1 KiB records: with a 64 MiB bound, 683-847k records/s
//     at 0.95-1.27 µs of client CPU each; with 8 MiB, 820-869k at 0.92-0.98
//     µs;
//   - 20-byte records one per call reached the window's million calls long
//     before any byte bound, and its entries and the queue, tens of MiB the
//     collector scans and every call touches cold, cost 1.5-1.9 µs of CPU
//     a record; 1.2-1.5 µs with the call bound (a raw gRPC client: 1.2-1.4
//     µs).
//
// 8 MiB is still some 15 ms of the sender's work at the fastest byte rate
// measured here (500 MB/s), and 65,536 calls some 130 ms at the fastest
// call rate (500,000 a second): enough to keep it supplied through a
// producer's pauses. Without a live connection (reconnecting, backing off)
// the window alone bounds ingest, as the protocol's max-inflight limits say.
const (
	SendBacklog         = 8 << 20
	SendBacklogLow      = SendBacklog - SendBacklog/8
	SendBacklogCalls    = 1 << 16
	SendBacklogCallsLow = SendBacklogCalls - SendBacklogCalls/8
)

// SendBacklogTarget is the tighter byte bound of a sender with many calls
// to write: once it has more than SendBacklogMinCalls, ingest waits from
// SendBacklogTarget bytes behind until it has caught up to
// SendBacklogTargetLow (7/8). A backlog of fewer calls is bounded by
// SendBacklog alone.
//
// Why both: the smaller the backlog, the closer behind the caller the
// sender reads the stream's copies, and the fewer of them the caller writes
// into memory that has left the caches. With a server that acknowledges at
// once, the backlog is most of what a stream holds: 1.9-2.6 MiB with a 2
// MiB target and 10 KiB records one per call, so each copy went to arena
// memory last written 2 MiB of copies earlier, beyond a core's L2, and the
// sender read it back from there. Measured on a 2-core VM with zbstream
// bench's own measure (a fresh server process per run, each cell 6 times
// with each bound, the order alternating; records/s, medians): 256 KiB
// against 2 MiB, a higher median in every cell of the table, by 7-46% for
// one record per call and 1-30% in batches of 100 (faster in 38 of 48
// pairs). Against 256 KiB, 512 KiB was faster by 3.3% at most in any cell
// (and 15% slower for 20-byte records one per call), 64 KiB mixed: up to 9%
// faster one record per call, up to 9% slower in batches. A 2 MiB bound
// alone (the first try) queued only two calls of 1 MiB (10 KiB records in
// batches of 100), too few to keep the sender supplied: that cell fell to
// 0.73 and 0.79 of raw's throughput in 2 of 7 runs. So eight calls of any
// size may queue up to SendBacklog, as before, and the target holds only
// beyond them.
const (
	SendBacklogTarget    = 256 << 10
	SendBacklogTargetLow = SendBacklogTarget - SendBacklogTarget/8
	SendBacklogMinCalls  = 8
)

// backlogged reports whether the live connection's sender is further
// behind than a bound (SendBacklog, SendBacklogCalls, SendBacklogTarget
// with more than SendBacklogMinCalls calls), and if so marks the
// connection so that its sender wakes the waiting callers once it has
// caught up. The caller holds s.mu.
func (s *Stream) backlogged() bool {
	c := s.live
	if c == nil || s.closing || !c.behind() {
		return false // (after Close, the machine refuses the call at once)
	}
	// Mark, then look again: a sender that drained the backlog before the
	// mark was set did not wake anybody, and this caller must not wait for
	// it. One that drains it after sees the mark (wrote).
	c.throttled.Store(true)
	return c.behind()
}

// behind reports whether c's sender is further behind than a bound, with
// more than one call to write.
func (c *conn) behind() bool {
	calls := c.backlogCalls.Load()
	if calls <= 1 {
		return false
	}
	bytes := c.backlog.Load()
	return calls > SendBacklogCalls || bytes > SendBacklog ||
		calls > SendBacklogMinCalls && bytes > SendBacklogTarget
}

// wrote takes a written call off c's backlog and wakes the callers waiting
// for it once the backlog has drained to the low marks (caughtUp). It is
// called by the sender, without s.mu.
func (s *Stream) wrote(c *conn, size int64) {
	calls := c.backlogCalls.Add(-1)
	bytes := c.backlog.Add(-size)
	if caughtUp(calls, bytes) && c.throttled.Load() {
		s.mu.Lock()
		c.throttled.Store(false)
		signal(&s.space)
		s.mu.Unlock()
	}
}

// caughtUp reports whether a sender with calls and bytes still to write
// has drained to the low marks of every bound that can hold ingest back.
func caughtUp(calls, bytes int64) bool {
	return calls <= 1 || calls <= SendBacklogCallsLow && bytes <= SendBacklogLow &&
		(calls <= SendBacklogMinCalls || bytes <= SendBacklogTargetLow)
}

// sendLoop writes what the machine hands this connection, in order, and
// reports each send, until the connection is aborted or half-closed.
func (s *Stream) sendLoop(c *conn) {
	defer s.wg.Done()
	defer s.senderExited(c)
	s.mu.Lock()
	for {
		// Held here: the lock taken to report the last batch also takes
		// the next one, one acquisition per batch.
		for len(c.queue) == 0 && !c.closeSend && !c.aborted && !c.failed {
			c.idle = true
			s.mu.Unlock()
			<-c.wake
			s.mu.Lock()
		}
		if c.aborted || c.failed {
			s.mu.Unlock()
			return
		}
		batch := c.take()
		if len(batch) == 0 { // only the half-close is left
			s.mu.Unlock()
			if err := c.h.CloseSend(); err != nil {
				s.lock()
				s.ended(c, err)
				s.mu.Unlock()
			}
			return
		}
		if !s.write(c, batch) {
			s.mu.Unlock()
			return
		}
	}
}

// sendHere writes the call an ingest just handed to c, on the ingesting
// goroutine, then hands the turn to write back: to the sender, woken if
// anything came meanwhile, else to nobody (c is idle again). dispatch
// chose this only for an IdleSender connection with nothing in flight, so
// the Send does not wait for the network. The caller holds s.mu, and
// holds it again on return.
func (s *Stream) sendHere(c *conn) {
	batch := c.take()
	if !s.write(c, batch) {
		c.failed = true
	}
	if c.failed || len(c.queue) > 0 || c.closeSend || c.aborted {
		c.wake <- struct{}{} // (its buffer is empty: nobody woke the sender since it slept)
		return
	}
	c.idle = true
}

// take takes the calls handed to c for writing. The caller holds s.mu.
func (c *conn) take() []Call {
	batch := c.queue
	c.queue = c.spare[:0]
	c.spare = nil
	c.sending = len(batch) > 0
	return batch
}

// write sends batch on c and reports the sends. The caller holds s.mu;
// write lets it go while it sends and holds it again on return. It
// reports false if a Send failed: the connection has ended, and its end
// arrives through Recv.
func (s *Stream) write(c *conn, batch []Call) bool {
	s.mu.Unlock()
	for i := range batch {
		if err := c.h.Send(batch[i]); err != nil {
			// The connection has ended. Its end arrives through Recv
			// too, after every message the server sent before it:
			// the receiver reports it once those are delivered, so
			// that no ack the server sent is lost (and its records
			// sent again) because the sender saw the end first.
			s.lock()
			c.sending = false
			s.endIfDue(c)
			return false
		}
		c.sent.Store(batch[i].Wire)
		s.wrote(c, batch[i].size)
		if c.held.Load() {
			s.lock()
			s.reportSent(c)
			s.process()
			s.mu.Unlock()
		}
	}
	s.lock()
	c.sending = false
	s.reportSent(c)
	clear(batch)
	c.spare = batch[:0]
	s.process()
	return true
}

// reportSent reports every send that returned since the last report, one
// at a time, and feeds each held message as soon as the sends it waits for
// are reported. The caller holds s.mu.
func (s *Stream) reportSent(c *conn) {
	if c.aborted {
		return
	}
	sent := c.sent.Load()
	i := 0
	for {
		for ; i < len(c.deferred) && c.deferred[i].until <= c.reported; i++ {
			s.receive(c, c.deferred[i].r)
			if c.aborted {
				return
			}
		}
		if c.reported >= sent {
			break
		}
		c.reported++
		if err := s.m.Sent(s.at, c.id, c.base+c.reported); err != nil {
			s.broken(err)
			return
		}
	}
	s.countSent(c, c.reported)
	c.deferred = c.deferred[:copy(c.deferred, c.deferred[i:])]
	c.held.Store(len(c.deferred) > 0)
	s.endIfDue(c)
}

// countSent counts in Stats the calls written to c up to wire offset
// upTo that are not counted yet: each is a resend if an offset that high
// was written before (on this or an earlier connection). Counting writes,
// not hand-overs, keeps Resent a part of Sent: calls handed to a
// connection that died before writing them were not sent. The caller
// holds s.mu.
func (s *Stream) countSent(c *conn, upTo int64) {
	for w := c.counted + 1; w <= upTo; w++ {
		s.stats.Sent++
		if off := c.base + w; off <= s.sentHigh {
			s.stats.Resent++
			s.observeResent(off)
		} else {
			s.sentHigh = off
		}
	}
	c.counted = max(c.counted, upTo)
}

// senderExited records that c's sender has stopped: once no sender of a
// connection the stream has left runs, arena memory held back for them is
// given back.
func (s *Stream) senderExited(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.senderLive = false
	if c.stray {
		c.stray = false
		s.strays--
		s.giveBack()
	}
}
