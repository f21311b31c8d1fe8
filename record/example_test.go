package record_test

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// A record of a JSON stream is one JSON object in valid UTF-8.
func ExampleCheckJSON() {
	for _, rec := range []string{`{"id":1}`, `[1,2]`, "{\"a\":\"\xff\"}", `{"id":`} {
		err := record.CheckJSON([]byte(rec))
		fmt.Printf("%q: %v (not an object: %v)\n", rec, err, errors.Is(err, record.ErrNotObject))
	}
	// Output:
	// "{\"id\":1}": <nil> (not an object: false)
	// "[1,2]": not a JSON object (not an object: true)
	// "{\"a\":\"\xff\"}": invalid UTF-8 (not an object: false)
	// "{\"id\":": invalid JSON (not an object: false)
}

// A Checker refuses, before it is sent, a record that the stream it is
// built for would refuse: here a proto stream of google.protobuf.Timestamp,
// with the descriptor a client sends when it creates the stream (the
// server names the message without its package, which a DescriptorProto
// does not carry).
func ExampleChecker() {
	md := (&timestamppb.Timestamp{}).ProtoReflect().Descriptor()
	desc, err := proto.Marshal(protodesc.ToDescriptorProto(md))
	if err != nil {
		panic(err)
	}
	c, err := record.NewChecker(ingestpb.RecordType_PROTO, desc)
	if err != nil {
		panic(err)
	}
	good, _ := proto.Marshal(&timestamppb.Timestamp{Seconds: 1})
	fmt.Println(c.Check(good))
	fmt.Println(c.CheckCall([][]byte{good, append(good, 0x48, 1)})) // field 9: not in the descriptor
	// Output:
	// <nil>
	// invalid PROTO record 1 of the batch: fields unknown to the descriptor in Timestamp
}

// The per-call limit counts each record as the request frames it: a batch
// of many small records weighs far more than its payload.
func ExampleCallSize() {
	batch := [][]byte{[]byte(`{}`), []byte(`{}`), []byte(`{}`)}
	fmt.Println(record.FramedSize(2), record.CallSize(batch))
	// Output: 4 12
}

func ExampleCheckTable() {
	fmt.Println(record.CheckTable("main.default.events"))
	fmt.Println(record.CheckTable("default.events"))
	// Output:
	// <nil>
	// "default.events" is not catalog.schema.table
}

// A TableChecker holds records and proto streams to a Unity Catalog
// table's columns: a JSON record by the columns' names and types, a proto
// stream's message field by field (a sint64 holds the BIGINT), and each
// record of that stream for the NOT NULL columns its message leaves
// optional.
func ExampleNewTableChecker() {
	table, err := record.ParseTableSchema([]byte(`{"name": "events", "columns": [
		{"name": "id", "type_name": "LONG", "position": 0, "nullable": false},
		{"name": "msg", "type_name": "STRING", "position": 1}]}`))
	if err != nil {
		panic(err)
	}
	c, err := record.NewTableChecker(table)
	if err != nil {
		panic(err)
	}
	for _, f := range c.Fields() {
		fmt.Println(f.Name, f.Type.Kind, f.Nullable)
	}
	for _, rec := range []string{`{"id": 1, "msg": "hi"}`, `{"msg": "hi"}`, `{"id": 1, "level": 3}`} {
		fmt.Println(c.CheckJSON([]byte(rec)))
	}

	dp := &descriptorpb.DescriptorProto{}
	if err := prototext.Unmarshal([]byte(`name: "Event"
		field { name: "id"  number: 1 label: LABEL_OPTIONAL type: TYPE_SINT64 }
		field { name: "msg" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }`), dp); err != nil {
		panic(err)
	}
	raw, err := proto.Marshal(dp) // as a client sends it at create
	if err != nil {
		panic(err)
	}
	md, err := record.MessageDescriptor(raw)
	if err != nil {
		panic(err)
	}
	fit, err := c.ProtoFit(md)
	if err != nil {
		panic(err)
	}
	withID := []byte{0x08, 0x03}    // id: -2 (zigzag)
	withoutID := []byte{0x12, 0x00} // msg: ""
	fmt.Println(fit.Check(withID))
	fmt.Println(fit.Check(withoutID))
	// Output:
	// id BIGINT false
	// msg STRING true
	// <nil>
	// JSON record: field "id": missing field: a NOT NULL column must be given
	// JSON record: field "level": unknown field: events has no such field
	// <nil>
	// does not fit the table: field "id": the column is NOT NULL and the field is not set
}
