package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server/servertest"
)

const seqAvroSchema = `{"type":"record","name":"Seq","fields":[{"name":"seq","type":"long"},{"name":"tag","type":["null","string"],"default":null}]}`

// writeAvroSchema writes schema to an .avsc file in dir.
func writeAvroSchema(t *testing.T, dir, schema string) string {
	t.Helper()
	path := filepath.Join(dir, "seq.avsc")
	if err := os.WriteFile(path, []byte(schema), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIngestAvro: JSON lines go out as Avro datums on an Avro stream, once
// and in order; the server (which checks every datum against the schema)
// holds exactly the lines' values, and a second run sends nothing.
func TestIngestAvro(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	file := writeLines(t, dir, "events.jsonl", 300)
	schema := writeAvroSchema(t, dir, seqAvroSchema)
	args := append(serverArgs(ts), "-avro-schema", schema, "-batch-size", "7", file)
	if code, _, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	if st.Format != formatAvro || st.AvroSchemaSHA256 == "" || !st.Done {
		t.Fatalf("state %+v", st)
	}
	m, err := ts.Stream(context.Background(), st.StreamID)
	if err != nil || m.AvroSchema != seqAvroSchema {
		t.Fatalf("the server's stream %+v, %v: want the schema given", m, err)
	}
	s := avro.MustParse(seqAvroSchema)
	recs := stored(t, ts, st.StreamID)
	if len(recs) != 300 {
		t.Fatalf("server holds %d records, want 300", len(recs))
	}
	for i, r := range recs {
		var v struct {
			Seq int64   `avro:"seq"`
			Tag *string `avro:"tag"`
		}
		if err := avro.Unmarshal(s, r, &v); err != nil || v.Seq != int64(i) || v.Tag != nil {
			t.Fatalf("record %d: %+v, %v", i, v, err)
		}
	}
	if code, out, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK || !strings.Contains(out, "already done") {
		t.Fatalf("second run: exit %d: %s", code, out)
	}

	// Another schema for the same state file is a usage error.
	other := writeAvroSchema(t, t.TempDir(), strings.Replace(seqAvroSchema, `"Seq"`, `"Seq2"`, 1))
	args2 := append(serverArgs(ts), "-avro-schema", other, file)
	if code, _, errOut := runIngestCmd(context.Background(), t, args2...); code != cli.ExitUsage || !strings.Contains(errOut, "another Avro schema") {
		t.Fatalf("another schema: exit %d: %s", code, errOut)
	}
}

// TestIngestAvroRefusesLine: a line that does not fit the schema is named
// FILE:LINE with exit 3 and nothing is sent; with -skip-invalid it is set
// aside and the others land.
func TestIngestAvroRefusesLine(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "mixed.jsonl")
	lines := []string{`{"seq":0}`, `{"seq":1,"tag":"a"}`, `{"seq":"two"}`, `{"seq":3,"extra":true}`, `{"seq":4}`}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := writeAvroSchema(t, dir, seqAvroSchema)
	code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-avro-schema", schema, file)...)
	if want := fmt.Sprintf("%s:3", file); code != cli.ExitInput || !strings.Contains(errOut, want) || !strings.Contains(errOut, "does not fit the Avro schema") {
		t.Fatalf("exit %d, want %d naming %s:\n%s", code, cli.ExitInput, want, errOut)
	}
	if n := streamCount(t, ts); n != 0 {
		t.Fatalf("%d streams made before the input was checked", n)
	}

	dead := filepath.Join(dir, "dead.jsonl")
	code, _, _ = runIngestCmd(context.Background(), t, append(serverArgs(ts), "-avro-schema", schema, "-skip-invalid", dead, file)...)
	if code != cli.ExitOK {
		t.Fatalf("with -skip-invalid: exit %d", code)
	}
	st := readState(t, file+".zbstate")
	if got := len(stored(t, ts, st.StreamID)); got != 3 {
		t.Fatalf("server holds %d records, want 3", got)
	}
	b, err := os.ReadFile(dead)
	if err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"line":3`) || !strings.Contains(string(b), `"line":4`) {
		t.Fatalf("dead letters %q, %v", b, err)
	}
}

// TestIngestAvroFlags: -avro-schema excludes protobuf input and routing,
// and a schema that is not a record schema is refused before anything is
// sent.
func TestIngestAvroFlags(t *testing.T) {
	dir := t.TempDir()
	file := writeLines(t, dir, "e.jsonl", 3)
	schema := writeAvroSchema(t, dir, seqAvroSchema)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-endpoint", "http://127.0.0.1:1", "-table", "a.b.c", "-avro-schema", schema, "-proto-descriptor-set", "x", "-proto-message", "m", file}, cli.ExitUsage, "exclude each other"},
		{[]string{"-endpoint", "http://127.0.0.1:1", "-table-field", "t", "-avro-schema", schema, file}, cli.ExitUsage, "one table"},
		{[]string{"-endpoint", "http://127.0.0.1:1", "-table", "a.b.c", "-avro-schema", writeAvroSchema(t, t.TempDir(), `"string"`), file}, cli.ExitInput, "record schema"},
	} {
		code, _, errOut := runIngestCmd(context.Background(), t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tc.args, code, tc.code, tc.msg, errOut)
		}
	}
}
