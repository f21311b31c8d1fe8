package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// arrowStream returns the one Arrow stream the server holds.
func arrowStream(t *testing.T, ctx context.Context, ts *servertest.Server) server.StreamMeta {
	t.Helper()
	metas, err := ts.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found []server.StreamMeta
	for _, m := range metas {
		if m.RecordType == server.RecordTypeArrow {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d Arrow streams, want 1: %+v", len(found), metas)
	}
	return found[0]
}

// checkRecords checks that got are the batches want, and releases them.
func checkRecords(t *testing.T, schema *arrow.Schema, got, want []arrow.RecordBatch) {
	t.Helper()
	defer func() {
		for _, r := range got {
			r.Release()
		}
	}()
	if !schema.Equal(allTypes) {
		t.Errorf("schema read back %v, want %v", schema, allTypes)
	}
	if len(got) != len(want) {
		t.Fatalf("%d batches read back, want %d", len(got), len(want))
	}
	for i := range want {
		if !array.RecordEqual(got[i], want[i]) {
			t.Errorf("batch %d read back\n%v\nwant\n%v", i, got[i], want[i])
		}
	}
}

// TestArrowRoundTrip: batches of every type the Zerobus mapping knows,
// with nulls and nested columns, plain and with both IPC body
// compressions, are acknowledged frame by frame with the rows in all, and
// read back equal.
func TestArrowRoundTrip(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	st := openArrow(t, ts, ctx, allTypes)
	sent := []arrow.RecordBatch{allTypesRows(t, 0, 5), allTypesRows(t, 5, 1), allTypesRows(t, 6, 7)}
	defer func() {
		for _, r := range sent {
			r.Release()
		}
	}()
	compress := [][]ipc.Option{nil, {ipc.WithLZ4()}, {ipc.WithZstd()}}
	acks := []string{
		`{"ack_up_to_offset":0,"ack_up_to_records":5}`,
		`{"ack_up_to_offset":1,"ack_up_to_records":6}`,
		`{"ack_up_to_offset":2,"ack_up_to_records":13}`,
	}
	for i, rec := range sent {
		if err := st.Send(batchFrame(t, rec, offsetMeta(i), compress[i]...)); err != nil {
			t.Fatal(err)
		}
		expectAck(t, st, acks[i])
	}
	if err := expectEnd(t, st); err != nil {
		t.Fatalf("the call ended with %v, want OK", err)
	}
	m := arrowStream(t, ctx, ts)
	if m.Table != servertest.DefaultTable || m.Principal != "servertest" || m.Kind != server.KindEphemeral ||
		m.Watermark != 2 || m.Records != 3 || len(m.ArrowSchema) == 0 {
		t.Errorf("stream %+v: want table %s, principal servertest, ephemeral, watermark 2, 3 frames, a schema", m, servertest.DefaultTable)
	}
	schema, got, err := ts.ArrowRecords(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, schema, got, sent)
}

// TestArrowUnknownMetadataField: a field of app_metadata other than
// offset_id is ignored, so that clients may add some.
func TestArrowUnknownMetadataField(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	st := openArrow(t, ts, ctx, allTypes)
	rec := allTypesRows(t, 0, 2)
	defer rec.Release()
	if err := st.Send(batchFrame(t, rec, `{"note":{"a":[1]},"offset_id":0}`)); err != nil {
		t.Fatal(err)
	}
	expectAck(t, st, `{"ack_up_to_offset":0,"ack_up_to_records":2}`)
	if err := expectEnd(t, st); err != nil {
		t.Fatal(err)
	}
}

// TestArrowRefusals: each refused call ends with the status the other
// streams use for the same fault, after acknowledging the valid frames
// before the refused one.
func TestArrowRefusals(t *testing.T) {
	ts := startServer(t, servertest.WithPrincipal("other-token", server.Principal{Name: "other", Tables: []string{"main.default.other"}}))
	rec := allTypesRows(t, 0, 3)
	defer rec.Release()
	ready := `{"ack_up_to_offset":-1,"ack_up_to_records":0}`
	ack0 := `{"ack_up_to_offset":0,"ack_up_to_records":3}`
	schema := schemaFrame(allTypes)
	frame := func(meta string) *flight.FlightData { return batchFrame(t, rec, meta) }

	twoInts := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	oneInt := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	oneString := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.BinaryTypes.String}}, nil)
	batchOf := func(s *arrow.Schema, meta string) *flight.FlightData {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		for i := range s.NumFields() {
			switch fb := b.Field(i).(type) {
			case *array.Int64Builder:
				fb.Append(7)
			case *array.StringBuilder:
				fb.Append("seven")
			}
		}
		r := b.NewRecordBatch()
		defer r.Release()
		return batchFrame(t, r, meta)
	}
	big := func() *flight.FlightData {
		s := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.Binary}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		defer b.Release()
		b.Field(0).(*array.BinaryBuilder).Append(make([]byte, server.MaxArrowFrameBytes))
		r := b.NewRecordBatch()
		defer r.Release()
		return batchFrame(t, r, offsetMeta(0))
	}
	dict := arrow.NewSchema([]arrow.Field{{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}}}, nil)
	binSchema := arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.Binary}}, nil)

	withBody := schemaFrame(allTypes)
	withBody.DataBody = make([]byte, 8)
	withMeta := schemaFrame(allTypes)
	withMeta.AppMetadata = []byte(`{"offset_id":0}`)

	for _, tc := range []struct {
		name     string
		token    string // "" : the default token; "-": none
		table    string // "" : the default table; "-": no header
		frames   []*flight.FlightData
		wantAcks []string
		code     codes.Code
		why      string // in the status message
	}{
		{name: "no token", why: "missing authorization", token: "-", frames: []*flight.FlightData{schema}, code: codes.Unauthenticated},
		{name: "unknown token", why: "unknown bearer token", token: "nobody", frames: []*flight.FlightData{schema}, code: codes.Unauthenticated},
		{name: "table of another principal", why: "may not write", token: "other-token", frames: []*flight.FlightData{schema}, code: codes.PermissionDenied},
		{name: "table not granted", why: "may not write", table: "main.default.other", frames: []*flight.FlightData{schema}, code: codes.PermissionDenied},
		{name: "no table header", why: "missing x-databricks-zerobus-table-name", table: "-", frames: []*flight.FlightData{schema}, code: codes.InvalidArgument},
		{name: "table name not three parts", why: "not catalog.schema.table", table: "events", frames: []*flight.FlightData{schema}, code: codes.InvalidArgument},
		{name: "no first frame", why: "before its schema frame", code: codes.InvalidArgument},
		{name: "first frame a batch", why: "body", frames: []*flight.FlightData{frame("")}, code: codes.InvalidArgument},
		{name: "first frame a batch with offset", why: "body", frames: []*flight.FlightData{frame(offsetMeta(0))}, code: codes.InvalidArgument},
		{name: "first frame a batch header alone", why: "is not a schema", frames: []*flight.FlightData{{DataHeader: frame("").DataHeader}}, code: codes.InvalidArgument},
		{name: "first frame empty", why: "data_header is empty", frames: []*flight.FlightData{{}}, code: codes.InvalidArgument},
		{name: "first frame garbage", why: "not a valid flatbuffer", frames: []*flight.FlightData{{DataHeader: []byte("not a flatbuffer at all")}}, code: codes.InvalidArgument},
		{name: "schema with a body", why: "8-byte body", frames: []*flight.FlightData{withBody}, code: codes.InvalidArgument},
		{name: "schema with app_metadata", why: "it has app_metadata", frames: []*flight.FlightData{withMeta}, code: codes.InvalidArgument},
		{name: "dictionary column", why: "dictionary-encoded", frames: []*flight.FlightData{schemaFrame(dict)}, code: codes.InvalidArgument},
		{name: "no app_metadata", why: "it is empty", frames: []*flight.FlightData{schema, frame("")}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "empty object", why: "offset_id is missing", frames: []*flight.FlightData{schema, frame(`{}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "offset a string", why: "not a non-negative integer", frames: []*flight.FlightData{schema, frame(`{"offset_id":"0"}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "offset a float", why: "not a non-negative integer", frames: []*flight.FlightData{schema, frame(`{"offset_id":0.0}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "offset null", why: "not a non-negative integer", frames: []*flight.FlightData{schema, frame(`{"offset_id":null}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "offset negative", why: "not a non-negative integer", frames: []*flight.FlightData{schema, frame(`{"offset_id":-1}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "offset twice", why: "appears twice", frames: []*flight.FlightData{schema, frame(`{"offset_id":0,"offset_id":0}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "trailing data", why: "data after the object", frames: []*flight.FlightData{schema, frame(`{"offset_id":0} {}`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "not an object", why: "not a JSON object", frames: []*flight.FlightData{schema, frame(`[0]`)}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "first offset 1", why: "offset_id 1 is not the next expected offset 0", frames: []*flight.FlightData{schema, frame(offsetMeta(1))}, wantAcks: []string{ready}, code: codes.OutOfRange},
		{name: "offset gap", why: "offset_id 2 is not the next expected offset 1", frames: []*flight.FlightData{schema, frame(offsetMeta(0)), frame(offsetMeta(2))}, wantAcks: []string{ready, ack0}, code: codes.OutOfRange},
		{name: "offset repeated", why: "offset_id 0 is not the next expected offset 1", frames: []*flight.FlightData{schema, frame(offsetMeta(0)), frame(offsetMeta(0))}, wantAcks: []string{ready, ack0}, code: codes.OutOfRange},
		{name: "a second schema", why: "not a record batch", frames: []*flight.FlightData{schema, frame(offsetMeta(0)), withOffset(schemaFrame(allTypes), 1)}, wantAcks: []string{ready, ack0}, code: codes.InvalidArgument},
		{name: "batch with a column more", why: "2 field nodes, the schema has 1", frames: []*flight.FlightData{schemaFrame(oneInt), batchOf(twoInts, offsetMeta(0))}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "batch with a column less", why: "1 field nodes, the schema has 2", frames: []*flight.FlightData{schemaFrame(twoInts), batchOf(oneInt, offsetMeta(0))}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "string batch for an integer column", why: "3 buffers, the schema's batches have 2", frames: []*flight.FlightData{schemaFrame(oneInt), batchOf(oneString, offsetMeta(0))}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "integer batch for a string column", why: "2 buffers, the schema's batches have 3", frames: []*flight.FlightData{schemaFrame(oneString), batchOf(oneInt, offsetMeta(0))}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "frame over 2 MiB", why: "exceed the 2097152-byte frame limit", frames: []*flight.FlightData{schemaFrame(binSchema), big()}, wantAcks: []string{ready}, code: codes.InvalidArgument},
		{name: "truncated body", why: "announces a", frames: []*flight.FlightData{schema, func() *flight.FlightData {
			fd := frame(offsetMeta(0))
			fd.DataBody = fd.DataBody[:len(fd.DataBody)-8]
			return fd
		}()}, wantAcks: []string{ready}, code: codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token, table := ts.Token, ts.Table
			switch tc.token {
			case "-":
				token = ""
			case "":
			default:
				token = tc.token
			}
			switch tc.table {
			case "-":
				table = ""
			case "":
			default:
				table = tc.table
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			acks, err := servertest.PutFrames(servertest.OutgoingContext(ctx, token, table), ts.Flight(t), tc.frames...)
			expectCode(t, err, tc.code)
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.why) {
				t.Errorf("status message %q, want it to say %q", msg, tc.why)
			}
			if !slices.Equal(acks, tc.wantAcks) {
				t.Errorf("acks %q, want %q", acks, tc.wantAcks)
			}
		})
	}
}

// withOffset gives fd the app_metadata of frame off.
func withOffset(fd *flight.FlightData, off int) *flight.FlightData {
	fd.AppMetadata = []byte(offsetMeta(off))
	return fd
}

// TestArrowBoltReopen: an Arrow stream's frames are durable: a bolt store
// opened again reads them back equal.
func TestArrowBoltReopen(t *testing.T) {
	dir := t.TempDir()
	st, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := servertest.Start(t, servertest.WithStore(st))
	ctx := arrowCtx(t, ts)
	call := openArrow(t, ts, ctx, allTypes)
	sent := []arrow.RecordBatch{allTypesRows(t, 0, 4), allTypesRows(t, 4, 9)}
	defer func() {
		for _, r := range sent {
			r.Release()
		}
	}()
	for i, rec := range sent {
		if err := call.Send(batchFrame(t, rec, offsetMeta(i))); err != nil {
			t.Fatal(err)
		}
	}
	expectAckThrough(t, call, 1, 13)
	id := arrowStream(t, ctx, ts).ID
	ts.Stop()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	again, err := server.OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	m, err := again.Stream(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := again.Records(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	schema, got, err := server.DecodeArrow(m, batches)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, schema, got, sent)
}

// expectAckThrough reads acks until one covers frame off, which must then
// count rows: frames sent back to back may be acknowledged together.
func expectAckThrough(t *testing.T, st flight.FlightService_DoPutClient, off, rows int64) {
	t.Helper()
	want := fmt.Sprintf(`{"ack_up_to_offset":%d,"ack_up_to_records":%d}`, off, rows)
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatalf("waiting for %s: %v", want, err)
		}
		if string(r.AppMetadata) == want {
			return
		}
	}
}

// TestArrowTableDefinition: on a table with a definition (id BIGINT NOT
// NULL, name STRING, amount DOUBLE, tags ARRAY<STRING>, ship
// STRUCT<city STRING NOT NULL, zip INT>), a schema that fits is ready and
// one that does not is refused at the schema frame, naming the field.
func TestArrowTableDefinition(t *testing.T) {
	ts := startServer(t, servertest.WithTables(eventsTable(t)))
	fits := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "ship", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}), Nullable: true},
	}, nil)
	st := openArrow(t, ts, arrowCtx(t, ts), fits)
	if err := expectEnd(t, st); err != nil {
		t.Fatal(err)
	}
	nullableID := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	acks, err := servertest.PutFrames(arrowCtx(t, ts), ts.Flight(t), schemaFrame(nullableID))
	expectCode(t, err, codes.InvalidArgument)
	if msg := status.Convert(err).Message(); len(acks) != 0 || !strings.Contains(msg, `field "id"`) || !strings.Contains(msg, "NOT NULL") {
		t.Errorf("acks %q, status %q: want no ack and a refusal of field id", acks, msg)
	}
}

// TestArrowPrincipalCap: DoPut calls count against the principal's cap on
// concurrent calls, with the stream RPCs'.
func TestArrowPrincipalCap(t *testing.T) {
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.MaxConnectionsPerPrincipal = 1 }))
	ctx := arrowCtx(t, ts)
	st := openArrow(t, ts, ctx, allTypes)
	acks, err := servertest.PutFrames(ctx, ts.Flight(t), schemaFrame(allTypes))
	expectCode(t, err, codes.ResourceExhausted)
	if len(acks) != 0 {
		t.Errorf("acks %q on a call over the cap", acks)
	}
	if err := expectEnd(t, st); err != nil {
		t.Fatal(err)
	}
}

// TestArrowGracefulStop: a server stopping ends an open Arrow call with
// UNAVAILABLE, what it acknowledged stored.
func TestArrowGracefulStop(t *testing.T) {
	store := newTestStore(t) // not closed by the server's stop
	ts := servertest.Start(t, servertest.WithStore(store))
	ctx := arrowCtx(t, ts)
	st := openArrow(t, ts, ctx, allTypes)
	rec := allTypesRows(t, 0, 4)
	defer rec.Release()
	if err := st.Send(batchFrame(t, rec, offsetMeta(0))); err != nil {
		t.Fatal(err)
	}
	expectAck(t, st, `{"ack_up_to_offset":0,"ack_up_to_records":4}`)
	id := arrowStream(t, ctx, ts).ID
	ts.GracefulStop()
	_, err := st.Recv()
	expectCode(t, err, codes.Unavailable)
	if msg := status.Convert(err).Message(); msg != "server shutting down" {
		t.Errorf("status message %q, want server shutting down", msg)
	}
	batches, err := store.Records(ctx, id)
	if err != nil || len(batches) != 1 || batches[0].Offset != 0 {
		t.Fatalf("stored %d batches, %v; want frame 0", len(batches), err)
	}
}
