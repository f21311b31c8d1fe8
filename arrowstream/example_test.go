package arrowstream_test

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// A stream of Arrow record batches into one table: each batch gets an
// offset, Flush waits until all are acknowledged. The server here is the
// tests' small Flight DoPut server.
func Example() {
	srv := &fakeServer{}
	stop, err := srv.listen()
	if err != nil {
		panic(err)
	}
	defer stop()

	ctx := context.Background()
	client, err := zbstream.NewClient("http://"+srv.addr, zbstream.WithToken("token"))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	s, err := arrowstream.New(ctx, client, "main.default.people", schema,
		arrowstream.WithCompression(arrowstream.CompressionZstd))
	if err != nil {
		panic(err)
	}

	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ada", "", "grace"}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	off, err := s.IngestBatch(ctx, rec)
	rec.Release() // the stream keeps its own encoded copy
	if err != nil {
		panic(err)
	}
	if err := s.Flush(ctx); err != nil {
		panic(err)
	}
	if err := s.Close(ctx); err != nil {
		panic(err)
	}
	fmt.Println("batch", off, "durable; rows the server holds:", len(srv.idsReceived()))
	// Output: batch 0 durable; rows the server holds: 3
}
