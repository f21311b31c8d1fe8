//go:build linux

package serve

// Throughput of the reference server as its own process (issue 21), beside
// an echo server in the same run: persistent streams each pipeline batches
// of 100 JSON records of 1 KiB over loopback until the last is
// acknowledged. The echo server (this test binary, re-executed) decodes
// each request with the generated types and acknowledges its offset at
// once: the cost of gRPC and protobuf alone, the reference.
//
//	go test ./cmd/zbstream -run '^$' -bench ServeProcess -benchtime 3000x -count 3

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

const envEchoChild = "ZBSTREAM_TEST_ECHO_CHILD"

// echoServer acknowledges every ingest request at once.
type echoServer struct {
	ingestpb.UnimplementedZerobusServer
}

func (echoServer) PersistentStream(st grpc.BidiStreamingServer[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]) error {
	for {
		r, err := st.Recv()
		if err != nil {
			return nil
		}
		var resp *ingestpb.PersistentStreamResponse
		switch p := r.Payload.(type) {
		case *ingestpb.PersistentStreamRequest_CreateStream:
			resp = &ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
				CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("echo")}}}
		case *ingestpb.PersistentStreamRequest_IngestRecordBatch:
			resp = &ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
				IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: p.IngestRecordBatch.OffsetId}}}
		default:
			continue
		}
		if err := st.Send(resp); err != nil {
			return nil
		}
	}
}

// TestEchoServerChild is the echo server process of BenchmarkServeProcess
// (skipped otherwise): it prints "endpoint: http://ADDR" and serves until
// killed.
func TestEchoServerChild(t *testing.T) {
	if os.Getenv(envEchoChild) == "" {
		t.Skip("the child process of BenchmarkServeProcess")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	ingestpb.RegisterZerobusServer(s, echoServer{})
	fmt.Printf("endpoint: http://%s\nadmin: http://none\n", lis.Addr())
	_ = s.Serve(lis)
}

// startEcho starts the echo server process.
func startEcho(b *testing.B) *proc {
	cmd := exec.Command(os.Args[0], "-test.run=^TestEchoServerChild$")
	cmd.Env = append(os.Environ(), envEchoChild+"=1")
	return startProc(b, cmd)
}

func BenchmarkServeProcess(b *testing.B) {
	const perBatch, recordSize = 100, 1024
	rec := `{"k":"` + strings.Repeat("x", recordSize-8) + `"}`
	batch := make([]string, perBatch)
	for i := range batch {
		batch[i] = rec
	}
	for _, engine := range []string{"echo", "memory", "bolt", "echo2"} {
		for _, streams := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/streams=%d", engine, streams), func(b *testing.B) {
				var p *proc
				switch engine {
				case "echo", "echo2": // echo twice: before and after, on a shared machine
					p = startEcho(b)
				case "memory":
					p = startServeProc(b, "-engine", "memory")
				case "bolt":
					p = startServeProc(b, "-engine", "bolt", "-data", b.TempDir())
				}
				c := ingestpb.NewZerobusClient(memDial(b, p.endpoint))
				b.SetBytes(perBatch * recordSize)
				cpu0 := p.cpu(b)
				b.ResetTimer()
				var wg sync.WaitGroup
				errs := make([]error, streams)
				for s := range streams {
					n := b.N / streams
					if s < b.N%streams {
						n++
					}
					wg.Go(func() { errs[s] = pipeline(b, c, fmt.Sprintf("bench-%d", s), n, batch) })
				}
				wg.Wait()
				b.StopTimer()
				cpu := p.cpu(b) - cpu0
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N*perBatch)/b.Elapsed().Seconds(), "records/s")
				// The server process's CPU time per record: steadier than
				// records/s when others share the machine.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*perBatch), "server-cpu-ns/record")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// cpu returns the CPU time (user and system) the process has used, from
// /proc/PID/stat, in clock ticks of 10 ms.
func (p *proc) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", p.cmd.Process.Pid, raw)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// pipeline creates a persistent stream, sends n batches without waiting
// and returns once the last one is acknowledged.
func pipeline(b *testing.B, c ingestpb.ZerobusClient, reqID string, n int, batch []string) error {
	st, err := c.PersistentStream(metadata.AppendToOutgoingContext(memCtx(b.Context(), ""), server.HeaderRequestID, reqID))
	if err != nil {
		return err
	}
	if err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: &ingestpb.CreatePersistentStreamRequest{
		CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(memTable), RecordType: ingestpb.RecordType_JSON.Enum()}}}}); err != nil {
		return err
	}
	if _, err := st.Recv(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				done <- err
				return
			}
			if r.GetIngestRecordResponse().GetDurabilityAckUpToOffset() == int64(n-1) {
				done <- nil
				return
			}
		}
	}()
	for o := range n {
		if st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
			IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(int64(o)),
				Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: batch}}}}}) != nil {
			break // the receiver reports why
		}
	}
	if n == 0 {
		return nil
	}
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	st.CloseSend()
	return nil
}
