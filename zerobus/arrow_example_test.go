//go:build arrow

package zerobus_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// Example_arrow ingests Arrow record batches, as the official SDK's Arrow
// example does: the schema and each batch as Arrow IPC stream bytes, no
// wait per batch, one Flush. Build with -tags arrow.
func Example_arrow() {
	l, err := startLocal()
	if err != nil {
		log.Fatal(err)
	}
	defer l.stop()

	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		log.Fatalf("Failed to create SDK: %v", err)
	}
	defer sdk.Free()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "device_name", Type: arrow.BinaryTypes.String},
		{Name: "temperature", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	var schemaIPC bytes.Buffer
	if err := ipc.NewWriter(&schemaIPC, ipc.WithSchema(schema)).Close(); err != nil {
		log.Fatal(err)
	}

	stream, err := sdk.CreateArrowStream(testTable, schemaIPC.Bytes(), testClientID, testClientSecret,
		zerobus.DefaultArrowStreamConfigurationOptions())
	if err != nil {
		log.Fatalf("Failed to create Arrow stream: %v", err)
	}
	defer stream.Close()

	for i, temps := range [][]float64{{22.5, 21.0}, {23.1}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for _, temp := range temps {
			b.Field(0).(*array.StringBuilder).Append("sensor-001")
			b.Field(1).(*array.Float64Builder).Append(temp)
		}
		rec := b.NewRecordBatch()
		var batch bytes.Buffer
		w := ipc.NewWriter(&batch, ipc.WithSchema(schema))
		if err := w.Write(rec); err != nil {
			log.Fatal(err)
		}
		if err := w.Close(); err != nil {
			log.Fatal(err)
		}
		rec.Release()
		b.Release()

		offset, err := stream.IngestBatch(batch.Bytes())
		if err != nil {
			log.Fatalf("Batch %d failed: %v", i, err)
		}
		fmt.Printf("batch %d (%d rows) queued at offset %d\n", i, len(temps), offset)
	}
	if err := stream.Flush(); err != nil {
		log.Fatalf("Flush failed: %v", err)
	}
	fmt.Println("all batches acknowledged")
	// Output:
	// batch 0 (2 rows) queued at offset 0
	// batch 1 (1 rows) queued at offset 1
	// all batches acknowledged
}
