package grpcio

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// conn is one call of either stream kind.
//
// Ownership: every message conn hands to gRPC (SendMsg, RecvMsg) is a
// fresh one, never modified afterwards, and never points into the stream's
// record memory: gRPC's tracing, stats handlers, interceptors and binary
// log may keep a message after the call that took it returns and read it
// later ("It is not safe to modify the message after calling SendMsg"). An
// ingest call is encoded once, into buffers of its own (encodeCall; from
// the transport's pool only when nothing but gRPC can see the message,
// see encodingPool),
// and gRPC is handed a message that aliases that buffer, with codec passing
// the buffer through: the record is copied once, as when gRPC encoded the
// message itself, and the copy belongs to gRPC from then on. The one
// exception is a payload the stream lends (streamio.Loan, with the pool
// only): gRPC is handed the stream's copy itself, behind a header of ours,
// under a borrow its Free returns, and the stream writes that memory again
// only once every borrow has come back.
type conn struct {
	st    grpc.ClientStream
	codec *sendCodec
	// pool is where encodings come from (encodingPool); nil: fresh heap
	// buffers.
	pool mem.BufferPool
	// ownStream: st is gRPC's own stream with our codec, no interceptor
	// in between (grpcOwnStream), so SendsWhenIdle holds.
	ownStream bool
	// resp, when set (with the pool), is what RecvMsg reads every server
	// message into: decoded by our codec, reused (see response).
	resp   *response
	ctx    context.Context
	cancel context.CancelFunc
	kind   core.Kind
	// recordType says which field the records travel in: strings (JSON),
	// proto bytes or Avro bytes.
	recordType core.RecordType

	// ended is closed when Recv has seen the end of the call, with endErr.
	endOnce sync.Once
	ended   chan struct{}
	endErr  error
}

func newConn(ctx context.Context, cancel context.CancelFunc, req streamio.OpenRequest) *conn {
	return &conn{ctx: ctx, cancel: cancel, codec: newSendCodec(), kind: req.Kind, recordType: req.RecordType, ended: make(chan struct{})}
}

// Send writes one ingest call: one record as an IngestRecordRequest, two or
// more as an IngestRecordBatchRequest. The call's records are read only
// here, while they are encoded, before SendMsg: what gRPC sees is the
// encoding, which is the conn's to give away.
func (c *conn) Send(call streamio.Call) error {
	e := encodeCall(c.pool, c.kind, c.recordType, call)
	c.codec.sending = e
	err := c.st.SendMsg(e.msg)
	c.codec.sending = encoded{}
	if err == nil {
		return nil
	}
	if err == io.EOF {
		// The call has ended; its status is read by Recv. Report that
		// rather than a bare EOF, so a refusal is not taken for a clean end.
		select {
		case <-c.ended:
			return c.endErr
		case <-c.ctx.Done():
			return connErr(c.ctx.Err())
		}
	}
	// A send that failed on this side (a message gRPC refused to encode or
	// frame) leaves the call open: end it, so that Recv reports the end and
	// the driver moves on rather than wait for acks that cannot come.
	c.cancel()
	return connErr(err)
}

// SendsWhenIdle reports whether Send returns without waiting for the
// network once everything sent before it has been acknowledged
// (streamio.IdleSender). It does when nothing but gRPC's own stream sends:
// its SendMsg waits only for the stream's write quota (64 KiB), spent by
// what was handed to gRPC and not yet written to the socket, and an ack
// means the peer has read what it covers; the call's first response
// commits the stream, so SendMsg never waits to retry either. A stream
// interceptor's SendMsg could wait for anything: with one in between, the
// stream says no.
func (c *conn) SendsWhenIdle() bool { return c.ownStream }

// Borrows reports whether Send may hand a lent payload to gRPC as it is
// (streamio.Borrower): only with the pool, when nothing but gRPC's own code
// sees what SendMsg is given (encodingPool). gRPC frees each buffer once
// its transport has written it, which returns the loan; what a failed
// connection had queued it may never free, and the stream then leaves that
// memory to the collector rather than reuse it.
func (c *conn) Borrows() bool { return c.pool != nil }

// Recv reads and decodes the next server message. The call's end is io.EOF
// when the server ended it cleanly, else a *core.ConnectionError carrying
// the gRPC status.
func (c *conn) Recv() (core.Response, error) {
	var (
		r   core.Response
		err error
	)
	// A fresh message every time: gRPC may keep the one it filled, unless
	// nothing but gRPC sees it (resp).
	switch {
	case c.resp != nil:
		if err = c.st.RecvMsg(c.resp); err == nil {
			r = c.resp.r
		}
	case c.kind == core.Ephemeral:
		m := new(ingestpb.EphemeralStreamResponse)
		if err = c.st.RecvMsg(m); err == nil {
			r = DecodeEphemeral(m)
		}
	default:
		m := new(ingestpb.PersistentStreamResponse)
		if err = c.st.RecvMsg(m); err == nil {
			r = DecodePersistent(m)
		}
	}
	if err != nil {
		if err != io.EOF {
			err = connErr(err)
		}
		c.endOnce.Do(func() { c.endErr = err; close(c.ended) })
	}
	return r, err
}

// CloseSend half-closes the call.
func (c *conn) CloseSend() error {
	if err := c.st.CloseSend(); err != nil {
		return connErr(err)
	}
	return nil
}

// Abort cancels the call: a blocked Send or Recv returns at once.
func (c *conn) Abort() { c.cancel() }
