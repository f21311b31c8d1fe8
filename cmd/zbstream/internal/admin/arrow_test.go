package admin

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream/server/servertest"
)

// TestArrowPage: an Arrow stream's frames are shown as their rows, in
// column order, one RecordInfo per row at the frame's offset.
func TestArrowPage(t *testing.T) {
	ts := servertest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "ship", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, -2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a\"b", ""}, []bool{true, false})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{1.5, math.NaN()}, nil)
	lb := b.Field(3).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"x", "y"}, nil)
	lb.AppendNull()
	sb := b.Field(4).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.StringBuilder).Append("Lyon")
	sb.AppendNull()
	sb.FieldBuilder(0).(*array.StringBuilder).Append("")
	b.Field(5).(*array.BinaryBuilder).AppendValues([][]byte{{0, 1}, nil}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	acks, err := servertest.PutArrow(ts.Context(ctx), ts.Flight(t), schema, rec)
	want := []string{`{"ack_up_to_offset":-1,"ack_up_to_records":0}`, `{"ack_up_to_offset":0,"ack_up_to_records":2}`}
	if err != nil || !slices.Equal(acks, want) {
		t.Fatalf("acks %q, %v; want %q and OK", acks, err, want)
	}

	streams, err := ts.Streams(ctx)
	if err != nil || len(streams) != 1 {
		t.Fatalf("streams %v, %v", streams, err)
	}
	if info := ToStreamInfo(streams[0]); info.RecordType != "arrow" || info.Watermark != 0 || info.Records != 1 {
		t.Errorf("stream info %+v: want record_type arrow, watermark 0, 1 frame", info)
	}
	page, err := StoreReader{Store: ts.Store()}.Page(ctx, streams[0], 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(page.Records)
	if err != nil {
		t.Fatal(err)
	}
	wantPage := `[{"offset":0,"index":0,"json":{"id":1,"name":"a\"b","x":1.5,"tags":["x","y"],"ship":{"city":"Lyon"},"b":"AAE="}},` +
		`{"offset":0,"index":1,"json":{"id":-2,"name":null,"x":"NaN","tags":null,"ship":null,"b":null}}]`
	if string(got) != wantPage || page.Next != 1 {
		t.Errorf("page records\n%s\nwant\n%s\n(next %d, want 1)", got, wantPage, page.Next)
	}
}
