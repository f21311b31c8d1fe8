package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestIngestRefusedCall: the server refuses call 5 for good (INVALID_ARGUMENT,
// injected: a rule the pre-check cannot know). The run exits 3, names the
// lines of that call and says what to do; a rerun after correcting them
// keeps the 50 records the server holds and sends the rest once, while a
// change before the refused call is refused.
func TestIngestRefusedCall(t *testing.T) {
	ts := servertest.Start(t)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 5, Code: codes.InvalidArgument, Message: "record 3 of the batch: column seq out of range"})
	file := writeLines(t, t.TempDir(), "events.jsonl", 200)
	args := append(serverArgs(ts), "-batch-size", "10", "-max-inflight", "1", file)
	code, _, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitInput {
		t.Fatalf("exit %d, want %d: %s", code, cli.ExitInput, errOut)
	}
	// Line numbers: writeLines puts two blank lines after {"seq":5}.
	for _, want := range []string{"the server refused call 5 of 20 for good (lines 53-62 of " + file + ")", "column seq out of range",
		"correct or remove the refused records, leaving everything up to line 52 of " + file + " as it is", "goes on after line 52"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	clitest.WantPrefixOnce(t, errOut)
	st := readState(t, file+".zbstate")
	if st.Pin == nil || st.Pin.Calls != 5 || st.Pin.Records != 50 || fmt.Sprint(st.Cuts) != "[50]" {
		t.Fatalf("state pin %+v, cuts %v", st.Pin, st.Cuts)
	}

	orig, _ := os.ReadFile(file)
	// A change in what the server holds is refused: it cannot be sent
	// again, and nothing is.
	if err := os.WriteFile(file, bytes.Replace(orig, []byte(`{"seq":3}`), []byte(`{"seq":3, "x":1}`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitInput || !strings.Contains(errOut, "belongs to another file") || !strings.Contains(errOut, "only after line 52") {
		t.Fatalf("a change before the refused call: exit %d: %s", code, errOut)
	}
	// The refused call corrected (here: record 55 changed, 57 removed):
	// the rerun goes on from it, with no gap and no duplicate.
	fixed := bytes.Replace(orig, []byte("{\"seq\":55}\n"), []byte("{\"seq\":55,\"fixed\":true}\n"), 1)
	fixed = bytes.Replace(fixed, []byte("{\"seq\":57}\n"), nil, 1)
	if err := os.WriteFile(file, fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(errOut, "changed after line 52, the last record the server holds") || !strings.Contains(stdout, "done: 199 records") ||
		!strings.Contains(stdout, "sent 149 records in 15 calls from watermark 4 (50 records already on the server)") {
		t.Fatalf("rerun: exit %d: %s%s", code, stdout, errOut)
	}
	recs := stored(t, ts, st.StreamID)
	var got []string
	for _, r := range recs {
		got = append(got, string(r))
	}
	var want []string
	for i := range 200 {
		switch i {
		case 55:
			want = append(want, `{"seq":55,"fixed":true}`)
		case 57:
		default:
			want = append(want, fmt.Sprintf(`{"seq":%d}`, i))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the server holds %d records, not the %d of the corrected file", len(got), len(want))
	}
	// Done, the file may change no more.
	if err := os.WriteFile(file, append(fixed, "{\"seq\":200}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runIngestCmd(context.Background(), t, args...); code != cli.ExitInput || !strings.Contains(errOut, "belongs to another file") {
		t.Fatalf("a change after the end: exit %d: %s", code, errOut)
	}
}

// TestIngestRefusedFirstCall: refused at call 0, the stream holds nothing,
// so any corrected file is taken whole; a refusal that is not about the
// records (PERMISSION_DENIED) keeps its own exit code and advice.
func TestIngestRefusedFirstCall(t *testing.T) {
	ts := servertest.Start(t)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 0, Code: codes.InvalidArgument, Message: "bad"})
	dir := t.TempDir()
	file := writeLines(t, dir, "events.jsonl", 30)
	args := append(serverArgs(ts), "-batch-size", "10", file)
	code, _, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitInput || !strings.Contains(errOut, "refused call 0 of 3 for good (lines 1-12 of") || !strings.Contains(errOut, "holds nothing yet") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	writeLines(t, dir, "events.jsonl", 25)
	if code, stdout, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK || !strings.Contains(stdout, "done: 25 records") {
		t.Fatalf("rerun: exit %d: %s", code, stdout)
	}
	checkSeq(t, ts, readState(t, file+".zbstate").StreamID, 25)

	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 1, Code: codes.PermissionDenied, Message: "grant revoked"})
	other := writeLines(t, dir, "other.jsonl", 30)
	code, _, errOut = runIngestCmd(context.Background(), t, append(serverArgs(ts), "-batch-size", "10", "-max-inflight", "1", other)...)
	if code != cli.ExitAuth || !strings.Contains(errOut, "refused call 1 of 3 for good") || !strings.Contains(errOut, "once the cause is fixed, run the same command again") {
		t.Fatalf("permission denied: exit %d: %s", code, errOut)
	}
	if code, _, _ := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-batch-size", "10", other)...); code != cli.ExitOK {
		t.Fatalf("rerun: exit %d", code)
	}
	checkSeq(t, ts, readState(t, other+".zbstate").StreamID, 30)
}

// TestIngestRefusedCut: the call before the refused one ended because
// the refused call's first record was too large to join it; corrected,
// that record is small enough, but the call the server holds must not
// change: the cut keeps it as it is. Then, once the server holds calls
// past the pin, the file may not change again.
func TestIngestRefusedCut(t *testing.T) {
	ts := servertest.Start(t)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 2, Code: codes.InvalidArgument, Message: "pad too long"})
	dir := t.TempDir()
	big := `{"seq":4,"pad":"xxxxxxxxxxxxxxxxxx"}`
	// Batches of at most 40 bytes as sent (a small record takes 11):
	// call 0 is lines 1-3, call 1 line 4 alone (line 5 does not fit),
	// call 2 line 5.
	file := writeMixed(t, dir, 10, map[int]string{4: big})
	args := append(serverArgs(ts), "-batch-size", "3", "-batch-bytes", "40", "-max-inflight", "1", file)
	code, _, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitInput || !strings.Contains(errOut, "refused call 2 of 5 for good (line 5 of") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	orig, _ := os.ReadFile(file)
	if err := os.WriteFile(file, bytes.Replace(orig, []byte(big), []byte(`{"seq":4}`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK || !strings.Contains(stdout, "done: 10 records") {
		t.Fatalf("rerun: exit %d: %s%s", code, stdout, errOut)
	}
	st := readState(t, file+".zbstate")
	checkSeq(t, ts, st.StreamID, 10)
	if batches, _ := ts.Records(context.Background(), st.StreamID); len(batches[1].Records) != 1 {
		t.Fatalf("call 1 holds %d records, want 1", len(batches[1].Records))
	}

	// As if the last run had died before saving done: the server holds
	// calls past the pin, so a changed file is refused.
	st.Done = false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	fixed, _ := os.ReadFile(file)
	if err := os.WriteFile(file, bytes.Replace(fixed, []byte(`{"seq":8}`), []byte(`{"seq":8,"late":1}`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitInput || !strings.Contains(errOut, "past the 2 calls pinned") {
		t.Fatalf("a change after progress past the pin: exit %d: %s", code, errOut)
	}
	checkSeq(t, ts, st.StreamID, 10)
}
