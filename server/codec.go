package server

import (
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// malformedField is the unknown field by which serverCodec marks a request
// that did not decode. gRPC ends a call whose message fails to decode with
// INTERNAL, which clients retry; the server wants INVALID_ARGUMENT (a
// client bug), so the codec hands the handler an empty message carrying
// the decode error instead.
const malformedField protowire.Number = protowire.MaxValidNumber

type serverCodec struct{ base encoding.CodecV2 }

func newServerCodec() serverCodec { return serverCodec{base: encoding.GetCodecV2("proto")} }

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	proto.Reset(m)
	b := protowire.AppendTag(nil, malformedField, protowire.BytesType)
	b = protowire.AppendString(b, err.Error())
	m.ProtoReflect().SetUnknown(b)
	return nil
}

func (serverCodec) Name() string { return "proto" }

// decodeError returns the decode error serverCodec recorded in m, if any.
func decodeError(m proto.Message) (string, bool) {
	b := m.ProtoReflect().GetUnknown()
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != malformedField || typ != protowire.BytesType {
		return "", false
	}
	s, k := protowire.ConsumeString(b[n:])
	if k < 0 || n+k != len(b) {
		return "", false
	}
	return s, true
}
