package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// DefaultMaxMessageBytes is the largest request message accepted: 10 MiB.
const DefaultMaxMessageBytes = 10 << 20

// Options configure a Server. The zero value is a usable open-mode server
// on a fresh MemoryStore.
type Options struct {
	// Store keeps the streams. Nil: a new MemoryStore, closed by Stop. A
	// given Store is not closed by the server.
	Store Store
	// Auth maps bearer tokens to principals. Nil: open mode, no token
	// needed and every table writable (for tests and demos).
	Auth *Auth
	// TLS, when set, makes the server speak TLS (see LoadTLS).
	TLS *tls.Config
	// SessionAge, when positive, makes the server send
	// close_stream_signal{CloseGrace} to every connection that has been open
	// that long, and end the call (status OK) CloseGrace later. 0: off.
	SessionAge time.Duration
	// CloseGrace is the duration announced by a rotation close signal.
	CloseGrace time.Duration
	// MaxMessageBytes is the largest request message accepted (default
	// DefaultMaxMessageBytes); a larger one ends the call with
	// INVALID_ARGUMENT "message of N bytes exceeds the M-byte limit", which
	// clients do not retry. To bound memory, gRPC itself refuses a message
	// over 9/8 * MaxMessageBytes before reading it, with
	// RESOURCE_EXHAUSTED.
	MaxMessageBytes int
	// MaxHeaderBytes bounds the request headers of a call (gRPC's
	// MaxHeaderListSize; default DefaultMaxHeaderBytes). A Zerobus client
	// sends a bearer token, the table name and a few gRPC headers; gRPC
	// itself would accept 16 MiB per call and hold them for the call's
	// life.
	MaxHeaderBytes int
	// Logger receives connection events. Nil: discard. Tokens are never
	// logged.
	Logger *slog.Logger
	// OnListen, when set, is called by ListenAndServe with the address it
	// listens on (useful with port 0).
	OnListen func(net.Addr)
	// StopGrace bounds how long GracefulStop waits for calls to end before
	// cutting them (default 5s).
	StopGrace time.Duration

	// Tables holds table definitions (LoadTables, NewTables): a stream of
	// a table with one must fit its columns at open, and its records are
	// checked against them (docs/server.md, "Tables with schemas"). Nil, or
	// a table without a definition: records are checked against their
	// stream's own schema only. The definitions are served by a
	// TablesHandler, which the server does not mount: it speaks gRPC only.
	Tables *Tables

	// Engine selects what the server does with records: EngineStore (the
	// zero value) validates and stores them; EngineAckOnly only checks
	// offsets and acknowledges, for benchmarks of clients.
	Engine Engine
	// StrictDuplicates makes the server compare every resent record (an
	// offset at or below what the stream already holds) with the stored
	// one: a different payload ends the call with FAILED_PRECONDITION
	// naming the offset instead of being acknowledged. It turns the server
	// into a checker of clients' exactly-once behaviour. Cost: one store
	// read and one comparison per duplicate request, and a duplicate's
	// records are held in the receive queue until compared; traffic without
	// duplicates costs nothing. Off by default; on by default in
	// servertest.
	StrictDuplicates bool

	// Limits (protocol.md §6.7); zero means the Default* constant.

	// FirstMessageTimeout ends a call that sends no first message in time
	// with DEADLINE_EXCEEDED (default DefaultFirstMessageTimeout), or with
	// UNAVAILABLE "server busy" when the server never asked for the message
	// because the receive budget was spent (docs/server.md, "Memory").
	FirstMessageTimeout time.Duration
	// IdleTimeout rotates an opened stream that received nothing for that
	// long and has nothing in flight: close_stream_signal{CloseGrace}, then
	// a clean end (default DefaultIdleTimeout). It is never an error.
	IdleTimeout time.Duration
	// MaxConcurrentStreams caps the concurrent calls on one HTTP/2
	// connection (default DefaultMaxConcurrentStreams); clients queue the
	// calls above it.
	MaxConcurrentStreams uint32
	// MaxConnectionsPerPrincipal caps one principal's concurrent
	// EphemeralStream and PersistentStream calls (a "connection" in
	// protocol.md), whatever transports they use; a call above it gets
	// RESOURCE_EXHAUSTED (default DefaultMaxConnectionsPerPrincipal). In
	// open mode (Auth nil) every caller is the same principal.
	MaxConnectionsPerPrincipal int
	// KeepaliveMinTime is the shortest interval between client pings that
	// is tolerated; KeepaliveTime and KeepaliveTimeout make the server ping
	// a silent transport and close it when the ping is not answered (see
	// the Default* constants).
	KeepaliveMinTime, KeepaliveTime, KeepaliveTimeout time.Duration
	// ReceiveBudget bounds, for the whole server, the bytes of requests
	// being read or queued between the receivers and the committers
	// (default DefaultReceiveBudget): a receiver takes the largest message
	// gRPC reads (9/8 MaxMessageBytes) before reading one, then keeps what
	// the request weighs until it is committed. When it is spent,
	// receivers stop reading and HTTP/2 flow control pushes back on the
	// senders; a principal over its share waits while others wait (see
	// docs/server.md, "Memory", for the whole bound). The receive buffers the
	// server keeps idle for reuse are within it: they only fill what
	// nobody holds, up to an eighth of it. What gRPC buffers for a call
	// that is not reading (its fixed flow-control window of 256 KiB) is
	// outside it, and counted per call.
	ReceiveBudget int64
}

// Server is the reference Zerobus-compatible server.
type Server struct {
	opts      Options
	store     Store
	ownsStore bool
	log       *slog.Logger
	grpc      *grpc.Server
	faults    *faultRegistry

	streamsMu sync.Mutex
	streams   map[string]*streamEntry // live or recently live streams

	arrowCounts arrowTallies // what Arrow calls received, stored, acknowledged

	callsMu sync.Mutex
	calls   map[string]int // open stream calls per principal
	budget  *budget
	// readLimit is the largest message gRPC reads (grpcRecvLimit), and so
	// what a receiver takes from the budget before it reads one.
	readLimit int

	draining  chan struct{}
	drainOnce sync.Once
	stopOnce  sync.Once
	wg        sync.WaitGroup // receiver and sender goroutines
	stopped   atomic.Bool
}

// New returns a server; start it with Serve.
func New(opts Options) (*Server, error) {
	if opts.MaxMessageBytes < 0 || opts.SessionAge < 0 || opts.CloseGrace < 0 {
		return nil, errors.New("server: negative option")
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 5 * time.Second
	}
	if err := applyLimitDefaults(&opts); err != nil {
		return nil, err
	}
	s := &Server{
		faults:    newFaultRegistry(),
		opts:      opts,
		store:     opts.Store,
		log:       opts.Logger,
		streams:   map[string]*streamEntry{},
		calls:     map[string]int{},
		budget:    newBudget(opts.ReceiveBudget),
		readLimit: grpcRecvLimit(opts.MaxMessageBytes),
		draining:  make(chan struct{}),
	}
	switch opts.Engine {
	case EngineStore:
		if s.store == nil {
			s.store, s.ownsStore = NewMemoryStore(), true
		}
	case EngineAckOnly:
		if s.store != nil {
			return nil, errors.New("server: EngineAckOnly keeps its own store: leave Options.Store nil")
		}
		s.store, s.ownsStore = newAckOnlyStore(), true
	default:
		return nil, fmt.Errorf("server: unknown engine %d", opts.Engine)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	bufs := new(bufPool)
	s.budget.capPool(bufs)
	gopts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(grpcRecvLimit(opts.MaxMessageBytes)),
		grpc.WaitForHandlers(true),
		grpc.ForceServerCodecV2(newServerCodec(opts.MaxMessageBytes, bufs)),
	}
	gopts = append(gopts, limitServerOptions(opts)...)
	if opts.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	s.grpc.RegisterService(serviceDesc(), &service{s: s})
	flight.RegisterFlightServiceServer(s.grpc, &flightService{s: s})
	return s, nil
}

// grpcRecvLimit is gRPC's own receive limit: maxMessageBytes and an
// eighth, so that a message somewhat over the limit reaches serverCodec,
// which refuses it with INVALID_ARGUMENT (not retryable). It is also what
// a receiver takes from the receive budget before it reads a message, so
// it is kept close to the limit (it was 4x, which let 64 calls pin 2.5 GB).
func grpcRecvLimit(maxMessageBytes int) int {
	if maxMessageBytes > math.MaxInt32 {
		return math.MaxInt32
	}
	return maxMessageBytes + max(maxMessageBytes/8, 1)
}

// LoadTLS returns a server TLS configuration from PEM certificate and key
// files.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server: load TLS key pair: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Serve accepts connections on lis until Stop or GracefulStop. It returns
// nil after a stop.
func (s *Server) Serve(lis net.Listener) error {
	if s.stopped.Load() {
		lis.Close()
		return nil
	}
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop ends every call at once (clients see UNAVAILABLE or CANCELLED),
// closes listeners and connections, waits for every goroutine of the
// server and closes the store if the server created it. Nothing is lost:
// only durable records were ever acknowledged. Idempotent.
func (s *Server) Stop() { s.shutdown(false) }

// GracefulStop stops accepting calls, commits and acknowledges what live
// calls have received, ends them with UNAVAILABLE "server shutting down"
// and then stops as Stop does. Calls that do not end within
// Options.StopGrace are cut.
func (s *Server) GracefulStop() { s.shutdown(true) }

func (s *Server) shutdown(graceful bool) {
	s.stopped.Store(true)
	s.drainOnce.Do(func() { close(s.draining) })
	if graceful {
		done := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(done) }()
		t := time.NewTimer(s.opts.StopGrace)
		select {
		case <-done:
		case <-t.C:
			s.grpc.Stop()
			<-done
		}
		t.Stop()
	}
	s.grpc.Stop()
	s.stopOnce.Do(func() {
		s.wg.Wait()
		if s.ownsStore {
			s.store.Close()
		}
	})
}

// ListenAndServe listens on addr (TLS when opts.TLS is set) and serves
// until ctx is done, then stops gracefully. It is the entry point for a
// server process: a test can re-exec itself and call it.
func ListenAndServe(ctx context.Context, addr string, opts Options) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		s.Stop()
		return err
	}
	s.log.Info("zbstream server listening", "addr", lis.Addr().String(), "tls", opts.TLS != nil, "auth", opts.Auth != nil)
	if opts.OnListen != nil {
		opts.OnListen(lis.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(lis) }()
	select {
	case err = <-errc:
		s.Stop()
		return err
	case <-ctx.Done():
		s.GracefulStop()
		return <-errc
	}
}

// Inject programs a fault for the connections that m selects; see Fault
// and FaultKind. Remove the returned handle to disarm it. It panics on a
// kind the server does not implement (see FaultKind).
func (s *Server) Inject(m Match, f Fault) *FaultHandle { return s.addFault(m, f) }

// Streams lists every stored stream (table, kind, watermark, record
// count...), ordered by id.
func (s *Server) Streams(ctx context.Context) ([]StreamMeta, error) { return s.store.Streams(ctx) }

// Stream returns one stored stream's metadata.
func (s *Server) Stream(ctx context.Context, id string) (StreamMeta, error) {
	return s.store.Stream(ctx, id)
}

// Records returns the stored batches of a stream in offset order.
func (s *Server) Records(ctx context.Context, id string) ([]Batch, error) {
	return s.store.Records(ctx, id)
}

// Store returns the server's store.
func (s *Server) Store() Store { return s.store }

// newStreamID returns a random, unguessable stream id.
func newStreamID(kind StreamKind) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	prefix := "es-"
	if kind == KindPersistent {
		prefix = "ps-"
	}
	return prefix + hex.EncodeToString(b[:]), nil
}
