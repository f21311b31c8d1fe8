package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/writer"
)

// Environment of the server child process of TestWriterServerCrash.
const (
	envWriterServerDir    = "ZBSTREAM_WRITER_SERVER_DIR"
	envWriterServerAddr   = "ZBSTREAM_WRITER_SERVER_ADDR"
	envWriterServerTables = "ZBSTREAM_WRITER_SERVER_TABLES"
)

// TestWriterServerChild is the server process of TestWriterServerCrash: a
// reference server in open mode on a bolt store, at a fixed address, with
// injectWriterFaults' faults, until it is killed. It is skipped unless run
// as that child.
func TestWriterServerChild(t *testing.T) {
	dir := os.Getenv(envWriterServerDir)
	if dir == "" {
		t.Skip("the server child of TestWriterServerCrash")
	}
	n, _ := strconv.Atoi(os.Getenv(envWriterServerTables))
	st, err := server.OpenBoltStore(dir)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	srv, err := server.New(server.Options{Store: st, StrictDuplicates: true})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	injectWriterFaults(srv, n)
	lis, err := net.Listen("tcp", os.Getenv(envWriterServerAddr))
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); srv.Stop() }()
	fmt.Println("LISTEN", lis.Addr())
	err = srv.Serve(lis)
	st.Close()
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// writerServer is a server child process.
type writerServer struct{ cmd *exec.Cmd }

// startWriterServer starts a server child on dir's store at addr and
// waits until it listens.
func startWriterServer(dir, addr string, tables int) (*writerServer, error) {
	cmd, lines, err := startChild([]string{"-test.run=^TestWriterServerChild$"}, []string{envWriterServerDir + "=" + dir,
		envWriterServerAddr + "=" + addr, envWriterServerTables + "=" + strconv.Itoa(tables)}, os.Stderr)
	if err != nil {
		return nil, err
	}
	var said []string
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "LISTEN ") {
			go func() { // drain, so that the child never blocks on stdout
				for lines.Scan() {
				}
			}()
			return &writerServer{cmd: cmd}, nil
		}
		said = append(said, lines.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, fmt.Errorf("the server child did not start: %q", said)
}

// kill ends the server with SIGKILL: no flush, no goodbye.
func (s *writerServer) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// TestWriterServerCrash: hundreds of tables through three streams into a
// server process on the bolt engine that is killed with SIGKILL and
// restarted on the same data three times while the Writer ingests, with
// injectWriterFaults' faults on top. Every table holds its records exactly
// once, in order, in one stream. ZBSTREAM_WRITER_TABLES scales it
// (default 120).
func TestWriterServerCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	n := envSize(t, "ZBSTREAM_WRITER_TABLES", 120)
	dir, addr := t.TempDir(), freeAddr(t)
	srv, err := startWriterServer(dir, addr, n)
	if err != nil {
		t.Fatal(err)
	}
	client, err := zbstream.NewClient("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// Reconnects ride out a server restart: gRPC's own reconnect backoff
	// (1 s, then up to 10 s) decides when the connection is back.
	opts := fast(zbstream.WithRetries(400), zbstream.WithBackoff(zbstream.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}))
	w := newWriter(t, client, writer.Config{MaxOpenStreams: 3, Options: opts})

	// The killer kills and restarts the server once the writer has made a
	// quarter, a half and three quarters of its calls (about 2 records
	// each), while the writer goes on.
	const perTable = 8
	calls := int64(n * perTable / 2)
	var made atomic.Int64
	type result struct {
		srv   *writerServer
		kills int
		err   error
	}
	killer := make(chan result, 1)
	stop := make(chan struct{})
	go func() {
		r := result{srv: srv}
		defer func() { killer <- r }()
		for k := int64(1); k <= 3; k++ {
			for made.Load() < k*calls/4 {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
			r.srv.kill()
			if r.srv, r.err = startWriterServer(dir, addr, n); r.err != nil {
				return
			}
			r.kills++
		}
	}()
	want := writerSource(t, w, 11, n, perTable, &made)
	close(stop)
	r := <-killer
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := w.Flush(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	r.srv.kill()
	st := w.Stats()
	t.Logf("%d tables, %d server kills: %+v", n, r.kills, st)
	if r.kills != 3 {
		t.Fatalf("the server was killed %d times, want 3", r.kills)
	}
	if st.Creates != int64(n) {
		t.Fatalf("%d streams created for %d tables", st.Creates, n)
	}
	store, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	wantTables(t, store, want)
}
