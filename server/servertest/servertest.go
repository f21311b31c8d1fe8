// Package servertest starts an in-process zbstream server for tests, in
// the spirit of net/http/httptest:
//
//	ts := servertest.Start(t)
//	conn := ts.Dial(t)
//	client := ingestpb.NewZerobusClient(conn)
//	stream, err := client.PersistentStream(ts.Context(ctx))
//
// The server listens on 127.0.0.1:0, stores into a MemoryStore (or a given
// Store; or nothing, with AckOnly), compares resent records with the
// stored ones (server.Options.StrictDuplicates, see LenientDuplicates),
// accepts one bearer token (Token) that may write one table (Table,
// DefaultTable unless changed), and stops when the test ends, leaving no
// goroutine or connection behind. WithTables gives tables schemas: the
// server checks their records against them and serves them, as a
// workspace's Unity Catalog does, at WorkspaceURL. Flight returns an Arrow
// Flight client: the server takes Arrow streams over DoPut as well.
package servertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server"
)

// DefaultTable is the table the default token may write.
const DefaultTable = "main.default.events"

// Server is a running test server. The embedded *server.Server gives
// access to fault injection (Inject) and read-back (Streams, Records).
type Server struct {
	*server.Server
	// Addr is host:port of the listener.
	Addr string
	// Token is a bearer token that may write Table (ignored in open mode).
	Token string
	// Table is the default table.
	Table string
	// WorkspaceURL, with WithTables, is the URL of an HTTP server that
	// serves the tables' definitions at server.TablesPath, authorized as
	// the gRPC server is (give it to zbstream.WithWorkspaceURL); empty
	// otherwise.
	WorkspaceURL string
}

type config struct {
	store      server.Store
	open       bool
	table      string
	token      string
	principals map[string]server.Principal
	ackOnly    bool
	lenient    bool
	tables     []*record.TableSchema
	tweaks     []func(*server.Options)
}

// Option configures Start.
type Option func(*config)

// WithStore stores into st instead of a fresh MemoryStore. The caller
// keeps ownership of st (the server does not close it).
func WithStore(st server.Store) Option { return func(c *config) { c.store = st } }

// WithTable changes the table the default token may write.
func WithTable(table string) Option { return func(c *config) { c.table = table } }

// WithToken sets the default token instead of a random one.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithPrincipal accepts one more token.
func WithPrincipal(token string, p server.Principal) Option {
	return func(c *config) { c.principals[token] = p }
}

// AckOnly starts the ack-only engine (server.EngineAckOnly): the handshake,
// offsets and cumulative acks of the real server, no payload validation,
// nothing stored. It is the peer for benchmarks of clients. WithStore is
// ignored with it.
func AckOnly() Option { return func(c *config) { c.ackOnly = true } }

// LenientDuplicates turns off server.Options.StrictDuplicates, which
// servertest turns on: a resent offset is then acknowledged without
// comparing its records with the stored ones.
func LenientDuplicates() Option { return func(c *config) { c.lenient = true } }

// Open starts the server without authentication.
func Open() Option { return func(c *config) { c.open = true } }

// WithTables gives tables Unity Catalog schemas (server.Options.Tables):
// streams of these tables must fit their columns, and their records are
// checked against them. The schemas are also served at WorkspaceURL. A
// schema server.NewTables refuses fails the test at Start.
func WithTables(schemas ...*record.TableSchema) Option {
	return func(c *config) { c.tables = append(c.tables, schemas...) }
}

// WithOptions adjusts the server options (session rotation, message
// limit, logger, TLS...) after the other options were applied.
func WithOptions(f func(*server.Options)) Option {
	return func(c *config) { c.tweaks = append(c.tweaks, f) }
}

// Start starts a server for the duration of t.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("servertest: token: %v", err)
	}
	cfg := config{table: DefaultTable, token: "servertest-" + hex.EncodeToString(b[:]), principals: map[string]server.Principal{}}
	for _, o := range opts {
		o(&cfg)
	}
	so := server.Options{Store: cfg.store, StrictDuplicates: !cfg.lenient}
	if cfg.ackOnly {
		so.Store, so.Engine = nil, server.EngineAckOnly
	}
	if !cfg.open {
		tokens := map[string]server.Principal{cfg.token: {Name: "servertest", Tables: []string{cfg.table}}}
		for tok, p := range cfg.principals {
			tokens[tok] = p
		}
		so.Auth = server.NewAuth(tokens)
	}
	if len(cfg.tables) > 0 {
		tables, err := server.NewTables(cfg.tables...)
		if err != nil {
			t.Fatalf("servertest: %v", err)
		}
		so.Tables = tables
	}
	for _, f := range cfg.tweaks {
		f(&so)
	}
	srv, err := server.New(so)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Stop()
		t.Fatalf("servertest: listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("servertest: serve: %v", err)
		}
	})
	ts := &Server{Server: srv, Addr: lis.Addr().String(), Token: cfg.token, Table: cfg.table}
	if so.Tables != nil {
		mux := http.NewServeMux()
		mux.Handle(server.TablesPath, server.NewTablesHandler(so.Tables, so.Auth))
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		ts.WorkspaceURL = hs.URL
	}
	return ts
}

// Dial returns a client connection to the server (plaintext unless opts
// say otherwise), closed when the test ends.
func (s *Server) Dial(t testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	cc, err := grpc.NewClient(s.Addr, opts...)
	if err != nil {
		t.Fatalf("servertest: dial: %v", err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// Flight returns an Arrow Flight client on a new connection (see Dial):
// its DoPut, with Context's metadata, is an Arrow stream.
func (s *Server) Flight(t testing.TB, opts ...grpc.DialOption) flight.FlightServiceClient {
	t.Helper()
	return flight.NewFlightServiceClient(s.Dial(t, opts...))
}

// Client returns a Zerobus client on a new connection (see Dial).
func (s *Server) Client(t testing.TB, opts ...grpc.DialOption) ingestpb.ZerobusClient {
	t.Helper()
	return ingestpb.NewZerobusClient(s.Dial(t, opts...))
}

// Context returns ctx carrying the default token and table as call
// metadata.
func (s *Server) Context(ctx context.Context) context.Context {
	return OutgoingContext(ctx, s.Token, s.Table)
}

// OutgoingContext returns ctx carrying "authorization: Bearer <token>" and
// the table header (each omitted when empty).
func OutgoingContext(ctx context.Context, token, table string) context.Context {
	var kv []string
	if token != "" {
		kv = append(kv, server.HeaderAuthorization, "Bearer "+token)
	}
	if table != "" {
		kv = append(kv, server.HeaderTable, table)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
