package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server/servertest"
)

// writeMixed writes n JSON lines {"seq":i}, except that the lines in
// bad (by index from 0) hold the given invalid records instead; it
// returns the path.
func writeMixed(t *testing.T, dir string, n int, bad map[int]string) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		if rec, ok := bad[i]; ok {
			b.WriteString(rec + "\n")
			continue
		}
		fmt.Fprintf(&b, "{\"seq\":%d}\n", i)
	}
	path := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkSeqExcept checks that the server holds {"seq":i} for every i
// below n not in bad, each once, in order.
func checkSeqExcept(t *testing.T, ts *servertest.Server, id string, n int, bad map[int]string) {
	t.Helper()
	recs := stored(t, ts, id)
	j := 0
	for i := range n {
		if _, ok := bad[i]; ok {
			continue
		}
		if j >= len(recs) || string(recs[j]) != fmt.Sprintf(`{"seq":%d}`, i) {
			t.Fatalf("server record %d is not {\"seq\":%d} (server holds %d records)", j, i, len(recs))
		}
		j++
	}
	if j != len(recs) {
		t.Fatalf("server holds %d records, want %d", len(recs), j)
	}
}

// TestIngestInvalidUTF8: a line the server would refuse for its UTF-8
// (which encoding/json.Valid lets through) is refused before anything is
// sent, with FILE:LINE and exit code 3, and no state file: a rerun meets
// the same message, not a stuck stream.
func TestIngestInvalidUTF8(t *testing.T) {
	ts := servertest.Start(t)
	file := writeMixed(t, t.TempDir(), 50, map[int]string{6: "{\"name\":\"caf\xe9\"}"})
	for range 2 {
		code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), file)...)
		if code != cli.ExitInput || !strings.Contains(errOut, file+":7: invalid UTF-8 at byte 13 of the record") || !strings.Contains(errOut, "-skip-invalid") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		clitest.WantPrefixOnce(t, errOut)
		if c := streamCount(t, ts); c != 0 {
			t.Fatalf("server has %d streams: something was sent", c)
		}
		if _, err := os.Stat(file + ".zbstate"); err == nil {
			t.Fatal("a state file was written for a file with an invalid line")
		}
	}
}

// TestIngestProtoUnknownField: a protobuf record with a field the
// descriptor lacks parses, but the server refuses it: so does the
// pre-check, before anything is sent.
func TestIngestProtoUnknownField(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	md, set := testMessage(t, dir)
	file, recs := writeProtoRecords(t, dir, md, 5)
	full, _ := os.ReadFile(file)
	extra := protowire.AppendVarint(protowire.AppendTag(bytes.Clone(recs[0]), 9, protowire.VarintType), 1)
	full = append(protowire.AppendVarint(full, uint64(len(extra))), extra...)
	if err := os.WriteFile(file, full, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Event")
	code, _, errOut := runIngestCmd(context.Background(), t, append(args, file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "record 6 at byte offset") || !strings.Contains(errOut, "unknown to the descriptor") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if c := streamCount(t, ts); c != 0 {
		t.Fatalf("server has %d streams: something was sent", c)
	}
	// Set aside, it goes to the dead-letter file whole, in base64.
	dl := filepath.Join(dir, "dead.jsonl")
	code, _, errOut = runIngestCmd(context.Background(), t, append(args, "-skip-invalid", dl, file)...)
	if code != cli.ExitOK || !strings.Contains(errOut, "set aside 1 record the server would refuse (record 6)") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	letters := readDeadLetters(t, dl)
	if len(letters) != 1 || letters[0].Index != 6 || !bytes.Equal(letters[0].RecordBase64, extra) || letters[0].Offset != int64(len(full)-len(extra)-1) {
		t.Fatalf("dead letters %+v", letters)
	}
	if got := stored(t, ts, readState(t, file+".zbstate").StreamID); len(got) != 5 {
		t.Fatalf("server holds %d records, want 5", len(got))
	}
}

func readDeadLetters(t *testing.T, path string) []deadLetter {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []deadLetter
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	for dec.More() {
		var d deadLetter
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("dead-letter file: %v\n%s", err, b)
		}
		out = append(out, d)
	}
	return out
}

// TestIngestSkipInvalid: -skip-invalid sets aside every record the server
// would refuse, with its line, reason and exact bytes; the state file
// lists them; an interrupted run's rerun (without the flag) skips the same
// lines, keeps offsets aligned, sends every other line once, and does not
// write the dead letters again.
func TestIngestSkipInvalid(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	const n = 6000
	bad := map[int]string{
		0:    "[1,2]",
		7:    "{\"name\":\"caf\xe9\"}",
		1500: `{"seq": 1500,`,
		4999: `"just a string"`,
	}
	file := writeMixed(t, dir, n, bad)
	dl := filepath.Join(dir, "dead.jsonl")
	args := append(serverArgs(ts), "-batch-size", "2", "-max-inflight", "8", "-progress", "5ms", "-skip-invalid", dl, file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnProgress{cancel: cancel}
	var out bytes.Buffer
	if code := cmds.Run(ctx, append([]string{"ingest"}, args...), &out, w); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitInterrupted, out.String(), w.buf.String())
	}
	if !strings.Contains(w.buf.String(), "set aside 4 records the server would refuse (lines 1, 8, 1501, 5000)") {
		t.Fatalf("no note of the records set aside: %s", w.buf.String())
	}
	st := readState(t, file+".zbstate")
	if fmt.Sprint(st.Skipped) != "[1 8 1501 5000]" || st.Records != n-4 || st.DeadLetters != dl {
		t.Fatalf("state: skipped %v, records %d, dead letters %q", st.Skipped, st.Records, st.DeadLetters)
	}
	letters := readDeadLetters(t, dl)
	want := []struct {
		line   int64
		reason string
	}{{1, "not a JSON object"}, {8, "invalid UTF-8"}, {1501, "malformed JSON"}, {5000, "not a JSON object"}}
	if len(letters) != len(want) {
		t.Fatalf("%d dead letters, want %d", len(letters), len(want))
	}
	for i, d := range letters {
		rec := d.Record
		if d.RecordBase64 != nil {
			rec = string(d.RecordBase64)
		}
		if d.Line != want[i].line || !strings.HasPrefix(d.Reason, want[i].reason) || rec != bad[int(d.Line-1)] {
			t.Errorf("dead letter %d: %+v", i, d)
		}
	}
	if letters[1].RecordBase64 == nil || letters[0].Record != "[1,2]" {
		t.Errorf("the record is not kept as text when it can be, and in base64 when not: %+v", letters[:2])
	}
	before, _ := os.ReadFile(dl)

	// The same command, without -skip-invalid: the state file rules.
	code, stdout, _ := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-batch-size", "2", file)...)
	if code != cli.ExitOK || !strings.Contains(stdout, "from watermark") || !strings.Contains(stdout, "4 records set aside in "+dl) {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	checkSeqExcept(t, ts, st.StreamID, n, bad)
	if after, _ := os.ReadFile(dl); !bytes.Equal(before, after) {
		t.Fatal("the rerun changed the dead-letter file")
	}
	// Done: a rerun with the flag sends nothing and writes nothing twice.
	if code, stdout, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK || !strings.Contains(stdout, "already done") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	if after, _ := os.ReadFile(dl); !bytes.Equal(before, after) {
		t.Fatal("a rerun changed the dead-letter file")
	}
	checkSeqExcept(t, ts, st.StreamID, n, bad)
}

// TestIngestSkipInvalidPaths: the dead-letter file, rewritten whole, is
// neither the input nor the state file.
func TestIngestSkipInvalidPaths(t *testing.T) {
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 3)
	for _, dl := range []string{file, file + ".zbstate"} {
		code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-skip-invalid", dl, file)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "a path of its own") {
			t.Fatalf("-skip-invalid %s: exit %d: %s", dl, code, errOut)
		}
	}
}
