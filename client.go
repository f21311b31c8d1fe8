package zbstream

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/record"
)

// Client is a connection to one Zerobus endpoint. Streams created from it
// share its gRPC connection. A Client is safe for concurrent use; Close it
// when every stream is closed.
type Client struct {
	endpoint string
	cc       *grpc.ClientConn
	http     *http.Client // the workspace's: OAuth tokens, table schemas
	opts     clientOptions

	mu     sync.Mutex
	oauth  map[string]*grpcio.OAuth // per table, when WithOAuth is set
	tables tableCache               // TableDescriptor's
}

// NewClient returns a client for the Zerobus endpoint: "https://host[:port]"
// or "host:port" (TLS, verified against the system roots unless an option
// says otherwise), or "http://host[:port]" (plaintext: the only way to get
// it, for local servers). It dials lazily: a server that cannot be reached
// surfaces when a stream is created.
func NewClient(endpoint string, opts ...Option) (*Client, error) {
	c := &Client{endpoint: endpoint, oauth: map[string]*grpcio.OAuth{}}
	c.tables.descs = map[string]*descriptorpb.DescriptorProto{}
	for _, o := range opts {
		if err := o(&c.opts); err != nil {
			return nil, err
		}
	}
	if c.opts.creds > 1 {
		return nil, &ConfigError{Field: "Credentials", Reason: "set one of WithToken, WithHeadersProvider and WithOAuth, not several"}
	}
	cc, err := grpcio.Dial(endpoint, c.opts.dial)
	if err != nil {
		return nil, err
	}
	if c.http, err = newWorkspaceHTTP(c.opts.dial); err != nil {
		cc.Close()
		return nil, err
	}
	c.cc = cc
	return c, nil
}

// Close closes the client's connection. Close the streams first: a stream
// still open loses its connection and fails once its recovery gives up.
func (c *Client) Close() error {
	c.http.CloseIdleConnections() // the workspace's: tokens, schemas
	return c.cc.Close()
}

// CreateStream creates an ephemeral stream into table
// (catalog.schema.table): at-least-once, since after a reconnect every
// unacknowledged record is sent again. It returns once the server has
// accepted the stream.
func (c *Client) CreateStream(ctx context.Context, table string, opts ...StreamOption) (*Stream, error) {
	return c.open(ctx, core.Ephemeral, table, "", opts)
}

// CreatePersistentStream creates a durable stream into table: exactly-once
// across reconnects and process restarts. Keep its StreamID (and, for each
// offset, the position in your source it stands for): a new process
// resumes with ResumeStream and replays from the watermark. The create is
// idempotent (see WithClientRequestID).
func (c *Client) CreatePersistentStream(ctx context.Context, table string, opts ...StreamOption) (*Stream, error) {
	return c.open(ctx, core.Persistent, table, "", opts)
}

// ResumeStream resumes the persistent stream streamID, with the options it
// was created with (a proto stream needs WithProtoMessage of the same
// message), except WithClientRequestID, which only a create carries. The server reports
// the last offset it committed: LastDurable returns it, and the next
// record ingested gets the offset after it. Replay your source from the
// position after that offset. An unknown or retired id is a
// *ConnectionError with code NOT_FOUND.
func (c *Client) ResumeStream(ctx context.Context, table, streamID string, opts ...StreamOption) (*Stream, error) {
	if streamID == "" {
		return nil, &ConfigError{Field: "StreamID", Reason: "must not be empty"}
	}
	return c.open(ctx, core.Persistent, table, streamID, opts)
}

// RetireStream retires the persistent stream streamID of table: it can no
// longer be resumed, and a resume gets NOT_FOUND. It is idempotent: a
// stream already retired is retired. The service answers nothing but the
// call's status, so the stream's last committed offset is the one its last
// resume reported (Stream.LastDurable after ResumeStream) or its last ack.
// Close never retires a stream; this does.
func (c *Client) RetireStream(ctx context.Context, table, streamID string) error {
	if streamID == "" {
		return &ConfigError{Field: "StreamID", Reason: "must not be empty"}
	}
	t, err := c.transport(table, nil, "")
	if err != nil {
		return err
	}
	return t.Retire(ctx, streamID)
}

func (c *Client) open(ctx context.Context, kind core.Kind, table, streamID string, opts []StreamOption) (*Stream, error) {
	so := streamOptions{cfg: core.DefaultConfig(kind, core.RecordJSON)}
	so.cfg.StreamID = streamID
	so.io.Logger, so.io.Observer, so.io.Table = c.opts.logger, c.opts.observer, table
	for _, o := range opts {
		if err := o(&so); err != nil {
			return nil, err
		}
	}
	switch {
	case so.desc != nil && so.avro != "":
		return nil, &ConfigError{Field: "RecordType", Reason: "WithProtoMessage and WithAvroSchema exclude each other"}
	case so.cfg.ClientRequestID != "" && (kind != core.Persistent || streamID != ""):
		return nil, &ConfigError{Field: "ClientRequestID", Reason: "is only for CreatePersistentStream"}
	case kind == core.Persistent && streamID == "" && so.cfg.ClientRequestID == "":
		so.cfg.ClientRequestID = NewClientRequestID()
	}
	so.cfg.Seed = randomSeed()
	if err := so.cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := c.transport(table, so.desc, so.avro)
	if err != nil {
		return nil, err
	}
	s, err := streamio.Open(ctx, t, so.cfg, so.io)
	if err != nil {
		return nil, err
	}
	if l := c.opts.logger; l != nil {
		l.Info("zbstream: stream opened", "kind", kind.String(), "table", table,
			"stream_id", s.StreamID(), "last_durable", s.LastDurable())
	}
	return &Stream{drv: s, proto: so.desc}, nil
}

// CheckTable reports whether table is a table name, catalog.schema.table
// (record.CheckTable, the rule every part of zbstream shares), as the
// client and the Writer check it: a name that is not is a *ConfigError
// (Field "Table").
func CheckTable(table string) error {
	if err := record.CheckTable(table); err != nil {
		return &ConfigError{Field: "Table", Reason: err.Error()}
	}
	return nil
}

// transport returns a gRPC transport for table with the client's
// credentials, and the proto descriptor or Avro schema its creates carry.
func (c *Client) transport(table string, desc *protoDescriptor, avroSchema string) (*grpcio.Transport, error) {
	if err := CheckTable(table); err != nil {
		return nil, err
	}
	headers, err := c.headers(table)
	if err != nil {
		return nil, err
	}
	cfg := grpcio.Config{Table: table, Headers: headers, SDK: grpcio.UserAgent(c.opts.dial.AppName), AvroSchema: avroSchema}
	if desc != nil {
		cfg.Descriptor = desc.bytes
	}
	return grpcio.NewTransport(c.cc, cfg)
}

// headers returns the credentials for table: the client's provider, or an
// OAuth provider down-scoped to the table, made once per table so that its
// token is cached across the table's streams.
func (c *Client) headers(table string) (grpcio.HeadersProvider, error) {
	if c.opts.oauth == nil {
		return c.opts.headers, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.oauth[table]; p != nil {
		return p, nil
	}
	cfg := *c.opts.oauth
	cfg.HTTPClient = c.http
	cfg.Table = table
	cfg.WorkspaceID = grpcio.WorkspaceIDFromEndpoint(c.endpoint)
	cfg.Logger = c.opts.logger
	p, err := grpcio.NewOAuth(cfg)
	if err != nil {
		return nil, err
	}
	c.oauth[table] = p
	return p, nil
}

// NewClientRequestID returns a new idempotency key for a persistent
// create (WithClientRequestID): 16 random bytes, hex, as
// CreatePersistentStream makes by default. A program that must survive a
// crash between the create and saving the stream id saves the key first,
// then creates with it: a create retried with the same key, in this
// process or the next, gets the same stream back. It never fails.
func NewClientRequestID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("zbstream: crypto/rand: %v", err)) // never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// randomSeed seeds a stream's backoff jitter, so that many clients do not
// retry in step.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
