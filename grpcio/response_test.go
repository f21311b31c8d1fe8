package grpcio

import (
	"math"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// decodeAsMessage decodes b as Recv does without the response: a message
// filled by proto.Unmarshal, then mapped.
func decodeAsMessage(kind core.Kind, b []byte) (core.Response, error) {
	if kind == core.Ephemeral {
		var m ingestpb.EphemeralStreamResponse
		if err := proto.Unmarshal(b, &m); err != nil {
			return core.Response{}, err
		}
		return DecodeEphemeral(&m), nil
	}
	var m ingestpb.PersistentStreamResponse
	if err := proto.Unmarshal(b, &m); err != nil {
		return core.Response{}, err
	}
	return DecodePersistent(&m), nil
}

// checkResponse decodes b with a response, whole and split in two
// buffers, and fails unless both give what decodeAsMessage gives.
func checkResponse(t *testing.T, kind core.Kind, b []byte) {
	t.Helper()
	want, wantErr := decodeAsMessage(kind, b)
	splits := []mem.BufferSlice{{mem.SliceBuffer(b)}}
	if len(b) > 1 {
		splits = append(splits, mem.BufferSlice{mem.SliceBuffer(b[:1]), mem.SliceBuffer(b[1:])})
	}
	for _, data := range splits {
		r := &response{kind: kind, r: core.Response{Kind: core.RespCreate, StreamID: "stale"}}
		err := r.unmarshal(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%v % x in %d buffer(s): error %v, a message gives %v", kind, b, len(data), err, wantErr)
		}
		if err == nil && r.r != want {
			t.Fatalf("%v % x in %d buffer(s): %+v, a message gives %+v", kind, b, len(data), r.r, want)
		}
	}
}

// responseSeeds are server messages of both kinds: every payload, acks in
// the form servers send them and in every other form the hand decoder
// leaves to proto, and malformed bytes.
func responseSeeds(t testing.TB) [][]byte {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ack := func(field protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, field, protowire.BytesType), inner)
	}
	offset := func(v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, fieldAckOffset, protowire.VarintType), v)
	}
	seeds := [][]byte{
		nil,
		{},
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(41)}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(-1)}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(math.MaxInt64)}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("s-1")}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(7)}}}),
		marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: durationpb.New(30e9)}}}),
		marshal(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(3)}}}),
		marshal(&ingestpb.EphemeralStreamResponse{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("e-1")}}}),
		// Forms of an ack that only proto decodes: two offsets (the last
		// counts), the ack given twice (merged), an ack then another
		// payload (replaced), an unknown field inside and outside, an
		// offset with the wrong wire type, overlong and truncated varints,
		// a length past the end.
		ack(fieldPerAck, append(offset(1), offset(2)...)),
		append(ack(fieldPerAck, offset(5)), ack(fieldPerAck, nil)...),
		append(ack(fieldPerAck, offset(5)), ack(fieldEphAck, offset(6))...),
		ack(fieldPerAck, append(offset(9), protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1)...)),
		append(ack(fieldPerAck, offset(9)), protowire.AppendVarint(protowire.AppendTag(nil, 15, protowire.VarintType), 1)...),
		ack(fieldPerAck, protowire.AppendFixed64(protowire.AppendTag(nil, fieldAckOffset, protowire.Fixed64Type), 4)),
		ack(fieldPerAck, []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
		ack(fieldPerAck, []byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}),
		ack(fieldPerAck, []byte{0x08, 0x80}),
		{0x1a, 0x05, 0x08, 0x01},
		{0x1a},
		{0x12, 0x02, 0x08, 0x01},
	}
	return seeds
}

// TestResponseDecodesAsMessage: every seed decodes through a response as
// through a message, for both stream kinds (each kind reads the other's
// ack field as its own payload or as unknown).
func TestResponseDecodesAsMessage(t *testing.T) {
	for _, b := range responseSeeds(t) {
		for _, kind := range []core.Kind{core.Persistent, core.Ephemeral} {
			checkResponse(t, kind, b)
		}
	}
}

// TestWireAckTakesTheUsualForm: the form servers send is decoded by hand,
// not left to proto (the point of response).
func TestWireAckTakesTheUsualForm(t *testing.T) {
	b, err := proto.Marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(1234)}}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := wireAck(b, fieldPerAck)
	if want := (core.Response{Kind: core.RespAck, Offset: 1234, HasOffset: true}); !ok || r != want {
		t.Fatalf("wireAck = %+v, %v; want %+v, true", r, ok, want)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		rs := &response{kind: core.Persistent}
		_ = rs.unmarshal(mem.BufferSlice{mem.SliceBuffer(b)})
	}); allocs > 1 {
		t.Errorf("decoding an ack allocates %v times, want at most the response itself", allocs)
	}
}

// FuzzResponseDecode: arbitrary bytes decode through a response as through
// a message, for both stream kinds.
func FuzzResponseDecode(f *testing.F) {
	for _, b := range responseSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kind := range []core.Kind{core.Persistent, core.Ephemeral} {
			checkResponse(t, kind, b)
		}
	})
}

// BenchmarkDecodeAck: an ack decoded through a response, and as Recv
// decoded it before, through a fresh message.
func BenchmarkDecodeAck(b *testing.B) {
	wire, err := proto.Marshal(&ingestpb.PersistentStreamResponse{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(123456)}}})
	if err != nil {
		b.Fatal(err)
	}
	data := mem.BufferSlice{mem.SliceBuffer(wire)}
	b.Run("response", func(b *testing.B) {
		b.ReportAllocs()
		r := &response{kind: core.Persistent}
		for range b.N {
			if err := r.unmarshal(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := decodeAsMessage(core.Persistent, wire); err != nil {
				b.Fatal(err)
			}
		}
	})
}
