package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
)

// serveBuf is a bytes.Buffer safe for the serve goroutine and the test.
type serveBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *serveBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *serveBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runningServe is a "zbstream serve" run in-process.
type runningServe struct {
	endpoint, admin string
	stdout, stderr  *serveBuf
	cancel          context.CancelFunc
	code            chan int
}

// startServe runs serve with args (after -addr and -admin on free loopback
// ports) and waits for it to print its addresses. It is stopped at the
// end of the test, and must exit 0.
func startServe(t *testing.T, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningServe{stdout: &serveBuf{}, stderr: &serveBuf{}, cancel: cancel, code: make(chan int, 1)}
	full := append([]string{"serve", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, args...)
	go func() { s.code <- run(ctx, full, s.stdout, s.stderr) }()
	t.Cleanup(func() {
		if code := s.stop(t); code != 0 {
			t.Errorf("serve exited %d, want 0; stderr:\n%s", code, s.stderr)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(s.stdout.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "endpoint: "); ok {
				s.endpoint = v
			}
			if v, ok := strings.CutPrefix(line, "admin: "); ok {
				s.admin = v
			}
		}
		if s.endpoint != "" && s.admin != "" {
			return s
		}
		select {
		case code := <-s.code:
			s.code <- code
			t.Fatalf("serve exited %d before listening; stderr:\n%s", code, s.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no addresses; stdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
	return nil
}

// stop cancels serve (as Ctrl-C does) and returns its exit code.
func (s *runningServe) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.code:
		s.code <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop; stderr:\n%s", s.stderr)
		return -1
	}
}

// runCmd runs the command line in-process and returns its exit code,
// stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// wantCode runs the command line and checks its exit code; it returns
// stdout.
func wantCode(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errs := runCmd(t, args...)
	if code != want {
		t.Fatalf("zbstream %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out
}

// ingestJSON creates a persistent stream into table with token ("" for
// open mode), ingests one JSON record per value and returns the stream id.
func ingestJSON(t *testing.T, endpoint, token, table string, values ...any) string {
	t.Helper()
	var opts []zbstream.Option
	if token != "" {
		opts = append(opts, zbstream.WithToken(token))
	}
	c, err := zbstream.NewClient(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.CreatePersistentStream(ctx, table)
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	for _, v := range values {
		if _, err := st.IngestJSON(ctx, v); err != nil {
			t.Fatalf("ingest: %v", err)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatalf("close stream: %v", err)
	}
	return st.StreamID()
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
