package memtransport

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
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
	faults faultRegistry
	stats  counters

	mu        sync.Mutex
	streams   map[string]*stream
	order     []*stream // creation order
	byRequest map[string]*stream
	nextID    int
}

// NewServer returns an empty server.
func NewServer(opts Options) *Server {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	return &Server{opts: opts, streams: map[string]*stream{}, byRequest: map[string]*stream{}}
}

// Inject arms a fault; see FaultKind for what each kind does. It acts on
// the next connections or calls it matches, including those of
// connections already open, until it has acted Count times or is removed
// through the returned handle.
func (s *Server) Inject(f Fault) *FaultHandle { return s.faults.add(f) }

// Transport returns a transport whose connections reach this server.
// Every call returns an equivalent transport.
func (s *Server) Transport() streamio.Transport { return transport{s} }

// transport is the client side of a Server.
type transport struct{ s *Server }

var _ streamio.Transport = transport{}

// Open starts a connection: it performs the handshake synchronously and
// queues the answer (or the status that ends the call) for Recv.
func (t transport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	return t.s.open(ctx, req)
}

// InvalidateCredentials counts the call (Stats.CredentialInvalidations);
// the in-memory server has no credentials.
func (t transport) InvalidateCredentials() { t.s.stats.invalidations.Add(1) }

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

// connError is the *core.ConnectionError of a status.
func connError(code core.Code, msg string) error {
	return &core.ConnectionError{Code: code, Err: statusError{code, msg}}
}

// statusError is the message of a status, as a gRPC status error reads.
type statusError struct {
	code core.Code
	msg  string
}

func (e statusError) Error() string { return "memtransport: " + e.code.String() + ": " + e.msg }
