package server_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// soakEnv lengthens TestSoakHostileClients (a Go duration; default 3s):
//
//	ZBSTREAM_SOAK=60s go test ./server -run TestSoakHostileClients -v
const soakEnv = "ZBSTREAM_SOAK"

const (
	soakBudget = 16 << 20
	// soakMargin is what the live heap may hold beyond the receive budget:
	// while a group of queued requests is committed, bbolt holds its
	// encoded copy and its dirty pages (up to twice the budget again); and
	// gRPC's buffers (what a flow-control window lets in before a message
	// is read, outside the budget) and the clients of the test, which run
	// in the same process, 96 MiB. Measured: 73-87 MiB of peak live heap
	// with the budget over the default 3 s (90 MiB over 20 s), 437-813 MiB
	// over 3 s without it (ReceiveBudget 1<<40).
	soakMargin = 2*soakBudget + 96<<20
)

// slowDisk is the durable store behind a disk of bytesPerSec, shared by
// every stream (one Append at a time, as a disk would serialize them), so
// that clients can send faster than the server commits, as they can
// against any real disk given enough of them.
type slowDisk struct {
	server.Store
	bytesPerSec int
	mu          sync.Mutex
}

func (d *slowDisk) Append(ctx context.Context, id string, batches []server.Batch) error {
	n := 0
	for _, b := range batches {
		for _, r := range b.Records {
			n += len(r)
		}
	}
	d.mu.Lock()
	t := time.NewTimer(time.Duration(float64(n) / float64(d.bytesPerSec) * float64(time.Second)))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	d.mu.Unlock()
	return d.Store.Append(ctx, id, batches)
}

// TestSoakHostileClients runs hostile clients beside one honest writer on
// the durable engine (behind a slow disk) with a small receive budget: eight streams that send
// batches as fast as they can and never read an ack, streams that open
// and then idle, and thousands of calls that never send a message (on one
// HTTP/2 connection). The honest writer must complete, with every record
// it was acknowledged stored once, and the live heap, sampled from
// runtime/metrics throughout, must stay under the budget plus soakMargin.
// Without the server-wide budget the eight non-readers alone could queue
// 4 MiB each, twice the 16 MiB budget, beside what their reads hold.
func TestSoakHostileClients(t *testing.T) {
	dur := 3 * time.Second
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", soakEnv, v, err)
		}
		dur = d
	}
	st, err := server.OpenBoltStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const hostileTok = "tok-mallory"
	ts := servertest.Start(t, servertest.WithStore(&slowDisk{Store: st, bytesPerSec: 20 << 20}),
		servertest.WithPrincipal(hostileTok, server.Principal{Name: "mallory", Tables: []string{servertest.DefaultTable}}),
		servertest.WithOptions(func(o *server.Options) {
			o.ReceiveBudget = soakBudget
			// A receiver takes 9/8 of the message limit before it reads: with
			// 10 MiB messages a 16 MiB budget reads one message at a time.
			o.MaxMessageBytes = 1 << 20
			o.FirstMessageTimeout = 2 * time.Second
		}))

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var wg sync.WaitGroup
	hostile := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}

	// Heap sampling.
	var peakLive uint64
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			peakLive = max(peakLive, samples[0].Value.Uint64())
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	hctx := servertest.OutgoingContext(ctx, hostileTok, ts.Table)
	big := strings.Repeat("x", 1000)
	bigBatch := make([]string, 100)
	for i := range bigBatch {
		bigBatch[i] = `{"k":"` + big + `"}`
	}
	// Eight non-readers, each on its own TCP connection.
	for i := range 8 {
		c := ts.Client(t)
		hostile(func() {
			s, err := c.PersistentStream(hctx)
			if err != nil {
				return
			}
			if s.Send(pcreateReq(jsonCreate(ts.Table), fmt.Sprintf("flood-%d", i))) != nil {
				return
			}
			for off := int64(0); ctx.Err() == nil; off++ {
				req := &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
					IngestRecordBatch: jsonBatch(off, bigBatch...)}}
				if s.Send(req) != nil {
					return
				}
			}
		})
	}
	// Streams that open and idle.
	idler := ts.Client(t)
	for range 100 {
		hostile(func() {
			s, err := idler.EphemeralStream(hctx)
			if err != nil {
				return
			}
			if s.Send(&ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(ts.Table)}}) != nil {
				return
			}
			for {
				if _, err := s.Recv(); err != nil {
					return
				}
			}
		})
	}
	// Calls that never send a message, reopened as the server ends them,
	// on one HTTP/2 connection.
	emptyConn := ts.Dial(t)
	var emptyN sync.Mutex
	empties := 0
	for range 1500 {
		hostile(func() {
			for ctx.Err() == nil {
				s, err := emptyConn.NewStream(hctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true},
					"/databricks.zerobus.Zerobus/PersistentStream")
				if err != nil {
					return
				}
				emptyN.Lock()
				empties++
				emptyN.Unlock()
				var m ingestpb.PersistentStreamResponse
				if s.RecvMsg(&m) == nil {
					return // not expected: the server ends these calls
				}
			}
		})
	}

	// The honest writer, on its own connection, for dur.
	honest := ts.Client(t)
	w := openPersistent(t, honest, ts.Context(ctx))
	psend(t, w, pcreateReq(jsonCreate(ts.Table), "honest"))
	r, err := w.Recv()
	if err != nil {
		t.Fatalf("honest create: %v", err)
	}
	id := r.GetCreateStreamResponse().GetStreamId()
	deadline := time.Now().Add(dur)
	var sent int64
	for ; time.Now().Before(deadline) || sent < 50; sent++ {
		pjson(t, w, sent, fmt.Sprintf(`{"honest":%d}`, sent), `{"pad":"`+big+`"}`)
		if sent%10 == 9 {
			pwaitAck(t, w, sent) // at most ten batches in flight
		}
	}
	if sent%10 != 0 {
		pwaitAck(t, w, sent-1)
	}
	pclose(t, w)

	stop()
	wg.Wait()
	<-sampled
	runtime.GC()

	got := records(t, ts.Server, id)
	if int64(len(got)) != sent {
		t.Fatalf("honest writer: %d batches stored, %d acknowledged", len(got), sent)
	}
	for i, b := range got {
		if len(b) != 2 || b[0] != fmt.Sprintf(`{"honest":%d}`, i) {
			t.Fatalf("honest batch %d: %.40q", i, b)
		}
	}
	t.Logf("%v: honest writer %d batches; %d empty calls opened; peak live heap %.1f MiB (budget %d MiB + margin %d MiB)",
		dur, sent, empties, float64(peakLive)/(1<<20), soakBudget>>20, soakMargin>>20)
	if peakLive > soakBudget+soakMargin {
		t.Fatalf("peak live heap %d bytes, over budget %d + margin %d", peakLive, soakBudget, soakMargin)
	}
}
