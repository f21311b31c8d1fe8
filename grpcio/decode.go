package grpcio

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// DecodeError reports bytes read from a stream that are not a valid encoding
// of the expected server message. Use errors.As to get it; Err is the
// protobuf runtime's error and is reachable with errors.Is/As through Unwrap.
type DecodeError struct {
	// Message is the full protobuf name of the message that was expected,
	// e.g. "zbstream.zerobus.v1.PersistentStreamResponse" (the registered
	// name, not the official one; see package ingestpb).
	Message protoreflect.FullName
	// Err is the error from proto.Unmarshal.
	Err error
}

// Error describes the message that could not be decoded and why.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("zbstream: decoding %s: %v", e.Message, e.Err)
}

// Unwrap returns the protobuf runtime's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// UnmarshalEphemeral decodes the wire bytes of one EphemeralStreamResponse
// and maps it with DecodeEphemeral. Bytes that are not a valid message yield
// a zero Response and a *DecodeError. Empty input is a valid message with no
// payload: RespEmpty and a nil error.
func UnmarshalEphemeral(b []byte) (core.Response, error) {
	var msg ingestpb.EphemeralStreamResponse
	if err := proto.Unmarshal(b, &msg); err != nil {
		return core.Response{}, &DecodeError{Message: msg.ProtoReflect().Descriptor().FullName(), Err: err}
	}
	return DecodeEphemeral(&msg), nil
}

// UnmarshalPersistent decodes the wire bytes of one PersistentStreamResponse
// and maps it with DecodePersistent. Bytes that are not a valid message yield
// a zero Response and a *DecodeError. Empty input is a valid message with no
// payload: RespEmpty and a nil error.
func UnmarshalPersistent(b []byte) (core.Response, error) {
	var msg ingestpb.PersistentStreamResponse
	if err := proto.Unmarshal(b, &msg); err != nil {
		return core.Response{}, &DecodeError{Message: msg.ProtoReflect().Descriptor().FullName(), Err: err}
	}
	return DecodePersistent(&msg), nil
}

// DecodeEphemeral maps a server message of an ephemeral stream to a
// core.Response, keeping proto2 presence:
//
//   - create_stream_response: RespCreate; HasStreamID says whether stream_id
//     was set (an empty string that was set is present).
//   - ingest_record_response: RespAck; HasOffset says whether
//     durability_ack_up_to_offset was set (the core rejects an ack without
//     it).
//   - close_stream_signal: RespCloseSignal; HasDuration says whether
//     duration was set, and a present duration is mapped as the package
//     documentation says under "Close signal durations".
//   - a nil message or no payload: RespEmpty.
//
// A payload case whose inner message is nil (possible only when the message
// was built in Go, never after unmarshalling) decodes like an empty inner
// message: the kind with every Has flag false. A typed nil payload wrapper
// is no payload: RespEmpty.
func DecodeEphemeral(msg *ingestpb.EphemeralStreamResponse) core.Response {
	switch p := msg.GetPayload().(type) {
	case *ingestpb.EphemeralStreamResponse_CreateStreamResponse:
		if p != nil {
			return decodeCreate(p.CreateStreamResponse)
		}
	case *ingestpb.EphemeralStreamResponse_IngestRecordResponse:
		if p != nil {
			return decodeAck(p.IngestRecordResponse)
		}
	case *ingestpb.EphemeralStreamResponse_CloseStreamSignal:
		if p != nil {
			return decodeCloseSignal(p.CloseStreamSignal)
		}
	}
	return core.Response{Kind: core.RespEmpty}
}

// DecodePersistent maps a server message of a persistent stream to a
// core.Response, keeping proto2 presence:
//
//   - create_stream_response: RespCreate; HasStreamID says whether stream_id
//     was set.
//   - resume_stream_response: RespResume; HasOffset says whether
//     last_committed_offset was set (absent: nothing committed).
//   - ingest_record_response: RespAck; HasOffset says whether
//     durability_ack_up_to_offset was set.
//   - close_stream_signal: RespCloseSignal; HasDuration says whether
//     duration was set, and a present duration is mapped as the package
//     documentation says under "Close signal durations".
//   - a nil message or no payload: RespEmpty.
//
// A payload case whose inner message is nil decodes like an empty inner
// message, as in DecodeEphemeral.
func DecodePersistent(msg *ingestpb.PersistentStreamResponse) core.Response {
	switch p := msg.GetPayload().(type) {
	case *ingestpb.PersistentStreamResponse_CreateStreamResponse:
		if p != nil {
			return decodeCreate(p.CreateStreamResponse)
		}
	case *ingestpb.PersistentStreamResponse_ResumeStreamResponse:
		if p != nil {
			return decodeResume(p.ResumeStreamResponse)
		}
	case *ingestpb.PersistentStreamResponse_IngestRecordResponse:
		if p != nil {
			return decodeAck(p.IngestRecordResponse)
		}
	case *ingestpb.PersistentStreamResponse_CloseStreamSignal:
		if p != nil {
			return decodeCloseSignal(p.CloseStreamSignal)
		}
	}
	return core.Response{Kind: core.RespEmpty}
}

func decodeCreate(m *ingestpb.CreateIngestStreamResponse) core.Response {
	r := core.Response{Kind: core.RespCreate}
	if m != nil && m.StreamId != nil {
		r.StreamID, r.HasStreamID = *m.StreamId, true
	}
	return r
}

func decodeResume(m *ingestpb.ResumeIngestStreamResponse) core.Response {
	r := core.Response{Kind: core.RespResume}
	if m != nil && m.LastCommittedOffset != nil {
		r.Offset, r.HasOffset = *m.LastCommittedOffset, true
	}
	return r
}

func decodeAck(m *ingestpb.IngestRecordResponse) core.Response {
	r := core.Response{Kind: core.RespAck}
	if m != nil && m.DurabilityAckUpToOffset != nil {
		r.Offset, r.HasOffset = *m.DurabilityAckUpToOffset, true
	}
	return r
}

func decodeCloseSignal(m *ingestpb.CloseStreamSignal) core.Response {
	r := core.Response{Kind: core.RespCloseSignal}
	if m != nil && m.Duration != nil {
		r.Duration, r.HasDuration = decodeDuration(m.Duration), true
	}
	return r
}

// decodeDuration maps a close signal's duration that was on the wire to a
// non-negative time.Duration, never panicking; the rules are in the package
// documentation ("Close signal durations"). A nil d counts as invalid.
func decodeDuration(d *durationpb.Duration) time.Duration {
	if d.CheckValid() != nil {
		return time.Duration(math.MaxInt64)
	}
	return max(d.AsDuration(), 0)
}
