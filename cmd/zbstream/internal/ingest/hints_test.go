package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestIngestTokenHints: a refused or missing token says where the token
// came from and which flag or variable gives one.
func TestIngestTokenHints(t *testing.T) {
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 3)
	base := []string{"-endpoint", "http://" + ts.Addr, "-table", ts.Table, "-state", filepath.Join(t.TempDir(), "st")}
	for _, c := range []struct {
		name, env string
		args      []string
		hint      string
	}{
		{"none", "", nil, "no token was given: pass -token, or set $ZBSTREAM_TOKEN"},
		{"wrong flag", "", []string{"-token", "wrong"}, "the token from -token was refused"},
		{"wrong env", "wrong", nil, "the token from $ZBSTREAM_TOKEN was refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(cli.EnvToken, c.env)
			code, _, errOut := runIngestCmd(context.Background(), t, append(append(base, c.args...), file)...)
			if code != cli.ExitAuth || !strings.Contains(errOut, c.hint) {
				t.Fatalf("exit %d, want %d and %q: %s", code, cli.ExitAuth, c.hint, errOut)
			}
			clitest.WantPrefixOnce(t, errOut)
		})
	}
}

// TestIngestRetiredStream: a state file naming a stream the server has
// retired says what can be done about it.
func TestIngestRetiredStream(t *testing.T) {
	ts := servertest.Start(t)
	file := writeLines(t, t.TempDir(), "a.jsonl", 30)
	args := append(serverArgs(ts), "-batch-size", "10", file)
	if code, _, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	if _, err := ts.Client(t).RetireStream(ts.Context(context.Background()), &ingestpb.RetireStreamRequest{TableName: proto.String(st.Table),
		Identifier: &ingestpb.RetireStreamRequest_StreamId{StreamId: st.StreamID}}); err != nil {
		t.Fatal(err)
	}
	st.Done = false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitFailure || !strings.Contains(errOut, "a retired stream") || !strings.Contains(errOut, "remove "+file+".zbstate or pass a new -state") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	clitest.WantPrefixOnce(t, errOut)
}

// TestIngestFlagsAfterFile: flags may follow FILE; after "--" everything
// is FILE.
func TestIngestFlagsAfterFile(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	file := writeLines(t, dir, "a.jsonl", 1)
	code, stdout, _ := runIngestCmd(context.Background(), t, append([]string{file}, append(serverArgs(ts), "-progress", "0")...)...)
	if code != cli.ExitOK || !strings.Contains(stdout, "done: 1 record of") || !strings.Contains(stdout, "sent 1 record in 1 call from") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	dash := filepath.Join(dir, "-odd.jsonl")
	if err := os.Rename(file, dash); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runIngestCmd(context.Background(), t, append(serverArgs(ts), "--", dash)...); code != cli.ExitOK || !strings.Contains(stdout, "done: 1 record") {
		t.Fatalf("after --: exit %d: %s", code, stdout)
	}
	code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), dash, "extra")...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "got 2 arguments") {
		t.Fatalf("two files: exit %d: %s", code, errOut)
	}
}

// TestIngestNegativeProgress: a negative -progress is a usage error.
func TestIngestNegativeProgress(t *testing.T) {
	code, _, errOut := runIngestCmd(context.Background(), t, "-endpoint", "http://127.0.0.1:1", "-table", "a.b.c", "-progress", "-1s", "f.jsonl")
	if code != cli.ExitUsage || !strings.Contains(errOut, "-progress must not be negative") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
