package zbstream

import (
	"crypto/tls"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	streamio "github.com/zbstream/zbstream/io"
)

// Option configures a Client.
type Option func(*clientOptions) error

type clientOptions struct {
	dial    grpcio.DialOptions
	headers grpcio.HeadersProvider
	oauth   *grpcio.OAuthConfig
	creds   int // credential options given: at most one
	// workspaceURL is WithWorkspaceURL's: where TableDescriptor reads.
	workspaceURL string
	logger       *slog.Logger
	observer     Observer
}

// HeadersProvider produces the credentials of every open; see
// grpcio.HeadersProvider.
type HeadersProvider = grpcio.HeadersProvider

// WithToken authenticates every stream with a static bearer token.
func WithToken(token string) Option {
	return func(o *clientOptions) error {
		if token == "" {
			return &ConfigError{Field: "Token", Reason: "must not be empty"}
		}
		o.headers = grpcio.StaticToken(token)
		o.creds++
		return nil
	}
}

// WithHeadersProvider authenticates with a provider of your own: it is
// called on every open, so it can hand out fresh tokens, and told when the
// server rejects them. A provider written for the official SDKs, which
// returns the table header as well, works as it is (see
// grpcio.HeadersProvider).
func WithHeadersProvider(p HeadersProvider) Option {
	return func(o *clientOptions) error {
		if p == nil {
			return &ConfigError{Field: "HeadersProvider", Reason: "must not be nil"}
		}
		o.headers = p
		o.creds++
		return nil
	}
}

// WithOAuth authenticates with OAuth client credentials of a service
// principal, as the official SDKs do: a token from the workspace's
// /oidc/v1/token endpoint, down-scoped to each stream's table, cached per
// table and refreshed before it expires. The secret is never logged.
func WithOAuth(workspaceURL, clientID, clientSecret string) Option {
	return func(o *clientOptions) error {
		o.oauth = &grpcio.OAuthConfig{WorkspaceURL: workspaceURL, ClientID: clientID, ClientSecret: clientSecret}
		o.creds++
		return nil
	}
}

// WithTLSConfig sets the TLS configuration (cloned; at least TLS 1.2).
// The default is TLS with the system roots (SSL_CERT_FILE is honoured).
// The TLS options (this one, WithCAFile, WithCAPEM) apply to the
// workspace's HTTPS requests too (WithOAuth's tokens, TableDescriptor),
// but for ServerName, which is the endpoint's alone.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(o *clientOptions) error { o.dial.TLSConfig = cfg; return nil }
}

// WithCAFile trusts the CA certificates in a PEM file instead of the
// system roots, for the endpoint and the workspace alike.
func WithCAFile(path string) Option {
	return func(o *clientOptions) error { o.dial.CAFile = path; return nil }
}

// WithCAPEM trusts the given PEM CA certificates instead of the system
// roots, for the endpoint and the workspace alike.
func WithCAPEM(pem []byte) Option {
	return func(o *clientOptions) error { o.dial.CAPEM = pem; return nil }
}

// WithProxy chooses the HTTP CONNECT proxy; the default is the one the
// environment names (HTTPS_PROXY, NO_PROXY). grpcio.ProxyURL(nil)
// connects directly.
func WithProxy(p grpcio.ProxyFunc) Option {
	return func(o *clientOptions) error { o.dial.Proxy = p; return nil }
}

// WithAppName names the application in the user agent, in front of
// zbstream and its version.
func WithAppName(name string) Option {
	return func(o *clientOptions) error { o.dial.AppName = name; return nil }
}

// WithGRPCOptions adds gRPC dial options after zbstream's own. Stats
// handlers, interceptors, binary logging and tracing among them may keep
// the messages they are shown and read them at any time later: every
// message the client hands gRPC is a fresh one, never modified afterwards
// and never sharing memory with the stream's record copies or, with
// WithNoCopy, the application's buffers. With none of them, a call is
// encoded into gRPC's buffer pool, which gRPC reuses once the call is
// written. A stats handler, an interceptor that wraps the stream or the
// call's codec, or tracing makes the client encode each call into heap
// memory of its own instead, which stays valid for as long as anything
// keeps it: keeping messages costs only the memory kept, but the garbage
// collector has more to do (in BenchmarkEndToEnd, about 1.5 µs of CPU per
// record in batches of 100). A stream interceptor may send a different message
// instead of the client's; it must not modify the client's message in
// place (gRPC's own contract for SendMsg), as the client sends the
// encoding it made. A codec forced through default call options is
// overridden by the client's own per-call codec (proto encoding, as gRPC's
// default); compressors apply as usual.
func WithGRPCOptions(opts ...grpc.DialOption) Option {
	return func(o *clientOptions) error {
		o.dial.GRPCOptions = append(o.dial.GRPCOptions, opts...)
		return nil
	}
}

// WithLogger logs lifecycle events: opens, resumes with their watermark,
// reconciled counts, reconnect causes, failures. Never payloads or
// credentials.
func WithLogger(l *slog.Logger) Option {
	return func(o *clientOptions) error { o.logger = l; return nil }
}

// WithObserver reports every stream's events to an Observer (metrics). An
// EventObserver is given every event with its table, stream and details
// instead (see Event); the modules contrib/otel and contrib/prometheus are
// ready-made ones.
func WithObserver(obs Observer) Option {
	return func(o *clientOptions) error { o.observer = obs; return nil }
}

// StreamOption configures one stream. Every limit has the default of the
// Zerobus protocol (see core.DefaultConfig); an invalid value is a
// *ConfigError from the call that creates the stream.
type StreamOption func(*streamOptions) error

type streamOptions struct {
	cfg  core.Config
	io   streamio.Options
	desc *protoDescriptor
	avro string // the writer schema of an Avro stream
}

// WithProtoMessage makes a proto stream of m's type: records are m's
// serialized messages, and the server is given m's descriptor (with its
// nested types). Without it a stream takes JSON records.
func WithProtoMessage(m ProtoMessage) StreamOption {
	return func(o *streamOptions) error {
		if o.desc != nil && o.desc.json != nil {
			return &ConfigError{Field: "RecordType", Reason: "WithJSONToProto and WithProtoMessage exclude each other"}
		}
		d, err := describe(m)
		if err != nil {
			return err
		}
		o.desc = d
		o.cfg.RecordType = core.RecordProto
		return nil
	}
}

// WithAvroSchema makes an Avro stream (RecordTypeAvro): records are raw
// Avro binary datums of schemaJSON, the writer schema, an Avro record
// schema as JSON, which the create carries (a resume names the type
// only, as the service's contract has it). The client does not parse the
// schema or the datums, and depends on no Avro library: the server refuses
// a schema that is not a record schema at create, and a datum that does
// not decode under it at ingest. An empty schema is a *ConfigError; so is
// WithAvroSchema with WithProtoMessage.
func WithAvroSchema(schemaJSON string) StreamOption {
	return func(o *streamOptions) error {
		if strings.TrimSpace(schemaJSON) == "" {
			return &ConfigError{Field: "AvroSchema", Reason: "must not be empty"}
		}
		o.avro = schemaJSON
		o.cfg.RecordType = core.RecordAvro
		return nil
	}
}

// WithClientRequestID sets the idempotency key of a persistent create (by
// default 16 random bytes, hex): a create retried with the same key gets
// the same stream back. Only CreatePersistentStream takes it.
func WithClientRequestID(id string) StreamOption {
	return func(o *streamOptions) error {
		if id == "" {
			return &ConfigError{Field: "ClientRequestID", Reason: "must not be empty"}
		}
		o.cfg.ClientRequestID = id
		return nil
	}
}

// WithHistory resumes a persistent stream that this process had open
// before, with what that Stream knew (Stream.History, taken after it
// closed or failed). The resume's watermark must then lie between h's
// Durable and Attempted, as a reconnect's must (docs/protocol.md §5.3):
// one above Attempted means another writer added to the stream meanwhile,
// one below Durable that the server lost what it acknowledged; either
// fails the open with a *ProtocolError, before anything is sent. Without
// it, a resume trusts any watermark, as a fresh process must. Only
// ResumeStream takes it; an h out of order is a *ConfigError.
func WithHistory(h History) StreamOption {
	return func(o *streamOptions) error {
		o.cfg.History = &h
		return nil
	}
}

// WithMaxInflight bounds accepted but not yet durable calls by count and by
// bytes (defaults 1,000,000 calls and 256 MiB). Ingest blocks beyond them.
// The byte bound counts the calls' payload and what the stream keeps for
// each call and record beside it (io.CallCost, io.RecordCost: 96 and 32
// bytes), so that it bounds memory with small records too.
func WithMaxInflight(calls int, bytes int64) StreamOption {
	return func(o *streamOptions) error {
		o.cfg.MaxInflightCalls, o.cfg.MaxInflightBytes = calls, bytes
		return nil
	}
}

// WithMaxCallBytes bounds the size of one ingest call (default 10 MiB
// minus 64 KiB), each record counted as the request frames it
// (record.CallSize): a batch of many small records weighs more than its
// payload.
func WithMaxCallBytes(n int64) StreamOption {
	return func(o *streamOptions) error { o.cfg.MaxCallBytes = n; return nil }
}

// WithOpenTimeout bounds each open attempt (default 15 s). It must be
// positive (a *ConfigError otherwise), as must every timeout below.
func WithOpenTimeout(d time.Duration) StreamOption {
	return func(o *streamOptions) error { o.cfg.OpenTimeout = d; return nil }
}

// WithAckTimeout is the lack-of-ack timeout (default 60 s): records in
// flight with no ack progress for this long is a retryable failure of the
// connection.
func WithAckTimeout(d time.Duration) StreamOption {
	return func(o *streamOptions) error { o.cfg.AckTimeout = d; return nil }
}

// WithCloseTimeout bounds how long Close waits for accepted records to
// become durable (default 5 min).
func WithCloseTimeout(d time.Duration) StreamOption {
	return func(o *streamOptions) error { o.cfg.CloseTimeout = d; return nil }
}

// WithTimeouts sets the open attempt timeout, the lack-of-ack timeout and
// the close timeout. Zero keeps a default.
//
// Deprecated: use WithOpenTimeout, WithAckTimeout and WithCloseTimeout,
// whose arguments cannot be swapped. It goes in the next release.
func WithTimeouts(open, ack, close time.Duration) StreamOption {
	return func(o *streamOptions) error {
		for _, t := range []struct {
			d   time.Duration
			dst *time.Duration
		}{{open, &o.cfg.OpenTimeout}, {ack, &o.cfg.AckTimeout}, {close, &o.cfg.CloseTimeout}} {
			if t.d != 0 {
				*t.dst = t.d
			}
		}
		return nil
	}
}

// WithFlushTimeout bounds Flush (default 5 min).
func WithFlushTimeout(d time.Duration) StreamOption {
	return func(o *streamOptions) error { o.io.FlushTimeout = d; return nil }
}

// WithMaxGrace caps how long an ephemeral stream drains acks after the
// server asks it to leave before it reconnects (default 15 min; 0: at once).
func WithMaxGrace(d time.Duration) StreamOption {
	return func(o *streamOptions) error { o.cfg.MaxGrace = d; return nil }
}

// WithRetries sets how many reconnects one recovery episode may make
// without durable progress (default 4; 0: none, a failure ends the
// stream unless it was a server rotation).
func WithRetries(n int) StreamOption {
	return func(o *streamOptions) error { o.cfg.Retries = n; return nil }
}

// Backoff shapes the delay before each reconnect attempt: exponential from
// Initial to Max by Multiplier, with full jitter (a random delay up to
// that).
type Backoff = core.Backoff

// WithBackoff sets the backoff before each reconnect attempt (defaults:
// Initial 500 ms, Max 30 s, Multiplier 2); a zero field keeps its default.
func WithBackoff(b Backoff) StreamOption {
	return func(o *streamOptions) error {
		if b.Initial != 0 {
			o.cfg.Backoff.Initial = b.Initial
		}
		if b.Max != 0 {
			o.cfg.Backoff.Max = b.Max
		}
		if b.Multiplier != 0 {
			o.cfg.Backoff.Multiplier = b.Multiplier
		}
		return nil
	}
}

// WithRecovery sets the retries of a recovery episode and the backoff's
// initial and maximum delays. A zero initial or max keeps its default.
//
// Deprecated: use WithRetries and WithBackoff, whose arguments cannot be
// swapped. It goes in the next release.
func WithRecovery(retries int, initial, max time.Duration) StreamOption {
	return func(o *streamOptions) error {
		if err := WithRetries(retries)(o); err != nil {
			return err
		}
		return WithBackoff(Backoff{Initial: initial, Max: max})(o)
	}
}

// WithoutRecovery makes every connection failure end the stream.
func WithoutRecovery() StreamOption {
	return func(o *streamOptions) error { o.cfg.DisableRecovery = true; return nil }
}

// WithOnAck calls f once for every offset that becomes durable, in offset
// order, on one goroutine. A slow f slows ingest (see WithCallbackQueue); a
// panicking f fails the stream, not the process.
func WithOnAck(f func(offset int64)) StreamOption {
	return func(o *streamOptions) error { o.io.OnAck = f; return nil }
}

// WithOnFail calls f once for every accepted offset that fails with the
// stream, in order, on the same goroutine as WithOnAck's callback.
func WithOnFail(f func(offset int64, err error)) StreamOption {
	return func(o *streamOptions) error { o.io.OnFail = f; return nil }
}

// WithCallbackQueue bounds how many offsets may wait for their callback
// before ingest blocks (default 65,536).
func WithCallbackQueue(n int) StreamOption {
	return func(o *streamOptions) error { o.io.CallbackQueue = n; return nil }
}

// WithNoCopy keeps ingested records by reference instead of copying them
// (see streamio.Options.NoCopy): it saves one copy per record, and the
// caller must then not modify a record, or a batch's slice, until its
// offset is durable or failed. By default the stream keeps copies outside
// the Go heap (on Unix), so that buffers may be reused at once and the in-flight
// byte bound is what the records cost in memory.
func WithNoCopy() StreamOption {
	return func(o *streamOptions) error { o.io.NoCopy = true; return nil }
}
