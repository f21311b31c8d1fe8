package io

// SendBacklog bounds the bytes a connection's sender may be behind: handed
// to it and not yet written. Ingest waits while a live connection is further
// behind than that, until its sender has caught up to SendBacklogLow (7/8 of
// it, so that waiting callers are woken once per 8 MiB written, not once per
// call).
//
// Why: a producer faster than the network would otherwise fill the whole
// in-flight window (256 MiB by default) with calls that wait their turn to
// be written. Queueing them adds nothing to throughput, since the sender is
// the bottleneck, only latency and memory, and the stream's copies of them
// would cycle through memory the size of the window. The bound is large
// enough to keep the sender supplied through a producer's pauses: on
// loopback, 4 and 16 MiB cost 5-10% of throughput in batches of 100 KiB.
// Without a live connection (reconnecting, backing off) the window alone
// bounds ingest, as the protocol's max-inflight limits say.
const (
	SendBacklog    = 64 << 20
	SendBacklogLow = SendBacklog - SendBacklog/8
)

// backlogged reports whether the live connection's sender is more than
// SendBacklog bytes behind, and if so marks the connection so that its
// sender wakes the waiting callers once it has caught up. The caller holds
// s.mu.
func (s *Stream) backlogged() bool {
	c := s.live
	if c == nil || s.closing || c.backlog.Load() <= SendBacklog {
		return false // (after Close, the machine refuses the call at once)
	}
	// Mark, then look again: a sender that drained the backlog before the
	// mark was set did not wake anybody, and this caller must not wait for
	// it. One that drains it after sees the mark (wrote).
	c.throttled.Store(true)
	return c.backlog.Load() > SendBacklog
}

// wrote takes a written call's bytes off c's backlog and wakes the callers
// waiting for it once the backlog has drained to SendBacklogLow. It is
// called by the sender, without s.mu.
func (s *Stream) wrote(c *conn, size int64) {
	if c.backlog.Add(-size) <= SendBacklogLow && c.throttled.Load() {
		s.mu.Lock()
		c.throttled.Store(false)
		signal(&s.space)
		s.mu.Unlock()
	}
}
