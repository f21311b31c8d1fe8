package io

// SendBacklog bounds the bytes a connection's sender may be behind: handed
// to it and not yet written. Ingest waits while a live connection is further
// behind than that, until its sender has caught up to SendBacklogLow.
//
// Why: a producer faster than the network would otherwise fill the whole
// in-flight window with calls that wait their turn to be written. Queueing
// them there adds nothing to throughput (the sender is the bottleneck), only
// latency and memory, and it is slower as well: records that wait
// megabytes behind are cold in the caches when the sender reads them, and
// the stream's copies of them cycle through memory the size of the window
// rather than a few megabytes. Without a live connection (reconnecting,
// backing off) the window alone bounds ingest, as the protocol's
// max-inflight limits say.
const (
	SendBacklog    = 4 << 20
	SendBacklogLow = SendBacklog / 4
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
	c.throttled.Store(true)
	return true
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
