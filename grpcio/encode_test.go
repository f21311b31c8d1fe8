package grpcio

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"testing"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// reference builds call as the generated types would, for proto.Marshal.
func reference(kind core.Kind, rt core.RecordType, call streamio.Call) proto.Message {
	recs := call.Records
	if recs == nil {
		recs = [][]byte{call.Record}
	}
	off := call.Wire
	if len(recs) == 1 {
		r := &ingestpb.IngestRecordRequest{OffsetId: &off}
		switch rt {
		case core.RecordJSON:
			r.Record = &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: string(recs[0])}
		case core.RecordAvro:
			r.Record = &ingestpb.IngestRecordRequest_AvroEncodedRecord{AvroEncodedRecord: recs[0]}
		default:
			r.Record = &ingestpb.IngestRecordRequest_ProtoEncodedRecord{ProtoEncodedRecord: recs[0]}
		}
		if kind == core.Ephemeral {
			return &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_IngestRecord{IngestRecord: r}}
		}
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{IngestRecord: r}}
	}
	b := &ingestpb.IngestRecordBatchRequest{OffsetId: &off}
	switch rt {
	case core.RecordJSON:
		strs := make([]string, len(recs))
		for i, r := range recs {
			strs[i] = string(r)
		}
		b.Batch = &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: strs}}
	case core.RecordAvro:
		b.Batch = &ingestpb.IngestRecordBatchRequest_AvroBatch{AvroBatch: &ingestpb.AvroRecordBatch{Records: recs}}
	default:
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
	var many [][]byte                         // a batch over several chunks, of records of varied lengths
	for i := range 300 {
		many = append(many, bytes.Repeat([]byte{'a' + byte(i%26)}, i*7%1500))
	}
	calls := map[string]streamio.Call{
		"batch over chunks":   {Wire: 5, Records: many},
		"one":                 {Wire: 0, Record: []byte(`{"a":1}`)},
		"one empty":           {Wire: 7, Record: []byte{}},
		"one large":           {Wire: 1 << 40, Record: big},
		"one in a list":       {Wire: 3, Records: [][]byte{[]byte(`{"b":2}`)}},
		"one large in a list": {Wire: 4, Records: [][]byte{big}},
		"batch":               {Wire: math.MaxInt64, Records: [][]byte{[]byte(`{"a":1}`), {}, big, []byte(`{}`)}},
		"batch of two":        {Wire: 127, Records: [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}},
	}
	for name, call := range maps.Clone(calls) {
		if len(call.Records) > 1 {
			calls[name+", framed"] = framedCall(call)
		}
	}
	// A wrapper that changed the records but left Framed (which the
	// contract forbids): the records are sent, not Framed.
	two := framedCall(calls["batch of two"])
	calls["batch of two, framed elsewhere"] = streamio.Call{Wire: 9, Records: [][]byte{[]byte(`{"a":3}`), []byte(`{"a":4}`)}, Framed: two.Framed}
	for name, call := range maps.Clone(calls) {
		if lentPayloadOf(call) != nil {
			call.Loan = new(streamio.Loan)
			calls[name+", lent"] = call
		}
	}
	for name, call := range calls {
		for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
			for _, rt := range []core.RecordType{core.RecordJSON, core.RecordProto, core.RecordAvro} {
				for _, pooled := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%v/%v/pooled=%v", name, kind, rt, pooled), func(t *testing.T) {
						want, err := proto.MarshalOptions{Deterministic: true}.Marshal(reference(kind, rt, call))
						if err != nil {
							t.Fatal(err)
						}
						var pool *countingPool
						e := encodeCall(nil, kind, rt, call)
						if pooled {
							pool = new(countingPool)
							e = encodeCall(pool, kind, rt, call)
						}
						wire := bytes.Join(e.wire, nil)
						if !bytes.Equal(wire, want) {
							t.Fatalf("encoding differs from proto.Marshal:\n got %x\nwant %x", wire[:min(len(wire), 64)], want[:min(len(want), 64)])
						}
						if pooled {
							// Only gRPC's own code sees it: no message is built.
							if e.msg != passThrough {
								t.Errorf("a pooled encoding is handed to gRPC as %T, want passThrough", e.msg)
							}
						} else if !proto.Equal(e.msg.(proto.Message), reference(kind, rt, call)) {
							t.Errorf("the message shown to gRPC is not the call: %v", e.msg)
						}
						lent := pooled && call.Loan != nil
						if got := lentPiece(e.wire, lentPayloadOf(call)); got != lent {
							t.Errorf("the encoding hands gRPC the lent payload itself: %v, want %v", got, lent)
						}
						data := e.buffers()
						if got := data.Materialize(); !bytes.Equal(got, want) {
							t.Fatalf("what the codec hands gRPC differs from proto.Marshal:\n got %x\nwant %x", got[:min(len(got), 64)], want[:min(len(want), 64)])
						}
						if call.Loan != nil {
							if out, want := call.Loan.Outstanding(), int64(map[bool]int{true: 1}[lent]); out != want {
								t.Errorf("borrowed %d times once handed to gRPC, want %d", out, want)
							}
						}
						data.Free()
						if call.Loan != nil && call.Loan.Outstanding() != 0 {
							t.Errorf("%d borrows out after gRPC freed the buffers", call.Loan.Outstanding())
						}
						if !pooled {
							checkChunks(t, e.wire)
							return
						}
						own := len(e.wire)
						if lent {
							own-- // the payload is the stream's, not the pool's
						}
						if pool.gets != own || pool.puts != pool.gets {
							t.Errorf("%d buffers of the pool's, %d taken from it, %d given back when gRPC freed them: want all", own, pool.gets, pool.puts)
						}
					})
				}
			}
		}
	}
}

// framedCall returns call with its records framed as the stream's arena
// lays out a batch (streamio.Call.Framed), the records pointing into it.
func framedCall(call streamio.Call) streamio.Call {
	var framed []byte
	at := make([]int, len(call.Records))
	for i, r := range call.Records {
		framed = protowire.AppendTag(framed, fieldBatchRecords, protowire.BytesType)
		framed = protowire.AppendVarint(framed, uint64(len(r)))
		at[i] = len(framed)
		framed = append(framed, r...)
	}
	recs := make([][]byte, len(call.Records))
	for i, r := range call.Records {
		recs[i] = framed[at[i] : at[i]+len(r) : at[i]+len(r)]
	}
	return streamio.Call{Wire: call.Wire, Records: recs, Framed: framed}
}

// lentPayloadOf is the payload a stream would lend of call: its record, a
// batch's one record, or a batch's framed record list, when gRPC would
// give its buffer back (over 1 KiB); else nil.
func lentPayloadOf(call streamio.Call) []byte {
	p := call.Record
	switch {
	case len(call.Records) == 1:
		p = call.Records[0]
	case len(call.Records) > 1:
		p = call.Framed
	}
	if mem.IsBelowBufferPoolingThreshold(cap(p)) {
		return nil
	}
	return p
}

// lentPiece reports whether the last buffer of wire is payload itself.
func lentPiece(wire [][]byte, payload []byte) bool {
	last := wire[len(wire)-1]
	return len(payload) > 0 && len(last) == len(payload) && &last[0] == &payload[0]
}

// countingPool is a mem.BufferPool that counts what is taken and given
// back. Its buffers have room to spare, as a pool's tiers do, and are
// large enough for gRPC to give each back.
type countingPool struct{ gets, puts int }

func (p *countingPool) Get(n int) *[]byte {
	p.gets++
	b := make([]byte, n, n+2048)
	return &b
}

func (p *countingPool) Put(*[]byte) { p.puts++ }

// checkChunks checks that each of an encoding's buffers was sized exactly
// for what went into it.
func checkChunks(t *testing.T, wire [][]byte) {
	t.Helper()
	for i, b := range wire {
		if len(b) != cap(b) {
			t.Errorf("buffer %d of %d: %d of %d bytes used: the sizes were not computed exactly", i, len(wire), len(b), cap(b))
		}
	}
}

// TestEncodeCallChunks: a batch is split into buffers of at most chunkSize
// bytes, never within a record, and a record larger than a chunk has a
// buffer of its own.
func TestEncodeCallChunks(t *testing.T) {
	rec := bytes.Repeat([]byte("r"), 1000)
	batch := make([][]byte, 100)
	for i := range batch {
		batch[i] = rec
	}
	e := encodeCall(nil, core.Persistent, core.RecordJSON, streamio.Call{Wire: 5, Records: batch})
	if len(e.wire) < 4 {
		t.Fatalf("100 KB encoded in %d buffers, want at least 4 of at most %d bytes", len(e.wire), chunkSize)
	}
	for i, b := range e.wire {
		if len(b) > chunkSize {
			t.Errorf("buffer %d holds %d bytes, more than %d", i, len(b), chunkSize)
		}
	}
	for i, s := range e.msg.(*ingestpb.PersistentStreamRequest).GetIngestRecordBatch().GetJsonBatch().GetRecords() {
		if s != string(rec) {
			t.Fatalf("record %d of the message is not the record", i)
		}
	}
	big := bytes.Repeat([]byte("b"), 3*chunkSize)
	e = encodeCall(nil, core.Persistent, core.RecordProto, streamio.Call{Wire: 6, Records: [][]byte{rec, big, rec}})
	sizes := make([]int, len(e.wire))
	for i, b := range e.wire {
		sizes[i] = len(b)
	}
	if len(e.wire) != 3 || len(e.wire[1]) != len(big)+4 {
		t.Errorf("buffers of %v bytes, want three: the first record, the large one alone (%d), the last", sizes, len(big)+4)
	}
}

// TestEncodeCallOwnsItsBytes: neither the encoding nor the message shares
// memory with the records it was given, so the stream may reuse them once
// Send returns.
func TestEncodeCallOwnsItsBytes(t *testing.T) {
	recs := [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}
	for _, call := range []streamio.Call{{Wire: 1, Record: recs[0]}, {Wire: 2, Records: recs}} {
		e := encodeCall(nil, core.Persistent, core.RecordJSON, call)
		before, _ := proto.Marshal(e.msg.(proto.Message))
		wire := bytes.Join(e.wire, nil)
		for _, r := range recs {
			clear(r)
		}
		after, _ := proto.Marshal(e.msg.(proto.Message))
		if !bytes.Equal(before, after) || !bytes.Equal(wire, bytes.Join(e.wire, nil)) {
			t.Errorf("call %d changed with the records it was made from", call.Wire)
		}
		recs = [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}
	}
}

// BenchmarkEncodeCall: what encoding costs per call (one record, and a
// batch of 100, and the same batch framed as the stream's arena keeps
// it: Call.Framed), 1 KiB and 20-byte records: encodeCall into fresh heap buffers and
// into gRPC's pool (given back as gRPC does once written), beside gRPC's proto codec
// encoding a message built once (what a send cost when the conn reused one
// message and gRPC encoded it into a pooled buffer).
func BenchmarkEncodeCall(b *testing.B) {
	type benchCall struct {
		name string
		call streamio.Call
	}
	var calls []benchCall
	for _, size := range []int{1024, 20} {
		rec := bytes.Repeat([]byte("r"), size)
		batch := make([][]byte, 100)
		for i := range batch {
			batch[i] = rec
		}
		calls = append(calls,
			benchCall{fmt.Sprintf("one/%dB", size), streamio.Call{Wire: 1, Record: rec}},
			benchCall{fmt.Sprintf("batch100/%dB", size), streamio.Call{Wire: 1, Records: batch}},
			benchCall{fmt.Sprintf("batch100-framed/%dB", size), framedCall(streamio.Call{Wire: 1, Records: batch})})
	}
	for _, bc := range calls {
		b.Run(bc.name+"/encodeCall", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = encodeCall(nil, core.Persistent, core.RecordJSON, bc.call)
			}
		})
		b.Run(bc.name+"/encodeCall-pooled", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				encodeCall(mem.DefaultBufferPool(), core.Persistent, core.RecordJSON, bc.call).buffers().Free()
			}
		})
		b.Run(bc.name+"/encodeCall-transport-pool", func(b *testing.B) {
			var pool encodeBuffers
			b.ReportAllocs()
			for b.Loop() {
				encodeCall(&pool, core.Persistent, core.RecordJSON, bc.call).buffers().Free()
			}
		})
		b.Run(bc.name+"/grpc-proto-codec", func(b *testing.B) {
			codec := encoding.GetCodecV2(grpcproto.Name)
			msg := reference(core.Persistent, core.RecordJSON, bc.call)
			b.ReportAllocs()
			for b.Loop() {
				data, err := codec.Marshal(msg)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
