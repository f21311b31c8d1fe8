package server

import (
	"errors"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Defaults of the limits in Options (protocol.md §6.7). None of them ever
// loses an acknowledged record: a call they end was acknowledged only what
// is stored.
const (
	// DefaultFirstMessageTimeout is the clients' open timeout.
	DefaultFirstMessageTimeout = 15 * time.Second
	// DefaultIdleTimeout is how long an opened stream may stay without
	// traffic and with nothing in flight before it is rotated.
	DefaultIdleTimeout = 15 * time.Minute
	// DefaultMaxConcurrentStreams caps concurrent calls on one HTTP/2
	// connection.
	DefaultMaxConcurrentStreams = 1000
	// DefaultMaxConnectionsPerPrincipal caps one principal's concurrent
	// stream calls over all its transports.
	DefaultMaxConnectionsPerPrincipal = 1000
	// DefaultKeepaliveMinTime is the shortest interval between a client's
	// keepalive pings that the server tolerates (more often: GOAWAY
	// "too_many_pings").
	DefaultKeepaliveMinTime = 5 * time.Second
	// DefaultKeepaliveTime is how long a transport may be silent before the
	// server pings it; DefaultKeepaliveTimeout how long it then waits for
	// the answer before closing the transport (a dead peer).
	DefaultKeepaliveTime    = time.Minute
	DefaultKeepaliveTimeout = 20 * time.Second
	// DefaultMaxHeaderBytes bounds a call's request headers: a bearer
	// token (an OAuth JWT is a few KiB), the table name and gRPC's own.
	DefaultMaxHeaderBytes = 64 << 10
)

// Flow-control windows, fixed (gRPC's default grows each window to 16 MiB
// by estimating the bandwidth-delay product, which let 200 calls hold
// 3 GB of data the server had not asked for). streamWindow is what a call
// can have in flight to the server while its receiver is not reading: part
// of the per-call memory (docs/server.md, "Memory"); 256 KiB keeps two batches of
// 100 KiB in flight per stream on loopback. connWindow only paces a
// transport (gRPC grants it back as data arrives, read or not), so it is
// larger, for the calls sharing one.
const (
	streamWindow = 256 << 10
	connWindow   = 4 << 20
)

// applyLimitDefaults fills the zero limits of o with their defaults and
// refuses negative ones.
func applyLimitDefaults(o *Options) error {
	if o.FirstMessageTimeout < 0 || o.IdleTimeout < 0 || o.MaxConnectionsPerPrincipal < 0 ||
		o.KeepaliveMinTime < 0 || o.KeepaliveTime < 0 || o.KeepaliveTimeout < 0 || o.ReceiveBudget < 0 {
		return errors.New("server: negative limit")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.FirstMessageTimeout, DefaultFirstMessageTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.KeepaliveMinTime, DefaultKeepaliveMinTime)
	def(&o.KeepaliveTime, DefaultKeepaliveTime)
	def(&o.KeepaliveTimeout, DefaultKeepaliveTimeout)
	if o.MaxConcurrentStreams == 0 {
		o.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if o.MaxConnectionsPerPrincipal == 0 {
		o.MaxConnectionsPerPrincipal = DefaultMaxConnectionsPerPrincipal
	}
	if o.ReceiveBudget == 0 {
		o.ReceiveBudget = DefaultReceiveBudget
	}
	if o.MaxHeaderBytes < 0 {
		return errors.New("server: negative limit")
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return nil
}

// limitServerOptions are the gRPC options that enforce the transport
// limits.
func limitServerOptions(o Options) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(o.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: o.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: o.KeepaliveTime, Timeout: o.KeepaliveTimeout}),
		grpc.MaxHeaderListSize(uint32(min(uint64(o.MaxHeaderBytes), math.MaxUint32))),
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
	}
}

// admit counts a stream call of p against MaxConnectionsPerPrincipal:
// RESOURCE_EXHAUSTED (retryable: clients back off) over the cap. done ends
// the count.
func (s *Server) admit(p Principal) (done func(), err error) {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if s.calls[p.Name] >= s.opts.MaxConnectionsPerPrincipal {
		return nil, status.Errorf(codes.ResourceExhausted, "principal %q already has %d open stream connections (the limit)", p.Name, s.opts.MaxConnectionsPerPrincipal)
	}
	s.calls[p.Name]++
	return func() {
		s.callsMu.Lock()
		defer s.callsMu.Unlock()
		if s.calls[p.Name]--; s.calls[p.Name] <= 0 {
			delete(s.calls, p.Name)
		}
	}, nil
}
