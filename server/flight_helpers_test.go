package server_test

// Arrow frames for the DoPut tests (servertest.SchemaFrame, BatchFrame),
// with the app_metadata each test chooses, and the calls that send them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/server/servertest"
)

// allTypes is a schema with every Arrow type the Zerobus mapping knows,
// nested struct and list columns, nullable and not.
var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "city", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

// allTypesRows is a batch of allTypes: row i of n, every nullable column
// null in the rows where i%3 == 2.
func allTypesRows(t testing.TB, first, n int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, allTypes)
	defer b.Release()
	for i := first; i < first+n; i++ {
		null := i%3 == 2
		for c := range allTypes.Fields() {
			fb := b.Field(c)
			if null && allTypes.Field(c).Nullable {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int8Builder:
				fb.Append(int8(i - 100))
			case *array.Int16Builder:
				fb.Append(int16(i * -300))
			case *array.Int32Builder:
				fb.Append(int32(i * 70000))
			case *array.Int64Builder:
				fb.Append(int64(i) << 40)
			case *array.Float32Builder:
				fb.Append(float32(i) / 4)
			case *array.Float64Builder:
				fb.Append(float64(i) * 1.5e300)
			case *array.BooleanBuilder:
				fb.Append(i%2 == 0)
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("row %d: é€", i))
			case *array.BinaryBuilder:
				fb.Append([]byte{byte(i), 0, 0xff})
			case *array.Date32Builder:
				fb.Append(arrow.Date32(19000 + i))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
			case *array.StructBuilder:
				fb.Append(true)
				fb.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("city %d", i))
				if i%2 == 0 {
					fb.FieldBuilder(1).(*array.Int32Builder).AppendNull()
				} else {
					fb.FieldBuilder(1).(*array.Int32Builder).Append(int32(10000 + i))
				}
			case *array.ListBuilder:
				fb.Append(true)
				vb := fb.ValueBuilder().(*array.StringBuilder)
				for k := range i % 4 {
					vb.Append(fmt.Sprintf("t%d", k))
				}
			default:
				t.Fatalf("no value for column %d (%T)", c, fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// schemaFrame is the schema FlightData of schema.
func schemaFrame(schema *arrow.Schema) *flight.FlightData { return servertest.SchemaFrame(schema) }

// batchFrame is the FlightData of rec with appMeta ("": none).
func batchFrame(t testing.TB, rec arrow.RecordBatch, appMeta string, opts ...ipc.Option) *flight.FlightData {
	t.Helper()
	fd, err := servertest.BatchFrame(rec, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	fd.AppMetadata = nil
	if appMeta != "" {
		fd.AppMetadata = []byte(appMeta)
	}
	return fd
}

// offsetMeta is a data frame's app_metadata.
func offsetMeta(off int) string { return fmt.Sprintf(`{"offset_id":%d}`, off) }

// doPut starts a DoPut call on ts with ctx's metadata.
func doPut(t *testing.T, ts *servertest.Server, ctx context.Context) flight.FlightService_DoPutClient {
	t.Helper()
	st, err := ts.Flight(t).DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// arrowCtx is a call context with ts's token and table, bounded so that a
// hung call fails the test instead of the run.
func arrowCtx(t *testing.T, ts *servertest.Server) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ts.Context(ctx)
}

// openArrow starts an Arrow stream of schema and checks the ready signal.
func openArrow(t *testing.T, ts *servertest.Server, ctx context.Context, schema *arrow.Schema) flight.FlightService_DoPutClient {
	t.Helper()
	st := doPut(t, ts, ctx)
	if err := st.Send(schemaFrame(schema)); err != nil {
		t.Fatal(err)
	}
	expectAck(t, st, `{"ack_up_to_offset":-1,"ack_up_to_records":0}`)
	return st
}

// expectAck receives one PutResult and checks its app_metadata exactly.
func expectAck(t *testing.T, st flight.FlightService_DoPutClient, want string) {
	t.Helper()
	r, err := st.Recv()
	if err != nil {
		t.Fatalf("waiting for %s: %v", want, err)
	}
	if got := string(r.AppMetadata); got != want {
		t.Fatalf("ack %s, want %s", got, want)
	}
}

// expectEnd half-closes the call and reads until it ends: nil for status
// OK, else the status (PutResults before the end are skipped).
func expectEnd(t *testing.T, st flight.FlightService_DoPutClient) error {
	t.Helper()
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// expectCode checks that err is a status with code.
func expectCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("status %v, want %v", err, code)
	}
}
