package boundarytest

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

// kept is one message that code outside zbstream was handed and kept,
// with its encoding at the moment it was handed over.
type kept struct {
	where string
	msg   any
	then  []byte
}

// keeper keeps every message it is shown, as a lazy tracing library or
// stats handler may.
type keeper struct {
	mu   sync.Mutex
	msgs []kept
}

func (k *keeper) keep(where string, msg any) {
	m, ok := msg.(proto.Message)
	if !ok {
		k.mu.Lock()
		k.msgs = append(k.msgs, kept{where: where + " (not a proto message)", msg: msg})
		k.mu.Unlock()
		return
	}
	then, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		then = []byte("marshal failed: " + err.Error())
	}
	k.mu.Lock()
	k.msgs = append(k.msgs, kept{where: where, msg: msg, then: then})
	k.mu.Unlock()
}

// check reads every kept message again, long after it was handed over, and
// reports the ones that changed or are not what the client sends.
func (k *keeper) check(t *testing.T) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	sent, bad := 0, 0
	for i, km := range k.msgs {
		m, ok := km.msg.(proto.Message)
		if !ok {
			t.Errorf("message %d (%s): %T is not a proto message", i, km.where, km.msg)
			continue
		}
		now, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil || !bytes.Equal(now, km.then) {
			if bad++; bad <= 5 {
				t.Errorf("message %d (%s, %T) changed after it was handed over: %d bytes then, %d now (%v)", i, km.where, m, len(km.then), len(now), err)
			}
		}
		if r, ok := m.(*ingestpb.PersistentStreamRequest); ok && (r.GetIngestRecord() != nil || r.GetIngestRecordBatch() != nil) {
			sent++
		}
	}
	if bad > 5 {
		t.Errorf("... %d messages changed in all, of %d kept", bad, len(k.msgs))
	}
	if sent == 0 {
		t.Errorf("no ingest message among the %d kept: the test did not see the client's sends", len(k.msgs))
	}
}

// statsKeeper is a stats.Handler that keeps every payload.
type statsKeeper struct{ keeper }

func (s *statsKeeper) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (s *statsKeeper) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (s *statsKeeper) HandleConn(context.Context, stats.ConnStats)                       {}
func (s *statsKeeper) HandleRPC(_ context.Context, st stats.RPCStats) {
	switch p := st.(type) {
	case *stats.OutPayload:
		s.keep("stats out", p.Payload)
	case *stats.InPayload:
		s.keep("stats in", p.Payload)
	}
}

// interceptKeeper is a stream interceptor that keeps every message sent or
// received through the streams it wraps.
type interceptKeeper struct{ keeper }

func (k *interceptKeeper) intercept(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &keptStream{ClientStream: cs, k: k}, nil
}

type keptStream struct {
	grpc.ClientStream
	k *interceptKeeper
}

func (s *keptStream) SendMsg(m any) error {
	s.k.keep("interceptor send", m)
	return s.ClientStream.SendMsg(m)
}

func (s *keptStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.k.keep("interceptor recv", m)
	}
	return err
}

// TestKeptMessagesStayUnchanged runs the workload with a stats handler and
// a stream interceptor that keep every message they are shown, and reads
// them all again once the client is closed and the streams' memory given
// back: each must still encode as it did when it was handed over. The
// client reused one request and one response message per connection, so
// every kept message changed (and pointed into record memory that had been
// reused or unmapped).
func TestKeptMessagesStayUnchanged(t *testing.T) {
	for _, noCopy := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCopy=%v", noCopy), func(t *testing.T) {
			ts := servertest.Start(t)
			sk, ik := &statsKeeper{}, &interceptKeeper{}
			w := workload{noCopy: noCopy, client: []zbstream.Option{zbstream.WithGRPCOptions(
				grpc.WithStatsHandler(sk),
				grpc.WithStreamInterceptor(ik.intercept),
			)}}
			w.run(t, ts)
			runtime.GC()
			sk.check(t)
			ik.check(t)
		})
	}
}
