package grpcio

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// deafServer answers a persistent create, then reads nothing more: what
// the client writes after that stays in the transport, as with a server
// that has stopped reading.
type deafServer struct {
	ingestpb.UnimplementedZerobusServer
}

func (deafServer) PersistentStream(st grpc.BidiStreamingServer[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]) error {
	if _, err := st.Recv(); err != nil {
		return err
	}
	err := st.Send(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
		CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("deaf-1")},
	}})
	if err != nil {
		return err
	}
	<-st.Context().Done()
	return st.Context().Err()
}

func startDeafServer(t *testing.T) string {
	t.Helper()
	srv := grpc.NewServer()
	ingestpb.RegisterZerobusServer(srv, deafServer{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return "http://" + lis.Addr().String()
}

// deafTransport returns a Transport to a fresh deafServer, dialed with
// opts.
func deafTransport(t *testing.T, opts DialOptions) *Transport {
	t.Helper()
	cc, err := Dial(startDeafServer(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	tr, err := NewTransport(cc, Config{Table: "main.idle.events"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// openDeaf opens a persistent JSON call to a fresh deafServer.
func openDeaf(t *testing.T, opts DialOptions) streamio.Conn {
	t.Helper()
	c, err := deafTransport(t, opts).Open(context.Background(), streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	return c
}

// returnsWithin runs f and reports whether it returned within d, and its
// error. A false answer leaves f running: the caller ends it (Abort).
func returnsWithin(d time.Duration, f func() error) (chan error, bool) {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		done <- err
		return done, true
	case <-time.After(d):
		return done, false
	}
}

// TestSendsWhenIdleHolds holds gRPC to what SendsWhenIdle promises the
// driver: on a stream with nothing unacknowledged, a Send returns although
// the server reads nothing, even one far larger than any window. It also
// shows why the promise is only for an idle stream: the next Send, with
// the first still unread, waits for the server, until Abort.
func TestSendsWhenIdleHolds(t *testing.T) {
	c := openDeaf(t, DialOptions{})
	if is, ok := c.(streamio.IdleSender); !ok || !is.SendsWhenIdle() {
		t.Fatalf("a conn over Dial's ClientConn: IdleSender %v, want one that SendsWhenIdle", ok)
	}
	if r, err := c.Recv(); err != nil || r.Kind != core.RespCreate {
		t.Fatalf("open: %+v, %v", r, err)
	}
	big := make([]byte, 4<<20)
	if _, ok := returnsWithin(30*time.Second, func() error { return c.Send(streamio.Call{Wire: 0, Record: big}) }); !ok {
		t.Fatal("a 4 MiB Send on an idle stream waits for a server that does not read")
	}
	second, ok := returnsWithin(200*time.Millisecond, func() error { return c.Send(streamio.Call{Wire: 1, Record: big}) })
	if ok {
		t.Fatalf("a Send behind 4 MiB the server has not read returned (%v): the write quota no longer bounds what gRPC takes, and SendsWhenIdle's reasoning needs a look", <-second)
	}
	c.Abort()
	if err := <-second; err == nil {
		t.Error("the Send that waited returned nil after Abort, want the connection's end")
	}
}

// TestSendsWhenIdleNotThroughAnInterceptor: a stream interceptor that
// returns a stream of its own may wait in SendMsg for anything, so the
// conn does not promise to return.
func TestSendsWhenIdleNotThroughAnInterceptor(t *testing.T) {
	wrap := grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		st, err := streamer(ctx, desc, cc, method, opts...)
		return wrappingStream{st}, err
	})
	c := openDeaf(t, DialOptions{GRPCOptions: []grpc.DialOption{wrap}})
	if c.(streamio.IdleSender).SendsWhenIdle() {
		t.Error("SendsWhenIdle through an interceptor's own stream, want false")
	}
	if c.(streamio.Borrower).Borrows() {
		t.Error("Borrows through an interceptor, which may keep what SendMsg is given, want false")
	}
	if !openDeaf(t, DialOptions{}).(streamio.Borrower).Borrows() {
		t.Error("does not borrow with nothing but gRPC's own code in between")
	}
}

// TestIngestReturnsWhenTheServerStopsReading: the driver over this
// transport never leaves IngestRecord waiting on the network, whether the
// ingesting goroutine writes the call itself (nothing in flight) or hands
// it to the sender (the first still unacknowledged), and Wait ends with
// its context.
func TestIngestReturnsWhenTheServerStopsReading(t *testing.T) {
	tr := deafTransport(t, DialOptions{})
	ctx := context.Background()
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "idle-send-test"
	s, err := streamio.Open(ctx, tr, cfg, streamio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4<<20)
	for i := range 3 {
		if _, ok := returnsWithin(30*time.Second, func() error {
			_, err := s.IngestRecord(ctx, big)
			return err
		}); !ok {
			t.Fatalf("IngestRecord %d of 4 MiB waits for a server that does not read", i)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Wait(wctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait: %v, want the deadline", err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer ccancel()
	_ = s.Close(cctx) // the server never acks: Close gives up with its context
}
