package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// writeLines writes n JSON lines {"seq":i} (with a blank line now and
// then, which must be skipped) and returns the file's path.
func writeLines(t *testing.T, dir, name string, n int) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "{\"seq\":%d}\n", i)
		if i%97 == 5 {
			b.WriteString("\n  \n")
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runIngestCmd runs "zbstream ingest args..." in process.
func runIngestCmd(ctx context.Context, t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cmds.Run(ctx, append([]string{"ingest"}, args...), &out, &errb)
	t.Logf("zbstream ingest %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

func serverArgs(ts *servertest.Server) []string {
	return []string{"-endpoint", "http://" + ts.Addr, "-token", ts.Token, "-table", ts.Table}
}

func readState(t *testing.T, path string) *state {
	t.Helper()
	st, err := loadState(path)
	if err != nil || st == nil {
		t.Fatalf("state file %s: %v", path, err)
	}
	return st
}

// stored returns every record the server holds for stream id, in
// offset order, checking that offsets are contiguous from 0.
func stored(t *testing.T, ts *servertest.Server, id string) [][]byte {
	t.Helper()
	batches, err := ts.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for i, b := range batches {
		if b.Offset != int64(i) {
			t.Fatalf("batch %d is at offset %d", i, b.Offset)
		}
		recs = append(recs, b.Records...)
	}
	return recs
}

// checkSeq checks that the server holds {"seq":0} .. {"seq":n-1}, each
// once, in order.
func checkSeq(t *testing.T, ts *servertest.Server, id string, n int) {
	t.Helper()
	recs := stored(t, ts, id)
	for i, r := range recs {
		if want := fmt.Sprintf(`{"seq":%d}`, i); string(r) != want {
			t.Fatalf("record %d on the server is %s, want %s", i, r, want)
		}
	}
	if len(recs) != n {
		t.Fatalf("server holds %d records, want %d", len(recs), n)
	}
}

func streamCount(t *testing.T, ts *servertest.Server) int {
	t.Helper()
	ss, err := ts.Streams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(ss)
}

func TestIngestJSONOnce(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	file := writeLines(t, t.TempDir(), "events.jsonl", 1000)
	args := append(serverArgs(ts), "-batch-size", "7", file)
	code, out, _ := runIngestCmd(ctx, t, args...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "done: 1000 records") || !strings.Contains(out, "sent 1000 records in 143 calls") {
		t.Errorf("summary: %s", out)
	}
	st := readState(t, file+".zbstate")
	if !st.Done || st.StreamID == "" || st.Records != 1000 || st.Batches != 143 || st.BatchRecords != 7 {
		t.Fatalf("state %+v", st)
	}
	checkSeq(t, ts, st.StreamID, 1000)

	// Again: the file is done, nothing is sent, no stream is made.
	code, out, _ = runIngestCmd(ctx, t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "already done") {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	checkSeq(t, ts, st.StreamID, 1000)
	if n := streamCount(t, ts); n != 1 {
		t.Fatalf("server has %d streams, want 1", n)
	}
}

// TestIngestResumeWithoutDone: a run that died after the last call was
// durable but before the state said done resumes, finds the watermark at
// the last call, and sends nothing.
func TestIngestResumeWithoutDone(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	file := writeLines(t, t.TempDir(), "events.jsonl", 300)
	args := append(serverArgs(ts), "-batch-size", "10", file)
	if code, _, _ := runIngestCmd(ctx, t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	st.Done = false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	// Refused credentials on the resume: exit 5, the state kept.
	code, _, errOut := runIngestCmd(ctx, t, "-endpoint", "http://"+ts.Addr, "-token", "wrong", "-table", ts.Table, "-batch-size", "10", file)
	if code != cli.ExitAuth || !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Fatalf("wrong token: exit %d: %s", code, errOut)
	}
	code, out, _ := runIngestCmd(ctx, t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "sent 0 records in 0 calls from watermark 29") {
		t.Fatalf("exit %d: %s", code, out)
	}
	checkSeq(t, ts, st.StreamID, 300)
}

// TestIngestCreateCrash: a run that died after it saved the request id
// and before it saved the stream id re-creates with the same id, gets the
// same stream (the server's create is idempotent) and fills it once.
func TestIngestCreateCrash(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	file := writeLines(t, t.TempDir(), "events.jsonl", 200)
	args := append(serverArgs(ts), "-batch-size", "10", file)
	if code, _, _ := runIngestCmd(ctx, t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	id := st.StreamID
	// The server already has the stream (full here, where a real crash
	// before the save leaves it empty): the rerun finds its watermark and
	// sends nothing.
	st.StreamID, st.Done = "", false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runIngestCmd(ctx, t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "sent 0 records in 0 calls from watermark 19") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if got := readState(t, file+".zbstate").StreamID; got != id {
		t.Fatalf("re-create gave stream %s, want %s", got, id)
	}
	if n := streamCount(t, ts); n != 1 {
		t.Fatalf("server has %d streams, want 1", n)
	}
}

// TestIngestRefusedThenRight: a first run refused by the server (a table
// the token may not write) leaves a state file without a stream; the
// corrected run, with another table, starts afresh instead of refusing
// the state, since nothing was sent under it.
func TestIngestRefusedThenRight(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	file := writeLines(t, t.TempDir(), "events.jsonl", 50)
	code, _, errOut := runIngestCmd(ctx, t, "-endpoint", "http://"+ts.Addr, "-token", ts.Token, "-table", "main.other.table", file)
	if code != cli.ExitAuth {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitAuth, errOut)
	}
	if st := readState(t, file+".zbstate"); st.StreamID != "" {
		t.Fatalf("state names a stream: %+v", st)
	}
	if code, _, _ := runIngestCmd(ctx, t, append(serverArgs(ts), file)...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	if st.Table != ts.Table || !st.Done {
		t.Fatalf("state %+v", st)
	}
	checkSeq(t, ts, st.StreamID, 50)
}

// TestIngestServerFaults: a lost create response, lost acks after a
// commit, dropped connections and a session rotation during one run cost
// reconnects, not duplicates or gaps.
func TestIngestServerFaults(t *testing.T) {
	ts := servertest.Start(t)
	for _, f := range []server.Fault{
		{Kind: server.FaultLoseOpenResponse},
		{Kind: server.FaultCommitThenDrop, After: 5},
		{Kind: server.FaultDrop, After: 20},
		{Kind: server.FaultCloseSignal, After: 40, Delay: 10 * time.Millisecond},
		{Kind: server.FaultRepeatAcks, After: 3, Repeat: 2},
	} {
		ts.Inject(server.Match{Table: ts.Table}, f)
	}
	file := writeLines(t, t.TempDir(), "events.jsonl", 2000)
	code, out, _ := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-batch-size", "10", "-max-inflight", "8", file)...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "reconnects 0") {
		t.Errorf("no reconnect: %s", out)
	}
	checkSeq(t, ts, readState(t, file+".zbstate").StreamID, 2000)
	if c := streamCount(t, ts); c != 1 {
		t.Fatalf("server has %d streams, want 1", c)
	}
}

// Environment of the child process of TestIngestCrash.
const envIngestChild = "ZBSTREAM_INGEST_CHILD_ARGS"

// TestIngestChild is the ingest process of TestIngestCrash: it runs
// "zbstream ingest" with the arguments in its environment, as main does.
func TestIngestChild(t *testing.T) {
	raw := os.Getenv(envIngestChild)
	if raw == "" {
		t.Skip("the child of TestIngestCrash")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmds.Run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var progressLine = regexp.MustCompile(`^ingest: (\d+)/(\d+) (?:records|rows) durable`)

// runIngestChild starts "zbstream ingest args" as a child process and calls
// onProgress with the durable count of every progress line until it
// returns true. It returns the child's exit error and its output.
func runIngestChild(t *testing.T, args []string, onProgress func(cmd *exec.Cmd, durable int64) bool) (stdout, stderr string, err error) {
	t.Helper()
	raw, _ := json.Marshal(append([]string{"ingest"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestIngestChild$")
	cmd.Env = append(os.Environ(), envIngestChild+"="+string(raw))
	var outb bytes.Buffer
	cmd.Stdout = &outb
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	lines := bufio.NewScanner(pipe)
	watching := true
	for lines.Scan() {
		line := lines.Text()
		errb.WriteString(line + "\n")
		if m := progressLine.FindStringSubmatch(line); watching && m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			if onProgress(cmd, n) {
				watching = false
			}
		}
	}
	err = cmd.Wait()
	return outb.String(), errb.String(), err
}

// TestIngestCrash is exactly-once across SIGKILLs of the ingesting
// process: three times in a row, a real "zbstream ingest" process is
// killed once it has made progress of its own, and the next run resumes;
// a last run completes. The server must hold every line once, in order.
func TestIngestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts := servertest.Start(t)
	const n = 50000
	file := writeLines(t, t.TempDir(), "big.jsonl", n)
	args := append(serverArgs(ts), "-batch-size", "5", "-max-inflight", "64", "-progress", "10ms", file)
	last := killThrice(t, args, n)
	out, errOut, err := runIngestChild(t, args, func(*exec.Cmd, int64) bool { return false })
	if err != nil {
		t.Fatalf("last run: %v\n%s%s", err, out, errOut)
	}
	// Nothing reported durable before the last kill is sent again.
	m := regexp.MustCompile(`\((\d+) records already on the server\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the last run did not resume: %s", out)
	}
	if on, _ := strconv.ParseInt(m[1], 10, 64); on < last {
		t.Fatalf("the last run resumed with %d records on the server, below the %d reported durable", on, last)
	}
	st := readState(t, file+".zbstate")
	if !st.Done {
		t.Fatalf("state not done: %+v", st)
	}
	checkSeq(t, ts, st.StreamID, n)
	if c := streamCount(t, ts); c != 1 {
		t.Fatalf("server has %d streams, want 1", c)
	}
}

// killThrice runs "zbstream ingest args" (a file of n records) as a
// child process three times, and kills it with SIGKILL at about 20%, 40%
// and 60% durable, each time once it has made progress of its own, with
// calls in flight. It returns the durable count of the last kill.
func killThrice(t *testing.T, args []string, n int64) int64 {
	t.Helper()
	last := int64(-1)
	for round := range 3 {
		var killedAt int64 = -1
		out, errOut, err := runIngestChild(t, args, func(cmd *exec.Cmd, durable int64) bool {
			// Kill at about 20%, 40% and 60%, with calls in flight.
			if durable > last && durable >= int64(round+1)*n/5 && durable < n {
				killedAt = durable
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Errorf("kill: %v", err)
				}
				return true
			}
			return false
		})
		t.Logf("round %d: killed at %d records durable; exit: %v\n%s", round, killedAt, err, out)
		var ee *exec.ExitError
		if killedAt < 0 || !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child was not killed mid-way (exit %v)\n%s%s", round, err, out, errOut)
		}
		last = killedAt
	}
	return last
}

// cancelOnProgress is a writer for stderr that cancels the run once a
// progress line shows some records durable.
type cancelOnProgress struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnProgress) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	for _, line := range strings.Split(string(b), "\n") {
		if m := progressLine.FindStringSubmatch(line); m != nil && m[1] != "0" {
			w.cancel()
		}
	}
	return len(b), nil
}

// TestIngestInterrupt: Ctrl-C (the context cancelled) mid-way exits 130,
// says where it stopped, and loses nothing: the next run completes the
// file exactly once.
func TestIngestInterrupt(t *testing.T) {
	ts := servertest.Start(t)
	const n = 10000
	file := writeLines(t, t.TempDir(), "events.jsonl", n)
	args := append(serverArgs(ts), "-batch-size", "2", "-max-inflight", "32", "-progress", "5ms", file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnProgress{cancel: cancel}
	var out bytes.Buffer
	code := cmds.Run(ctx, append([]string{"ingest"}, args...), &out, w)
	t.Logf("exit %d\n%s%s", code, out.String(), w.buf.String())
	if code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, cli.ExitInterrupted)
	}
	if !strings.Contains(w.buf.String(), "interrupted: ") || !strings.Contains(w.buf.String(), "run the same command again") {
		t.Fatalf("no stop message: %s", w.buf.String())
	}
	st := readState(t, file+".zbstate")
	if st.Done {
		t.Fatal("interrupted run marked done")
	}
	t.Logf("server holds %d of %d records after the interrupt", len(stored(t, ts, st.StreamID)), n)
	code, out2, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out2, "from watermark") {
		t.Fatalf("exit %d: %s", code, out2)
	}
	checkSeq(t, ts, st.StreamID, n)
}

func TestIngestMalformedLine(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 100 {
		switch i {
		case 56:
			b.WriteString("{\"seq\": 56,\n") // line 57: cut short
		default:
			fmt.Fprintf(&b, "{\"seq\":%d}\n", i)
		}
	}
	file := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, file+":57: malformed JSON") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if c := streamCount(t, ts); c != 0 {
		t.Fatalf("server has %d streams: something was sent", c)
	}
	if _, err := os.Stat(file + ".zbstate"); err == nil {
		t.Fatal("a state file was written for a malformed file")
	}

	// Not an object.
	if err := os.WriteFile(file, []byte("{\"a\":1}\n[1,2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIngestCmd(context.Background(), t, append(serverArgs(ts), file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, file+":2: not a JSON object") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestIngestMissingFile(t *testing.T) {
	ts := servertest.Start(t)
	file := filepath.Join(t.TempDir(), "nope.jsonl")
	code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "nope.jsonl") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestIngestStateMismatch: a state file made for another file, or for
// another table, is refused with a clear message, and nothing is sent.
func TestIngestStateMismatch(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := writeLines(t, dir, "a.jsonl", 100)
	state := filepath.Join(dir, "shared.zbstate")
	if code, _, _ := runIngestCmd(ctx, t, append(serverArgs(ts), "-state", state, a)...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	b := writeLines(t, dir, "b.jsonl", 101)
	code, _, errOut := runIngestCmd(ctx, t, append(serverArgs(ts), "-state", state, b)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "belongs to another file") {
		t.Fatalf("another file: exit %d: %s", code, errOut)
	}
	// Same size, another content.
	content, _ := os.ReadFile(a)
	content[2] = 'x'
	if err := os.WriteFile(a, content, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIngestCmd(ctx, t, append(serverArgs(ts), "-state", state, a)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "belongs to another file") {
		t.Fatalf("changed file: exit %d: %s", code, errOut)
	}
	content[2] = 's'
	if err := os.WriteFile(a, content, 0o644); err != nil {
		t.Fatal(err)
	}
	args := serverArgs(ts)
	args[len(args)-1] = "main.other.table"
	code, _, errOut = runIngestCmd(ctx, t, append(args, "-state", state, a)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "belongs to table "+ts.Table) {
		t.Fatalf("another table: exit %d: %s", code, errOut)
	}
	if c := streamCount(t, ts); c != 1 {
		t.Fatalf("server has %d streams, want 1", c)
	}
	// A damaged state file.
	if err := os.WriteFile(state, []byte("{\"version\":"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIngestCmd(ctx, t, append(serverArgs(ts), "-state", state, a)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "is unreadable") {
		t.Fatalf("damaged state: exit %d: %s", code, errOut)
	}
}

func TestIngestFlags(t *testing.T) {
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 3)
	ep := "http://" + ts.Addr
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no file", []string{"-endpoint", ep, "-token", "x", "-table", "a.b.c"}, cli.ExitUsage, "one FILE"},
		{"no endpoint", []string{"-token", "x", "-table", "a.b.c", file}, cli.ExitUsage, "-endpoint is required"},
		{"no table", []string{"-endpoint", ep, "-token", "x", file}, cli.ExitUsage, "-table is required"},
		{"bad table", []string{"-endpoint", ep, "-token", "x", "-table", "nodots", file}, cli.ExitUsage, "catalog.schema.table"},
		{"unknown flag", []string{"-bogus", file}, cli.ExitUsage, "bogus"},
		{"bad batch", []string{"-endpoint", ep, "-token", "x", "-table", "a.b.c", "-batch-size", "0", file}, cli.ExitUsage, "-batch-size"},
		{"half proto", []string{"-endpoint", ep, "-token", "x", "-table", "a.b.c", "-proto-message", "a.B", file}, cli.ExitUsage, "go together"},
		{"help", []string{"-h"}, cli.ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ZBSTREAM_TOKEN", "")
			code, _, errOut := runIngestCmd(context.Background(), t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
		})
	}
	// Bad flags are refused before any state file is written.
	if _, err := os.Stat(file + ".zbstate"); err == nil {
		t.Fatal("a state file was written despite bad flags")
	}
}

func TestIngestRefusedToken(t *testing.T) {
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 3)
	code, _, errOut := runIngestCmd(context.Background(), t, "-endpoint", "http://"+ts.Addr, "-token", "wrong", "-table", ts.Table, file)
	if code != cli.ExitAuth {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitAuth, errOut)
	}
	clitest.WantPrefixOnce(t, errOut)
}

// TestIngestTLSMistakes: a TLS mismatch with the server is a usage error
// (exit 2) whose message names the flag to change and says "zbstream:"
// once. (The library's tests count the open attempts: none is retried.)
func TestIngestTLSMistakes(t *testing.T) {
	dir := t.TempDir()
	cert, key := clitest.WriteSelfSigned(t, dir)
	tlsCfg, err := server.LoadTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	tlsTS := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS = tlsCfg }))
	plainTS := servertest.Start(t)
	file := writeLines(t, dir, "a.jsonl", 3)
	for _, c := range []struct {
		name string
		args []string
		hint string
	}{
		{"untrusted", []string{"-endpoint", "https://" + tlsTS.Addr}, "-ca-file"},
		{"http to TLS", []string{"-endpoint", "http://" + tlsTS.Addr}, "https://"},
		{"https to plaintext", []string{"-endpoint", "https://" + plainTS.Addr, "-ca-file", cert}, "http://" + plainTS.Addr},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "-token", tlsTS.Token, "-table", tlsTS.Table, "-state", filepath.Join(t.TempDir(), "state"), file)
			code, _, errOut := runIngestCmd(context.Background(), t, args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, c.hint) || !strings.Contains(errOut, "TLS") {
				t.Fatalf("exit %d, want %d and a message naming %q: %s", code, cli.ExitUsage, c.hint, errOut)
			}
			clitest.WantPrefixOnce(t, errOut)
		})
	}
	// A bad endpoint (a configuration error) says it once too.
	code, _, errOut := runIngestCmd(context.Background(), t, "-endpoint", "ftp://"+plainTS.Addr, "-token", "t", "-table", plainTS.Table, file)
	if code != cli.ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitUsage, errOut)
	}
	clitest.WantPrefixOnce(t, errOut)
}

func TestIngestUnreachable(t *testing.T) {
	// A port nothing listens on: a listener opened and closed.
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 3)
	addr := clitest.FreeAddr(t)
	code, _, errOut := runIngestCmd(context.Background(), t, "-endpoint", "http://"+addr, "-token", ts.Token, "-table", ts.Table, file)
	if code != cli.ExitUnreachable || !strings.Contains(errOut, "retries exhausted") {
		t.Fatalf("exit %d, want %d after the retries: %s", code, cli.ExitUnreachable, errOut)
	}
	clitest.WantPrefixOnce(t, errOut)
}

func TestIngestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true, 0, 1000, 100, func() int64 { return 400 }, "record")
	p.start = time.Now().Add(-time.Second)
	p.report()
	p.end()
	got := b.String()
	for _, want := range []string{"\r\033[K[===========>                  ]", " 40.0% 400/1000 records", "300 rec/s", "ETA 2s", "\r\033[K"} {
		if !strings.Contains(got, want) {
			t.Errorf("bar %q lacks %q", got, want)
		}
	}
	b.Reset()
	p = newProgress(&b, false, 0, 1000, 0, func() int64 { return 500 }, "record")
	p.start = time.Now().Add(-time.Second)
	p.report()
	p.end()
	if got, want := b.String(), "ingest: 500/1000 records durable (50.0%), 500 rec/s, ETA 1s\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestIngestOpenServerNoToken: a server in open mode (zbstream serve's
// default) takes an ingest without -token.
func TestIngestOpenServerNoToken(t *testing.T) {
	t.Setenv(cli.EnvToken, "")
	ts := servertest.Start(t, servertest.Open())
	file := writeLines(t, t.TempDir(), "events.jsonl", 10)
	code, out, _ := runIngestCmd(context.Background(), t, "-endpoint", "http://"+ts.Addr, "-table", ts.Table, file)
	if code != cli.ExitOK || !strings.Contains(out, "done: 10 records") {
		t.Fatalf("exit %d: %s", code, out)
	}
	checkSeq(t, ts, readState(t, file+".zbstate").StreamID, 10)
}
