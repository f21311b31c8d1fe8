package grpcio

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// reference builds call as the generated types would, for proto.Marshal.
func reference(kind core.Kind, jsonRecords bool, call streamio.Call) proto.Message {
	recs := call.Records
	if recs == nil {
		recs = [][]byte{call.Record}
	}
	off := call.Wire
	if len(recs) == 1 {
		r := &ingestpb.IngestRecordRequest{OffsetId: &off}
		if jsonRecords {
			r.Record = &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: string(recs[0])}
		} else {
			r.Record = &ingestpb.IngestRecordRequest_ProtoEncodedRecord{ProtoEncodedRecord: recs[0]}
		}
		if kind == core.Ephemeral {
			return &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: r}}
		}
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: r}}
	}
	b := &ingestpb.IngestRecordBatchRequest{OffsetId: &off}
	if jsonRecords {
		strs := make([]string, len(recs))
		for i, r := range recs {
			strs[i] = string(r)
		}
		b.Batch = &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: strs}}
	} else {
		b.Batch = &ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch{ProtoEncodedBatch: &ingestpb.ProtoEncodedRecordBatch{Records: recs}}
	}
	if kind == core.Ephemeral {
		return &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecordBatch{IngestRecordBatch: b}}
	}
	return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{IngestRecordBatch: b}}
}

// TestEncodeCallMatchesProtoMarshal: the hand-made encoding is byte for
// byte what proto.Marshal makes of the same call, and the message shown to
// gRPC is that call.
func TestEncodeCallMatchesProtoMarshal(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 300_000) // a length of three varint bytes
	calls := map[string]streamio.Call{
		"one":           {Wire: 0, Record: []byte(`{"a":1}`)},
		"one empty":     {Wire: 7, Record: []byte{}},
		"one large":     {Wire: 1 << 40, Record: big},
		"one in a list": {Wire: 3, Records: [][]byte{[]byte(`{"b":2}`)}},
		"batch":         {Wire: math.MaxInt64, Records: [][]byte{[]byte(`{"a":1}`), {}, big, []byte(`{}`)}},
		"batch of two":  {Wire: 127, Records: [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}},
	}
	for name, call := range calls {
		for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
			for _, jsonRecords := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%v/json=%v", name, kind, jsonRecords), func(t *testing.T) {
					want, err := proto.MarshalOptions{Deterministic: true}.Marshal(reference(kind, jsonRecords, call))
					if err != nil {
						t.Fatal(err)
					}
					e := encodeCall(kind, jsonRecords, call)
					if !bytes.Equal(e.wire, want) {
						t.Fatalf("encoding differs from proto.Marshal:\n got %x\nwant %x", e.wire[:min(len(e.wire), 64)], want[:min(len(want), 64)])
					}
					if len(e.wire) != cap(e.wire) {
						t.Errorf("encoding uses %d of %d bytes: the size was not computed exactly", len(e.wire), cap(e.wire))
					}
					if !proto.Equal(e.msg.(proto.Message), reference(kind, jsonRecords, call)) {
						t.Errorf("the message shown to gRPC is not the call: %v", e.msg)
					}
				})
			}
		}
	}
}

// TestEncodeCallOwnsItsBytes: neither the encoding nor the message shares
// memory with the records it was given, so the stream may reuse them once
// Send returns.
func TestEncodeCallOwnsItsBytes(t *testing.T) {
	recs := [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}
	for _, call := range []streamio.Call{{Wire: 1, Record: recs[0]}, {Wire: 2, Records: recs}} {
		e := encodeCall(core.Persistent, true, call)
		before, _ := proto.Marshal(e.msg.(proto.Message))
		wire := bytes.Clone(e.wire)
		for _, r := range recs {
			clear(r)
		}
		after, _ := proto.Marshal(e.msg.(proto.Message))
		if !bytes.Equal(before, after) || !bytes.Equal(wire, e.wire) {
			t.Errorf("call %d changed with the records it was made from", call.Wire)
		}
		recs = [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}
	}
}

// BenchmarkEncodeCall: what encoding costs per call (one record, and a
// batch of 100), 1 KiB records.
func BenchmarkEncodeCall(b *testing.B) {
	rec := bytes.Repeat([]byte("r"), 1024)
	batch := make([][]byte, 100)
	for i := range batch {
		batch[i] = rec
	}
	for _, bc := range []struct {
		name string
		call streamio.Call
	}{{"one", streamio.Call{Wire: 1, Record: rec}}, {"batch100", streamio.Call{Wire: 1, Records: batch}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = encodeCall(core.Persistent, true, bc.call)
			}
		})
	}
}
