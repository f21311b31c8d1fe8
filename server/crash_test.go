package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// crashDirEnv names the data directory of a server child process.
const crashDirEnv = "ZBSTREAM_CRASH_SERVER_DIR"

const crashTable = "main.default.crash"

// TestCrashServerChild is not a test on its own: TestServerCrash runs the
// test binary again with crashDirEnv set, and this function then is the
// server process, on a bolt store in that directory, until it is killed.
func TestCrashServerChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as TestServerCrash's child process")
	}
	st, err := server.OpenBoltStore(dir)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = server.ListenAndServe(ctx, "127.0.0.1:0", server.Options{
		Store:    st,
		OnListen: func(a net.Addr) { fmt.Println("LISTEN", a.String()) },
	})
	st.Close()
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// crashServer is a server child process.
type crashServer struct {
	cmd  *exec.Cmd
	addr string
}

func startCrashServer(t *testing.T, dir string) *crashServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashServerChild$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "LISTEN "); ok {
			go func() { // keep draining so the child never blocks on stdout
				for lines.Scan() {
				}
			}()
			return &crashServer{cmd: cmd, addr: addr}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("server child did not start")
	return nil
}

// kill ends the child with SIGKILL: no flush, no goodbye.
func (s *crashServer) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// crashRecord is the payload of offset o of writer w: every incarnation of a
// writer sends the same payload under the same offset.
func crashRecord(w int, o int64, i int) string {
	return fmt.Sprintf(`{"w":%d,"o":%d,"i":%d}`, w, o, i)
}

// crashWriter is one persistent stream written across server crashes.
type crashWriter struct {
	w     int
	id    string
	acked int64 // highest offset the server acknowledged, across crashes
}

// run writes batches until the connection breaks or stop closes. It
// resumes the stream first when it has an id (after a crash), and starts
// after the server's watermark, as an exactly-once client does.
func (cw *crashWriter) run(ctx context.Context, cc *grpc.ClientConn, stop <-chan struct{}) error {
	ctx = metadata.AppendToOutgoingContext(ctx, server.HeaderTable, crashTable)
	if cw.id == "" {
		ctx = metadata.AppendToOutgoingContext(ctx, server.HeaderRequestID, fmt.Sprintf("crash-writer-%d", cw.w))
	}
	st, err := ingestpb.NewZerobusClient(cc).PersistentStream(ctx)
	if err != nil {
		return err
	}
	next := int64(0)
	if cw.id == "" {
		err = st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{
			CreateStream: &ingestpb.CreatePersistentStreamRequest{
				CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String(crashTable), RecordType: ingestpb.RecordType_JSON.Enum()},
			}}})
	} else {
		err = st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_ResumeStream{
			ResumeStream: &ingestpb.ResumeIngestStreamRequest{
				Identifier: &ingestpb.ResumeIngestStreamRequest_StreamId{StreamId: cw.id},
				RecordType: ingestpb.RecordType_JSON.Enum(),
			}}})
	}
	if err != nil {
		return err
	}
	first, err := st.Recv()
	if err != nil {
		return err
	}
	if cw.id == "" {
		cw.id = first.GetCreateStreamResponse().GetStreamId()
	} else {
		w := first.GetResumeStreamResponse().GetLastCommittedOffset()
		if first.GetResumeStreamResponse().LastCommittedOffset == nil {
			w = -1
		}
		if w < cw.acked {
			return fmt.Errorf("writer %d: resume watermark %d below acknowledged %d: the crash lost acknowledged records", cw.w, w, cw.acked)
		}
		next = w + 1
	}
	acks := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		for {
			r, err := st.Recv()
			if err != nil {
				acks <- err
				return
			}
			if a := r.GetIngestRecordResponse(); a != nil {
				mu.Lock()
				cw.acked = max(cw.acked, a.GetDurabilityAckUpToOffset())
				mu.Unlock()
			}
		}
	}()
	for ; ; next++ {
		select {
		case <-stop:
			st.CloseSend()
			return <-acks
		case err := <-acks:
			return err
		default:
		}
		recs := make([]string, 10)
		for i := range recs {
			recs[i] = crashRecord(cw.w, next, i)
		}
		err := st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
			IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(next),
				Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: recs}}}}})
		if err != nil {
			return <-acks
		}
		if next%20 == 19 {
			time.Sleep(time.Millisecond) // let acks interleave with sends
		}
	}
}

// TestServerCrash kills a real server process with SIGKILL while clients
// ingest, restarts it on the same data directory, and checks that every
// acknowledged record survived, nothing was stored twice, and no watermark
// exceeds the stored records. Three crash cycles; the writers resume after
// each one and continue exactly once.
func TestServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	writers := []*crashWriter{{w: 0, acked: -1}, {w: 1, acked: -1}, {w: 2, acked: -1}}
	for cycle := 0; cycle < 3; cycle++ {
		srv := startCrashServer(t, dir)
		cc, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, len(writers))
		for i, cw := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = cw.run(t.Context(), cc, stop)
			}()
		}
		time.Sleep(400 * time.Millisecond)
		srv.kill() // mid-write: the writers are still sending
		close(stop)
		wg.Wait()
		cc.Close()
		for _, err := range errs {
			if err != nil && strings.Contains(err.Error(), "lost acknowledged") {
				t.Fatal(err)
			}
		}
	}

	// A last incarnation checks the resume watermarks over gRPC, then the
	// store itself is read back.
	srv := startCrashServer(t, dir)
	cc, err := grpc.NewClient(srv.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	for _, cw := range writers {
		stop := make(chan struct{})
		close(stop)
		if err := cw.run(t.Context(), cc, stop); err != nil && strings.Contains(err.Error(), "lost acknowledged") {
			t.Fatal(err)
		}
	}
	cc.Close()
	srv.kill()

	st, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, cw := range writers {
		if cw.id == "" {
			t.Fatalf("writer %d never created its stream", cw.w)
		}
		meta, err := st.Stream(t.Context(), cw.id)
		if err != nil {
			t.Fatal(err)
		}
		batches, err := st.Records(t.Context(), cw.id)
		if err != nil {
			t.Fatal(err)
		}
		if cw.acked < 0 {
			t.Fatalf("writer %d: nothing was ever acknowledged; the test exercised nothing", cw.w)
		}
		if meta.Watermark < cw.acked {
			t.Errorf("writer %d: watermark %d below acknowledged %d", cw.w, meta.Watermark, cw.acked)
		}
		if int64(len(batches)) != meta.Watermark+1 {
			t.Errorf("writer %d: %d batches stored for watermark %d", cw.w, len(batches), meta.Watermark)
		}
		for i, b := range batches {
			if b.Offset != int64(i) || len(b.Records) != 10 {
				t.Fatalf("writer %d: batch %d has offset %d and %d records", cw.w, i, b.Offset, len(b.Records))
			}
			for j, r := range b.Records {
				if string(r) != crashRecord(cw.w, b.Offset, j) {
					t.Fatalf("writer %d offset %d record %d is %s", cw.w, b.Offset, j, r)
				}
			}
		}
		if meta.Records != 10*int64(len(batches)) {
			t.Errorf("writer %d: meta counts %d records, %d stored", cw.w, meta.Records, 10*len(batches))
		}
		t.Logf("writer %d: %d acknowledged, watermark %d after 3 SIGKILLs", cw.w, cw.acked+1, meta.Watermark)
	}
}
