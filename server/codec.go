package server

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the "proto" codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// malformedField is the unknown field by which serverCodec marks a request
// that did not decode or is over the size limit. gRPC ends a call whose
// message fails to decode with INTERNAL and one over its own size limit
// with RESOURCE_EXHAUSTED, both of which clients retry; the server wants
// INVALID_ARGUMENT (a client bug, resending cannot help), so the codec
// hands the handler an empty message carrying the reason instead.
const malformedField protowire.Number = protowire.MaxValidNumber

type serverCodec struct {
	base     encoding.CodecV2
	maxBytes int      // larger messages are refused without decoding
	bufs     *bufPool // the server's receive buffers
}

func newServerCodec(maxBytes int, bufs *bufPool) serverCodec {
	return serverCodec{base: encoding.GetCodecV2("proto"), maxBytes: maxBytes, bufs: bufs}
}

func (c serverCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// tooLargeMsg is the reason a message over the limit is refused.
func tooLargeMsg(n, limit int) string {
	return fmt.Sprintf("message of %d bytes exceeds the %d-byte limit", n, limit)
}

// rawRequest is a stream request as received: serverCodec copies its
// bytes out of gRPC's buffers once, into a reused buffer (bufpool.go),
// and decode.go decodes them (records stay in that copy).
type rawRequest struct {
	buf      *pooledBuf
	tooLarge int // > 0: the size of a message over the limit (buf is nil)
}

func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawRequest); ok {
		if n := data.Len(); n > c.maxBytes {
			r.tooLarge = n
			return nil
		}
		r.buf = c.bufs.get(data.Len())
		data.CopyTo(r.buf.b)
		return nil
	}
	if n := data.Len(); n > c.maxBytes {
		m, ok := v.(proto.Message)
		if !ok {
			return errors.New(tooLargeMsg(n, c.maxBytes))
		}
		markMalformed(m, tooLargeMsg(n, c.maxBytes))
		return nil
	}
	err := c.base.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	markMalformed(m, "malformed message: "+err.Error())
	return nil
}

func (serverCodec) Name() string { return "proto" }

// markMalformed resets m to an empty message carrying why.
func markMalformed(m proto.Message, why string) {
	proto.Reset(m)
	b := protowire.AppendTag(nil, malformedField, protowire.BytesType)
	b = protowire.AppendString(b, why)
	m.ProtoReflect().SetUnknown(b)
}

// decodeError returns the reason serverCodec recorded in m, if any: the
// message of the INVALID_ARGUMENT status that ends the call.
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
