package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// routedTable is table t of the routed tests.
func routedTable(t int) string { return fmt.Sprintf("main.routed.t%03d", t) }

// writeRouted writes n JSON lines, line i to table i*7%tables (so
// that neighbours go to different tables), with a blank line now and
// then, and returns the file and each table's lines in order.
func writeRouted(t *testing.T, dir string, n, tables int) (string, map[string][]string) {
	t.Helper()
	var b bytes.Buffer
	want := map[string][]string{}
	for i := range n {
		table := routedTable(i * 7 % tables)
		line := fmt.Sprintf(`{"seq":%d,"table":%q,"v":{"table":"nested, not routed"}}`, i, table)
		fmt.Fprintln(&b, line)
		want[table] = append(want[table], line)
		if i%97 == 5 {
			b.WriteString("\n  \n")
		}
	}
	path := filepath.Join(dir, "routed.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// routedServer starts a server whose token writes every table.
func routedServer(t *testing.T) (*servertest.Server, []string) {
	ts := servertest.Start(t, servertest.WithTable(server.AllTables))
	return ts, []string{"-endpoint", "http://" + ts.Addr, "-token", ts.Token, "-table-field", "table"}
}

// checkRouted checks that every table of want has one stream on the
// server holding its lines once each, in order, and that no other table
// has one.
func checkRouted(t *testing.T, ts *servertest.Server, want map[string][]string) {
	t.Helper()
	streams, err := ts.Streams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range streams {
		if seen[m.Table] {
			t.Fatalf("table %s has more than one stream", m.Table)
		}
		seen[m.Table] = true
		lines, ok := want[m.Table]
		if !ok {
			t.Fatalf("table %s has a stream, and no line names it", m.Table)
		}
		recs := stored(t, ts, m.ID)
		if len(recs) != len(lines) {
			t.Fatalf("table %s holds %d records, want %d", m.Table, len(recs), len(lines))
		}
		for i, r := range recs {
			if string(r) != lines[i] {
				t.Fatalf("table %s: record %d is %s, want %s", m.Table, i, r, lines[i])
			}
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d tables have a stream, want %d", len(seen), len(want))
	}
}

// TestIngestRoutedOnce: each line goes to its table, through few streams;
// every table's stream holds its lines once, in order; a rerun of a done
// file sends nothing.
func TestIngestRoutedOnce(t *testing.T) {
	ts, args := routedServer(t)
	file, want := writeRouted(t, t.TempDir(), 3000, 40)
	args = append(args, "-max-open-streams", "4", "-batch-size", "7", file)
	code, out, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "done: 3000 records") || !strings.Contains(out, "into 40 tables") || !strings.Contains(out, "streams created 40") {
		t.Fatalf("exit %d: %s", code, out)
	}
	st := readState(t, file+".zbstate")
	if !st.Done || st.TableField != "table" || len(st.Tables) != 40 || st.Table != "" {
		t.Fatalf("state %+v", st)
	}
	for table, ts := range st.Tables {
		if ts.StreamID == "" || ts.Records != int64(len(want[table])) {
			t.Fatalf("state of %s: %+v, want %d records and a stream", table, ts, len(want[table]))
		}
	}
	checkRouted(t, ts, want)
	code, out, _ = runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "already done") {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	checkRouted(t, ts, want)
}

// TestIngestRoutedBadTable: a line without the field, with a field that
// is not a string, not a table name, or given twice, is refused with its
// line before anything is sent; with -skip-invalid those lines go to the
// dead-letter file with their reason and the others are ingested.
func TestIngestRoutedBadTable(t *testing.T) {
	ts, args := routedServer(t)
	dir := t.TempDir()
	bad := map[int]string{
		3:  `{"seq":3}`,
		5:  `{"seq":5,"table":7}`,
		8:  `{"seq":8,"table":"events"}`,
		9:  `{"seq":9,"table":{"name":"main.a.b"}}`,
		12: `{"seq":12,"table":"main.routed.t000","table":"main.routed.t001"}`,
	}
	reasons := map[int]string{3: `no field "table"`, 5: "not a string", 8: "not a table name", 9: "not a string", 12: "appears twice"}
	var b bytes.Buffer
	want := map[string][]string{}
	for i := range 15 {
		line, ok := bad[i]
		if !ok {
			line = fmt.Sprintf(`{"seq":%d,"table":%q}`, i, routedTable(i%3))
			want[routedTable(i%3)] = append(want[routedTable(i%3)], line)
		}
		fmt.Fprintln(&b, line)
	}
	file := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runIngestCmd(context.Background(), t, append(args, file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, file+":4: ") || !strings.Contains(errOut, reasons[3]) {
		t.Fatalf("exit %d, want %d naming line 4: %s", code, cli.ExitInput, errOut)
	}
	if n := streamCount(t, ts); n != 0 {
		t.Fatalf("the server has %d streams after a refused file", n)
	}

	dead := filepath.Join(dir, "dead.jsonl")
	code, _, errOut = runIngestCmd(context.Background(), t, append(args, "-skip-invalid", dead, file)...)
	if code != cli.ExitOK {
		t.Fatalf("with -skip-invalid: exit %d: %s", code, errOut)
	}
	dl := readDeadLetters(t, dead)
	if len(dl) != len(bad) {
		t.Fatalf("dead letters %+v, want %d", dl, len(bad))
	}
	for _, d := range dl {
		i := int(d.Line) - 1
		if d.Record != bad[i] || !strings.Contains(d.Reason, reasons[i]) {
			t.Fatalf("dead letter %+v, want line %d %s with reason %q", d, i+1, bad[i], reasons[i])
		}
	}
	checkRouted(t, ts, want)
}

// TestIngestRoutedFlags: -table and -table-field exclude each other,
// -table-field takes no protobuf, -max-open-streams is positive, and a
// routed state file is refused to a single-table run (and kept).
func TestIngestRoutedFlags(t *testing.T) {
	ts, args := routedServer(t)
	file, want := writeRouted(t, t.TempDir(), 50, 3)
	ep := "http://" + ts.Addr
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"both", []string{"-endpoint", ep, "-table", "a.b.c", "-table-field", "table", file}, "exclude each other"},
		{"proto", []string{"-endpoint", ep, "-table-field", "table", "-proto-descriptor-set", "x", "-proto-message", "a.B", file}, "JSON lines"},
		{"max open", []string{"-endpoint", ep, "-table-field", "table", "-max-open-streams", "0", file}, "-max-open-streams"},
	} {
		code, _, errOut := runIngestCmd(context.Background(), t, c.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want %d with %q: %s", c.name, code, cli.ExitUsage, c.want, errOut)
		}
	}
	if code, _, _ := runIngestCmd(context.Background(), t, append(args, file)...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	before, _ := os.ReadFile(file + ".zbstate")
	code, _, errOut := runIngestCmd(context.Background(), t, "-endpoint", ep, "-token", ts.Token, "-table", "main.routed.t000", file)
	if code != cli.ExitUsage || !strings.Contains(errOut, "-table-field table") {
		t.Fatalf("single-table run on a routed state: exit %d: %s", code, errOut)
	}
	code, _, errOut = runIngestCmd(context.Background(), t, "-endpoint", ep, "-token", ts.Token, "-table-field", "other", file)
	if code != cli.ExitUsage || !strings.Contains(errOut, `"table"`) {
		t.Fatalf("another field: exit %d: %s", code, errOut)
	}
	if after, _ := os.ReadFile(file + ".zbstate"); !bytes.Equal(before, after) {
		t.Fatal("a refused run changed the state file")
	}
	checkRouted(t, ts, want)
}

// TestIngestRoutedFailedTable: a table whose stream the server refuses
// for good fails alone: the others are done, the run exits non-zero
// naming the table and its lines, and a rerun continues that table after
// what the server holds, exactly once.
func TestIngestRoutedFailedTable(t *testing.T) {
	ts, args := routedServer(t)
	file, want := writeRouted(t, t.TempDir(), 600, 6)
	h := ts.Inject(server.Match{Table: routedTable(2)}, server.Fault{Kind: server.FaultDrop, After: 3, Code: codes.OutOfRange, Message: "refused"})
	args = append(args, "-max-open-streams", "6", "-batch-size", "5", file)
	code, _, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitFailure || !strings.Contains(errOut, "1 table failed") || !strings.Contains(errOut, routedTable(2)) || !strings.Contains(errOut, "OUT_OF_RANGE") {
		t.Fatalf("exit %d, want %d naming %s: %s", code, cli.ExitFailure, routedTable(2), errOut)
	}
	select {
	case <-h.Fired():
	default:
		t.Fatal("the fault never acted")
	}
	if st := readState(t, file+".zbstate"); st.Done {
		t.Fatal("a run with a failed table marked the state done")
	}
	code, out, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "already on the server") {
		t.Fatalf("rerun: exit %d: %s", code, out)
	}
	checkRouted(t, ts, want)
}

// TestIngestRoutedInterrupt: Ctrl-C mid-way exits 130 and loses nothing:
// the next run completes every table exactly once.
func TestIngestRoutedInterrupt(t *testing.T) {
	ts, args := routedServer(t)
	file, want := writeRouted(t, t.TempDir(), 8000, 30)
	args = append(args, "-max-open-streams", "3", "-batch-size", "2", "-max-inflight", "32", "-progress", "5ms", file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnProgress{cancel: cancel}
	var out bytes.Buffer
	code := cmds.Run(ctx, append([]string{"ingest"}, args...), &out, w)
	t.Logf("exit %d\n%s%s", code, out.String(), w.buf.String())
	if code != cli.ExitInterrupted || !strings.Contains(w.buf.String(), "run the same command again") {
		t.Fatalf("exit %d, want %d", code, cli.ExitInterrupted)
	}
	if st := readState(t, file+".zbstate"); st.Done {
		t.Fatal("interrupted run marked done")
	}
	code, out2, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out2, "already on the server") {
		t.Fatalf("exit %d: %s", code, out2)
	}
	checkRouted(t, ts, want)
}

// TestIngestRoutedCrash is exactly-once per table across SIGKILLs of the
// ingesting process: three times a real "zbstream ingest -table-field"
// process is killed once it has made progress of its own, and the next
// run resumes every table after its watermark; a last run completes.
// Every table holds its lines once, in order, in one stream.
func TestIngestRoutedCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts, args := routedServer(t)
	const n = 30000
	file, want := writeRouted(t, t.TempDir(), n, 50)
	args = append(args, "-max-open-streams", "5", "-batch-size", "5", "-max-inflight", "64", "-progress", "10ms", file)
	killThrice(t, args, n)
	start := time.Now()
	out, errOut, err := runIngestChild(t, args, func(*exec.Cmd, int64) bool { return false })
	if err != nil {
		t.Fatalf("last run: %v\n%s%s", err, out, errOut)
	}
	t.Logf("last run (%s): %s", time.Since(start), out)
	if !strings.Contains(out, "already on the server") || !readState(t, file+".zbstate").Done {
		t.Fatalf("the last run did not resume and finish: %s", out)
	}
	checkRouted(t, ts, want)
}
