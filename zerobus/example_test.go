package zerobus_test

// Programs of the official SDK's examples' shape (JSON and proto, one
// record at a time and in batches), run against a local workspace: the
// reference server and its OAuth token endpoint, in process. Against
// Databricks, the endpoint, workspace URL, credentials and table come from
// the environment, and the import line is the only change from a program
// written for the official SDK.

import (
	"fmt"
	"log"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/zbstream/zbstream/examples/proto/orderpb"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// Example_jsonSingle ingests JSON records one at a time and waits for each.
func Example_jsonSingle() {
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

	options := zerobus.DefaultStreamConfigurationOptions()
	options.RecordType = zerobus.RecordTypeJson

	stream, err := sdk.CreateStream(
		zerobus.TableProperties{TableName: testTable},
		testClientID,
		testClientSecret,
		options,
	)
	if err != nil {
		log.Fatalf("Failed to create stream: %v", err)
	}
	defer stream.Close()

	for i := 0; i < 3; i++ {
		data := fmt.Sprintf(`{"device_name": "sensor-001", "temp": %d, "humidity": %d}`, 20+i, 60+i)
		offset, err := stream.IngestRecordOffset(data)
		if err != nil {
			log.Fatalf("Failed to ingest record %d: %v", i, err)
		}
		if err := stream.WaitForOffset(offset); err != nil {
			log.Fatalf("Failed to wait for offset %d: %v", offset, err)
		}
		fmt.Printf("record %d acknowledged at offset %d\n", i, offset)
	}
	// Output:
	// record 0 acknowledged at offset 0
	// record 1 acknowledged at offset 1
	// record 2 acknowledged at offset 2
}

// Example_jsonBatch ingests JSON records in batches, one offset per batch,
// and flushes.
func Example_jsonBatch() {
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

	options := zerobus.DefaultStreamConfigurationOptions()
	options.RecordType = zerobus.RecordTypeJson
	stream, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, options)
	if err != nil {
		log.Fatalf("Failed to create stream: %v", err)
	}
	defer stream.Close()

	for b := 0; b < 2; b++ {
		batch := make([]interface{}, 0, 4)
		for i := 0; i < 4; i++ {
			batch = append(batch, fmt.Sprintf(`{"device_name": "sensor-%03d", "temp": %d}`, b*4+i, 20+i))
		}
		offset, err := stream.IngestRecordsOffset(batch)
		if err != nil {
			log.Fatalf("Failed to ingest batch %d: %v", b, err)
		}
		fmt.Printf("batch %d of %d records at offset %d\n", b, len(batch), offset)
	}
	if err := stream.Flush(); err != nil {
		log.Fatalf("Failed to flush: %v", err)
	}
	fmt.Println("all batches acknowledged")
	// Output:
	// batch 0 of 4 records at offset 0
	// batch 1 of 4 records at offset 1
	// all batches acknowledged
}

// orderDescriptor returns the serialized DescriptorProto of a generated
// message, as the official examples make it.
func orderDescriptor() []byte {
	fileDescProto := protodesc.ToFileDescriptorProto(orderpb.File_order_proto)
	descriptorBytes, err := proto.Marshal(fileDescProto.MessageType[0])
	if err != nil {
		log.Fatalf("Failed to marshal descriptor: %v", err)
	}
	return descriptorBytes
}

// Example_protoSingle ingests generated protobuf messages one at a time
// (the default record type) and waits for them.
func Example_protoSingle() {
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

	stream, err := sdk.CreateStream(
		zerobus.TableProperties{TableName: testTable, DescriptorProto: orderDescriptor()},
		testClientID,
		testClientSecret,
		zerobus.DefaultStreamConfigurationOptions(),
	)
	if err != nil {
		log.Fatalf("Failed to create stream: %v", err)
	}
	defer stream.Close()

	var offsets []int64
	for i := 0; i < 3; i++ {
		status := orderpb.Order_PLACED
		message := &orderpb.Order{
			Id:       proto.Int64(int64(i)),
			Customer: proto.String("acme"),
			Status:   &status,
			Lines:    []*orderpb.Order_Line{{Sku: proto.String("sku-1"), Quantity: proto.Int32(int32(i + 1))}},
		}
		data, err := proto.Marshal(message)
		if err != nil {
			log.Fatalf("Failed to marshal record %d: %v", i, err)
		}
		offset, err := stream.IngestRecordOffset(data)
		if err != nil {
			log.Fatalf("Failed to ingest record %d: %v", i, err)
		}
		offsets = append(offsets, offset)
	}
	for _, offset := range offsets {
		if err := stream.WaitForOffset(offset); err != nil {
			log.Fatalf("Failed to wait for offset %d: %v", offset, err)
		}
		fmt.Printf("record at offset %d acknowledged\n", offset)
	}
	// Output:
	// record at offset 0 acknowledged
	// record at offset 1 acknowledged
	// record at offset 2 acknowledged
}

// Example_protoBatch ingests generated protobuf messages in a batch and
// closes the stream, which flushes it.
func Example_protoBatch() {
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

	options := zerobus.DefaultStreamConfigurationOptions()
	options.RecordType = zerobus.RecordTypeProto
	stream, err := sdk.CreateStream(
		zerobus.TableProperties{TableName: testTable, DescriptorProto: orderDescriptor()},
		testClientID, testClientSecret, options,
	)
	if err != nil {
		log.Fatalf("Failed to create stream: %v", err)
	}

	batch := make([]interface{}, 0, 5)
	for i := 0; i < 5; i++ {
		data, err := proto.Marshal(&orderpb.Order{Id: proto.Int64(int64(i)), Customer: proto.String("acme")})
		if err != nil {
			log.Fatalf("Failed to marshal record %d: %v", i, err)
		}
		batch = append(batch, data)
	}
	offset, err := stream.IngestRecordsOffset(batch)
	if err != nil {
		log.Fatalf("Failed to ingest batch: %v", err)
	}
	if err := stream.Close(); err != nil {
		log.Fatalf("Failed to close stream: %v", err)
	}
	unacked, err := stream.GetUnackedRecords()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("batch of %d records at offset %d, %d unacknowledged\n", len(batch), offset, len(unacked))
	// Output:
	// batch of 5 records at offset 0, 0 unacknowledged
}
