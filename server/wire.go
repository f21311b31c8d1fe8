package server

import (
	"context"
	"time"
	"unsafe"

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
	requestID string                              // msgCreate, persistent
	resume    *ingestpb.ResumeIngestStreamRequest // msgResume
	offset    *int64                              // msgIngest
	recType   ingestpb.RecordType                 // msgIngest: type of the records (0: none set)
	records   [][]byte                            // msgIngest
	batch     bool                                // msgIngest: IngestRecordBatchRequest
	malformed string                              // msgMalformed
}

// wire hides the message types of the two stream kinds.
type wire interface {
	context() context.Context
	sendHeader() error
	recv() (*clientMsg, error)
	sendCreated(id *string) error
	sendResumed(watermark *int64) error
	sendAck(upTo *int64) error
	sendClose(d time.Duration) error
}

func ingestMsg(r *ingestpb.IngestRecordRequest) *clientMsg {
	m := &clientMsg{kind: msgIngest, offset: r.OffsetId}
	switch rec := r.Record.(type) {
	case *ingestpb.IngestRecordRequest_ProtoEncodedRecord:
		m.recType, m.records = ingestpb.RecordType_PROTO, [][]byte{rec.ProtoEncodedRecord}
	case *ingestpb.IngestRecordRequest_JsonRecord:
		m.recType, m.records = ingestpb.RecordType_JSON, [][]byte{stringBytes(rec.JsonRecord)}
	}
	return m
}

func batchMsg(r *ingestpb.IngestRecordBatchRequest) *clientMsg {
	m := &clientMsg{kind: msgIngest, offset: r.OffsetId, batch: true}
	switch b := r.Batch.(type) {
	case *ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch:
		m.recType, m.records = ingestpb.RecordType_PROTO, b.ProtoEncodedBatch.GetRecords()
	case *ingestpb.IngestRecordBatchRequest_JsonBatch:
		m.recType = ingestpb.RecordType_JSON
		recs := b.JsonBatch.GetRecords()
		m.records = make([][]byte, len(recs))
		for i, s := range recs {
			m.records[i] = stringBytes(s)
		}
	}
	return m
}

// emptyMsg classifies a request without payload.
func emptyMsg(r proto.Message) *clientMsg {
	if why, ok := decodeError(r); ok {
		return &clientMsg{kind: msgMalformed, malformed: why}
	}
	return &clientMsg{kind: msgEmpty}
}

// stringBytes views a decoded JSON record as bytes without copying it.
// The records of a request are never modified (Store.Append must not
// modify them either), which is what makes sharing the string's memory
// safe.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func durationOf(d time.Duration) *durationpb.Duration {
	return durationpb.New(max(d, 0))
}

type ephemeralWire struct {
	st grpc.BidiStreamingServer[ingestpb.EphemeralStreamRequest, ingestpb.EphemeralStreamResponse]
}

func (w ephemeralWire) context() context.Context { return w.st.Context() }

func (w ephemeralWire) sendHeader() error { return w.st.SendHeader(metadata.MD{}) }

func (w ephemeralWire) recv() (*clientMsg, error) {
	r, err := w.st.Recv()
	if err != nil {
		return nil, err
	}
	switch p := r.Payload.(type) {
	case *ingestpb.EphemeralStreamRequest_CreateStream:
		return &clientMsg{kind: msgCreate, create: p.CreateStream}, nil
	case *ingestpb.EphemeralStreamRequest_IngestRecord:
		return ingestMsg(p.IngestRecord), nil
	case *ingestpb.EphemeralStreamRequest_IngestRecordBatch:
		return batchMsg(p.IngestRecordBatch), nil
	}
	return emptyMsg(r), nil
}

func (w ephemeralWire) send(p *ingestpb.EphemeralStreamResponse) error {
	return w.st.Send(p)
}

func (w ephemeralWire) sendCreated(id *string) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{
		CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: id}}})
}

// sendResumed has no ephemeral counterpart: it is only used by
// FaultWrongOpenResponse, which answers an ephemeral create with an ack.
func (w ephemeralWire) sendResumed(watermark *int64) error { return w.sendAck(watermark) }

func (w ephemeralWire) sendAck(upTo *int64) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
		IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: upTo}}})
}

func (w ephemeralWire) sendClose(d time.Duration) error {
	return w.send(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{
		CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: durationOf(d)}}})
}

type persistentWire struct {
	st grpc.BidiStreamingServer[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]
}

func (w persistentWire) context() context.Context { return w.st.Context() }

func (w persistentWire) sendHeader() error { return w.st.SendHeader(metadata.MD{}) }

func (w persistentWire) recv() (*clientMsg, error) {
	r, err := w.st.Recv()
	if err != nil {
		return nil, err
	}
	switch p := r.Payload.(type) {
	case *ingestpb.PersistentStreamRequest_CreateStream:
		return &clientMsg{kind: msgCreate, create: p.CreateStream.GetCreateStream(),
			requestID: p.CreateStream.GetClientRequestId()}, nil
	case *ingestpb.PersistentStreamRequest_ResumeStream:
		return &clientMsg{kind: msgResume, resume: p.ResumeStream}, nil
	case *ingestpb.PersistentStreamRequest_IngestRecord:
		return ingestMsg(p.IngestRecord), nil
	case *ingestpb.PersistentStreamRequest_IngestRecordBatch:
		return batchMsg(p.IngestRecordBatch), nil
	}
	return emptyMsg(r), nil
}

func (w persistentWire) send(p *ingestpb.PersistentStreamResponse) error {
	return w.st.Send(p)
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

// watermarkPtr is the wire form of a watermark: absent when nothing is
// committed.
func watermarkPtr(w int64) *int64 {
	if w < 0 {
		return nil
	}
	return proto.Int64(w)
}
