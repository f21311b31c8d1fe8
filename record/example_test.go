package record_test

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
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
