package zerobus

import (
	"context"
	"reflect"

	"github.com/zbstream/zbstream"
)

// Client returns the SDK's shared zbstream client for the OAuth client
// credentials clientID and clientSecret, for what the official API lacks:
// persistent (exactly-once) streams, contexts, callbacks, statistics. It is
// made on first use, and it is the one CreateStream uses with the same
// credentials under WithConnectionPerStream(false) (with a connection per
// stream, the default, each stream has a client of its own). The SDK owns
// it: do not Close it, Free does; close the streams you make on it before
// Free. After Free it is an error.
func (s *ZerobusSdk) Client(clientID, clientSecret string) (*zbstream.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauthClient(clientID, clientSecret)
}

// ClientWithHeadersProvider returns the SDK's shared zbstream client for
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
	c, err := zbstream.NewClient(s.endpoint, s.clientOptions(zbstream.WithOAuth(s.ucURL, id, secret))...)
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
		return nil, fatal(msgNoProvider)
	}
	comparable := reflect.TypeOf(p).Comparable()
	if comparable {
		if c := s.headers[p]; c != nil {
			return c, nil
		}
	}
	c, err := zbstream.NewClient(s.endpoint, s.clientOptions(zbstream.WithHeadersProvider(providerAdapter{p}))...)
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
