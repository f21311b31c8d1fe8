package io

// Stats counts what a stream has done so far. Counts of calls count ingest
// calls (one offset each, a batch being one call); counts of offsets are the
// same unit.
type Stats struct {
	// Accepted is the number of ingest calls accepted, Records the number
	// of records in them.
	Accepted, Records int64
	// Sent is the number of calls written to a connection, resends
	// included; Resent is how many of them were sent again after a
	// reconnect.
	Sent, Resent int64
	// Lent is the number of calls handed to a connection with a Loan (to
	// be sent as the stream keeps them, not copied again, by a transport
	// that borrows), resends included, whether or not the connection
	// wrote them before it ended: unlike Sent, it counts hand-overs.
	Lent int64
	// Acknowledged is the number of offsets made durable by acks,
	// Reconciled the number completed from a resume watermark (the server
	// already had them), Failed the number that failed with the stream.
	Acknowledged, Reconciled, Failed int64
	// Opens counts connection attempts; Reconnects is Opens minus the
	// first.
	Opens, Reconnects int64
	// InFlightCalls and InFlightBytes are the calls accepted and not yet
	// durable, and their payload bytes.
	InFlightCalls int64
	InFlightBytes int64
}

// Stats returns a snapshot of the stream's counters.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	calls, bytes := s.m.Pending()
	st.InFlightCalls, st.InFlightBytes = int64(calls), bytes
	return st
}
