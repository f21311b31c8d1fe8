package memtransport

import (
	"context"

	streamio "github.com/zbstream/zbstream/io"
)

// Transport returns a transport whose connections reach this server.
// Every call returns an equivalent transport.
func (s *Server) Transport() streamio.Transport { return transport{s} }

// transport is the client side of a Server.
type transport struct{ s *Server }

var _ streamio.Transport = transport{}

// Open starts a connection: it performs the handshake synchronously and
// queues the answer (or the status that ends the call) for Recv.
func (t transport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	return t.s.open(ctx, req)
}

// InvalidateCredentials counts the call (Stats.CredentialInvalidations);
// the in-memory server has no credentials.
func (t transport) InvalidateCredentials() { t.s.stats.invalidations.Add(1) }
