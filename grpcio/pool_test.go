package grpcio

import (
	"context"
	"net"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/stats"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
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

// wrappedCodec is a codec an interceptor put in place of the call's own:
// it is handed every message, and may keep it.
type wrappedCodec struct{ encoding.CodecV2 }

// TestLazyReaders: an ingest call's encoding may come from gRPC's pool only
// when nothing but gRPC can see the message after SendMsg. Each lazy reader
// on its own (tracing, a stats handler, a stream interceptor that wraps the
// stream, one that wraps the call's codec) and a connection zbstream
// cannot inspect rule the pool out. An interceptor that passes gRPC's
// stream and the call's options through sees no message, and keeps it.
func TestLazyReaders(t *testing.T) {
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
	wrapCodec := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		opts = slices.Clone(opts)
		for i, o := range opts {
			if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
				opts[i] = grpc.ForceCodecV2(wrappedCodec{f.CodecV2})
			}
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	for _, tc := range []struct {
		name    string
		opts    []grpc.DialOption
		tracing bool
		other   bool
		lazy    bool
	}{
		{name: "plain"},
		{name: "pass-through interceptor", opts: []grpc.DialOption{grpc.WithStreamInterceptor(passThrough)}},
		{name: "tracing", tracing: true, lazy: true},
		{name: "stats handler", opts: []grpc.DialOption{grpc.WithStatsHandler(keepingHandler{})}, lazy: true},
		{name: "wrapping interceptor", opts: []grpc.DialOption{grpc.WithStreamInterceptor(wrap)}, lazy: true},
		{name: "wrapping interceptor in a chain", opts: []grpc.DialOption{grpc.WithChainStreamInterceptor(passThrough, wrap)}, lazy: true},
		{name: "codec-wrapping interceptor", opts: []grpc.DialOption{grpc.WithStreamInterceptor(wrapCodec)}, lazy: true},
		{name: "another ClientConnInterface", other: true, lazy: true},
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
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			codec := newSendCodec()
			for _, open := range []func() (grpc.ClientStream, error){
				func() (grpc.ClientStream, error) {
					return ingestpb.NewZerobusClient(conn).PersistentStream(ctx, grpc.ForceCodecV2(codec))
				},
				func() (grpc.ClientStream, error) {
					return ingestpb.NewZerobusClient(conn).EphemeralStream(ctx, grpc.ForceCodecV2(codec))
				},
			} {
				st, err := open()
				if err != nil {
					t.Fatal(err)
				}
				if got := lazyReaders(tc.tracing, conn, st, codec); got != tc.lazy {
					t.Errorf("lazy readers %v, want %v", got, tc.lazy)
				}
				if got := lazyReaders(tc.tracing, conn, st, newSendCodec()); !got {
					t.Errorf("a stream that encodes with another codec than the one given: lazy readers %v, want true", got)
				}
			}
		})
	}
}

// TestOpenChoosesPool: a conn opened by the Transport over a ClientConn
// from Dial, with nothing else configured, encodes into gRPC's pool and
// decodes into a reused response; with a stats handler, into fresh memory
// and fresh messages.
func TestOpenChoosesPool(t *testing.T) {
	srv := grpc.NewServer()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	for _, tc := range []struct {
		name   string
		opts   []grpc.DialOption
		pooled bool
	}{{"dial", nil, true}, {"dial with a stats handler", []grpc.DialOption{grpc.WithStatsHandler(keepingHandler{})}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := Dial("http://"+lis.Addr().String(), DialOptions{GRPCOptions: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			tr, err := NewTransport(cc, Config{Table: "main.pool.events"})
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
				c, err := tr.Open(context.Background(), streamio.OpenRequest{Kind: kind, RecordType: core.RecordJSON})
				if err != nil {
					t.Fatal(err)
				}
				if got := c.(*conn).pool != nil; got != tc.pooled {
					t.Errorf("%v: pooled %v, want %v", kind, got, tc.pooled)
				}
				// Responses are decoded into a reused response on the same
				// condition: a stats handler is handed every message.
				if got := c.(*conn).resp != nil; got != tc.pooled {
					t.Errorf("%v: reused response %v, want %v", kind, got, tc.pooled)
				}
				c.Abort()
			}
		})
	}
}
