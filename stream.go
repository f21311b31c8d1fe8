package zbstream

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/record"
)

// Stream is one ingestion stream into a table, made by a Client's
// CreateStream, CreatePersistentStream or ResumeStream. It is a thin layer
// over the driver's stream (package io): the untyped calls delegate to it,
// and this type adds typed ingest (IngestJSON, IngestProto,
// IngestProtoBatch). Every method is safe for concurrent use.
//
// The calls that block (the Ingest methods when the window is full, Wait,
// Flush, Close) honour their context: when ctx ends first they return
// context.Cause(ctx), or for Close, which then fails the stream, an error
// wrapping it. The other methods return at once. A stream that failed
// stays failed: later Ingest, Wait and Flush calls return an error
// wrapping ErrStreamFailed and the cause (Err and Close return the cause
// itself), and the records it could not deliver stay in Unacked.
type Stream struct {
	drv   *streamio.Stream
	proto *protoDescriptor // nil for JSON streams
}

// IngestJSON marshals v with encoding/json and ingests it as one record of
// a JSON stream, returning its offset; it blocks (honouring ctx) and fails
// as IngestRecord does. v must marshal to a JSON object: anything else, or
// a proto stream, is an error wrapping ErrRecordType, and a value
// encoding/json refuses is its error, wrapped.
//
// On a stream opened WithJSONToProto, v is a JSON object (a
// json.RawMessage or a []byte holding one, or a value encoding/json
// marshals to one) that is converted to the stream's proto record before
// it is queued; one that does not fit is an error wrapping ErrRecordType
// and a *ConvertError naming the field, and nothing is ingested.
func (s *Stream) IngestJSON(ctx context.Context, v any) (int64, error) {
	if s.proto != nil && s.proto.json != nil {
		rec, err := s.jsonToProto(v)
		if err != nil {
			return core.NoOffset, err
		}
		return s.IngestRecord(ctx, rec)
	}
	if s.proto != nil {
		return core.NoOffset, fmt.Errorf("%w: IngestJSON on a proto stream of %s", ErrRecordType, s.proto.name)
	}
	if rt := s.RecordType(); rt != RecordJSON {
		return core.NoOffset, fmt.Errorf("%w: IngestJSON on a stream of %s records", ErrRecordType, rt)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return core.NoOffset, fmt.Errorf("zbstream: marshalling a JSON record: %w", err)
	}
	if record.CheckJSON(b) != nil {
		return core.NoOffset, fmt.Errorf("%w: a JSON record must be an object, got %.20s", ErrRecordType, b)
	}
	return s.IngestRecord(ctx, b)
}

// IngestProto marshals m and ingests it as one record of a proto stream,
// returning its offset; it blocks (honouring ctx) and fails as IngestRecord
// does. m must be of the stream's message type: another type, a nil message
// or a JSON stream is an error wrapping ErrRecordType.
func (s *Stream) IngestProto(ctx context.Context, m ProtoMessage) (int64, error) {
	b, err := s.marshalProto(m)
	if err != nil {
		return core.NoOffset, err
	}
	return s.IngestRecord(ctx, b)
}

// IngestProtoBatch marshals msgs and ingests them as one call under one
// offset, which it returns; it blocks (honouring ctx) and fails as
// IngestBatch does. Every message must be of the stream's message type (as
// in IngestProto): the first that is not makes an error wrapping
// ErrRecordType, naming its index, and nothing is ingested.
func (s *Stream) IngestProtoBatch(ctx context.Context, msgs []ProtoMessage) (int64, error) {
	recs := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := s.marshalProto(m)
		if err != nil {
			return core.NoOffset, core.Errorf("record %d: %w", i, err)
		}
		recs[i] = b
	}
	return s.IngestBatch(ctx, recs)
}

func (s *Stream) marshalProto(m ProtoMessage) ([]byte, error) {
	if s.proto == nil {
		return nil, fmt.Errorf("%w: IngestProto on a JSON stream", ErrRecordType)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: a nil message", ErrRecordType)
	}
	if name := m.ProtoReflect().Descriptor().FullName(); name != s.proto.name {
		return nil, fmt.Errorf("%w: got a %s, the stream takes %s", ErrRecordType, name, s.proto.name)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("zbstream: marshalling a %s: %w", s.proto.name, err)
	}
	return b, nil
}

// IngestRecord accepts one record and returns its offset once the record
// is accepted: not yet durable (see Wait and Flush). The stream keeps a
// copy, so the caller may reuse record as soon as IngestRecord returns
// (with WithNoCopy it is kept by reference until durable or failed, and
// must not be modified until then). The record should be of the stream's
// type, a JSON object, a serialized message of the stream's proto type or
// an Avro datum of its writer schema: IngestRecord does not look inside it
// (IngestJSON and IngestProto check; the server checks every record).
//
// IngestRecord blocks while the window of unacknowledged calls is full
// (WithMaxInflight), while callbacks lag WithCallbackQueue offsets behind,
// or while the connection's sender is too far behind, until there is room
// or ctx ends; then it returns context.Cause(ctx) and the record is not
// accepted. Otherwise it does not block.
//
// Errors: a record over the per-call limit (WithMaxCallBytes, counting the
// record as the request frames it: record.FramedSize) is a *LimitError
// (errors.Is ErrCallTooLarge); after Close, ErrClosed; after
// the stream failed, an error wrapping ErrStreamFailed and the cause;
// ErrOffsetSpaceExhausted when the next offset would overflow int64 (the
// stream fails with it). On any error the record has no offset
// (NoOffset).
func (s *Stream) IngestRecord(ctx context.Context, record []byte) (int64, error) {
	return s.drv.IngestRecord(ctx, record)
}

// IngestBatch ingests records as one call under one offset, which it
// returns once the call is accepted; every record of the batch lands
// together. An empty batch gets no offset: NoOffset and, on a stream that
// is neither closed nor failed, a nil error. The stream copies the records,
// so the caller may reuse the slice and the records at once (with
// WithNoCopy both are kept by reference until the call is durable or
// failed).
//
// It blocks, honours ctx and fails as IngestRecord does. The per-call limit
// counts the batch as it travels, with each record's framing
// (record.CallSize), so that a batch of many small records cannot pass the
// check and still be refused by the server: a batch over it is a
// *LimitError (errors.Is ErrCallTooLarge) and nothing is ingested.
func (s *Stream) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	return s.drv.IngestBatch(ctx, records)
}

// Wait blocks until offset is durable (acknowledged by the server, or at or
// below a resume watermark) and returns nil. Offsets already durable,
// NoOffset among them, return at once, even after Close or a failure.
//
// If the offset failed with the stream, Wait returns an error wrapping
// ErrStreamFailed and the cause (a *RetryError, *ProtocolError,
// *ConnectionError, ErrCloseTimeout, a *CallbackPanicError, ...). If ctx
// ends first it returns context.Cause(ctx), and the offset may still
// become durable later. An offset no call was given (above LastAssigned,
// or below NoOffset) is an error wrapping ErrNeverAssigned.
func (s *Stream) Wait(ctx context.Context, offset int64) error {
	return s.drv.Wait(ctx, offset)
}

// Flush blocks until every call accepted before it was called is durable,
// and returns nil (at once when there is none, or after a clean Close). It
// does not stop ingest: calls accepted meanwhile are not waited for.
//
// Flush is bounded by ctx and by the flush timeout (WithFlushTimeout,
// default 5 minutes). A flush that times out returns an error wrapping
// ErrFlushTimeout and leaves the stream running; one whose ctx ends
// returns context.Cause(ctx). If the stream had failed when Flush was
// called, or a call it waits for fails with the stream, Flush returns an
// error wrapping ErrStreamFailed and the cause.
func (s *Stream) Flush(ctx context.Context) error {
	return s.drv.Flush(ctx)
}

// Close ends the stream cleanly: it stops accepting records (ingest calls,
// including ones blocked on a full window, return ErrClosed), blocks until
// every accepted record is durable, half-closes the connection and waits
// for the server to end it, then waits up to 5 seconds (or until ctx ends)
// for queued WithOnAck and WithOnFail callbacks, and for every goroutine
// the stream started. Closing a persistent stream does not retire it.
//
// Close returns nil when the stream closed cleanly. Otherwise it returns
// the error the stream failed with, as Err does (not wrapped in
// ErrStreamFailed): ErrCloseTimeout if records were still not durable
// after the close timeout (WithCloseTimeout), or the earlier failure's cause
// (a *RetryError, *ProtocolError, *ConnectionError, *CallbackPanicError,
// ...); the records it could not deliver stay in Unacked. If ctx ends
// before the stream has closed, Close fails the stream with an error
// wrapping context.Cause(ctx), rather than leave anything running, and
// returns it. Close is idempotent and safe to call concurrently with
// ingest and with itself; every call returns the same result.
func (s *Stream) Close(ctx context.Context) error {
	return s.drv.Close(ctx)
}

// Done returns a channel that is closed when the stream has ended: closed
// (by Close) or failed. It does not block; Err tells which. Callbacks may
// still be running when it is closed.
func (s *Stream) Done() <-chan struct{} {
	return s.drv.Done()
}

// Err returns the error the stream failed with (the cause itself, not
// wrapped in ErrStreamFailed: a *RetryError, *ProtocolError,
// *ConnectionError, ErrCloseTimeout, ErrOffsetSpaceExhausted, a
// *CallbackPanicError, ...), or nil while it has not failed; a cleanly
// closed stream has none. It does not block.
func (s *Stream) Err() error {
	return s.drv.Err()
}

// StreamID returns the server's id for the stream. A persistent stream
// keeps one id for life: save it, a new process resumes the stream by it
// (Client.ResumeStream). An ephemeral stream gets a new id on every
// connection. It does not block and never fails.
func (s *Stream) StreamID() string {
	return s.drv.StreamID()
}

// Kind returns the stream's kind, Ephemeral or Persistent. It does not
// block and never fails.
func (s *Stream) Kind() Kind {
	return s.drv.Kind()
}

// RecordType returns the type of every record in the stream, RecordJSON,
// RecordProto or RecordTypeAvro. It does not block and never fails.
func (s *Stream) RecordType() RecordType {
	return s.drv.RecordType()
}

// LastDurable returns the highest offset known durable (acknowledged, or
// at or below a resume watermark), or NoOffset. Right after a stream is
// resumed by id in a new process it is the server's watermark: the
// application replays its source from the record after it. It does not
// block and never fails.
func (s *Stream) LastDurable() int64 {
	return s.drv.LastDurable()
}

// History returns what this stream knows of its persistent stream: the
// highest offset known durable and the highest ever sent. A program that
// closes a persistent stream and resumes it later in the same process
// passes it to ResumeStream (WithHistory), so that the resume is checked
// as a reconnect's is (docs/protocol.md §5.3). It does not block and never
// fails.
func (s *Stream) History() History {
	return s.drv.History()
}

// History is what a process knows of a persistent stream it had open
// (Stream.History, WithHistory): Durable, the highest offset it saw become
// durable, and Attempted, the highest offset it ever sent.
type History = core.History

// LastAssigned returns the offset of the most recently accepted call
// (after a resume in a new process, the watermark until a call is
// accepted), or NoOffset. It does not block and never fails.
func (s *Stream) LastAssigned() int64 {
	return s.drv.LastAssigned()
}

// Unacked returns every accepted call that is not durable, in offset order,
// grouped as it was ingested. After Close or a failure these are the
// records the application still owns, and every call returns the same
// list. The records are copies the caller may keep (with WithNoCopy, the
// slices it ingested). It does not block and never fails; it allocates the
// copies, so it is for recovery, not for polling.
func (s *Stream) Unacked() []Batch {
	return s.drv.Unacked()
}

// Stats returns a snapshot of the stream's counters. It does not block and
// never fails.
func (s *Stream) Stats() Stats {
	return s.drv.Stats()
}

// Stats counts what a stream has done so far: accepted, sent, resent,
// acknowledged, reconciled and failed offsets, connection attempts, and
// what is in flight.
type Stats = streamio.Stats

// Batch is one accepted, not yet durable ingest call, as Unacked returns
// it: its offset and its records as they were ingested.
type Batch = core.Batch

// Kind is the kind of a stream: Ephemeral or Persistent.
type Kind = core.Kind

// The stream kinds.
const (
	// Ephemeral streams (CreateStream) are at-least-once: after a
	// reconnect everything unacknowledged is sent again, so a record can
	// land twice.
	Ephemeral = core.Ephemeral
	// Persistent streams (CreatePersistentStream, ResumeStream) are
	// exactly-once: created once and resumed by id on every reconnect.
	Persistent = core.Persistent
)

// RecordType is the encoding of a stream's records: RecordJSON,
// RecordProto or RecordTypeAvro. One stream carries one type.
type RecordType = core.RecordType

// The record types.
const (
	// RecordProto records are serialized protobuf messages
	// (WithProtoMessage).
	RecordProto = core.RecordProto
	// RecordJSON records are JSON objects, one per record (the default).
	RecordJSON = core.RecordJSON
	// RecordTypeAvro records are raw Avro binary datums of the stream's
	// writer schema (WithAvroSchema): no framing, no schema id. The
	// client does not decode them; the server checks each against the
	// schema.
	RecordTypeAvro = core.RecordAvro
)

// NoOffset is the offset meaning "nothing": the offset of a call that was
// not accepted or of an empty batch, and what LastDurable and LastAssigned
// return before there is anything to report.
const NoOffset = core.NoOffset
