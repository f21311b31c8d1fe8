package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	for range 8 {
		c := ts.Client(t)
		hostile(func() {
			s, err := c.PersistentStream(hctx)
			if err != nil {
				return
			}
			if s.Send(pcreateReq(jsonCreate(ts.Table))) != nil {
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
	h := &honestWriter{t: t, ts: ts, c: ts.Client(t), pad: big}
	h.w = openPersistent(t, h.c, withReqID(ts.Context(ctx), "honest"))
	psend(t, h.w, pcreateReq(jsonCreate(ts.Table)))
	r, err := h.w.Recv()
	if err != nil {
		t.Fatalf("honest create: %v", err)
	}
	h.id = r.GetCreateStreamResponse().GetStreamId()
	id := h.id
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) || h.next < 50 {
		h.send()
		if h.next%10 == 0 {
			h.waitAck(h.next - 1) // at most ten batches in flight
		}
	}
	if h.next%10 != 0 {
		h.waitAck(h.next - 1)
	}
	pclose(t, h.w)
	sent := h.next

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
	t.Logf("%v: honest writer %d batches, rotated %d times; %d empty calls opened; peak live heap %.1f MiB (budget %d MiB + margin %d MiB)",
		dur, sent, h.rotations, empties, float64(peakLive)/(1<<20), soakBudget>>20, soakMargin>>20)
	if peakLive > soakBudget+soakMargin {
		t.Fatalf("peak live heap %d bytes, over budget %d + margin %d", peakLive, soakBudget, soakMargin)
	}
}

// honestWriter is a persistent stream's client as the protocol wants one:
// it sends its batches in order and, when the server rotates its call (a
// close signal, acks until the call ends cleanly: legal at any time, and
// what the receive budget asks of a call that waits for its acks while
// holding its read share as others wait, docs/server.md, "Memory"),
// resumes the stream and sends again what the watermark lacks.
type honestWriter struct {
	t         *testing.T
	ts        *servertest.Server
	c         ingestpb.ZerobusClient
	id, pad   string
	w         pstream
	next      int64 // the next batch's offset
	rotating  bool  // a close signal came: the call ends after its acks
	rotations int
}

// send sends batch h.next.
func (h *honestWriter) send() {
	h.sendAt(h.next)
	h.next++
}

func (h *honestWriter) sendAt(off int64) {
	pjson(h.t, h.w, off, fmt.Sprintf(`{"honest":%d}`, off), `{"pad":"`+h.pad+`"}`)
}

// waitAck reads until an ack of want or beyond, resuming after a rotation.
func (h *honestWriter) waitAck(want int64) {
	h.t.Helper()
	for {
		r, err := h.w.Recv()
		switch {
		case errors.Is(err, io.EOF) && h.rotating:
			h.resume()
			continue
		case err != nil:
			h.t.Fatalf("waiting for ack %d: %v", want, err)
		case r.GetCloseStreamSignal() != nil:
			h.rotating = true
			continue
		}
		a := r.GetIngestRecordResponse()
		if a == nil || a.DurabilityAckUpToOffset == nil {
			h.t.Fatalf("waiting for ack %d: got %v", want, r)
		}
		if *a.DurabilityAckUpToOffset >= want {
			return
		}
	}
}

// resume opens the stream again and sends what its watermark lacks. An
// open the server turns away for now (busy, or not read before its
// first-message deadline while the budget is spent) is tried again, as a
// client's recovery does (protocol.md §5.5).
func (h *honestWriter) resume() {
	h.t.Helper()
	for attempt := 1; ; attempt++ {
		w := openPersistent(h.t, h.c, h.ts.Context(context.Background()))
		psend(h.t, w, presumeReq(h.id, ingestpb.RecordType_JSON, nil))
		r, err := w.Recv()
		if code := status.Code(err); err != nil && attempt < 50 &&
			(code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.ResourceExhausted) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil || r.GetResumeStreamResponse() == nil {
			h.t.Fatalf("resume (attempt %d): %v %v", attempt, r, err)
		}
		h.w, h.rotating = w, false
		h.rotations++
		from := int64(0)
		if wm := r.GetResumeStreamResponse().LastCommittedOffset; wm != nil {
			from = *wm + 1
		}
		for off := from; off < h.next; off++ {
			h.sendAt(off)
		}
		return
	}
}
