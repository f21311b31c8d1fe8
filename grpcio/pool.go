package grpcio

import (
	"reflect"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// encodingPool returns where a call's encodings come from: pool, the
// transport's buffers (encodeBuffers), when nothing but gRPC's own code
// can see the messages sent on st (opened with codec as its forced codec),
// and nil (fresh heap buffers, freed by the garbage collector) otherwise.
//
// Why it matters: a pooled buffer goes back to the pool when gRPC frees
// it, which gRPC does once its transport has written it (and its retry
// buffer let go of it), and is then reused, by this process's next
// encoding or by gRPC itself. That is safe only if nobody reads the
// message (whose records alias the buffer) after SendMsg returns. Within
// gRPC, the message is read later only by tracing (grpc.EnableTracing:
// /debug/requests formats it lazily), a stats handler (handed the message
// in OutPayload, it may keep it), a stream interceptor (it sees SendMsg's
// argument first) and the codec (handed the message; a stream interceptor
// can wrap ours in one of its own); the binary log and compressors copy
// what they read, within SendMsg. So the pool is used only when none of
// them is there (lazyReaders).
//
// Fresh buffers cost the collector's work, most in a process whose heap is
// small: measured in BenchmarkEndToEnd, a batch of 100 records cost 1.5 µs
// more CPU per record than with the pool.
func encodingPool(pool *encodeBuffers, cc grpc.ClientConnInterface, st grpc.ClientStream, codec *sendCodec) mem.BufferPool {
	if lazyReaders(grpc.EnableTracing, cc, st, codec) {
		return nil
	}
	return pool
}

// lazyReaders reports whether code other than gRPC's own may read a
// message sent on st after SendMsg returns, taking "cannot tell" for
// "yes":
//
//   - tracing is on. gRPC reads grpc.EnableTracing for every attempt of a
//     call, retries included, and documents that it is set before any
//     call is made: set later, a retried attempt could trace a message
//     whose buffers went back to the pool (see the package doc);
//   - st is not gRPC's own stream sending with codec: a stream interceptor
//     returned a stream of its own, or passed gRPC a codec other than ours
//     (grpcOwnStream);
//   - cc is not a *grpc.ClientConn with no stats handler, from the dial
//     options or gRPC's global ones (mayHaveStatsHandler).
func lazyReaders(tracing bool, cc grpc.ClientConnInterface, st grpc.ClientStream, codec *sendCodec) bool {
	return tracing || !grpcOwnStream(st, codec) || mayHaveStatsHandler(cc)
}

// grpcOwnStream reports whether st sends through gRPC's own stream with
// codec, nothing in between. The generated client wraps what
// ClientConn.NewStream returned: gRPC's unexported clientStream inside its
// clientStreamWrapper, unless a stream interceptor (from the dial options,
// gRPC's global ones or a service config) returned a stream of its own;
// and the clientStream encodes with the codec of the call's options, which
// an interceptor may have replaced. gRPC has no API for either: they are
// read from its unexported types by reflection, and anything unexpected (a
// gRPC version that changed them) answers false.
func grpcOwnStream(st grpc.ClientStream, codec *sendCodec) bool {
	switch g := st.(type) {
	case *grpc.GenericClientStream[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]:
		st = g.ClientStream
	case *grpc.GenericClientStream[ingestpb.EphemeralStreamRequest, ingestpb.EphemeralStreamResponse]:
		st = g.ClientStream
	}
	v := reflect.ValueOf(st)
	for v.IsValid() && v.Kind() == reflect.Pointer && !v.IsNil() {
		t := v.Type().Elem()
		if t.PkgPath() != "google.golang.org/grpc" || t.Kind() != reflect.Struct {
			return false
		}
		switch t.Name() {
		case "clientStream":
			c := v.Elem().FieldByName("codec")
			if !c.IsValid() || c.Kind() != reflect.Interface || c.IsNil() {
				return false
			}
			c = c.Elem()
			return c.Type() == reflect.TypeOf(codec) && c.Pointer() == reflect.ValueOf(codec).Pointer()
		case "clientStreamWrapper":
			f := v.Elem().FieldByName("ClientStream")
			if !f.IsValid() || f.Kind() != reflect.Interface {
				return false
			}
			v = f.Elem()
		default:
			return false
		}
	}
	return false
}

// mayHaveStatsHandler reports whether calls on cc may have a stats
// handler: true unless cc is a *grpc.ClientConn whose combined handler is
// readable and nil.
func mayHaveStatsHandler(cc grpc.ClientConnInterface) bool {
	c, ok := cc.(*grpc.ClientConn)
	if !ok || c == nil {
		return true
	}
	f := reflect.ValueOf(c).Elem().FieldByName("statsHandler")
	if !f.IsValid() || f.Kind() != reflect.Interface {
		return true
	}
	return !f.IsNil()
}
