package grpcio

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// sendCodec is the codec of one call (one conn). It encodes the message
// that Send is sending as the bytes encodeCall already made for it, so a
// record is copied once on its way out, and every other message (the open
// message, a message a stream interceptor sends instead of ours, every
// response) as gRPC's proto codec does.
//
// The buffers it returns for an ingest call are that call's alone: fresh
// heap buffers that stay valid for as long as gRPC's transport, tracing or
// a stats handler holds them, or buffers of the transport's pool
// (encodeBuffers), which gRPC frees once written, when the conn has found
// that nothing else sees the messages (encodingPool).
//
// sending is set by Send around its SendMsg and read by Marshal, which
// gRPC calls on the same goroutine, within SendMsg.
type sendCodec struct {
	base    encoding.CodecV2
	sending encoded // msg nil: nothing is being sent
}

func newSendCodec() *sendCodec { return &sendCodec{base: encoding.GetCodecV2(proto.Name)} }

// Marshal returns the prepared encoding when v is the message being sent.
// A message is identified by its pointer: a stream interceptor that sends
// a different message gets that message encoded. (An interceptor that
// modified our message in place would not; gRPC's contract already forbids
// modifying a message once it is handed to SendMsg.)
func (c *sendCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e := c.sending; e.msg != nil && v == e.msg {
		c.sending = encoded{} // gRPC owns the buffers now: hand them over once
		return e.buffers(), nil
	}
	return c.base.Marshal(v)
}

// Unmarshal decodes a server message into the conn's response (see
// response), and anything else as gRPC's proto codec does.
func (c *sendCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*response); ok {
		return r.unmarshal(data)
	}
	return c.base.Unmarshal(data, v)
}

// Name is empty so that the call's content-type stays "application/grpc",
// the one gRPC sends with its default proto codec: a forced codec's name
// becomes the content-subtype ("application/grpc+NAME"), and the wire must
// not change with the codec.
func (c *sendCodec) Name() string { return "" }
