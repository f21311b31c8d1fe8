package zerobus

import (
	"context"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/zbstream/zbstream"
)

// inflightBytes bounds the bytes of the calls in flight: the zbstream
// client's default (the official SDK bounds only their number).
const inflightBytes = 256 << 20

// ZerobusSdk creates streams to one Zerobus endpoint, authenticating with
// OAuth through one workspace (Unity Catalog) URL or with a headers
// provider. It is safe for concurrent use.
//
// Underneath it is one *zbstream.Client per set of credentials: one per
// OAuth client id and secret, one per headers provider. Each has its own
// gRPC connection, made when its first stream is created, shared by its
// streams and closed by Free. Client and ClientWithHeadersProvider return
// them, for what this API lacks.
type ZerobusSdk struct {
	endpoint string // with a scheme
	ucURL    string

	mu      sync.Mutex
	freed   bool
	open    int // streams created and not yet closed
	oauth   map[[2]string]*zbstream.Client
	headers map[HeadersProvider]*zbstream.Client
	others  []*zbstream.Client // for providers that are not comparable
}

// NewZerobusSdk returns an SDK for the Zerobus endpoint zerobusEndpoint
// ("https://<workspace-id>.zerobus.<region>.cloud.databricks.com"; without
// a scheme https:// is assumed; http:// connects without TLS, for local
// servers) and the workspace URL unityCatalogURL, whose /oidc/v1/token
// mints the OAuth tokens of CreateStream ("" when only
// CreateStreamWithHeadersProvider is used). Nothing is dialed yet. A
// malformed endpoint is a non-retryable *ZerobusError.
func NewZerobusSdk(zerobusEndpoint, unityCatalogURL string) (*ZerobusSdk, error) {
	ep := zerobusEndpoint
	if !strings.HasPrefix(ep, "https://") && !strings.HasPrefix(ep, "http://") {
		ep = "https://" + ep
	}
	// Parse the endpoint now (a client dials lazily, so this connects to
	// nothing), rather than fail every CreateStream with the same error.
	probe, err := zbstream.NewClient(ep, zbstream.WithProxy(proxyFromEnvironment))
	if err != nil {
		return nil, &ZerobusError{Message: err.Error(), err: err}
	}
	_ = probe.Close()
	return &ZerobusSdk{
		endpoint: ep,
		ucURL:    unityCatalogURL,
		oauth:    map[[2]string]*zbstream.Client{},
		headers:  map[HeadersProvider]*zbstream.Client{},
	}, nil
}

// Free releases the SDK: no stream can be created from it any more, and
// its connections are closed once every stream created from it is closed
// (at once when none is open). Unlike the official SDK, nothing is freed by
// a finalizer: call Free, and Close every stream. Free is idempotent.
func (s *ZerobusSdk) Free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freed = true
	if s.open == 0 {
		s.closeClients()
	}
}

// closeClients closes every client; s.mu is held.
func (s *ZerobusSdk) closeClients() {
	for k, c := range s.oauth {
		_ = c.Close()
		delete(s.oauth, k)
	}
	for k, c := range s.headers {
		_ = c.Close()
		delete(s.headers, k)
	}
	for _, c := range s.others {
		_ = c.Close()
	}
	s.others = nil
}

// streamClosed is called once by each stream's first Close.
func (s *ZerobusSdk) streamClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.freed && s.open == 0 {
		s.closeClients()
	}
}

// Client returns the zbstream client the SDK uses for the OAuth client
// credentials clientID and clientSecret, for what the official API lacks:
// persistent (exactly-once) streams, contexts, callbacks, statistics. It is
// the one CreateStream uses with the same credentials, made on first use.
// The SDK owns it: do not Close it, Free does; close the streams you make
// on it before Free. After Free it is an error.
func (s *ZerobusSdk) Client(clientID, clientSecret string) (*zbstream.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauthClient(clientID, clientSecret)
}

// ClientWithHeadersProvider returns the zbstream client the SDK uses for
// the headers provider p (see Client). A provider whose dynamic type is not
// comparable (a map or a func, say) gets a new client on every call.
func (s *ZerobusSdk) ClientWithHeadersProvider(p HeadersProvider) (*zbstream.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.providerClient(p)
}

// oauthClient returns the client of the OAuth credentials; s.mu is held.
func (s *ZerobusSdk) oauthClient(id, secret string) (*zbstream.Client, error) {
	if s.freed {
		return nil, fatal(msgFreed)
	}
	key := [2]string{id, secret}
	if c := s.oauth[key]; c != nil {
		return c, nil
	}
	c, err := zbstream.NewClient(s.endpoint, zbstream.WithOAuth(s.ucURL, id, secret), zbstream.WithProxy(proxyFromEnvironment))
	if err != nil {
		return nil, wrapCreate(err)
	}
	s.oauth[key] = c
	return c, nil
}

// providerClient returns the client of the headers provider; s.mu is held.
func (s *ZerobusSdk) providerClient(p HeadersProvider) (*zbstream.Client, error) {
	if s.freed {
		return nil, fatal(msgFreed)
	}
	if p == nil {
		return nil, fatal("Invalid argument: the headers provider is nil.")
	}
	comparable := reflect.TypeOf(p).Comparable()
	if comparable {
		if c := s.headers[p]; c != nil {
			return c, nil
		}
	}
	c, err := zbstream.NewClient(s.endpoint, zbstream.WithHeadersProvider(providerAdapter{p}), zbstream.WithProxy(proxyFromEnvironment))
	if err != nil {
		return nil, wrapCreate(err)
	}
	if comparable {
		s.headers[p] = c
	} else {
		s.others = append(s.others, c)
	}
	return c, nil
}

// CreateStream creates a stream into tableProps.TableName, authenticated
// with OAuth client credentials: a token from the workspace's
// /oidc/v1/token, down-scoped to the table. options nil means
// DefaultStreamConfigurationOptions (whose RecordType is RecordTypeProto:
// set RecordTypeJson for JSON records). It returns once the server has
// accepted the stream; with Recovery, a retryable refusal is retried first.
// Every error is a non-retryable *ZerobusError, as in the official SDK.
func (s *ZerobusSdk) CreateStream(tableProps TableProperties, clientID string, clientSecret string, options *StreamConfigurationOptions) (*ZerobusStream, error) {
	return s.create(tableProps, options, func() (*zbstream.Client, error) { return s.oauthClient(clientID, clientSecret) })
}

// HeadersProvider supplies the headers of every stream open (each
// reconnect included): "authorization" ("Bearer <token>") and, as the
// official SDK's providers do, "x-databricks-zerobus-table-name" (the
// stream's table; zbstream sends it anyway). GetHeaders may be called from
// several goroutines at once. An error fails the open, not retryable.
type HeadersProvider interface {
	// GetHeaders returns the headers for one stream open.
	GetHeaders() (map[string]string, error)
}

// providerAdapter makes a HeadersProvider a zbstream.HeadersProvider.
type providerAdapter struct{ p HeadersProvider }

// Headers calls GetHeaders (which takes no context).
func (a providerAdapter) Headers(context.Context) (map[string]string, error) {
	return a.p.GetHeaders()
}

// Invalidate does nothing: the provider decides when to renew.
func (providerAdapter) Invalidate() {}

// CreateStreamWithHeadersProvider creates a stream as CreateStream does,
// with the headers of headersProvider instead of OAuth.
func (s *ZerobusSdk) CreateStreamWithHeadersProvider(tableProps TableProperties, headersProvider HeadersProvider, options *StreamConfigurationOptions) (*ZerobusStream, error) {
	return s.create(tableProps, options, func() (*zbstream.Client, error) { return s.providerClient(headersProvider) })
}

// create checks the options, gets the client and opens the stream.
func (s *ZerobusSdk) create(tp TableProperties, options *StreamConfigurationOptions, client func() (*zbstream.Client, error)) (*ZerobusStream, error) {
	o := options.effective()
	opts, err := streamOptions(tp, o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	c, err := client()
	if err == nil {
		s.open++ // counted now, so that a Free meanwhile keeps the client open
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	st, err := c.CreateStream(context.Background(), tp.TableName, opts...)
	if err != nil {
		s.streamClosed()
		return nil, wrapCreate(err)
	}
	return &ZerobusStream{sdk: s, st: st, json: o.RecordType == RecordTypeJson, flushTimeout: millis(o.FlushTimeoutMs)}, nil
}

// streamOptions translates the options for the zbstream client.
func streamOptions(tp TableProperties, o StreamConfigurationOptions) ([]zbstream.StreamOption, error) {
	opts := []zbstream.StreamOption{
		zbstream.WithMaxInflight(maxInt(o.MaxInflightRequests), inflightBytes),
		zbstream.WithFlushTimeout(millis(o.FlushTimeoutMs)),
	}
	// A zero timeout keeps the client's default, as it always has here.
	for _, t := range []struct {
		ms  uint64
		opt func(time.Duration) zbstream.StreamOption
	}{{o.RecoveryTimeoutMs, zbstream.WithOpenTimeout}, {o.ServerLackOfAckTimeoutMs, zbstream.WithAckTimeout}, {o.FlushTimeoutMs, zbstream.WithCloseTimeout}} {
		if t.ms != 0 {
			opts = append(opts, t.opt(millis(t.ms)))
		}
	}
	if o.Recovery {
		backoff := millis(o.RecoveryBackoffMs)
		opts = append(opts, zbstream.WithRetries(int(o.RecoveryRetries)), zbstream.WithBackoff(zbstream.Backoff{Initial: backoff, Max: backoff}))
	} else {
		opts = append(opts, zbstream.WithoutRecovery())
	}
	grace := time.Duration(math.MaxInt64) // as long as the server announces
	if p := o.StreamPausedMaxWaitTimeMs; p != nil {
		grace = millis(*p)
	}
	opts = append(opts, zbstream.WithMaxGrace(grace))
	switch o.RecordType {
	case RecordTypeJson:
	case RecordTypeProto:
		if len(tp.DescriptorProto) == 0 {
			return nil, fatal(msgNoDescriptor)
		}
		m, err := messageOf(tp.DescriptorProto)
		if err != nil {
			return nil, fatal("Invalid argument: " + err.Error() + ".")
		}
		opts = append(opts, zbstream.WithProtoMessage(m))
	default:
		return nil, fatal(msgNoRecordType)
	}
	return opts, nil
}

// millis converts milliseconds to a duration, saturating.
func millis(ms uint64) time.Duration {
	if ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
