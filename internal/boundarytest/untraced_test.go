package boundarytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server/servertest"
)

// envUntraced makes this test binary run TestKeptMessagesUntraced's cases
// with tracing off.
const envUntraced = "ZBSTREAM_BOUNDARY_UNTRACED"

// codecKeeper is a stream interceptor that returns gRPC's stream as it is
// but wraps the call's codec in one that keeps every message it encodes.
type codecKeeper struct{ keeper }

func (k *codecKeeper) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	opts = slices.Clone(opts)
	for i, o := range opts {
		if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
			opts[i] = grpc.ForceCodecV2(keepingCodec{CodecV2: f.CodecV2, k: k})
		}
	}
	return streamer(ctx, desc, cc, method, opts...)
}

type keepingCodec struct {
	encoding.CodecV2
	k *codecKeeper
}

func (c keepingCodec) Marshal(v any) (mem.BufferSlice, error) {
	c.k.keep("codec", v)
	return c.CodecV2.Marshal(v)
}

// TestKeptMessagesUntraced runs the workload with tracing off and one
// reader that keeps every message at a time: a stats handler, a stream
// interceptor that wraps the stream, one that wraps the call's codec. With
// nothing else configured, the client encodes into gRPC's buffer pool,
// whose buffers are reused once written; each of these readers alone must
// make it use memory of the call's own instead, or the messages it kept
// change (TestKeptMessagesStayUnchanged runs them together, with tracing,
// which alone already rules the pool out). Tracing is on for this whole
// test binary, so the cases run in a child process of it.
func TestKeptMessagesUntraced(t *testing.T) {
	if os.Getenv(envUntraced) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeptMessagesUntraced$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), envUntraced+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the untraced run failed (%v):\n%s", err, out)
		}
		t.Logf("the untraced run:\n%s", out)
		return
	}
	if grpc.EnableTracing {
		t.Fatal("tracing is on in the untraced run")
	}
	type reader interface{ check(*testing.T) }
	for _, r := range []struct {
		name string
		make func() (grpc.DialOption, reader)
	}{
		{"stats handler", func() (grpc.DialOption, reader) { k := &statsKeeper{}; return grpc.WithStatsHandler(k), &k.keeper }},
		{"wrapping interceptor", func() (grpc.DialOption, reader) {
			k := &interceptKeeper{}
			return grpc.WithStreamInterceptor(k.intercept), &k.keeper
		}},
		{"codec-wrapping interceptor", func() (grpc.DialOption, reader) {
			k := &codecKeeper{}
			return grpc.WithStreamInterceptor(k.intercept), &k.keeper
		}},
	} {
		for _, noCopy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noCopy=%v", r.name, noCopy), func(t *testing.T) {
				ts := servertest.Start(t)
				opt, k := r.make()
				w := workload{noCopy: noCopy, client: []zbstream.Option{zbstream.WithGRPCOptions(opt)}}
				w.run(t, ts)
				runtime.GC()
				k.check(t)
			})
		}
	}
}
