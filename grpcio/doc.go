// Package grpcio connects zbstream's protocol core to the Zerobus gRPC
// service. It holds:
//
//   - Transport, an io.Transport over the EphemeralStream and
//     PersistentStream RPCs of one grpc.ClientConn: every open carries fresh
//     headers, the first message goes out at once (without waiting for
//     response headers), each ingest call is encoded once into a buffer of
//     its own, and one reader decodes the server's messages; Retire calls
//     RetireStream;
//   - Classify, the one place where gRPC errors become the core's codes;
//   - credentials: the HeadersProvider interface, StaticToken, and OAuth
//     client credentials (NewOAuth) as the official SDKs do them;
//   - Dial: endpoints, TLS by default, HTTP CONNECT proxies from the
//     environment, the user agent;
//   - the decode path: the functions that turn the server's messages
//     (ingestpb.EphemeralStreamResponse and
//     ingestpb.PersistentStreamResponse, from the wire or already decoded)
//     into the plain core.Response values the core consumes, keeping proto2
//     field presence exactly.
//
// Decoding never judges a message: a create response without a stream id or
// an ack without an offset decodes faithfully (with the Has flag false), and
// the core decides that it breaks the protocol. Only bytes that are not a
// message at all are an error here, a *DecodeError.
//
// # Where each part lives
//
//	transport.go  Transport and Config: the two stream RPCs, RetireStream
//	conn.go       one call: its messages, what gRPC is handed
//	encode.go     ingest calls encoded by hand, once; codec.go passes
//	              them through gRPC's codec
//	pool.go       where those buffers come from: the transport's pool
//	              when nothing but gRPC can see the message, else fresh heap
//	bufpool.go    that pool: power-of-two buffers, not cleared
//	decode.go     the server's messages decoded, never judged
//	response.go   the same read with no message to fill when nobody else
//	              sees it: acks by hand
//	classify.go   gRPC errors to the core's codes, in one place
//	dial.go       Dial: keepalive, user agent, message limits
//	endpoint.go   endpoints; tls.go TLS and its mistakes; proxy.go proxies
//	headers.go    HeadersProvider, static tokens
//	outgoing.go   OutgoingContext: the metadata of an open, for any stream kind
//	oauth*.go     OAuth client credentials: config, request, cache,
//	              errors, redaction
//
// # Memory handed to gRPC
//
// gRPC, its codecs, stats handlers, interceptors, binary log and tracing
// (grpc.EnableTracing and /debug/requests) may keep a message after
// SendMsg or RecvMsg returns and read it later, on another goroutine. So:
//
//   - a message handed to gRPC is never modified afterwards: every send and
//     every receive uses a fresh message, but for one case: when nothing
//     but gRPC's own code can see what RecvMsg is given (the condition of
//     the pool below), every server message is read into one reused value
//     of our own (response.go), which the call's codec decodes straight
//     into a core.Response (an ack by hand, anything else through proto),
//     with nothing to allocate;
//   - nothing handed to gRPC points into the stream's record memory (the
//     off-heap arena of package io, or the application's buffers with
//     NoCopy): an ingest call is encoded once into buffers taken for it,
//     the message gRPC sees aliases those buffers (or, when nothing but
//     gRPC's own code can see it, is a mere token, passThrough), and the
//     call's codec passes them through. The record is copied once on its way out, as
//     when gRPC encoded the message itself;
//   - but for a payload the stream lends (streamio.Loan: a call of 4 KiB
//     or more, in heap memory the stream does not write again while any
//     borrow is out), when nothing but gRPC's own code sees the message:
//     then gRPC is handed the payload itself, after a header of ours, as
//     a buffer whose last Free returns the borrow (conn.Borrows). The
//     record is then copied once in all, into the stream's copy;
//   - the buffers come from the transport's pool (bufpool.go: buffers
//     every byte of which the encoding writes before gRPC reads it, so
//     not cleared as gRPC's own pool clears them), and go back to it when
//     gRPC frees them once written, only when nothing but gRPC's own code
//     can read the message later: no tracing, no stats handler, no stream
//     interceptor wrapping the stream or the call's codec (encodingPool
//     checks each call, and takes "cannot tell" for "yes"). Otherwise they
//     are fresh heap buffers that the garbage collector frees once nobody
//     holds them. So grpc.EnableTracing must be set, as gRPC documents,
//     before any call is made: gRPC reads it again for every retried
//     attempt of a call.
//
// The call's codec keeps the content-type gRPC's default codec sends
// (application/grpc); the bytes on the wire are the proto encoding of the
// messages.
//
// # Close signal durations
//
// A close_stream_signal's google.protobuf.Duration becomes
// Response.Duration as follows; it never panics:
//
//   - absent: HasDuration false (the core then uses its MaxGrace cap);
//   - valid: converted exactly, saturating at the largest time.Duration
//     (time.Duration spans about 292 years, a valid Duration up to 10,000);
//   - negative: clamped to 0, HasDuration true (reconnect at once);
//   - invalid per durationpb's CheckValid (seconds beyond ±10,000 years,
//     nanos outside ±999,999,999, or seconds and nanos of different signs):
//     the largest time.Duration (math.MaxInt64), HasDuration true.
//
// Decision for the invalid case: such a value carries no trustworthy
// magnitude, not even a trustworthy sign, so it must not cut the grace short
// (reading it as 0 would drop the acks the server is about to send). The
// largest duration leaves the choice to the client's own MaxGrace cap, which
// is exactly what an absent duration gets, while HasDuration still reports
// truthfully that the field was on the wire.
package grpcio
