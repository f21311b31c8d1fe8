package grpcio

import (
	"context"
	"io"
	"sync"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// conn is one call of either stream kind. The ingest messages are built
// once and refilled for every Send (gRPC encodes a message before SendMsg
// returns), so a send allocates nothing of its own.
type conn struct {
	st     grpc.ClientStream
	ctx    context.Context
	cancel context.CancelFunc
	kind   core.Kind
	// recordJSON: records travel as strings (JSON) rather than bytes.
	recordJSON bool

	// Reused by the one sender.
	off       int64
	one       ingestpb.IngestRecordRequest
	oneJSON   ingestpb.IngestRecordRequest_JsonRecord
	oneProto  ingestpb.IngestRecordRequest_ProtoEncodedRecord
	batch     ingestpb.IngestRecordBatchRequest
	jsonBatch ingestpb.JsonRecordBatch
	protoBat  ingestpb.ProtoEncodedRecordBatch
	jsonCase  ingestpb.IngestRecordBatchRequest_JsonBatch
	protoCase ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch
	strs      []string
	ephOne    ingestpb.EphemeralStreamRequest
	ephBatch  ingestpb.EphemeralStreamRequest
	perOne    ingestpb.PersistentStreamRequest
	perBatch  ingestpb.PersistentStreamRequest

	// Reused by the one receiver.
	ephResp ingestpb.EphemeralStreamResponse
	perResp ingestpb.PersistentStreamResponse

	// ended is closed when Recv has seen the end of the call, with endErr.
	endOnce sync.Once
	ended   chan struct{}
	endErr  error
}

func newConn(ctx context.Context, cancel context.CancelFunc, req streamio.OpenRequest) *conn {
	c := &conn{ctx: ctx, cancel: cancel, kind: req.Kind, recordJSON: req.RecordType == core.RecordJSON, ended: make(chan struct{})}
	c.one.OffsetId = &c.off
	c.batch.OffsetId = &c.off
	c.jsonCase.JsonBatch = &c.jsonBatch
	c.protoCase.ProtoEncodedBatch = &c.protoBat
	c.ephOne.Payload = &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: &c.one}
	c.ephBatch.Payload = &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: &c.batch}
	c.perOne.Payload = &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: &c.one}
	c.perBatch.Payload = &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: &c.batch}
	return c
}

// Send writes one ingest call: one record as an IngestRecordRequest, two or
// more as an IngestRecordBatchRequest. JSON records travel as proto strings
// that alias the record bytes (no copy): the stream keeps records
// unmodified until they are durable, and gRPC has encoded the message by
// the time SendMsg returns.
func (c *conn) Send(call streamio.Call) error {
	c.off = call.Wire
	rec, recs := call.Record, call.Records
	if len(recs) == 1 {
		rec, recs = recs[0], nil
	}
	var msg any
	if recs == nil {
		msg = c.fillOne(rec)
	} else {
		msg = c.fillBatch(recs)
	}
	err := c.st.SendMsg(msg)
	c.release()
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

// fillOne refills the single-record message with rec.
func (c *conn) fillOne(rec []byte) any {
	if c.recordJSON {
		c.oneJSON.JsonRecord = aliasString(rec)
		c.one.Record = &c.oneJSON
	} else {
		c.oneProto.ProtoEncodedRecord = rec
		c.one.Record = &c.oneProto
	}
	if c.kind == core.Ephemeral {
		return &c.ephOne
	}
	return &c.perOne
}

// fillBatch refills the batch message with recs.
func (c *conn) fillBatch(recs [][]byte) any {
	if c.recordJSON {
		c.strs = c.strs[:0]
		for _, r := range recs {
			c.strs = append(c.strs, aliasString(r))
		}
		c.jsonBatch.Records = c.strs
		c.batch.Batch = &c.jsonCase
	} else {
		c.protoBat.Records = recs
		c.batch.Batch = &c.protoCase
	}
	if c.kind == core.Ephemeral {
		return &c.ephBatch
	}
	return &c.perBatch
}

// release drops the references to the application's records.
func (c *conn) release() {
	c.oneJSON.JsonRecord, c.oneProto.ProtoEncodedRecord = "", nil
	clear(c.strs)
	c.jsonBatch.Records, c.protoBat.Records = nil, nil
}

// aliasString returns b's bytes as a string without copying them. The
// caller guarantees b is not modified while the string is in use.
func aliasString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Recv reads and decodes the next server message. The call's end is io.EOF
// when the server ended it cleanly, else a *core.ConnectionError carrying
// the gRPC status.
func (c *conn) Recv() (core.Response, error) {
	var (
		r   core.Response
		err error
	)
	if c.kind == core.Ephemeral {
		proto.Reset(&c.ephResp)
		if err = c.st.RecvMsg(&c.ephResp); err == nil {
			r = DecodeEphemeral(&c.ephResp)
		}
	} else {
		proto.Reset(&c.perResp)
		if err = c.st.RecvMsg(&c.perResp); err == nil {
			r = DecodePersistent(&c.perResp)
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
