package server

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/internal/faults"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// service adapts Server to the generated interface. Its two stream
// methods are registered by serviceDesc, which receives their requests
// undecoded; the generated ones are never called.
type service struct {
	ingestpb.UnimplementedZerobusServer
	s *Server
}

// serviceDesc is the generated service description with the two stream
// handlers replaced by ones that read each request as bytes (rawRequest),
// for decode.go, instead of decoding it with protobuf.
func serviceDesc() *grpc.ServiceDesc {
	d := ingestpb.Zerobus_ServiceDesc
	d.Streams = slices.Clone(d.Streams)
	for i := range d.Streams {
		switch d.Streams[i].StreamName {
		case "EphemeralStream":
			d.Streams[i].Handler = func(srv any, st grpc.ServerStream) error {
				return srv.(*service).s.serveStream(KindEphemeral, ephemeralWire{st})
			}
		case "PersistentStream":
			d.Streams[i].Handler = func(srv any, st grpc.ServerStream) error {
				return srv.(*service).s.serveStream(KindPersistent, persistentWire{st})
			}
		}
	}
	return &d
}

func (v *service) RetireStream(ctx context.Context, req *ingestpb.RetireStreamRequest) (*ingestpb.RetireStreamResponse, error) {
	r, err := v.s.retire(ctx, req)
	return r, capStatus(err)
}

// conn is one call of EphemeralStream or PersistentStream ("a connection"
// in protocol.md). Three goroutines share it, each with one concern:
//
//   - the handler goroutine opens the stream (open.go) and then is the
//     committer (commit.go): it takes what the receiver has checked,
//     appends it (several requests per Append) and acts on faults and
//     close signals;
//   - the receiver (receive.go) reads every client message, the first one
//     included, checks ingest requests and queues them within the
//     connection's and the server's receive budgets;
//   - the sender (send.go) sends acks and close signals after the open
//     response, so that a client that never reads them stalls only itself.
type conn struct {
	s         *Server
	w         wire
	kind      StreamKind
	principal Principal
	ctx       context.Context
	cancel    context.CancelCauseFunc

	id      string
	table   string
	schema  recordChecker
	entry   *streamEntry // set once the connection owns its stream
	ackOnly bool         // Options.Engine == EngineAckOnly: records are not validated

	first  chan firstMsg // the receiver's first message, or why there is none
	yieldC chan struct{} // the budget asks the call to end (conn.yield)
	opened chan struct{} // closed by the handler once the open succeeded
	q      queue
	out    outbox

	maxRecv atomic.Int64 // highest offset received, at least told
	recvN   atomic.Int64 // messages received (idle detection)
	reading atomic.Bool  // the receiver got its first read hold (it asked gRPC for a message)

	// told is the watermark the client was told at open: -1 for a create
	// (also a repeated one) or an ephemeral stream, W for a resume. Acks
	// are capped at max(told, highest offset received): a client that
	// starts again at 0 after a repeated create on a stream that already
	// has data must not be acknowledged offsets it has not sent (yet).
	told int64

	// committer state
	watermark int64 // committed
	lastAck   int64 // last true ack value sent (or the open watermark)
	seq       int   // ingest requests processed
	closing   bool
	endTimer  *time.Timer
}

// firstMsg is what the receiver read first.
type firstMsg struct {
	m   *clientMsg
	err error
}

// fence ends the connection with cause (it no longer owns its stream).
func (c *conn) fence(cause error) { c.cancel(cause) }

// fencedErr is the status of a connection whose context ended.
func (c *conn) fencedErr() error {
	cause := context.Cause(c.ctx)
	if cause == nil {
		return errSuperseded
	}
	if _, ok := status.FromError(cause); ok {
		return cause
	}
	return status.FromContextError(cause).Err()
}

// takeFault takes a fault due after the c.seq requests processed.
func (c *conn) takeFault(kinds ...FaultKind) (Fault, bool) {
	return c.s.takeFault(faults.At{Call: c.seq}, c.table, c.id, c.kind, kinds...)
}

// takeOpenFault takes a fault due at the open (After ignored).
func (c *conn) takeOpenFault(kinds ...FaultKind) (Fault, bool) {
	return c.s.takeFault(faults.At{Open: true}, c.table, c.id, c.kind, kinds...)
}

// serveStream runs one stream call: authenticate, send the response
// headers at once (protocol.md §4, "Call start"), admit the call under the
// principal's cap, open the stream from the first message (which must come
// within Options.FirstMessageTimeout), then commit until the call ends.
func (s *Server) serveStream(kind StreamKind, w wire) error {
	return capStatus(s.serveCall(kind, w))
}

// serveCall is serveStream before its status is bounded (quote.go).
func (s *Server) serveCall(kind StreamKind, w wire) error {
	ctx := w.context()
	p, err := s.opts.Auth.authenticate(ctx)
	if err != nil {
		s.log.Info("call rejected", "kind", kindName(kind), "err", capStatus(err))
		return err
	}
	done, err := s.admit(p)
	if err != nil {
		s.log.Info("call rejected", "kind", kindName(kind), "principal", p.Name, "err", capStatus(err))
		return err
	}
	defer done()
	if err := w.sendHeader(); err != nil {
		return err
	}
	c := &conn{s: s, w: w, kind: kind, principal: p, ackOnly: s.opts.Engine == EngineAckOnly,
		first: make(chan firstMsg, 1), opened: make(chan struct{}), yieldC: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.q.init(s.budget, p.Name)
	c.out.init()
	defer func() {
		c.cancel(nil)
		c.q.close()
		if c.entry != nil {
			s.release(c.id, c)
		}
	}()
	s.wg.Add(1)
	go c.receive()

	first, err := c.awaitFirst()
	if err == nil {
		err = c.open(first)
	}
	if err != nil {
		s.log.Info("open refused", "kind", kindName(kind), "principal", p.Name, "stream", c.id, "err", capStatus(err))
		return err
	}
	s.log.Info("stream opened", "kind", kindName(kind), "principal", p.Name, "stream", c.id, "table", c.table, "watermark", c.watermark)
	s.wg.Add(1)
	go c.send()
	close(c.opened)
	err = c.run()
	c.out.drain(c.ctx)
	c.out.stop()
	s.log.Info("stream connection ended", "kind", kindName(kind), "stream", c.id, "watermark", c.watermark, "err", capStatus(err))
	return err
}

// awaitFirst waits for the first message, at most FirstMessageTimeout.
// When the deadline passes before the receiver could even ask for the
// message (it waited for the receive budget all along), the server, not
// the client, is late: UNAVAILABLE "server busy", which clients retry,
// rather than DEADLINE_EXCEEDED.
func (c *conn) awaitFirst() (*clientMsg, error) {
	t := time.NewTimer(c.s.opts.FirstMessageTimeout)
	defer t.Stop()
	select {
	case f := <-c.first:
		if f.err != nil {
			if err := recvStatus(f.err); err != nil {
				return nil, err
			}
			return nil, invalid("call ended before its first message")
		}
		return f.m, nil
	case <-t.C:
		if !c.reading.Load() {
			return nil, status.Errorf(codes.Unavailable, "server busy: the first message could not be read within %v (receive budget spent)", c.s.opts.FirstMessageTimeout)
		}
		return nil, status.Errorf(codes.DeadlineExceeded, "no first message (create_stream or resume_stream) within %v", c.s.opts.FirstMessageTimeout)
	case <-c.ctx.Done():
		return nil, c.fencedErr()
	case <-c.s.draining:
		return nil, status.Error(codes.Unavailable, "server shutting down")
	case <-c.yieldC:
		return nil, status.Errorf(codes.Unavailable, "server busy: no first message within %v while other calls wait to be read", preemptAfter)
	}
}

// open dispatches the first message to the create or resume handshake.
func (c *conn) open(first *clientMsg) error {
	switch {
	case first.kind == msgMalformed:
		return invalid("%s", first.malformed)
	case first.kind == msgCreate:
		return c.openCreate(first)
	case first.kind == msgResume && c.kind == KindPersistent:
		return c.openResume(first.resume)
	case c.kind == KindPersistent:
		return invalid("first message must be create_stream or resume_stream, got %s", first.kind)
	default:
		return invalid("first message must be create_stream, got %s", first.kind)
	}
}
