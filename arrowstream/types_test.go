package arrowstream_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// wideSchema has a column of every primitive type the Zerobus type
// mapping knows, and nested struct and list columns, all nullable but
// the id.
var wideSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
	), Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

// wideBatch builds n rows of wideSchema from a JSON document written by
// hand: every third row's nullable columns are null.
func wideBatch(t *testing.T, n int) arrow.RecordBatch {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("[")
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		if i%3 == 2 {
			sb.WriteString(`{"id":` + strconv.Itoa(i) + `}`)
			continue
		}
		sb.WriteString(`{"id":` + strconv.Itoa(i) + `,"b":true,"i8":-7,"i16":300,"i32":-70000,"f32":1.5,"f64":-2.25,` +
			`"s":"row ` + strconv.Itoa(i) + `","bin":"AAEC","d":"2024-02-29","ts":"2024-02-29T12:00:00Z","ntz":"2024-02-29 12:00:00",` +
			`"dec":"123.456","st":{"x":` + strconv.Itoa(i) + `,"y":null},"l":[1,null,3],"m":[{"key":"k","value":1}]}`)
	}
	sb.WriteString("]")
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, wideSchema, strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Every type, split into frames and compressed, comes back from the
// frames the stream kept equal to what was ingested.
func TestEveryTypeRoundTrips(t *testing.T) {
	for _, c := range []arrowstream.Compression{arrowstream.CompressionNone, arrowstream.CompressionLZ4, arrowstream.CompressionZstd} {
		f := startServer(t, &fakeServer{script: func(conn, frame int) act { return act{} }}) // never acks
		ctx := testCtx(t)
		s, err := arrowstream.New(ctx, client(t, f), "main.default.wide", wideSchema,
			arrowstream.WithCompression(c), arrowstream.WithMaxFrameBytes(8192))
		if err != nil {
			t.Fatal(err)
		}
		rec := wideBatch(t, 60)
		if _, err := s.IngestBatch(ctx, rec); err != nil {
			t.Fatal(err)
		}
		closeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if err := s.Close(closeCtx); !errors.Is(err, zbstream.ErrCloseTimeout) {
			t.Fatalf("Close = %v", err)
		}
		cancel()
		u := s.Unacked()
		if len(u) != 1 || !array.RecordEqual(u[0], rec) {
			t.Fatalf("compression %d: Unacked differs from the batch ingested", c)
		}
		frames := f.counts().frames
		if c == arrowstream.CompressionNone && frames < 2 {
			t.Fatalf("%d frames, want the batch split", frames)
		}
		u[0].Release()
		rec.Release()
	}
}
