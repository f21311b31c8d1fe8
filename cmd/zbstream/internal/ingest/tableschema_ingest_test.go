package ingest

// -table-schema end to end: the table's schema read from a fake workspace
// (an httptest server with the tables API and a token endpoint) or from a
// saved answer, the JSON lines ingested into the reference server as
// proto records, which are decoded back with the stream's descriptor.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server/servertest"
)

// ucTable is the table the fake workspace knows.
const ucTable = "main.sales.orders"

// ucOrders is the tables API's answer for ucTable, written by hand: id
// NOT NULL, a struct with a NOT NULL field, an array, and a column name
// that is not a proto identifier.
const ucOrders = `{
  "name": "orders", "catalog_name": "main", "schema_name": "sales", "full_name": "main.sales.orders",
  "table_type": "MANAGED",
  "columns": [
    {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": false},
    {"name": "customer", "type_name": "STRING", "type_text": "string", "position": 1, "nullable": true},
    {"name": "amount", "type_name": "DECIMAL", "type_text": "decimal(10,2)", "position": 2, "nullable": true},
    {"name": "qty", "type_name": "INT", "type_text": "int", "position": 3, "nullable": true},
    {"name": "paid", "type_name": "BOOLEAN", "type_text": "boolean", "position": 4},
    {"name": "tags", "type_name": "ARRAY", "type_text": "array<string>", "position": 5, "nullable": true,
     "type_json": "{\"name\":\"tags\",\"type\":{\"type\":\"array\",\"elementType\":\"string\",\"containsNull\":false},\"nullable\":true,\"metadata\":{}}"},
    {"name": "ship_to", "type_name": "STRUCT", "type_text": "struct<zip:int not null,city:string>", "position": 6, "nullable": true,
     "type_json": "{\"name\":\"ship_to\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"zip\",\"type\":\"integer\",\"nullable\":false,\"metadata\":{}},{\"name\":\"city\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{}}"},
    {"name": "unit price", "type_name": "DOUBLE", "type_text": "double", "position": 7, "nullable": true}
  ]
}`

// ucWorkspace is a fake Databricks workspace: the Unity Catalog tables API,
// which answers ucTable with answer to a request bearing token, and a
// token endpoint, which the command must not need (it sends its -token).
type ucWorkspace struct {
	*httptest.Server
	token  string
	answer atomic.Pointer[string]
	gets   atomic.Int32 // schema requests answered
	tokens atomic.Int32 // token requests
}

func startUCWorkspace(t *testing.T, token, answer string) *ucWorkspace {
	t.Helper()
	ws := &ucWorkspace{token: token}
	ws.answer.Store(&answer)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oidc/v1/token", func(w http.ResponseWriter, _ *http.Request) {
		ws.tokens.Add(1)
		fmt.Fprint(w, `{"access_token":"uc-token","token_type":"Bearer","expires_in":3600}`)
	})
	mux.HandleFunc("GET /api/2.1/unity-catalog/tables/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+ws.token {
			http.Error(w, `{"error_code":"UNAUTHENTICATED","message":"invalid token"}`, http.StatusUnauthorized)
			return
		}
		if r.PathValue("name") != ucTable {
			http.Error(w, `{"error_code":"TABLE_DOES_NOT_EXIST","message":"Table does not exist."}`, http.StatusNotFound)
			return
		}
		ws.gets.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, *ws.answer.Load())
	})
	ws.Server = httptest.NewServer(mux)
	t.Cleanup(ws.Close)
	return ws
}

func ptr[T any](v T) *T { return &v }

// ucServer is a reference server whose token may write ucTable, and the
// ingest flags for it.
func ucServer(t *testing.T) (*servertest.Server, []string) {
	t.Helper()
	ts := servertest.Start(t, servertest.WithTable(ucTable))
	return ts, serverArgs(ts)
}

// writeFile writes lines, one a line, to dir/name.
func writeFile(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// orderLines are three lines that use every column, by hand, then
// {"id":i,"customer":"c<i>","qty":i%7} for i from 4 to n.
func orderLines(n int) []string {
	lines := []string{
		`{"id":1,"customer":"ada","amount":"12.30","qty":3,"paid":true,"tags":["a","b"],"ship_to":{"zip":75001,"city":"Paris"},"unit price":4.25}`,
		`{"id":"9007199254740993","customer":null,"paid":false}`,
		`{"id":3,"unit_price":2.5,"tags":[]}`,
	}
	for i := 4; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"customer":"c%d","qty":%d}`, i, i, i%7))
	}
	return lines
}

// decodeOrders decodes the records of stream id with the descriptor the
// server holds for it.
func decodeOrders(t *testing.T, ts *servertest.Server, id string) []protoreflect.Message {
	t.Helper()
	m, err := ts.Stream(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	md, err := record.MessageDescriptor(m.Descriptor)
	if err != nil {
		t.Fatalf("the stream's descriptor: %v", err)
	}
	var out []protoreflect.Message
	for i, r := range stored(t, ts, id) {
		msg := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(r, msg); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		out = append(out, msg)
	}
	return out
}

// checkOrders checks that msgs are orderLines(n), value by value.
func checkOrders(t *testing.T, msgs []protoreflect.Message, n int) {
	t.Helper()
	if len(msgs) != n {
		t.Fatalf("server holds %d records, want %d", len(msgs), n)
	}
	if name := msgs[0].Descriptor().Name(); name != "orders" {
		t.Errorf("message %s, want orders (the table's name)", name)
	}
	get := func(m protoreflect.Message, name string) (protoreflect.Value, bool) {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("message %s has no field %s", m.Descriptor().FullName(), name)
		}
		return m.Get(fd), m.Has(fd)
	}
	want := func(i int, name string, got protoreflect.Value, has bool, want any) {
		t.Helper()
		if !has || got.Interface() != want {
			t.Errorf("record %d: %s = %v (set %v), want %v", i, name, got, has, want)
		}
	}
	unset := func(i int, m protoreflect.Message, names ...string) {
		t.Helper()
		for _, name := range names {
			if v, has := get(m, name); has {
				t.Errorf("record %d: %s = %v, want it left out", i, name, v)
			}
		}
	}

	m := msgs[0]
	for _, f := range []struct {
		name string
		want any
	}{{"id", int64(1)}, {"customer", "ada"}, {"amount", "12.30"}, {"qty", int32(3)}, {"paid", true}, {"unit_price", 4.25}} {
		v, has := get(m, f.name)
		want(0, f.name, v, has, f.want)
	}
	if tags, _ := get(m, "tags"); tags.List().Len() != 2 || tags.List().Get(0).String() != "a" || tags.List().Get(1).String() != "b" {
		t.Errorf("record 0: tags %v, want [a b]", tags)
	}
	ship, has := get(m, "ship_to")
	if !has {
		t.Fatal("record 0: ship_to left out")
	}
	zip, hz := get(ship.Message(), "zip")
	city, hc := get(ship.Message(), "city")
	want(0, "ship_to.zip", zip, hz, int32(75001))
	want(0, "ship_to.city", city, hc, "Paris")

	m = msgs[1]
	v, has := get(m, "id")
	want(1, "id", v, has, int64(9007199254740993))
	v, has = get(m, "paid")
	want(1, "paid", v, has, false)
	unset(1, m, "customer", "amount", "qty", "ship_to", "unit_price")

	m = msgs[2]
	v, has = get(m, "id")
	want(2, "id", v, has, int64(3))
	v, has = get(m, "unit_price")
	want(2, "unit_price", v, has, 2.5)
	if tags, _ := get(m, "tags"); tags.List().Len() != 0 {
		t.Errorf("record 2: tags %v, want none", tags)
	}

	for i := 3; i < n; i++ {
		m := msgs[i]
		v, has := get(m, "id")
		want(i, "id", v, has, int64(i+1))
		v, has = get(m, "customer")
		want(i, "customer", v, has, fmt.Sprintf("c%d", i+1))
		v, has = get(m, "qty")
		want(i, "qty", v, has, int32((i+1)%7))
		unset(i, m, "amount", "paid", "ship_to", "unit_price")
	}
}

// TestIngestTableSchema: the bare flag reads the table's schema from
// the workspace with the -token, the lines land as proto records of it,
// once and in order, and the state pins the descriptor: a rerun reads no
// schema. -table-schema=FILE with the same answer saved sends the same
// records.
func TestIngestTableSchema(t *testing.T) {
	ts, sargs := ucServer(t)
	ws := startUCWorkspace(t, ts.Token, ucOrders)
	dir := t.TempDir()
	const n = 40
	file := writeFile(t, dir, "orders.jsonl", orderLines(n)...)
	args := append(sargs, "-table-schema", "-workspace-url", ws.URL, "-batch-size", "6", file)
	if code, _, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	if gets, tokens := ws.gets.Load(), ws.tokens.Load(); gets != 1 || tokens != 0 {
		t.Fatalf("workspace saw %d schema requests and %d token requests, want 1 and 0", gets, tokens)
	}
	st := readState(t, file+".zbstate")
	if st.Format != formatTableProto || !st.Done || len(st.TableDescriptor) == 0 {
		t.Fatalf("state %+v", st)
	}
	m, err := ts.Stream(context.Background(), st.StreamID)
	if err != nil || !bytes.Equal(m.Descriptor, st.TableDescriptor) {
		t.Fatalf("the server's stream %+v, %v: want the descriptor the state pins", m, err)
	}
	checkOrders(t, decodeOrders(t, ts, st.StreamID), n)

	// Done: the rerun sends nothing and reads no schema.
	if code, out, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK || !strings.Contains(out, "already done") {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	if gets := ws.gets.Load(); gets != 1 {
		t.Fatalf("the rerun read the schema again (%d requests)", gets)
	}

	// The saved answer, into a stream of its own: the same records.
	schema := writeFile(t, dir, "orders.json", ucOrders)
	state2 := filepath.Join(dir, "second.zbstate")
	args2 := append(sargs, "-table-schema="+schema, "-state", state2, "-batch-size", "6", file)
	if code, _, _ := runIngestCmd(context.Background(), t, args2...); code != cli.ExitOK {
		t.Fatalf("from a file: exit %d", code)
	}
	st2 := readState(t, state2)
	if !bytes.Equal(st2.TableDescriptor, st.TableDescriptor) {
		t.Fatal("the descriptor made from the file differs from the workspace's")
	}
	// Compared as messages of one descriptor (the two are the same
	// bytes): record.JSONToProto does not fix the order of the fields in
	// the bytes.
	a, b := decodeOrders(t, ts, st.StreamID), stored(t, ts, st2.StreamID)
	if len(a) != len(b) {
		t.Fatalf("%d records from the workspace's schema, %d from the file's", len(a), len(b))
	}
	for i := range a {
		m := dynamicpb.NewMessage(a[i].Descriptor())
		if err := proto.Unmarshal(b[i], m); err != nil || !proto.Equal(a[i].Interface(), m) {
			t.Fatalf("record %d: %v from the workspace's schema, %v from the file's (%v)", i, a[i], m, err)
		}
	}
	if gets := ws.gets.Load(); gets != 1 {
		t.Fatalf("-table-schema=FILE asked the workspace (%d requests)", gets)
	}
}

// TestIngestTableSchemaPinned: a rerun of an ingestion under way goes on
// with the descriptor its stream was created with, even after the table's
// schema changed in a way the file's lines no longer fit (a new NOT NULL
// column): it reads no schema, whether the stream's id was saved or not,
// and a state file made without -table-schema is refused.
func TestIngestTableSchemaPinned(t *testing.T) {
	ts, sargs := ucServer(t)
	ws := startUCWorkspace(t, ts.Token, ucOrders)
	const n = 30
	file := writeFile(t, t.TempDir(), "orders.jsonl", orderLines(n)...)
	args := append(sargs, "-table-schema", "-workspace-url", ws.URL, "-batch-size", "10", file)
	if code, _, _ := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	st := readState(t, file+".zbstate")
	st.Done = false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	ws.answer.Store(ptr(strings.Replace(ucOrders, `"columns": [`,
		`"columns": [{"name": "region", "type_name": "STRING", "type_text": "string", "position": 8, "nullable": false},`, 1)))
	code, out, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "sent 0 records in 0 calls from watermark 2") {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	if gets := ws.gets.Load(); gets != 1 {
		t.Fatalf("the resume read the schema again (%d requests)", gets)
	}
	checkOrders(t, decodeOrders(t, ts, st.StreamID), n)

	// A state saved before the create's answer (a crash then): the rerun
	// creates again with the same request id and the pinned descriptor,
	// and gets the same stream back.
	st = readState(t, file+".zbstate")
	id := st.StreamID
	st.StreamID, st.Done = "", false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "sent 0 records in 0 calls from watermark 2") {
		t.Fatalf("re-create: exit %d: %s", code, out)
	}
	if got := readState(t, file+".zbstate").StreamID; got != id || streamCount(t, ts) != 1 {
		t.Fatalf("re-create gave stream %s, want %s (the server has %d)", got, id, streamCount(t, ts))
	}
	if gets := ws.gets.Load(); gets != 1 {
		t.Fatalf("the re-create read the schema again (%d requests)", gets)
	}

	// A state file of plain JSON lines is another ingestion.
	plain := writeLines(t, t.TempDir(), "plain.jsonl", 5)
	if code, _, _ := runIngestCmd(context.Background(), t, append(sargs, plain)...); code != cli.ExitOK {
		t.Fatalf("plain: exit %d", code)
	}
	code, _, errOut := runIngestCmd(context.Background(), t, append(sargs, "-table-schema", "-workspace-url", ws.URL, plain)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "was made for json-lines input") {
		t.Fatalf("plain state with -table-schema: exit %d: %s", code, errOut)
	}
	if gets := ws.gets.Load(); gets != 1 {
		t.Fatalf("the refused run read the schema (%d requests)", gets)
	}
}

// TestIngestTableSchemaRefusesLine: a line that does not fit the table
// (a column it lacks, a value of the wrong type, null or nothing for a NOT
// NULL column, at the top or in a struct) ends the run with FILE:LINE and
// the field, exit 3, before any stream is made; with -skip-invalid such
// lines are set aside and the others land.
func TestIngestTableSchemaRefusesLine(t *testing.T) {
	ts, sargs := ucServer(t)
	ws := startUCWorkspace(t, ts.Token, ucOrders)
	dir := t.TempDir()
	for _, tc := range []struct {
		line, msg string
	}{
		{`{"id":3,"colour":"red"}`, `field "colour": unknown field`},
		{`{"id":3,"qty":"many"}`, `field "qty": wrong type`},
		{`{"id":3,"qty":3000000000}`, `field "qty": wrong type`},
		{`{"id":null}`, `field "id": null not allowed`},
		{`{"customer":"bo"}`, `field "id": missing field`},
		{`{"id":3,"ship_to":{"city":"Oslo"}}`, `field "ship_to.zip": missing field`},
		{`{"id":3,"tags":["a",null]}`, `field "tags[1]": null not allowed`},
	} {
		file := writeFile(t, dir, "bad.jsonl", `{"id":1}`, `{"id":2}`, tc.line, `{"id":4}`)
		code, _, errOut := runIngestCmd(context.Background(), t, append(sargs, "-table-schema", "-workspace-url", ws.URL, file)...)
		if want := file + ":3: does not fit the table's schema: " + tc.msg; code != cli.ExitInput || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s", tc.line, code, cli.ExitInput, want, errOut)
		}
		if n := streamCount(t, ts); n != 0 {
			t.Fatalf("%s: %d streams made before the input was checked", tc.line, n)
		}
		if _, err := os.Stat(file + ".zbstate"); err == nil {
			t.Fatalf("%s: a state file was written", tc.line)
		}
	}

	file := writeFile(t, dir, "mixed.jsonl", `{"id":1}`, `{"id":2,"qty":"x"}`, `{"id":3}`, `{"nope":1,"id":4}`, `{"id":5}`)
	dead := filepath.Join(dir, "dead.jsonl")
	if code, _, _ := runIngestCmd(context.Background(), t, append(sargs, "-table-schema", "-workspace-url", ws.URL, "-skip-invalid", dead, file)...); code != cli.ExitOK {
		t.Fatalf("with -skip-invalid: exit %d", code)
	}
	st := readState(t, file+".zbstate")
	var ids []int64
	for _, m := range decodeOrders(t, ts, st.StreamID) {
		ids = append(ids, m.Get(m.Descriptor().Fields().ByName("id")).Int())
	}
	if fmt.Sprint(ids) != "[1 3 5]" {
		t.Fatalf("server holds ids %v, want [1 3 5]", ids)
	}
	dl := readDeadLetters(t, dead)
	if len(dl) != 2 || dl[0].Line != 2 || dl[1].Line != 4 || dl[0].Record != `{"id":2,"qty":"x"}` ||
		!strings.Contains(dl[1].Reason, `field "nope": unknown field`) {
		t.Fatalf("dead letters %+v", dl)
	}
}

// TestIngestTableSchemaReferenceServer: the schema read from the
// reference server itself (servertest.WithTables serves the table's
// definition as a workspace does, to the same -token), which then also
// checks the stream's descriptor and every record the command sends
// against the table's columns.
func TestIngestTableSchemaReferenceServer(t *testing.T) {
	schema, err := record.ParseTableSchema([]byte(ucOrders))
	if err != nil {
		t.Fatal(err)
	}
	ts := servertest.Start(t, servertest.WithTable(ucTable), servertest.WithTables(schema))
	const n = 12
	file := writeFile(t, t.TempDir(), "orders.jsonl", orderLines(n)...)
	args := append(serverArgs(ts), "-table-schema", "-workspace-url", ts.WorkspaceURL, "-batch-size", "5", file)
	if code, _, errs := runIngestCmd(context.Background(), t, args...); code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkOrders(t, decodeOrders(t, ts, readState(t, file+".zbstate").StreamID), n)
}
