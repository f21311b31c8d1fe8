package zbstream

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// Stream is one ingestion stream into a table. It embeds the driver's
// stream, so IngestRecord, Wait, Flush, Close, Unacked, Stats, StreamID,
// LastDurable and the rest are its methods too; this type adds typed
// ingest. Every method is safe for concurrent use.
type Stream struct {
	*streamio.Stream
	proto   *protoDescriptor // nil for JSON streams
	maxCall int64
}

// IngestJSON marshals v with encoding/json and ingests it as one record of
// a JSON stream, returning its offset. v must marshal to a JSON object.
func (s *Stream) IngestJSON(ctx context.Context, v any) (int64, error) {
	if s.proto != nil {
		return core.NoOffset, fmt.Errorf("%w: IngestJSON on a proto stream of %s", ErrRecordType, s.proto.name)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return core.NoOffset, fmt.Errorf("zbstream: marshalling a JSON record: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		return core.NoOffset, fmt.Errorf("%w: a JSON record must be an object, got %.20s", ErrRecordType, b)
	}
	return s.IngestRecord(ctx, b)
}

// IngestProto marshals m and ingests it as one record of a proto stream,
// returning its offset. m must be of the stream's message type.
func (s *Stream) IngestProto(ctx context.Context, m ProtoMessage) (int64, error) {
	b, err := s.marshalProto(m)
	if err != nil {
		return core.NoOffset, err
	}
	return s.IngestRecord(ctx, b)
}

// IngestProtoBatch marshals msgs and ingests them as one call under one
// offset.
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

// IngestBatch ingests records as one call under one offset, which it
// returns (see streamio.Stream.IngestBatch). The per-call limit counts the
// batch as it travels, with each record's framing, so that a batch of many
// small records cannot pass the check and still be refused by the server.
func (s *Stream) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	if len(records) > 1 {
		var size int64
		for _, r := range records {
			size += int64(1 + protowire.SizeVarint(uint64(len(r))) + len(r))
		}
		if size > s.maxCall {
			return core.NoOffset, &LimitError{Limit: "per-call bytes (as sent)", Max: s.maxCall, Got: size}
		}
	}
	return s.Stream.IngestBatch(ctx, records)
}

// Stats counts what a stream has done so far: accepted, sent, resent,
// acknowledged, reconciled and failed offsets, connection attempts, and
// what is in flight.
type Stats = streamio.Stats
