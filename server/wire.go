package server

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	ingestpb "github.com/zbstream/zbstream/proto"
)

type msgKind int

const (
	msgEmpty msgKind = iota // no payload set
	msgCreate
	msgResume
	msgIngest
	msgMalformed // did not decode or too large; clientMsg.malformed says why
)

func (k msgKind) String() string {
	switch k {
	case msgCreate:
		return "create_stream"
	case msgResume:
		return "resume_stream"
	case msgIngest:
		return "an ingest request"
	case msgMalformed:
		return "a malformed message"
	default:
		return "a message without payload"
	}
}

// clientMsg is a decoded client message of either stream kind.
type clientMsg struct {
	kind      msgKind
	create    *ingestpb.CreateIngestStreamRequest // msgCreate (nil: missing)
	resume    *ingestpb.ResumeIngestStreamRequest // msgResume
	offset    *int64                              // msgIngest
	recType   ingestpb.RecordType                 // msgIngest: type of the records (0: none set)
	records   [][]byte                            // msgIngest
	batch     bool                                // msgIngest: IngestRecordBatchRequest
	malformed string                              // msgMalformed
	size      int                                 // bytes of the message's buffer
	buf       *pooledBuf                          // the buffer records are sliced from

	// A batch is decoded in two steps (decode.go): its records are counted
	// (nrec) and their parts kept, then fillRecords slices them.
	nrec       int
	batchParts wireParts
}

// wire hides the message types of the two stream kinds.
type wire interface {
	context() context.Context
	sendHeader() error
	// recv reads the next message and returns its bytes, undecoded
	// (decodeRequest decodes them), or why there is none.
	recv() (*rawRequest, error)
	sendCreated(id *string) error
	sendResumed(watermark *int64) error
	sendAck(upTo *int64) error
	sendClose(d time.Duration) error
}

func durationOf(d time.Duration) *durationpb.Duration {
	return durationpb.New(max(d, 0))
}

type ephemeralWire struct{ st grpc.ServerStream }

func (w ephemeralWire) context() context.Context { return w.st.Context() }

func (w ephemeralWire) sendHeader() error { return w.st.SendHeader(metadata.MD{}) }

func (w ephemeralWire) recv() (*rawRequest, error) { return recvRaw(w.st) }

func (w ephemeralWire) send(p *ingestpb.EphemeralStreamResponse) error {
	return w.st.SendMsg(p)
}

func (w ephemeralWire) sendCreated(id *string) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{
		CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: id}}})
}

// sendResumed has no ephemeral counterpart: it is only used by
// FaultOpenResponseKind, which answers an ephemeral create with an ack.
func (w ephemeralWire) sendResumed(watermark *int64) error { return w.sendAck(watermark) }

func (w ephemeralWire) sendAck(upTo *int64) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
		IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: upTo}}})
}

func (w ephemeralWire) sendClose(d time.Duration) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{
		CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: durationOf(d)}}})
}

type persistentWire struct{ st grpc.ServerStream }

func (w persistentWire) context() context.Context { return w.st.Context() }

func (w persistentWire) sendHeader() error { return w.st.SendHeader(metadata.MD{}) }

func (w persistentWire) recv() (*rawRequest, error) { return recvRaw(w.st) }

func (w persistentWire) send(p *ingestpb.PersistentStreamResponse) error {
	return w.st.SendMsg(p)
}

func (w persistentWire) sendCreated(id *string) error {
	return w.send(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
		CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: id}}})
}

func (w persistentWire) sendResumed(watermark *int64) error {
	return w.send(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
		ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: watermark}}})
}

func (w persistentWire) sendAck(upTo *int64) error {
	return w.send(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
		IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: upTo}}})
}

func (w persistentWire) sendClose(d time.Duration) error {
	return w.send(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{
		CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: durationOf(d)}}})
}

// recvRaw reads one request's bytes (serverCodec fills a rawRequest).
func recvRaw(st grpc.ServerStream) (*rawRequest, error) {
	r := &rawRequest{}
	if err := st.RecvMsg(r); err != nil {
		return nil, err
	}
	return r, nil
}

// watermarkPtr is the wire form of a watermark: absent when nothing is
// committed.
func watermarkPtr(w int64) *int64 {
	if w < 0 {
		return nil
	}
	return proto.Int64(w)
}
