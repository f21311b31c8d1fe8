package memtransport

import "sync/atomic"

// Stats are a Server's counters since it was created.
type Stats struct {
	// Opens counts calls of Transport.Open, failed ones included.
	Opens int64
	// Creates and Resumes count the handshakes the server accepted (a
	// repeated idempotent create counts as a create).
	Creates int64
	Resumes int64
	// Calls counts ingest calls received on open connections.
	Calls int64
	// Stored counts the ingest calls stored, Records the records in them
	// (both stay 0 in ack-only mode). A duplicate call is not stored again.
	Stored  int64
	Records int64
	// CredentialInvalidations counts calls of
	// Transport.InvalidateCredentials.
	CredentialInvalidations int64
}

type counters struct {
	opens, creates, resumes, calls, stored, records, invalidations atomic.Int64
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	return Stats{
		Opens: c.opens.Load(), Creates: c.creates.Load(), Resumes: c.resumes.Load(),
		Calls: c.calls.Load(), Stored: c.stored.Load(), Records: c.records.Load(),
		CredentialInvalidations: c.invalidations.Load(),
	}
}
