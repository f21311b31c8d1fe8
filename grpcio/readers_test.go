package grpcio

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// keepingHandler is a stats handler; what it does with messages does not
// matter here, only that it is there.
type keepingHandler struct{}

func (keepingHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (keepingHandler) HandleRPC(context.Context, stats.RPCStats)                         {}
func (keepingHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (keepingHandler) HandleConn(context.Context, stats.ConnStats)                       {}

// wrappingStream is what a stream interceptor that sees every message
// returns.
type wrappingStream struct{ grpc.ClientStream }

func (w wrappingStream) SendMsg(m any) error { return w.ClientStream.SendMsg(m) }

// otherConn is a ClientConnInterface that is not a *grpc.ClientConn.
type otherConn struct{ *grpc.ClientConn }

// TestEncodingPoolOnlyWithoutLazyReaders: an ingest call's encoding comes
// from gRPC's pool only when nothing but gRPC can see the message after
// SendMsg: each lazy reader on its own (a stats handler, a stream
// interceptor that wraps the stream, tracing) and a connection zbstream
// cannot inspect make it fresh heap memory. An interceptor that returns
// gRPC's stream as it is sees no message, and keeps the pool.
func TestEncodingPoolOnlyWithoutLazyReaders(t *testing.T) {
	srv := grpc.NewServer() // no service: the streams are only opened
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	wrap := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		st, err := streamer(ctx, desc, cc, method, opts...)
		return wrappingStream{st}, err
	}
	passThrough := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(ctx, desc, cc, method, opts...)
	}
	for _, tc := range []struct {
		name    string
		opts    []grpc.DialOption
		tracing bool
		other   bool
		pooled  bool
	}{
		{name: "plain", pooled: true},
		{name: "stats handler", opts: []grpc.DialOption{grpc.WithStatsHandler(keepingHandler{})}},
		{name: "wrapping interceptor", opts: []grpc.DialOption{grpc.WithStreamInterceptor(wrap)}},
		{name: "wrapping interceptor in a chain", opts: []grpc.DialOption{grpc.WithChainStreamInterceptor(passThrough, wrap)}},
		{name: "pass-through interceptor", opts: []grpc.DialOption{grpc.WithStreamInterceptor(passThrough)}, pooled: true},
		{name: "tracing", tracing: true},
		{name: "another ClientConnInterface", other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := grpc.NewClient(lis.Addr().String(), append(tc.opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			var conn grpc.ClientConnInterface = cc
			if tc.other {
				conn = otherConn{cc}
			}
			if tc.tracing {
				grpc.EnableTracing = true
				defer func() { grpc.EnableTracing = false }()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for _, open := range []func() (grpc.ClientStream, error){
				func() (grpc.ClientStream, error) { return ingestpb.NewZerobusClient(conn).PersistentStream(ctx) },
				func() (grpc.ClientStream, error) { return ingestpb.NewZerobusClient(conn).EphemeralStream(ctx) },
			} {
				st, err := open()
				if err != nil {
					t.Fatal(err)
				}
				if got := encodingPool(conn, st) != nil; got != tc.pooled {
					t.Errorf("pooled %v, want %v", got, tc.pooled)
				}
			}
		})
	}
}
