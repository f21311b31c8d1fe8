package ingest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// mixedSchema has a column of many kinds, most of them nullable.
var mixedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
	{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "point", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
}, nil)

// mixedBatch is rows first .. first+n-1 of the mixed schema, a null now
// and then in every nullable column.
func mixedBatch(first, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, mixedSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		null := func(k int64) bool { return (i+k)%7 == 0 }
		b.Field(0).(*array.Int64Builder).Append(i)
		for c := 1; c < len(b.Fields()); c++ {
			if null(int64(c)) {
				b.Field(c).AppendNull()
				continue
			}
			switch fb := b.Field(c).(type) {
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("name %d é", i))
			case *array.Float64Builder:
				fb.Append(float64(i) / 4)
			case *array.BooleanBuilder:
				fb.Append(i%2 == 0)
			case *array.Int8Builder:
				fb.Append(int8(i % 100))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(19000 + i%1000))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(1_700_000_000_000_000 + i*1000))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(i*100 + 7))
			case *array.BinaryBuilder:
				fb.Append([]byte{byte(i), 0, byte(i >> 8)})
			case *array.ListBuilder:
				fb.Append(true)
				vb := fb.ValueBuilder().(*array.StringBuilder)
				for k := range i % 3 {
					vb.Append(fmt.Sprintf("t%d", k))
				}
			case *array.StructBuilder:
				fb.Append(true)
				fb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
				if i%5 == 0 {
					fb.FieldBuilder(1).AppendNull()
				} else {
					fb.FieldBuilder(1).(*array.Int32Builder).Append(int32(-i))
				}
			}
		}
	}
	return b.NewRecordBatch()
}

// idSchema is the schema of the big files: an id and a name made from it.
var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func idName(id int64) string { return fmt.Sprintf("row %d", id) }

// idBatch is rows first .. first+n-1 of idSchema.
func idBatch(first, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, idSchema)
	defer b.Release()
	ids, names := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.StringBuilder)
	ids.Reserve(int(n))
	for id := first; id < first+n; id++ {
		ids.UnsafeAppend(id)
		names.Append(idName(id))
	}
	return b.NewRecordBatch()
}

// batchSizes are the sizes of the batches test files are written in:
// uneven, so that the sender both slices and concatenates them.
var batchSizes = []int64{7, 300, 1, 50, 129, 13}

// writeBatches calls write with batches of make, rows 0 .. rows-1, in
// batches of the sizes batchSizes cycles through.
func writeBatches(t *testing.T, rows int64, make func(first, n int64) arrow.RecordBatch, write func(arrow.RecordBatch) error) {
	t.Helper()
	for at, i := int64(0), 0; at < rows; i++ {
		n := min(batchSizes[i%len(batchSizes)], rows-at)
		rec := make(at, n)
		err := write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		at += n
	}
}

// writeIPCStream writes rows rows of make as an Arrow IPC stream file.
func writeIPCStream(t *testing.T, path string, schema *arrow.Schema, rows int64, make func(first, n int64) arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(schema))
	writeBatches(t, rows, make, w.Write)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeIPCFile writes rows rows of make as an Arrow IPC file (the file
// format, "ARROW1").
func writeIPCFile(t *testing.T, path string, schema *arrow.Schema, rows int64, make func(first, n int64) arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	writeBatches(t, rows, make, w.Write)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeParquet writes rows rows of idSchema as a Parquet file, in row
// groups of at most group rows, from batches of 64 Ki rows.
func writeParquet(t testing.TB, path string, rows, group int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(group), parquet.WithAllocator(memory.DefaultAllocator))
	w, err := pqarrow.NewFileWriter(idSchema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for at := int64(0); at < rows; at += 1 << 16 {
		rec := idBatch(at, min(1<<16, rows-at))
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// jsonRows renders batches as one JSON object a row.
func jsonRows(t testing.TB, recs []arrow.RecordBatch) []string {
	t.Helper()
	var out []string
	for _, rec := range recs {
		var b bytes.Buffer
		if err := array.RecordToJSON(rec, &b); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&b)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
	}
	return out
}

// arrowStreams returns the ids of the server's Arrow streams (one per
// DoPut call), in no particular order.
func arrowStreams(t testing.TB, ts *servertest.Server) []string {
	t.Helper()
	ss, err := ts.Streams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range ss {
		if s.RecordType == server.RecordTypeArrow {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// arrowRows returns the rows the server holds in the Arrow streams ids,
// in order, as JSON objects.
func arrowRows(t testing.TB, ts *servertest.Server, ids ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		_, recs, err := ts.ArrowRecords(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, jsonRows(t, recs)...)
		for _, r := range recs {
			r.Release()
		}
	}
	return out
}

// eachStoredID calls f with the id of every row of the Arrow streams
// ids, one stream's batches decoded at a time.
func eachStoredID(t testing.TB, ts *servertest.Server, ids []string, f func(id int64)) {
	t.Helper()
	for _, sid := range ids {
		_, recs, err := ts.ArrowRecords(context.Background(), sid)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			col := rec.Column(0).(*array.Int64)
			for i := range col.Len() {
				f(col.Value(i))
			}
			rec.Release()
		}
	}
}

// receivedRows sums the rows the server received on the Arrow streams
// ids (server.ArrowCounts): what was sent, resends included.
func receivedRows(t testing.TB, ts *servertest.Server, ids []string) int64 {
	t.Helper()
	var n int64
	for _, id := range ids {
		c, ok := ts.ArrowCounts(id)
		if !ok {
			t.Fatalf("no counts for Arrow stream %s", id)
		}
		n += c.RowsReceived
	}
	return n
}

// fileRows reads an Arrow IPC stream or file as JSON objects, one a row.
func fileRows(t *testing.T, path string) []string {
	t.Helper()
	in, err := openArrowInput(context.Background(), path, formatArrowIPC, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	r, err := in.records(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var out []string
	for r.Next() {
		out = append(out, jsonRows(t, []arrow.RecordBatch{r.RecordBatch()})...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// arrowArgs are the flags of an Arrow ingestion into ts's table.
func arrowArgs(ts *servertest.Server, format string, more ...string) []string {
	return append(append(serverArgs(ts), "-format", format, "-progress", "0"), more...)
}

// wantIn fails unless s contains every one of subs.
func wantIn(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not say %q:\n%s", what, sub, s)
		}
	}
}

// testTimeout bounds a test's runs of the command.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// tempFile is name in a new temporary directory.
func tempFile(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }
