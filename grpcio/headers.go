package grpcio

import "context"

// Metadata keys sent on every open.
const (
	// HeaderAuthorization carries "Bearer <token>". Its value is never
	// logged.
	HeaderAuthorization = "authorization"
	// HeaderTable names the table, catalog.schema.table, on every open
	// (resumes included).
	HeaderTable = "x-databricks-zerobus-table-name"
	// HeaderSDK names the client library and its version.
	HeaderSDK = "x-zerobus-sdk"
	// HeaderRequestID carries a persistent create's idempotency key (the
	// stream's ClientRequestID) on the PersistentStream call that creates
	// it, and on no other call. It is metadata, not a field of the
	// create: the service's contract has no field for it, and a service
	// that does not know the header ignores it (docs/protocol.md §6.4).
	HeaderRequestID = "x-zbstream-request-id"
)

// HeadersProvider produces the call metadata for one open attempt: the
// authorization header and anything else a deployment needs. The transport
// calls Headers for every open, the first and each reconnect, so a
// reconnect always carries a fresh token; the table and SDK headers are
// added by the transport itself. A provider written for the official SDKs
// may return the table header (HeaderTable) too: its value must then be
// the stream's table, and it is sent once; another table fails the open
// with a *core.ConfigError before anything is sent. Implementations must
// be safe for concurrent use.
type HeadersProvider interface {
	// Headers returns the metadata for one call. ctx bounds any work it
	// does (minting a token, say). An error fails the open attempt; wrap
	// a *core.ConnectionError in it to choose the status code (otherwise
	// UNAUTHENTICATED is assumed, which is not retried, except for ctx's
	// own end).
	Headers(ctx context.Context) (map[string]string, error)
	// Invalidate drops any cached credentials: the server rejected them,
	// so the next Headers call must produce new ones.
	Invalidate()
}

// StaticToken is a HeadersProvider that sends one bearer token on every
// open. It cannot mint a new one, so Invalidate does nothing.
type StaticToken string

// Headers returns the authorization header for the token.
func (t StaticToken) Headers(context.Context) (map[string]string, error) {
	return map[string]string{HeaderAuthorization: "Bearer " + string(t)}, nil
}

// Invalidate does nothing: a static token cannot be replaced.
func (StaticToken) Invalidate() {}

// HeadersFunc adapts a function to HeadersProvider; Invalidate does nothing.
type HeadersFunc func(ctx context.Context) (map[string]string, error)

// Headers calls f.
func (f HeadersFunc) Headers(ctx context.Context) (map[string]string, error) { return f(ctx) }

// Invalidate does nothing.
func (HeadersFunc) Invalidate() {}
