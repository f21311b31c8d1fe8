package server

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// The receive queue's byte bound counts every record's overhead, not only
// its payload: a batch of many empty records must weigh on the bound.
func TestQueuedSizeCountsRecordOverhead(t *testing.T) {
	empty, err := record.NewChecker(ingestpb.RecordType_PROTO, mustMarshalDescriptor(t, &descriptorpb.DescriptorProto{Name: proto.String("Empty")}))
	if err != nil {
		t.Fatal(err)
	}
	jsonRecords, err := record.NewChecker(ingestpb.RecordType_JSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		schema *record.Checker
		recs   [][]byte
		want   int
	}{
		{"empty proto records", empty, make([][]byte, 100000), 100000 * 32},
		{"json records", jsonRecords, [][]byte{[]byte(`{}`), []byte(`{"a":1}`)}, 2 + 7 + 2*32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &conn{schema: tc.schema}
			c.maxRecv.Store(-1)
			last := int64(-1)
			it, err := c.check(&clientMsg{kind: msgIngest, offset: proto.Int64(0), recType: tc.schema.Type(), records: tc.recs}, &last)
			if err != nil {
				t.Fatal(err)
			}
			if it.size != tc.want {
				t.Fatalf("size %d, want %d", it.size, tc.want)
			}
		})
	}
	// Enough empty records fill the queue: a second such item waits.
	n := maxQueuedBytes/32/2 + 1
	c := &conn{schema: empty}
	c.maxRecv.Store(-1)
	c.q.ready, c.q.space = make(chan struct{}, 1), make(chan struct{}, 1)
	last := int64(-1)
	for off := range int64(2) {
		it, err := c.check(&clientMsg{kind: msgIngest, offset: proto.Int64(off), recType: ingestpb.RecordType_PROTO, records: make([][]byte, n)}, &last)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		if off == 1 {
			cancel() // would block: give up at once
		}
		ok := c.q.push(ctx, it)
		cancel()
		if ok != (off == 0) {
			t.Fatalf("push %d: %v", off, ok)
		}
	}
}

func mustMarshalDescriptor(t *testing.T, d *descriptorpb.DescriptorProto) []byte {
	t.Helper()
	b, err := proto.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
