//go:build linux

package serve

// The reference server's memory bound (issues 21 and 25), measured on the
// server as its own process: "zbstream serve" is built (without -race,
// whatever the test runs with), started on loopback, and driven by hostile
// clients from this process; its peak RSS (VmHWM in /proc/PID/status) must
// stay under memoryTarget with the default receive budget. In CI (the
// reduced form) each load runs 8 s, about a minute in all on a loaded
// 2-core machine; ZBSTREAM_SERVER_MEMORY=full runs each for 30 s:
//
//	ZBSTREAM_SERVER_MEMORY=full go test ./cmd/zbstream -run TestServeMemoryBound -v

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

const (
	memoryEnv    = "ZBSTREAM_SERVER_MEMORY"
	memoryTarget = 640 << 20
	memTable     = "main.mem.t"
)

// proc is a "zbstream serve" process.
type proc struct {
	cmd             *exec.Cmd
	endpoint, admin string // host:port
	stderr          *clitest.Buffer
}

// startServeProc starts serve with args after -addr and -admin on free
// loopback ports (a later -admin wins); it is killed at the end of the
// test.
func startServeProc(t testing.TB, args ...string) *proc {
	t.Helper()
	return startServeProcEnv(t, nil, args...)
}

// startServeProcEnv is startServeProc with env (KEY=value) added to the
// process's environment.
func startServeProcEnv(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(clitest.Binary(t), append([]string{"serve", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-log-level", "warn"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return startProc(t, cmd)
}

// startProc starts a server process that prints "endpoint: http://ADDR"
// and "admin: http://ADDR" (or "admin: off") and waits for both lines.
func startProc(t testing.TB, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stderr: &clitest.Buffer{}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for p.endpoint == "" && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "endpoint: http://"); ok {
			p.endpoint = v
		}
	}
	for p.admin == "" && sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "admin: http://"); ok {
			p.admin = v
		}
	}
	if p.endpoint == "" {
		t.Fatalf("the server printed no endpoint; stderr:\n%s", p.stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// status returns a field of /proc/PID/status in bytes (VmHWM, VmRSS).
func (p *proc) status(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("server process: %v; stderr:\n%s", err, p.stderr)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
	return 0
}

// bytesCodec sends pre-encoded messages as they are, so that the clients
// spend no CPU encoding 8 MiB messages over and over.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch b := v.(type) {
	case []byte:
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	case wireParts:
		out := make(mem.BufferSlice, len(b))
		for i, p := range b {
			out[i] = mem.SliceBuffer(p)
		}
		return out, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (bytesCodec) Name() string { return "proto" }

// wireParts is a message sent as the concatenation of its parts.
type wireParts [][]byte

// batchAt is the PersistentStreamRequest of an ingest batch at offset off
// whose json_batch field (field 3 of IngestRecordBatchRequest, encoded) is
// body, built without copying body: encoding an 8 MiB message for every
// send made the clients, not the server, the bottleneck (under -race
// above all).
func batchAt(off int64, body []byte) wireParts {
	inner := protowire.AppendTag(nil, 1, protowire.VarintType)
	inner = protowire.AppendVarint(inner, uint64(off))
	head := protowire.AppendTag(nil, 4, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(inner)+len(body)))
	return wireParts{append(head, inner...), body}
}

func memDial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(bytesCodec{}), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func memCtx(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, server.HeaderAuthorization, "Bearer "+token, server.HeaderTable, memTable)
}

var persistentDesc = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

const persistentMethod = "/databricks.zerobus.Zerobus/PersistentStream"

// flood opens calls persistent streams over conns transports, each sending
// batches of eight 1 MiB JSON records (8 MiB messages) as fast as the
// server lets it, never reading an ack, until ctx ends.
func flood(ctx context.Context, t *testing.T, addr, token string, calls, conns int, sent *atomic.Int64) *sync.WaitGroup {
	return floodLoad{calls: calls, conns: conns}.run(ctx, t, addr, token, sent)
}

// floodMessage is the size of the flood's messages: 8 MiB, as encoded on
// the wire (the largest the server's default limit of 10 MiB lets in is
// larger; 8 MiB is the size of the loads of issues 21 and 25).
const floodMessage = 8 << 20

// floodBody is the json_batch field of the flood's batches: eight JSON
// records of almost 1 MiB, as large as they can be for the whole request
// (batchAt, at any offset under 2^28) to be at most floodMessage bytes.
func floodBody() []byte {
	for size := 1 << 20; ; size-- {
		rec := `{"k":"` + strings.Repeat("x", size-8) + `"}`
		recs := make([]string, 8)
		for i := range recs {
			recs[i] = rec
		}
		jb, _ := proto.Marshal(&ingestpb.JsonRecordBatch{Records: recs})
		body := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), jb)
		n := 0
		for _, p := range batchAt(1<<28-1, body) {
			n += len(p)
		}
		if n <= floodMessage {
			return body
		}
	}
}

// floodLoad is a flood of 8 MiB messages: calls persistent streams over
// conns transports (conns == calls: a transport each), sending batches of
// eight 1 MiB JSON records as fast as the server lets them; with readAcks
// each call reads its acks as they come, so that the server's committed
// batches are passed on at once and the senders are held back by nothing
// but the budget and flow control.
type floodLoad struct {
	calls, conns int
	readAcks     bool
}

// run starts the load; it ends when ctx does (wait for the returned
// group). sent counts the messages sent.
func (l floodLoad) run(ctx context.Context, t *testing.T, addr, token string, sent *atomic.Int64) *sync.WaitGroup {
	body := floodBody()
	ccs := make([]*grpc.ClientConn, l.conns)
	for i := range ccs {
		ccs[i] = memDial(t, addr)
	}
	var wg sync.WaitGroup
	for i := range l.calls {
		wg.Go(func() {
			callCtx := metadata.AppendToOutgoingContext(memCtx(ctx, token), server.HeaderRequestID, fmt.Sprintf("flood-%d", i))
			st, err := ccs[i%l.conns].NewStream(callCtx, persistentDesc, persistentMethod)
			if err != nil {
				return
			}
			create := &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{
				CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(memTable), RecordType: ingestpb.RecordType_JSON.Enum()}}}}
			if st.SendMsg(create) != nil {
				return
			}
			if l.readAcks {
				wg.Go(func() {
					for {
						var m ingestpb.PersistentStreamResponse
						if st.RecvMsg(&m) != nil {
							return
						}
					}
				})
			}
			for off := int64(0); ctx.Err() == nil; off++ {
				if st.SendMsg(batchAt(off, body)) != nil {
					return // the server ended the call
				}
				sent.Add(1)
			}
		})
	}
	return &wg
}

// TestServeMemoryBound: the loads of issues 21 and 25 against a server
// process with the default budget and the bolt engine; its peak RSS must
// stay under 640 MiB under each. Issue 21 (before its fix): 64 calls
// sending 8 MiB messages 1.8-3.3 GB (peak 5 GB), 200 such 4.8 GB and
// rising, 200 calls with an 8 MiB header 1.8 GB, 60 admin clients not
// reading a large page 4.4 GB. Issue 25: 64 and 200 calls, each on a
// transport of its own, sending 8 MiB messages while reading their acks
// (see docs/server.md, "Memory", for the figures). The bolt loads run with
// GOMEMLIMIT=off in the server's environment: the bound must not depend on
// it (without its soft memory limit the server took 663-781 MiB under the
// loads of issue 25 in 8 s).
func TestServeMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dur := 8 * time.Second
	if os.Getenv(memoryEnv) == "full" {
		dur = 30 * time.Second
	}
	tokens := []string{"-token", "mallory:tok-m:" + memTable, "-token", "alice:tok-a:" + memTable}
	check := func(t *testing.T, p *proc) {
		t.Helper()
		hwm, rss, anon, file := p.status(t, "VmHWM"), p.status(t, "VmRSS"), p.status(t, "RssAnon"), p.status(t, "RssFile")
		t.Logf("server peak RSS %.0f MiB, now %.0f MiB (anonymous %.0f MiB, file-backed %.0f MiB; target %d MiB)",
			float64(hwm)/(1<<20), float64(rss)/(1<<20), float64(anon)/(1<<20), float64(file)/(1<<20), memoryTarget>>20)
		if hwm > memoryTarget {
			t.Fatalf("server peak RSS %d bytes, over %d", hwm, memoryTarget)
		}
	}
	loads := []struct {
		name string
		floodLoad
	}{
		{"flood/calls=64", floodLoad{calls: 64, conns: 8}},
		{"flood/calls=200", floodLoad{calls: 200, conns: 8}},
		{"acks/conns=64", floodLoad{calls: 64, conns: 64, readAcks: true}},
		{"acks/conns=200", floodLoad{calls: 200, conns: 200, readAcks: true}},
	}
	for _, l := range loads {
		calls := l.calls
		t.Run(l.name, func(t *testing.T) {
			p := startServeProcEnv(t, []string{"GOMEMLIMIT=off"}, append([]string{"-engine", "bolt", "-data", t.TempDir()}, tokens...)...)
			ctx, cancel := context.WithTimeout(t.Context(), dur)
			defer cancel()
			var sent atomic.Int64
			wg := l.run(ctx, t, p.endpoint, "tok-m", &sent)
			<-ctx.Done()
			check(t, p)
			wg.Wait()
			t.Logf("%d messages of 8 MiB sent in %v", sent.Load(), dur)
			if sent.Load() < int64(calls) {
				t.Fatalf("only %d messages sent; stderr:\n%s", sent.Load(), p.stderr)
			}
		})
	}
	t.Run("headers", func(t *testing.T) {
		p := startServeProc(t, append([]string{"-engine", "memory"}, tokens...)...)
		cc := memDial(t, p.endpoint)
		ctx, cancel := context.WithTimeout(t.Context(), dur)
		defer cancel()
		big := strings.Repeat("h", 8<<20)
		refused := 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				st, err := cc.NewStream(metadata.AppendToOutgoingContext(memCtx(ctx, "tok-m"), "x-pad", big), persistentDesc, persistentMethod)
				if err == nil {
					var m ingestpb.PersistentStreamResponse
					err = st.RecvMsg(&m) // the server answers or ends the call
				}
				if err != nil && ctx.Err() == nil {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			})
		}
		<-ctx.Done()
		wg.Wait()
		check(t, p)
		if refused != 200 {
			t.Fatalf("%d of 200 calls with an 8 MiB header refused", refused)
		}
	})
	t.Run("admin", func(t *testing.T) {
		p := startServeProc(t, append([]string{"-engine", "memory"}, tokens...)...)
		// One stream of 128 MiB: 16 batches of 8 MiB, acknowledged.
		cc := memDial(t, p.endpoint)
		c := ingestpb.NewZerobusClient(cc)
		st, err := c.PersistentStream(memCtx(t.Context(), "tok-a"))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{
			CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(memTable), RecordType: ingestpb.RecordType_JSON.Enum()}}}}); err != nil {
			t.Fatal(err)
		}
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		id := r.GetCreateStreamResponse().GetStreamId()
		rec := `{"k":"` + strings.Repeat("x", 1<<20-8) + `"}`
		for off := range int64(16) {
			recs := []string{rec, rec, rec, rec, rec, rec, rec, rec}
			if err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{
				OffsetId: proto.Int64(off), Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: recs}}}}}); err != nil {
				t.Fatal(err)
			}
		}
		for {
			r, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() == 15 {
				break
			}
		}
		st.CloseSend()
		// 60 clients ask for the largest page and never read the answer.
		var conns []net.Conn
		for range 60 {
			nc, err := net.Dial("tcp", p.admin)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, nc)
			fmt.Fprintf(nc, "GET /v1/streams/%s/records?limit=10000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-a\r\n\r\n", id)
		}
		time.Sleep(dur) // the clients hold on without reading
		check(t, p)
		for _, nc := range conns {
			nc.Close()
		}
	})
}

// TestServeFairness (issue 21): while 64 calls of one principal keep the
// default budget full with 8 MiB messages, another principal's one-record
// call is acknowledged. The mechanism (a principal over its share waits
// while others wait) is TestBudgetShare's; here the deadline is generous,
// 10 s on a loaded 2-core machine (measured: see the log line; before, 12.6
// s, or no ack within 20 s). It runs in CI as it is.
func TestServeFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startServeProc(t, "-engine", "bolt", "-data", t.TempDir(), "-token", "mallory:tok-m:"+memTable, "-token", "alice:tok-a:"+memTable)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sent atomic.Int64
	wg := flood(ctx, t, p.endpoint, "tok-m", 64, 8, &sent)
	defer wg.Wait()
	defer cancel()
	for sent.Load() < 64 { // the budget is full: 64 x 8 MiB > 256 MiB
		select {
		case <-time.After(10 * time.Millisecond):
		case <-time.After(30 * time.Second):
			t.Fatalf("flood: %d messages sent in 30 s", sent.Load())
		}
	}
	actx, acancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer acancel()
	start := time.Now()
	c := ingestpb.NewZerobusClient(memDial(t, p.endpoint))
	st, err := c.PersistentStream(memCtx(actx, "tok-a"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("alice, after %v: %v; server log:\n%s", time.Since(start), err, p.stderr)
		}
	}
	must(st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{
		CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(memTable), RecordType: ingestpb.RecordType_JSON.Enum()}}}}))
	must(st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: &ingestpb.IngestRecordRequest{
		OffsetId: proto.Int64(0), Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: `{"alice":1}`}}}}))
	for {
		r, err := st.Recv()
		must(err)
		if r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() == 0 && r.GetIngestRecordResponse() != nil {
			break
		}
	}
	t.Logf("alice's record acknowledged %v after her call started, beside %d messages of 8 MiB from mallory", time.Since(start), sent.Load())
}
