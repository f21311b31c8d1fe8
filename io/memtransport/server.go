package memtransport

import (
	"sync"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/internal/faults"
)

// DefaultQueueSize is the capacity of a connection's response queue when
// Options.QueueSize is 0.
const DefaultQueueSize = 4096

// Options configure a Server. The zero value is a storing server with the
// default queue size.
type Options struct {
	// AckOnly makes the server keep no records: it checks offsets and
	// acknowledges, and keeps only each stream's watermark (the highest
	// offset acknowledged), so handshakes, idempotent creates and resumes
	// still behave. Its Send path does not allocate: it is the peer for
	// benchmarks of a client.
	AckOnly bool
	// QueueSize bounds each connection's queue of responses not yet read
	// by Recv (default DefaultQueueSize). When it is full, Send blocks
	// until the client reads or the connection ends, as gRPC flow
	// control would.
	QueueSize int
	// MergeAcks makes the server merge acks the client has not read yet,
	// as the reference server does: an ack followed in the queue by a
	// higher (or equal) one is dropped, since acks are cumulative. Other
	// messages, and an ack without an offset or lower than the one before
	// it, are never merged, so a hostile ack still arrives as sent.
	MergeAcks bool
}

// Server is an in-memory Zerobus-compatible server. Its streams live as
// long as the Server, across connections, so it is a durable log for the
// connections opened through its Transport. Faults injected with Inject
// make it misbehave on purpose.
//
// A Server is safe for concurrent use. To be used inside a
// testing/synctest bubble it must be created inside that bubble (and its
// faults injected there): it starts no goroutine of its own, and every
// goroutine, channel and timer of a connection lives no longer than the
// connection.
type Server struct {
	opts   Options
	faults *faultRegistry
	stats  counters

	mu        sync.Mutex
	streams   map[string]*stream
	order     []*stream // creation order
	byRequest map[string]*stream
	live      map[*conn]struct{} // connections not ended yet
	nextID    int
}

// NewServer returns an empty server.
func NewServer(opts Options) *Server {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	return &Server{opts: opts, streams: map[string]*stream{}, byRequest: map[string]*stream{},
		live: map[*conn]struct{}{}, faults: faults.NewRegistry[Match, Fault](faults.Memory)}
}

// Inject arms a fault for the connections m selects; see FaultKind for
// what each kind does. It acts on the next connections or calls it
// matches, including those of connections already open, until it has
// acted Times times or is removed through the returned handle.
func (s *Server) Inject(m Match, f Fault) *FaultHandle {
	return s.faults.Add(m, f, faults.Spec{Kind: f.Kind, After: f.After, Times: f.Times})
}

// DropConnections ends every live connection at once with code (default
// CodeUnavailable), as a server restart would: responses not queued yet
// are lost, streams and their logs are kept. It returns how many
// connections it ended.
func (s *Server) DropConnections(code core.Code) int {
	if code == core.CodeOK {
		code = core.CodeUnavailable
	}
	s.mu.Lock()
	live := make([]*conn, 0, len(s.live))
	for c := range s.live {
		live = append(live, c)
	}
	s.mu.Unlock()
	err := connError(code, "server restarted")
	for _, c := range live {
		c.finish(err)
	}
	return len(live)
}

// forget drops an ended connection from the live set.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, c)
}
