package spool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
)

// Environment of the crash tests' child processes: the test binary run
// again in a role.
const (
	envChildRole   = "ZBSTREAM_SPOOL_CHILD"
	envChildConfig = "ZBSTREAM_SPOOL_CHILD_CONFIG"
	// envRounds sets the number of SIGKILL rounds (default 3; at least 20
	// for the long run).
	envRounds = "ZBSTREAM_SPOOL_ROUNDS"
)

// childConfig is what a child process is told.
type childConfig struct {
	Endpoint, Token, Table, Dir string
	Round, Goroutines           int
	// Calls per goroutine, then a clean Close; 0: until killed.
	Calls int
}

// runChild runs a child role and returns its exit code.
func runChild(role string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(os.Getenv(envChildConfig)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 3
	}
	if role != "ingest" {
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 3
	}
	if err := childIngest(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childIngest opens the spool (recovering it), waits until what it resent
// is durable, then ingests from many goroutines, printing "ok OFFSET ID"
// for every call that returned, until its quota is done or it is killed.
// Each line is one write(2) to the pipe: a line printed is a call returned.
func childIngest(cfg childConfig) error {
	ctx := context.Background()
	client, err := zbstream.NewClient(cfg.Endpoint, zbstream.WithToken(cfg.Token))
	if err != nil {
		return err
	}
	defer client.Close()
	sp, err := spool.Open(ctx, client, spool.Options{Dir: cfg.Dir, Table: cfg.Table, StreamOptions: fastRecovery(),
		MaxBytes: 1 << 20, SegmentBytes: 64 << 10})
	if err != nil {
		return err
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	st := sp.Stats()
	say("opened %s %d %d %d", sp.StreamID(), st.Resent, st.Dropped, st.TornBytes)
	if err := sp.Flush(ctx); err != nil {
		return err
	}
	say("flushed")
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Goroutines)
	for g := range cfg.Goroutines {
		wg.Go(func() {
			for i := 0; cfg.Calls == 0 || i < cfg.Calls; i++ {
				id := fmt.Sprintf("r%d-g%d-%d", cfg.Round, g, i)
				var off int64
				var err error
				if i%4 == 3 {
					off, err = sp.IngestBatch(ctx, [][]byte{rec(id), rec(id + "+")})
				} else {
					off, err = sp.IngestRecord(ctx, rec(id))
				}
				if err != nil {
					errs <- err
					return
				}
				say("ok %d %s", off, id)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if err := sp.Close(ctx); err != nil {
		return err
	}
	say("closed")
	return nil
}

// returnedCall is a call a child reported as returned.
type returnedCall struct {
	off int64
	id  string
}

// crashRun runs child processes against one spool and server, killing
// them with SIGKILL at random points, and checks the server's data after
// every restart.
type crashRun struct {
	t        *testing.T
	ts       *servertest.Server
	dir      string
	rng      *rand.Rand
	streamID string
	returned []returnedCall
	kills    int
	// resent and torn sum what the children's Opens reported.
	resent, torn int64
}

func rounds(t *testing.T, def int) int {
	if v := os.Getenv(envRounds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q", envRounds, v)
		}
		return n
	}
	return def
}

// TestCrashSIGKILL is exactly-once across SIGKILL without replaying the
// source: a child process ingests through a spool from 8 goroutines and
// is killed at random points (sometimes while it is still recovering);
// a new child only reopens the spool. After every restart, and at the end
// of a last child that closes cleanly, every call a child reported as
// returned is on the server exactly once, at its offset, and no payload
// is stored twice.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts := servertest.Start(t)
	r := &crashRun{t: t, ts: ts, dir: t.TempDir(), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	r.run(rounds(t, 3))
}

// TestCrashSIGKILLWithFaults is TestCrashSIGKILL while the server drops
// connections, commits and then drops them (the lost ack), and rotates
// sessions (close signals).
func TestCrashSIGKILLWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts := servertest.Start(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	var fired sync.Map
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
		kinds := []server.FaultKind{server.FaultDrop, server.FaultCommitThenDrop, server.FaultCloseSignal}
		for {
			f := server.Fault{Kind: kinds[rng.IntN(len(kinds))], After: 1 + rng.IntN(40), Delay: time.Duration(rng.IntN(50)) * time.Millisecond}
			h := ts.Inject(server.Match{Table: ts.Table}, f)
			select {
			case <-h.Fired():
				n, _ := fired.LoadOrStore(f.Kind.String(), new(int))
				*n.(*int)++
			case <-stop:
				h.Remove()
				return
			}
		}
	}()
	r := &crashRun{t: t, ts: ts, dir: t.TempDir(), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))}
	r.run(rounds(t, 3))
	close(stop)
	<-done
	var line []string
	fired.Range(func(k, v any) bool { line = append(line, fmt.Sprintf("%s %d", k, *v.(*int))); return true })
	t.Logf("faults fired: %s", strings.Join(line, ", "))
}

func (r *crashRun) run(rounds int) {
	t := r.t
	for round := range rounds {
		r.child(round, 0)
	}
	r.child(rounds, 25) // a last child finishes and closes cleanly
	r.check("end")
	t.Logf("%d rounds, %d SIGKILLs, %d calls returned; the reopens resent %d entries and cut %d torn bytes", rounds, r.kills, len(r.returned), r.resent, r.torn)
}

// child runs one child process: with calls 0 it is killed at a random
// point, else it runs to its end.
func (r *crashRun) child(round, calls int) {
	t := r.t
	cfg, _ := json.Marshal(childConfig{Endpoint: "http://" + r.ts.Addr, Token: r.ts.Token, Table: r.ts.Table, Dir: r.dir,
		Round: round, Goroutines: 8, Calls: calls})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildRole+"=ingest", envChildConfig+"="+string(cfg))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { _ = cmd.Process.Signal(syscall.SIGKILL) }) }
	if calls == 0 {
		// Random point: from the process's start (it may die while
		// recovering) to well into its ingest.
		timer := time.AfterFunc(time.Duration(50+r.rng.IntN(700))*time.Millisecond, kill)
		defer timer.Stop()
	}
	sc := bufio.NewScanner(stdout)
	flushed, closed := false, false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "opened":
			n, _ := strconv.ParseInt(f[2], 10, 64)
			r.resent += n
			n, _ = strconv.ParseInt(f[4], 10, 64)
			r.torn += n
			if r.streamID == "" {
				r.streamID = f[1]
			} else if f[1] != r.streamID {
				t.Fatalf("round %d: stream %s, the spool had %s", round, f[1], r.streamID)
			}
		case len(f) == 1 && f[0] == "flushed":
			flushed = true
			r.check(fmt.Sprintf("after restart %d", round))
		case len(f) == 3 && f[0] == "ok":
			off, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("line %q", sc.Text())
			}
			r.returned = append(r.returned, returnedCall{off, f[2]})
		case len(f) == 1 && f[0] == "closed":
			closed = true
		default:
			t.Fatalf("round %d: child says %q", round, sc.Text())
		}
	}
	err = cmd.Wait()
	killed := false
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		killed = true
	}
	switch {
	case calls > 0 && (err != nil || !closed):
		t.Fatalf("round %d: the last child: %v\n%s", round, err, stderr.String())
	case calls == 0 && !killed:
		t.Fatalf("round %d: the child ended before it was killed: %v\n%s", round, err, stderr.String())
	case killed:
		r.kills++
	}
	t.Logf("round %d: flushed %v, %d calls returned so far", round, flushed, len(r.returned))
}

// check reads the stream back: every returned call exactly once, at its
// offset; no payload twice; offsets dense; each goroutine's calls in the
// order they returned.
func (r *crashRun) check(when string) {
	t := r.t
	if r.streamID == "" {
		return
	}
	batches, err := r.ts.Records(context.Background(), r.streamID)
	if err != nil {
		t.Fatalf("%s: read-back: %v", when, err)
	}
	at := map[string]int64{}
	for i, b := range batches {
		if b.Offset != int64(i) {
			t.Fatalf("%s: stored offsets not dense: %d at position %d", when, b.Offset, i)
		}
		for _, rr := range b.Records {
			var v struct{ ID string }
			if err := json.Unmarshal(rr, &v); err != nil {
				t.Fatalf("%s: stored %q: %v", when, rr, err)
			}
			if prev, dup := at[v.ID]; dup {
				t.Fatalf("%s: payload %s stored twice, at offsets %d and %d", when, v.ID, prev, b.Offset)
			}
			at[v.ID] = b.Offset
		}
	}
	last := map[string]int64{}
	for _, c := range r.returned {
		off, ok := at[c.id]
		switch {
		case !ok:
			t.Fatalf("%s: call %s returned offset %d and is not on the server (%d offsets stored)", when, c.id, c.off, len(batches))
		case off != c.off:
			t.Fatalf("%s: call %s returned offset %d, stored at %d", when, c.id, c.off, off)
		}
		g := c.id[:strings.LastIndexByte(c.id, '-')]
		if p, ok := last[g]; ok && c.off <= p {
			t.Fatalf("%s: calls of %s out of order: offset %d after %d", when, g, c.off, p)
		}
		last[g] = c.off
	}
}
