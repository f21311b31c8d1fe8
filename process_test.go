package zbstream_test

// Process-level resume: a child process writes a persistent stream and is
// killed with SIGKILL mid-stream (twice); the next process resumes by id,
// continues at W+1 and replays its source from the watermark. The server
// ends with every record exactly once, in order.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server/servertest"
)

// childEnv carries "endpoint token table [stream-id]" to a writer child.
const childEnv = "ZBSTREAM_E2E_WRITER"

// TestWriterChild is not a test on its own: TestProcessKillAndResume runs
// the test binary again with childEnv set, and this function then is a
// writer process: it creates (or resumes) the stream, prints its id and
// the watermark it starts after, and ingests record n under offset n
// until it is killed.
func TestWriterChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("runs only as TestProcessKillAndResume's child process")
	}
	fail := func(format string, a ...any) {
		fmt.Printf("ERROR "+format+"\n", a...)
		os.Exit(1)
	}
	f := strings.Fields(spec)
	c, err := zbstream.NewClient(f[0], zbstream.WithToken(f[1]))
	if err != nil {
		fail("%v", err)
	}
	var s *zbstream.Stream
	if len(f) == 4 {
		s, err = c.ResumeStream(context.Background(), f[2], f[3])
	} else {
		s, err = c.CreatePersistentStream(context.Background(), f[2])
	}
	if err != nil {
		fail("open: %v", err)
	}
	fmt.Printf("ID %s %d\n", s.StreamID(), s.LastDurable())
	for n := int(s.LastDurable() + 1); n < 1_000_000; n++ {
		off, err := s.IngestRecord(context.Background(), rec(0, n))
		if err != nil {
			fail("ingest %d: %v", n, err)
		}
		if off != int64(n) {
			fail("record %d got offset %d", n, off)
		}
	}
	fail("not killed")
}

// writerChild is a running writer process.
type writerChild struct {
	cmd       *exec.Cmd
	id        string
	watermark int64 // the one it started after
	done      chan struct{}
	mu        sync.Mutex
	errors    []string
}

func startWriter(t *testing.T, ts *servertest.Server, id string) *writerChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=http://%s %s %s %s", childEnv, ts.Addr, ts.Token, ts.Table, id))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &writerChild{cmd: cmd, done: make(chan struct{})}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "ID %s %d", &w.id, &w.watermark); err == nil {
			break
		}
		if strings.HasPrefix(lines.Text(), "ERROR") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("writer child: %s", lines.Text())
		}
	}
	if w.id == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("writer child did not start")
	}
	go func() { // drain, keeping error lines
		defer close(w.done)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "ERROR") {
				w.mu.Lock()
				w.errors = append(w.errors, lines.Text())
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// kill ends the child with SIGKILL: no flush, no close, no goodbye.
func (w *writerChild) kill(t *testing.T) {
	t.Helper()
	w.cmd.Process.Kill()
	w.cmd.Wait()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errors) > 0 {
		t.Fatalf("writer child: %v", w.errors)
	}
}

func TestProcessKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts := servertest.Start(t)
	e := &env{ts: ts, client: newClient(t, ts, ts.Token), table: ts.Table}

	first := startWriter(t, ts, "")
	id := first.id
	if first.watermark != -1 {
		t.Fatalf("a new stream starts after %d, want -1", first.watermark)
	}
	eventually(t, func() bool { return e.meta(t, id).Watermark >= 300 })
	first.kill(t)
	w1 := e.meta(t, id).Watermark // the server may still commit what the dead connection sent

	second := startWriter(t, ts, id)
	if second.id != id || second.watermark < w1 {
		t.Fatalf("resumed writer: stream %s after %d, want %s after at least %d", second.id, second.watermark, id, w1)
	}
	w1 = second.watermark
	eventually(t, func() bool { return e.meta(t, id).Watermark >= w1+300 })
	second.kill(t)

	// This process finishes the source: records up to 2*w+100.
	s := e.resume(t, id)
	w := s.LastDurable()
	if w != e.meta(t, id).Watermark || w < w1+300 {
		t.Fatalf("resume watermark %d; server %d, first kill at %d", w, e.meta(t, id).Watermark, w1)
	}
	total := int(w) + 100
	for n := int(w) + 1; n < total; n++ {
		if off, err := s.IngestRecord(ctx(t), rec(0, n)); err != nil || off != int64(n) {
			t.Fatalf("replay %d: %d, %v", n, off, err)
		}
	}
	mustClose(t, s)
	want := make([][][]byte, total)
	for n := range want {
		want[n] = one(rec(0, n))
	}
	e.wantStored(t, id, want...)
	t.Logf("killed at watermarks %d and %d; %d records stored once each", w1, w, total)
}
