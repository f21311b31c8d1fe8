package zbstream

// What a stream of a kind built outside this package needs from a Client
// (module arrowstream's Arrow Flight streams): its connection, and the
// metadata its own streams open with.

import (
	"context"

	"google.golang.org/grpc"

	"github.com/zbstream/zbstream/grpcio"
)

// Conn returns the client's gRPC connection, shared by its streams, for
// streams of other RPCs of the same service host (the Arrow Flight
// streams of module arrowstream). It stays the client's: do not close it;
// Close closes it.
func (c *Client) Conn() grpc.ClientConnInterface { return c.cc }

// CallContext returns ctx carrying the metadata of a call that opens a
// stream into table, as the client's own streams send it: its
// credentials (WithToken, WithHeadersProvider, or WithOAuth's token
// down-scoped to table), the table header and the SDK header. Call it for
// every open, so that expired credentials are renewed. An error is a
// *ConnectionError (UNAUTHENTICATED when the credentials could not be
// had, the status of ctx's end when ctx ended) or a *ConfigError.
func (c *Client) CallContext(ctx context.Context, table string) (context.Context, error) {
	headers, err := c.headers(table)
	if err != nil {
		return nil, err
	}
	return grpcio.OutgoingContext(ctx, headers, table, grpcio.UserAgent(c.opts.dial.AppName))
}

// InvalidateCredentials drops the cached credentials of table's streams
// (a server answered UNAUTHENTICATED), so that the next CallContext or
// open makes new ones.
func (c *Client) InvalidateCredentials(table string) {
	if h, err := c.headers(table); err == nil && h != nil {
		h.Invalidate()
	}
}
