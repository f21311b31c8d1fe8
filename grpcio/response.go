package grpcio

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// Field numbers of the ack within the response messages, and of the offset
// within the ack (proto/zerobus_service.proto).
const (
	fieldEphAck    = 2 // EphemeralStreamResponse.ingest_record_response
	fieldPerAck    = 3 // PersistentStreamResponse.ingest_record_response
	fieldAckOffset = 1 // IngestRecordResponse.durability_ack_up_to_offset
)

// response is what Recv hands gRPC to read a server message into when
// nothing but gRPC's own code can see it (the conn's pool is on): our
// codec decodes the wire bytes straight into a core.Response, with no
// message to allocate and no reflection. One is kept per conn and reused,
// which the same condition allows: no stats handler, interceptor or trace
// keeps what RecvMsg was given.
//
// An ack in its usual form is decoded by hand (wireAck); every other
// message, and an ack in any other form, goes through proto.Unmarshal and
// DecodePersistent or DecodeEphemeral, exactly as a message would.
type response struct {
	kind core.Kind
	r    core.Response
}

// unmarshal decodes data into r.
func (r *response) unmarshal(data mem.BufferSlice) error {
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		b = buf.ReadOnlyData()
	}
	field := protowire.Number(fieldPerAck)
	if r.kind == core.Ephemeral {
		field = fieldEphAck
	}
	if ack, ok := wireAck(b, field); ok {
		r.r = ack
		return nil
	}
	if r.kind == core.Ephemeral {
		var m ingestpb.EphemeralStreamResponse
		if err := proto.Unmarshal(b, &m); err != nil {
			return err
		}
		r.r = DecodeEphemeral(&m)
		return nil
	}
	var m ingestpb.PersistentStreamResponse
	if err := proto.Unmarshal(b, &m); err != nil {
		return err
	}
	r.r = DecodePersistent(&m)
	return nil
}

// wireAck decodes b when it is an ack in the form servers send: one
// field, the ack (field), holding nothing but offsets, each a valid
// varint. The last offset counts, as proto.Unmarshal has it, and an ack
// without one has none. For anything else it reports false, and the
// caller decodes b as a message: unknown fields, a payload given twice
// (merged or replaced by proto's rules), a malformed varint.
func wireAck(b []byte, field protowire.Number) (core.Response, bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != field || typ != protowire.BytesType {
		return core.Response{}, false
	}
	inner, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return core.Response{}, false
	}
	r := core.Response{Kind: core.RespAck}
	for len(inner) > 0 {
		num, typ, n := protowire.ConsumeTag(inner)
		if n < 0 || num != fieldAckOffset || typ != protowire.VarintType {
			return core.Response{}, false
		}
		v, m := protowire.ConsumeVarint(inner[n:])
		if m < 0 {
			return core.Response{}, false
		}
		r.Offset, r.HasOffset = int64(v), true
		inner = inner[n+m:]
	}
	return r, true
}
