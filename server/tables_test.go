package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// eventsTable is testdata/tables/events.json, the definition of
// servertest's default table: id BIGINT NOT NULL, name STRING, amount
// DOUBLE, tags ARRAY<STRING>, ship STRUCT<city STRING NOT NULL, zip INT>.
func eventsTable(t testing.TB) *record.TableSchema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tables", "events.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := record.ParseTableSchema(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadTables(t *testing.T) {
	dir := filepath.Join("testdata", "tables")
	tables, err := server.LoadTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"main.default.clicks", "main.default.events", "ops.logs.lines", "ops.logs.metrics"}
	if got := tables.Names(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
	one, err := server.LoadTables(filepath.Join(dir, "events.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := one.Schema("main.default.events")
	if !ok || len(s.Columns) != 5 || s.Columns[0].Name != "id" || s.Columns[0].Nullable || !s.Columns[1].Nullable {
		t.Fatalf("Schema = %+v, %v", s, ok)
	}
	s.Columns[0].Name = "changed" // the caller's copy
	if s2, _ := one.Schema("main.default.events"); s2.Columns[0].Name != "id" {
		t.Fatal("Schema handed out the server's own columns")
	}
	if _, ok := one.Schema("main.default.clicks"); ok {
		t.Fatal("a table of another file is defined")
	}
}

func TestLoadTablesRefusals(t *testing.T) {
	col := `{"name":"a","type_name":"STRING","position":0}`
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not JSON", `{"full_name":`, "not JSON"},
		{"no columns", `{"full_name":"a.b.c","columns":[]}`, "no columns"},
		{"no name", `{"columns":[` + col + `]}`, "no full_name"},
		{"two-part name", `{"full_name":"a.b","columns":[` + col + `]}`, "not catalog.schema.table"},
		{"names disagree", `{"full_name":"a.b.c","name":"d","columns":[` + col + `]}`, `does not match name "d"`},
		{"twice", `{"full_name":"a.b.c","columns":[` + col + `]}{"catalog_name":"a","schema_name":"b","name":"c","columns":[` + col + `]}`, "defined twice"},
		{"unmapped type", `{"full_name":"a.b.c","columns":[{"name":"a","type_name":"INTERVAL","position":0}]}`, `column "a"`},
		{"empty file", ``, "no table definition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := server.LoadTables(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadTables = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := server.LoadTables(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no *.json") {
		t.Fatalf("empty directory: %v", err)
	}
	if _, err := server.LoadTables(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing path: %v", err)
	}
	var se *record.SchemaError
	_, err := server.NewTables(&record.TableSchema{FullName: "a.b.c", Columns: []record.Column{{Name: "x", TypeName: "INTERVAL"}}})
	if !errors.As(err, &se) || se.Column != "x" {
		t.Fatalf("NewTables with an unmapped column: %v, want a *record.SchemaError for x", err)
	}
}

// TestTableJSONRecords: a JSON record that does not fit its table's
// columns ends the stream with INVALID_ARGUMENT naming the field; what
// came before it is kept, and after a resume the rest lands, each record
// once.
func TestTableJSONRecords(t *testing.T) {
	ts := servertest.Start(t, servertest.WithTables(eventsTable(t)))
	c := ts.Client(t)
	good := []string{
		`{"id": 1, "name": "a", "amount": 1.5, "tags": ["x", "y"], "ship": {"city": "Lyon", "zip": 69001}}`,
		`{"id": "2"}`,
		`{"id": 3, "name": null, "ship": {"city": "Oslo"}}`,
	}
	for _, tc := range []struct {
		name, bad string
		want      []string
	}{
		{"unknown column", `{"id": 9, "colour": "red"}`, []string{"colour"}},
		{"wrong type", `{"id": 9, "amount": "much"}`, []string{"amount"}},
		{"null in a NOT NULL column", `{"id": null}`, []string{"id"}},
		{"missing NOT NULL column", `{"name": "x"}`, []string{"id"}},
		{"NOT NULL field of a struct", `{"id": 9, "ship": {"zip": 1}}`, []string{"ship.city"}},
		{"wrong element type", `{"id": 9, "tags": ["a", 2]}`, []string{"tags"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, id := pcreate(t, ts, c, "")
			pjson(t, st, 0, good[0])
			pjson(t, st, 1, good[1:]...) // a batch: one offset
			pwaitAck(t, st, 1)
			pjson(t, st, 2, good[0], tc.bad) // the whole batch is refused
			_, err := pend(t, st)
			wantMessage(t, err, codes.InvalidArgument, append([]string{"record 1 of the batch"}, tc.want...)...)

			st, wm := presume(t, ts, c, id)
			if wm == nil || *wm != 1 {
				t.Fatalf("watermark after the refusal = %v, want 1", wm)
			}
			pjson(t, st, 2, good[2])
			pwaitAck(t, st, 2)
			var got []string
			for _, b := range storedRecords(t, ts, id) {
				for _, r := range b.Records {
					got = append(got, string(r))
				}
			}
			if want := append(append([]string{}, good...), good[2]); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("stored %q, want %q", got, want)
			}
		})
	}
}

// TestTableProtoFit: a proto stream whose descriptor does not fit the
// table is refused at create, with the reason; the table's own descriptor
// fits, and a record without a NOT NULL column is refused.
func TestTableProtoFit(t *testing.T) {
	ts := servertest.Start(t, servertest.WithTables(eventsTable(t)))
	c := ts.Client(t)

	// eventDescriptor has name (a STRING column: fits) and n (no such
	// column).
	st := openPersistent(t, c, callCtx(t, ts))
	psend(t, st, pcreateReq(protoCreate(ts.Table, mustMarshal(t, eventDescriptor()))))
	_, err := st.Recv()
	wantMessage(t, err, codes.InvalidArgument, "does not fit table main.default.events", `"n"`)

	wrongType := &descriptorpb.DescriptorProto{Name: proto.String("E"), Field: []*descriptorpb.FieldDescriptorProto{
		{Name: proto.String("id"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
	}}
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, pcreateReq(protoCreate(ts.Table, mustMarshal(t, wrongType))))
	_, err = st.Recv()
	wantMessage(t, err, codes.InvalidArgument, "does not fit", `"id"`)

	dp, err := eventsTable(t).Descriptor()
	if err != nil {
		t.Fatal(err)
	}
	raw := mustMarshal(t, dp)
	md, err := record.MessageDescriptor(raw)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id int64, name string) []byte {
		m := dynamicpb.NewMessage(md)
		if id >= 0 {
			m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(id))
		}
		m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(name))
		b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	st = openPersistent(t, c, callCtx(t, ts))
	psend(t, st, pcreateReq(protoCreate(ts.Table, raw)))
	r, err := st.Recv()
	if err != nil || r.GetCreateStreamResponse().GetStreamId() == "" {
		t.Fatalf("create with the table's own descriptor: %v %v", r, err)
	}
	pproto(t, st, 0, rec(1, "a"), rec(2, "b"))
	pwaitAck(t, st, 0)
	pproto(t, st, 1, rec(-1, "no id"))
	_, err = pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "id")
}

// TestTableAvroFit: an Avro stream's schema must fit the table at create.
func TestTableAvroFit(t *testing.T) {
	ts := servertest.Start(t, servertest.WithTables(eventsTable(t)))
	c := ts.Client(t)
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"unknown field", `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"colour","type":"string"}]}`, "colour"},
		{"nullable NOT NULL column", `{"type":"record","name":"E","fields":[{"name":"id","type":["null","long"]}]}`, "id"},
		{"missing NOT NULL column", `{"type":"record","name":"E","fields":[{"name":"name","type":"string"}]}`, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openPersistent(t, c, callCtx(t, ts))
			psend(t, st, pcreateReq(avroCreate(ts.Table, tc.schema)))
			_, err := st.Recv()
			wantMessage(t, err, codes.InvalidArgument, "does not fit table", tc.want)
		})
	}
	fits := `{"type":"record","name":"E","fields":[{"name":"id","type":"long"},{"name":"name","type":["null","string"]}]}`
	st, id := pcreateAvro(t, ts, c, "", fits)
	pavro(t, st, 0, []byte{0x02, 0x02, 0x02, 'a'}) // id 1, name "a"
	pwaitAck(t, st, 0)
	if bs := storedRecords(t, ts, id); len(bs) != 1 {
		t.Fatalf("stored %v", bs)
	}
}

// TestTableWithoutDefinition: another table takes any JSON object, as
// without -tables.
func TestTableWithoutDefinition(t *testing.T) {
	ts := servertest.Start(t, servertest.WithTables(eventsTable(t)), servertest.WithTable("main.default.free"))
	c := ts.Client(t)
	st, _ := pcreate(t, ts, c, "")
	pjson(t, st, 0, `{"anything": [1, "two"]}`)
	pwaitAck(t, st, 0)
}

// TestTableResumeAfterDefinitionChange: a stream created before its table
// got a definition it does not fit cannot resume.
func TestTableResumeAfterDefinitionChange(t *testing.T) {
	store := server.NewMemoryStore()
	t.Cleanup(func() { store.Close() })
	before := servertest.Start(t, servertest.WithStore(store))
	st, id := pcreate(t, before, before.Client(t), "")
	pjson(t, st, 0, `{"colour": "red"}`)
	pwaitAck(t, st, 0)
	_ = st.CloseSend()
	_, _ = pend(t, st)

	after := servertest.Start(t, servertest.WithStore(store), servertest.WithTables(eventsTable(t)), servertest.WithToken(before.Token))
	st = openPersistent(t, after.Client(t), callCtx(t, after))
	psend(t, st, presumeReq(id, ingestpb.RecordType_JSON, nil))
	// A JSON stream fits any table: its records are what is checked.
	r, err := st.Recv()
	if err != nil || r.GetResumeStreamResponse() == nil {
		t.Fatalf("resume: %v %v", r, err)
	}
	pjson(t, st, 1, `{"colour": "blue"}`)
	_, err = pend(t, st)
	wantMessage(t, err, codes.InvalidArgument, "colour")
}
