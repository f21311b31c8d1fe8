package zerobus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zbstream/zbstream"
)

// ZerobusSdk creates streams to one Zerobus endpoint, authenticating with
// OAuth through one workspace (Unity Catalog) URL or with a headers
// provider. It is safe for concurrent use.
//
// Underneath are *zbstream.Client values, each with a gRPC connection of
// its own, made when its first stream is created. By default every stream
// has a client of its own (WithConnectionPerStream), closed with the
// stream. With WithConnectionPerStream(false) the streams share one client
// per set of credentials: one per OAuth client id and secret, one per
// headers provider, closed by Free. Client and ClientWithHeadersProvider
// return the shared ones, for what this API lacks.
type ZerobusSdk struct {
	endpoint  string // with a scheme
	ucURL     string
	appName   string
	perStream bool

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
// CreateStreamWithHeadersProvider is used), with the default options (see
// NewZerobusSdkWithOptions). Nothing is dialed yet. A malformed endpoint
// is a non-retryable *ZerobusError.
func NewZerobusSdk(zerobusEndpoint, unityCatalogURL string) (*ZerobusSdk, error) {
	return newSdk(zerobusEndpoint, unityCatalogURL, sdkOptions{})
}

// newSdk checks the endpoint and the options and returns the SDK.
func newSdk(zerobusEndpoint, unityCatalogURL string, o sdkOptions) (*ZerobusSdk, error) {
	ep := zerobusEndpoint
	if !strings.HasPrefix(ep, "https://") && !strings.HasPrefix(ep, "http://") {
		ep = "https://" + ep
	}
	s := &ZerobusSdk{
		endpoint:  ep,
		ucURL:     unityCatalogURL,
		appName:   o.applicationName,
		perStream: o.perStream(),
		oauth:     map[[2]string]*zbstream.Client{},
		headers:   map[HeadersProvider]*zbstream.Client{},
	}
	// Check the endpoint and the application name now (a client dials
	// lazily, so this connects to nothing), rather than fail every
	// CreateStream with the same error.
	probe, err := zbstream.NewClient(ep, s.clientOptions(nil)...)
	if err != nil {
		var ce *zbstream.ConfigError
		if errors.As(err, &ce) && ce.Field == "AppName" {
			return nil, &ZerobusError{Message: fmt.Sprintf("application name %q is not a valid header value: it %s", s.appName, ce.Reason), err: err}
		}
		return nil, &ZerobusError{Message: err.Error(), err: err}
	}
	_ = probe.Close()
	return s, nil
}

// clientOptions are the options of every client of the SDK, with creds
// (nil for none).
func (s *ZerobusSdk) clientOptions(creds zbstream.Option) []zbstream.Option {
	opts := []zbstream.Option{zbstream.WithProxy(proxyFromEnvironment), zbstream.WithAppName(s.appName)}
	if creds != nil {
		opts = append(opts, creds)
	}
	return opts
}

// Free releases the SDK: no stream can be created from it any more. Its
// streams keep working until they are closed: a stream's own connection
// is closed with the stream, and the shared ones once every stream created
// from the SDK is closed (at once when none is open). Unlike the official
// SDK, nothing is freed by a finalizer: call Free, and Close every stream.
// Free is idempotent.
func (s *ZerobusSdk) Free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freed = true
	if s.open == 0 {
		s.closeClients()
	}
}

// closeClients closes every shared client; s.mu is held.
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

// release undoes streamClient once the stream is closed or could not be
// created: it closes the stream's own client (nil for a shared one) and
// counts the stream out.
func (s *ZerobusSdk) release(own *zbstream.Client) {
	if own != nil {
		_ = own.Close()
	}
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
	creds := zbstream.WithOAuth(s.ucURL, clientID, clientSecret)
	return s.create(tableProps, "", options, creds, func() (*zbstream.Client, error) { return s.oauthClient(clientID, clientSecret) })
}

// CreateStreamWithHeadersProvider creates a stream as CreateStream does,
// with the headers of headersProvider instead of OAuth.
func (s *ZerobusSdk) CreateStreamWithHeadersProvider(tableProps TableProperties, headersProvider HeadersProvider, options *StreamConfigurationOptions) (*ZerobusStream, error) {
	if headersProvider == nil {
		return nil, fatal(msgNoProvider)
	}
	creds := zbstream.WithHeadersProvider(providerAdapter{headersProvider})
	return s.create(tableProps, "", options, creds, func() (*zbstream.Client, error) { return s.providerClient(headersProvider) })
}

// create checks the options, gets the stream's client (a new one with
// creds, or the shared one) and opens the stream. avroSchema, when not
// empty, makes it an Avro stream of that writer schema.
func (s *ZerobusSdk) create(tp TableProperties, avroSchema string, options *StreamConfigurationOptions, creds zbstream.Option, shared func() (*zbstream.Client, error)) (*ZerobusStream, error) {
	o := options.effective()
	if avroSchema != "" {
		o.RecordType = RecordTypeAvro // whatever the options said, as CreateAvroStream's doc says
	}
	opts, err := streamOptions(tp, o, avroSchema)
	if err != nil {
		return nil, err
	}
	c, own, err := s.streamClient(creds, shared)
	if err != nil {
		return nil, err
	}
	st, err := c.CreateStream(context.Background(), tp.TableName, opts...)
	if err != nil {
		s.release(own)
		return nil, wrapCreate(err)
	}
	return newStream(s, st, own, o), nil
}

// streamClient returns the client a new stream is created on, and counts
// the stream in: with connection per stream a new client of its own (own,
// which release closes), otherwise the shared client of its credentials
// (own nil). Free waits for the counted streams before it closes the
// shared clients.
func (s *ZerobusSdk) streamClient(creds zbstream.Option, shared func() (*zbstream.Client, error)) (c, own *zbstream.Client, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return nil, nil, fatal(msgFreed)
	}
	if s.perStream {
		// A client dials lazily: creating it under the lock is cheap.
		if own, err = zbstream.NewClient(s.endpoint, s.clientOptions(creds)...); err != nil {
			return nil, nil, wrapCreate(err)
		}
		c = own
	} else if c, err = shared(); err != nil {
		return nil, nil, err
	}
	s.open++
	return c, own, nil
}
