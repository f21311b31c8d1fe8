//go:build unix

package ingest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/internal/testseed"
	"github.com/zbstream/zbstream/server"
)

// routedRun is one "zbstream ingest" process of a routed ingestion.
type routedRun struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan error
}

func startRoutedRun(t *testing.T, bin string, args []string) *routedRun {
	t.Helper()
	r := &routedRun{cmd: exec.Command(bin, append([]string{"ingest"}, args...)...), done: make(chan error, 1)}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	return r
}

// killAfter kills the run with SIGKILL after d, unless it ended before,
// and returns how it ended.
func (r *routedRun) killAfter(d time.Duration) (killed bool, err error) {
	select {
	case err := <-r.done:
		return false, err
	case <-time.After(d):
		r.cmd.Process.Signal(syscall.SIGKILL)
		return true, <-r.done
	}
}

// procExit is the run's exit code (-1: killed by a signal).
func procExit(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -2
}

// TestIngestRoutedKillAnywhere is exactly-once per table for a routed
// ingestion (batches of several lines, fewer open streams than tables)
// whatever happens to its processes: the command, a real process, is
// killed with SIGKILL at random moments, many times; the bolt server, a
// real process too, is killed now and then between and during runs; a
// second run of the same state file while one runs is refused; and two
// runs with copies of one state file (two writers of the same streams,
// as a killed "go run" that left its child running makes) write at once.
// A last run completes, and every table must hold its lines once each, in
// order, in one stream, read back from the server's database. The seed,
// the batch size and the open-stream cap are drawn per run and logged;
// ZBSTREAM_ROUTED_SEED replays one. Issue 25: before the Writer checked
// its reopens, the concurrent writers put one call's lines under another's
// offset and a run still ended "done", exit 0.
func TestIngestRoutedKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server and ingest processes")
	}
	seed := testseed.Seed(t, "ZBSTREAM_ROUTED_SEED")
	rng := rand.New(rand.NewPCG(seed, seed))
	const lines, tables = 12000, 30
	batch, maxOpen := 2+rng.IntN(11), 1+rng.IntN(6)
	t.Logf("%d lines into %d tables, -batch-size %d, -max-open-streams %d", lines, tables, batch, maxOpen)

	bin := clitest.Binary(t)
	dir := t.TempDir()
	srv := clitest.StartBoltServe(t, bin, filepath.Join(dir, "data"), clitest.FreeAddr(t))
	file, want := routedKillFile(t, dir, rng, lines, tables)
	state := file + ".zbstate"
	args := func(state string) []string {
		return []string{"-endpoint", "http://" + srv.Addr, "-table-field", "t", "-batch-size", strconv.Itoa(batch),
			"-max-open-streams", strconv.Itoa(maxOpen), "-max-inflight", "16", "-progress", "0", "-state", state, file}
	}
	randDelay := func(maxMs int) time.Duration { return time.Duration(rng.IntN(maxMs)) * time.Millisecond }

	// Round 0 creates the streams; rounds 1 and 2 are two writers of them
	// at once (a run on the state file, one on a copy of it); then kills
	// at random moments, the server's too now and then, and a second run
	// of one state file refused. Every run is killed within 0.85 s: with
	// -max-inflight 16 a whole run takes several seconds, so each round
	// finds work left.
	for round := range 9 {
		if round == 1 || round == 2 {
			twoWriters(t, bin, args, state, filepath.Join(dir, fmt.Sprintf("copy%d.zbstate", round)), randDelay)
			continue
		}
		r := startRoutedRun(t, bin, args(state))
		if round == 0 {
			waitFile(t, state) // the two writers copy it
		}
		if round == 3 {
			// A second run of the same state file meanwhile is refused.
			waitLocked(t, state+".lock", r.cmd.Process.Pid)
			second := startRoutedRun(t, bin, args(state))
			if err := <-second.done; procExit(err) != cli.ExitFailure || !strings.Contains(second.err.String(), "in use by another zbstream ingest") {
				t.Fatalf("a second run of one state file: exit %d, want %d and a message: %s%s", procExit(err), cli.ExitFailure, second.out.String(), second.err.String())
			}
		}
		if round == 4 || round == 7 {
			time.Sleep(randDelay(400))
			srv.Kill(t)
			time.Sleep(randDelay(300))
			srv.Start(t)
		}
		killed, err := r.killAfter(50*time.Millisecond + randDelay(800))
		t.Logf("round %d: killed %v, exit %d: %s%s", round, killed, procExit(err), lastLine(r.out.String()), lastLine(r.err.String()))
		if !killed && procExit(err) == cli.ExitOK && !strings.Contains(r.out.String(), "done") {
			t.Fatalf("round %d: exit 0 without done: %s", round, r.out.String())
		}
	}
	// The last run completes.
	last := startRoutedRun(t, bin, args(state))
	if _, err := last.killAfter(2 * time.Minute); err != nil {
		t.Fatalf("last run: exit %d\n%s%s", procExit(err), last.out.String(), last.err.String())
	}
	t.Logf("last run: %s", last.out.String())
	srv.Kill(t)
	routedKillCheck(t, filepath.Join(dir, "data"), want)
}

// twoWriters runs the ingestion twice at once, on state and on a copy of
// it (copyState): two writers of the same streams, as a killed "go run"
// that left its child running makes, but past the lock. Both are killed
// at random moments; neither may put a line under another's offset.
func twoWriters(t *testing.T, bin string, args func(string) []string, state, copyState string, randDelay func(int) time.Duration) {
	t.Helper()
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyState, b, 0o644); err != nil {
		t.Fatal(err)
	}
	a := startRoutedRun(t, bin, args(state))
	time.Sleep(randDelay(200))
	c := startRoutedRun(t, bin, args(copyState))
	ka, erra := a.killAfter(200*time.Millisecond + randDelay(700))
	kc, errc := c.killAfter(100*time.Millisecond + randDelay(700))
	t.Logf("two writers: killed %v/%v, exit %d/%d:\n%s%s%s%s", ka, kc, procExit(erra), procExit(errc),
		lastLine(a.out.String()), lastLine(a.err.String()), lastLine(c.out.String()), lastLine(c.err.String()))
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// waitLocked waits until the lock file names process pid: it holds it.
func waitLocked(t *testing.T, path string, pid int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(pid) {
			return
		}
	}
	t.Fatalf("process %d never took the lock %s", pid, path)
}

// lastLine is s's last non-empty line, with its newline.
func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if l := ls[len(ls)-1]; l != "" {
		return l + "\n"
	}
	return ""
}

// routedKillFile writes n JSON lines of about 250 bytes, each to a random
// one of the tables, and returns the file and each table's lines in order.
func routedKillFile(t *testing.T, dir string, rng *rand.Rand, n, tables int) (string, map[string][]string) {
	t.Helper()
	var b bytes.Buffer
	want := map[string][]string{}
	for i := range n {
		table := fmt.Sprintf("main.kill.t%02d", rng.IntN(tables))
		line := fmt.Sprintf(`{"t":%q,"seq":%d,"pad":%q}`, table, i, strings.Repeat("x", 150+rng.IntN(100)))
		fmt.Fprintln(&b, line)
		want[table] = append(want[table], line)
	}
	path := filepath.Join(dir, "routed.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// routedKillCheck reads the bolt database of a stopped server and checks
// that every table of want has one stream holding its lines once each,
// in order, under offsets from 0, and that no other table has one.
func routedKillCheck(t *testing.T, data string, want map[string][]string) {
	t.Helper()
	ctx := context.Background()
	bs, err := server.OpenBoltStore(data)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	streams, err := bs.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range streams {
		lines, ok := want[m.Table]
		if !ok || seen[m.Table] {
			t.Fatalf("table %s: an unexpected stream %s", m.Table, m.ID)
		}
		seen[m.Table] = true
		batches, err := bs.Records(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for k, b := range batches {
			if b.Offset != int64(k) {
				t.Fatalf("table %s: call %d stored under offset %d", m.Table, k, b.Offset)
			}
			for _, r := range b.Records {
				got = append(got, string(r))
			}
		}
		if len(got) != len(lines) {
			t.Errorf("table %s holds %d records, want %d", m.Table, len(got), len(lines))
			continue
		}
		for i := range got {
			if got[i] != lines[i] {
				t.Errorf("table %s: record %d is %.60s, want %.60s", m.Table, i, got[i], lines[i])
				break
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d tables have a stream, want %d", len(seen), len(want))
	}
}
