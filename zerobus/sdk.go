package zerobus

import (
	"context"
	"strings"
	"sync"

	"github.com/zbstream/zbstream"
)

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
