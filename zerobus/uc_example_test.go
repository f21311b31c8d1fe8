package zerobus_test

import (
	"fmt"
	"log"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// A proto stream without generated code, as the official SDK's dynamic
// example makes one: the table's columns become a message descriptor (for
// dynamicpb) and its bytes (for the stream). Here the columns are written
// out; decoded from the Unity Catalog tables API's answer, a
// UcTableSchema gives them, and MessageDescriptorFromUcSchema the rest.
func ExampleMessageDescriptorFromUcColumns() {
	l, err := startLocal()
	if err != nil {
		log.Fatal(err)
	}
	defer l.stop()

	columns := []zerobus.UcColumn{
		{Name: "device_name", TypeName: "STRING", Nullable: true, Position: 0},
		{Name: "temp", TypeName: "INT", Nullable: false, Position: 1},
		{Name: "humidity", TypeName: "BIGINT", Nullable: true, Position: 2},
	}
	msgDesc, descriptorBytes, err := zerobus.MessageDescriptorFromUcColumns(columns, "SensorReading")
	if err != nil {
		log.Fatalf("Failed to build descriptor: %v", err)
	}

	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		log.Fatalf("Failed to create SDK: %v", err)
	}
	defer sdk.Free()
	stream, err := sdk.CreateStream(
		zerobus.TableProperties{TableName: testTable, DescriptorProto: descriptorBytes},
		testClientID,
		testClientSecret,
		zerobus.DefaultStreamConfigurationOptions(),
	)
	if err != nil {
		log.Fatalf("Failed to create stream: %v", err)
	}
	defer stream.Close()

	var offsets []int64
	for i := range 3 {
		msg := dynamicpb.NewMessage(msgDesc)
		msg.Set(msgDesc.Fields().ByName("device_name"), protoreflect.ValueOfString("sensor-001"))
		msg.Set(msgDesc.Fields().ByName("temp"), protoreflect.ValueOfInt32(int32(20+i)))
		msg.Set(msgDesc.Fields().ByName("humidity"), protoreflect.ValueOfInt64(int64(60+i)))
		data, err := proto.Marshal(msg)
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
	fmt.Println(msgDesc.FullName(), msgDesc.Fields().ByName("humidity").Number())
	// Output:
	// record at offset 0 acknowledged
	// record at offset 1 acknowledged
	// record at offset 2 acknowledged
	// SensorReading 3
}
