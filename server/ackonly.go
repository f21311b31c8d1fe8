package server

import "fmt"

// Engine selects what a server does with the records it receives.
type Engine int

const (
	// EngineStore validates records against the stream (JSON objects,
	// proto records against the descriptor) and stores them in
	// Options.Store before acknowledging them. It is the zero value.
	EngineStore Engine = iota
	// EngineAckOnly is the peer for benchmarks of clients: it performs the
	// handshake of both stream kinds as EngineStore does (create, resume
	// with the watermark, ownership, fencing), decodes every request and
	// checks its offset and record type, and acknowledges cumulatively,
	// but validates no payload and stores no record (only each stream's
	// metadata and watermark, in memory). Start it with
	// server.New(server.Options{Engine: server.EngineAckOnly}) or
	// servertest.Start(t, servertest.AckOnly()).
	EngineAckOnly
)

func (e Engine) String() string {
	switch e {
	case EngineStore:
		return "store"
	case EngineAckOnly:
		return "ack-only"
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// newAckOnlyStore is the store of EngineAckOnly: a MemoryStore that keeps
// metadata and watermarks and drops records.
func newAckOnlyStore() *MemoryStore {
	s := NewMemoryStore()
	s.discard = true
	return s
}
