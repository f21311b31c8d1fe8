package ingest

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestIngestArrowBadFlags: -format takes json, arrow or parquet, and
// arrow and parquet refuse the flags of JSON lines, naming them: usage
// errors (exit 2), before the file is read.
func TestIngestArrowBadFlags(t *testing.T) {
	ts := servertest.Start(t)
	ctx := testContext(t, time.Minute)
	file := tempFile(t, "any.parquet")
	writeParquet(t, file, 10, 10)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-format", "csv"}, `-format "csv": want json, arrow or parquet`},
		{[]string{"-format", "arrow", "-table-field", "t"}, "-format arrow does not take -table-field"},
		{[]string{"-format", "parquet", "-skip-invalid", "dead.jsonl"}, "-format parquet does not take -skip-invalid"},
		{[]string{"-format", "parquet", "-batch-bytes", "1MiB", "-avro-schema", "s.avsc"}, "does not take -avro-schema and -batch-bytes"},
		{[]string{"-format", "arrow", "-proto-descriptor-set", "d.pb", "-proto-message", "m.M", "-max-open-streams", "2"}, "does not take -max-open-streams, -proto-descriptor-set and -proto-message"},
		{[]string{"-format", "arrow", "-table-schema=t.json"}, "does not take -table-schema"},
		{[]string{"-format", "parquet", "-batch-size", "0"}, "-batch-size must be positive"},
	} {
		code, _, errOut := runIngestCmd(ctx, t, append(append(serverArgs(ts), tc.args...), file)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want %d saying %q:\n%s", tc.args, code, cli.ExitUsage, tc.want, errOut)
		}
	}
	if n := len(arrowStreams(t, ts)); n != 0 {
		t.Fatalf("%d Arrow streams opened by refused runs", n)
	}
}

// writeDictionary writes an IPC stream whose second column is
// dictionary-encoded.
func writeDictionary(t *testing.T, path string) {
	t.Helper()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "category", Type: dt}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	db := b.Field(1).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"a", "b", "a"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// truncate cuts path to its first part: what fraction of it keeps.
func truncate(t *testing.T, path string, fraction float64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(fi.Size())*fraction)); err != nil {
		t.Fatal(err)
	}
}

// TestIngestArrowBadFiles: a file that is not of its -format, a damaged
// one, and one whose schema has a column the stream refuses (dictionary-
// encoded) end the run with exit 3 and a message that says what is
// wrong, before any stream is opened; nothing panics or hangs.
func TestIngestArrowBadFiles(t *testing.T) {
	ts := servertest.Start(t)
	ctx := testContext(t, time.Minute)
	dir := t.TempDir()
	jsonl := writeLines(t, dir, "events.jsonl", 10)
	pq := dir + "/rows.parquet"
	writeParquet(t, pq, 1000, 100)
	cutPQ := dir + "/cut.parquet"
	writeParquet(t, cutPQ, 1000, 100)
	truncate(t, cutPQ, 0.9)
	ipcFile := dir + "/rows.arrow"
	writeIPCFile(t, ipcFile, idSchema, 1000, idBatch)
	cutStream := dir + "/cut.arrows"
	writeIPCStream(t, cutStream, mixedSchema, 1000, mixedBatch)
	truncate(t, cutStream, 0.6)
	cutFile := dir + "/cut.arrow"
	writeIPCFile(t, cutFile, idSchema, 1000, idBatch)
	truncate(t, cutFile, 0.95)
	garbage := dir + "/garbage.bin"
	if err := os.WriteFile(garbage, []byte("ARROW1\x00\x00not an arrow file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := dir + "/empty"
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dict := dir + "/dict.arrows"
	writeDictionary(t, dict)
	for _, tc := range []struct {
		format, file string
		want         []string
	}{
		{"arrow", jsonl, []string{"is not an Arrow IPC stream or file", "JSON lines are -format json"}},
		{"parquet", jsonl, []string{"is not a Parquet file", "JSON lines are -format json"}},
		{"arrow", pq, []string{"is not an Arrow IPC stream or file", "give -format parquet"}},
		{"parquet", ipcFile, []string{"is not a Parquet file", "give -format arrow"}},
		{"parquet", cutPQ, []string{"is not a Parquet file"}},
		{"arrow", cutStream, []string{cutStream + ": after "}},
		{"arrow", cutFile, []string{"is not an Arrow IPC file"}},
		{"arrow", garbage, []string{"is not an Arrow IPC file"}},
		{"arrow", empty, []string{"is not an Arrow IPC stream or file"}},
		{"parquet", empty, []string{"is not a Parquet file"}},
		{"arrow", dict, []string{`the schema cannot be sent: field "category" is dictionary-encoded`}},
	} {
		code, _, errOut := runIngestCmd(ctx, t, append(arrowArgs(ts, tc.format), tc.file)...)
		if code != cli.ExitInput {
			t.Errorf("-format %s %s: exit %d, want %d:\n%s", tc.format, tc.file, code, cli.ExitInput, errOut)
			continue
		}
		wantIn(t, "-format "+tc.format+" "+tc.file, errOut, tc.want...)
		clitest.WantPrefixOnce(t, errOut)
	}
	if n := len(arrowStreams(t, ts)); n != 0 {
		t.Fatalf("%d Arrow streams opened for bad files", n)
	}
}

// TestIngestArrowStateMismatch: a state file is for one format family,
// table and file: a JSON-lines state with -format arrow, an Arrow state
// with -format json or another table, are usage errors (exit 2); a file
// changed since its state was made is an input error (exit 3).
func TestIngestArrowStateMismatch(t *testing.T) {
	ts := servertest.Start(t)
	ctx := testContext(t, time.Minute)
	dir := t.TempDir()
	file := dir + "/rows.arrow"
	writeIPCStream(t, file, idSchema, 500, idBatch)
	jsonl := writeLines(t, dir, "events.jsonl", 10)
	if code, _, _ := runIngestCmd(ctx, t, append(serverArgs(ts), "-state", dir+"/json.zbstate", jsonl)...); code != cli.ExitOK {
		t.Fatalf("JSON ingest: exit %d", code)
	}
	if code, _, _ := runIngestCmd(ctx, t, append(arrowArgs(ts, "arrow", "-batch-size", "100"), file)...); code != cli.ExitOK {
		t.Fatalf("Arrow ingest: exit %d", code)
	}
	streams := len(arrowStreams(t, ts))
	other := append(append([]string{"-endpoint", "http://" + ts.Addr, "-token", ts.Token, "-table", "main.default.other"}, "-format", "arrow"), file)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{append(arrowArgs(ts, "arrow", "-state", dir+"/json.zbstate"), file), cli.ExitUsage, "was made for json-lines input (-format json)"},
		{append(serverArgs(ts), "-state", file+".zbstate", jsonl), cli.ExitUsage, "was made for arrow-ipc input (-format arrow)"},
		{append(arrowArgs(ts, "parquet", "-state", file+".zbstate"), file), cli.ExitUsage, "was made for arrow-ipc input (-format arrow), not parquet"},
		{other, cli.ExitUsage, "belongs to table main.default.events, not main.default.other"},
	} {
		code, _, errOut := runIngestCmd(ctx, t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want %d saying %q:\n%s", tc.args, code, tc.code, tc.want, errOut)
		}
	}
	writeIPCStream(t, file, idSchema, 501, idBatch) // another file where the first was
	code, _, errOut := runIngestCmd(ctx, t, append(arrowArgs(ts, "arrow"), file)...)
	if code != cli.ExitInput || !strings.Contains(errOut, "belongs to another file") {
		t.Fatalf("changed file: exit %d, want %d saying it belongs to another file:\n%s", code, cli.ExitInput, errOut)
	}
	if n := len(arrowStreams(t, ts)); n != streams {
		t.Fatalf("%d Arrow streams after the refused runs, want %d", n, streams)
	}
}

// TestIngestArrowUnreachable: a server nobody listens for ends the run
// with exit code 4 once the stream's retries are spent, as for JSON
// lines; the state file holds no row durable.
func TestIngestArrowUnreachable(t *testing.T) {
	file := tempFile(t, "rows.arrow")
	writeIPCStream(t, file, idSchema, 10, idBatch)
	code, _, errOut := runIngestCmd(testContext(t, time.Minute), t, "-endpoint", "http://"+clitest.FreeAddr(t), "-table", clitest.TableA, "-format", "arrow", file)
	if code != cli.ExitUnreachable || !strings.Contains(errOut, "server unreachable") {
		t.Fatalf("exit %d, want %d saying the server is unreachable:\n%s", code, cli.ExitUnreachable, errOut)
	}
	if st, err := loadArrowState(file + ".zbstate"); err != nil || st.DurableRows != 0 || st.Done {
		t.Fatalf("state %+v, %v; want none durable", st, err)
	}
}
