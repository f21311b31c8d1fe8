package grpcio_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	ingestpb "github.com/zbstream/zbstream/proto"
)

const maxDuration = time.Duration(math.MaxInt64)

// durationCase is one close-signal duration and what it must decode to.
type durationCase struct {
	name    string
	d       *durationpb.Duration // nil: absent
	want    time.Duration
	wantHas bool
}

// durationCases covers every rule of "Close signal durations" in doc.go.
var durationCases = []durationCase{
	{"absent", nil, 0, false},
	{"zero", &durationpb.Duration{}, 0, true},
	{"30s", durationpb.New(30 * time.Second), 30 * time.Second, true},
	{"1.5s", &durationpb.Duration{Seconds: 1, Nanos: 5e8}, 1500 * time.Millisecond, true},
	{"1ns", &durationpb.Duration{Nanos: 1}, 1, true},
	{"negative seconds", &durationpb.Duration{Seconds: -5}, 0, true},
	{"negative nanos", &durationpb.Duration{Nanos: -1}, 0, true},
	{"negative both", &durationpb.Duration{Seconds: -1, Nanos: -5e8}, 0, true},
	{"largest time.Duration", durationpb.New(maxDuration), maxDuration, true},
	{"valid beyond time.Duration", &durationpb.Duration{Seconds: 315576000000}, maxDuration, true},
	{"valid below time.Duration", &durationpb.Duration{Seconds: -315576000000}, 0, true},
	{"valid just past time.Duration by nanos", &durationpb.Duration{Seconds: math.MaxInt64 / int64(time.Second), Nanos: 999999999}, maxDuration, true},
	{"invalid: seconds overflow", &durationpb.Duration{Seconds: 315576000001}, maxDuration, true},
	{"invalid: seconds max int64", &durationpb.Duration{Seconds: math.MaxInt64, Nanos: math.MaxInt32}, maxDuration, true},
	{"invalid: seconds underflow", &durationpb.Duration{Seconds: -315576000001}, maxDuration, true},
	{"invalid: seconds min int64", &durationpb.Duration{Seconds: math.MinInt64, Nanos: math.MinInt32}, maxDuration, true},
	{"invalid: nanos too large", &durationpb.Duration{Nanos: 1e9}, maxDuration, true},
	{"invalid: nanos too small", &durationpb.Duration{Nanos: -1e9}, maxDuration, true},
	{"invalid: mixed signs +-", &durationpb.Duration{Seconds: 5, Nanos: -1}, maxDuration, true},
	{"invalid: mixed signs -+", &durationpb.Duration{Seconds: -5, Nanos: 1}, maxDuration, true},
}

func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }

func TestDecodePersistent(t *testing.T) {
	type P = ingestpb.PersistentStreamResponse
	tests := []struct {
		name string
		msg  *P
		want core.Response
	}{
		{"nil message", nil, core.Response{Kind: core.RespEmpty}},
		{"no payload", &P{}, core.Response{Kind: core.RespEmpty}},
		{"typed nil payload", &P{Payload: (*ingestpb.PersistentStreamResponse_IngestRecordResponse)(nil)}, core.Response{Kind: core.RespEmpty}},

		{"create with id", &P{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: str("s-1")}}},
			core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true}},
		{"create with empty id set", &P{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: str("")}}},
			core.Response{Kind: core.RespCreate, HasStreamID: true}},
		{"create without id", &P{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{}}},
			core.Response{Kind: core.RespCreate}},
		{"create nil inner", &P{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{}},
			core.Response{Kind: core.RespCreate}},

		{"resume with watermark", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: i64(41)}}},
			core.Response{Kind: core.RespResume, Offset: 41, HasOffset: true}},
		{"resume with watermark 0", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: i64(0)}}},
			core.Response{Kind: core.RespResume, Offset: 0, HasOffset: true}},
		{"resume with negative watermark", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: i64(math.MinInt64)}}},
			core.Response{Kind: core.RespResume, Offset: math.MinInt64, HasOffset: true}},
		{"resume with max watermark", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: i64(math.MaxInt64)}}},
			core.Response{Kind: core.RespResume, Offset: math.MaxInt64, HasOffset: true}},
		{"resume nothing committed", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{}}},
			core.Response{Kind: core.RespResume}},
		{"resume nil inner", &P{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{}},
			core.Response{Kind: core.RespResume}},

		{"ack", &P{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(7)}}},
			core.Response{Kind: core.RespAck, Offset: 7, HasOffset: true}},
		{"ack 0", &P{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(0)}}},
			core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true}},
		{"ack -1", &P{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(-1)}}},
			core.Response{Kind: core.RespAck, Offset: -1, HasOffset: true}},
		{"ack without offset", &P{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{}}},
			core.Response{Kind: core.RespAck}},
		{"ack nil inner", &P{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{}},
			core.Response{Kind: core.RespAck}},

		{"close signal nil inner", &P{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{}},
			core.Response{Kind: core.RespCloseSignal}},
	}
	for _, dc := range durationCases {
		tests = append(tests, struct {
			name string
			msg  *P
			want core.Response
		}{"close signal " + dc.name, &P{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{
			CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: dc.d}}},
			core.Response{Kind: core.RespCloseSignal, Duration: dc.want, HasDuration: dc.wantHas}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := grpcio.DecodePersistent(tc.msg); got != tc.want {
				t.Errorf("DecodePersistent = %+v, want %+v", got, tc.want)
			}
			// The same message on the wire decodes the same (a nil inner
			// message travels as an empty one, a typed nil payload as none).
			b, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got, err := grpcio.UnmarshalPersistent(b)
			if err != nil || got != tc.want {
				t.Errorf("UnmarshalPersistent = %+v, %v; want %+v, nil", got, err, tc.want)
			}
		})
	}
}

func TestDecodeEphemeral(t *testing.T) {
	type E = ingestpb.EphemeralStreamResponse
	tests := []struct {
		name string
		msg  *E
		want core.Response
	}{
		{"nil message", nil, core.Response{Kind: core.RespEmpty}},
		{"no payload", &E{}, core.Response{Kind: core.RespEmpty}},
		{"typed nil payload", &E{Payload: (*ingestpb.EphemeralStreamResponse_CloseStreamSignal)(nil)}, core.Response{Kind: core.RespEmpty}},

		{"create with id", &E{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: str("e-1")}}},
			core.Response{Kind: core.RespCreate, StreamID: "e-1", HasStreamID: true}},
		{"create with empty id set", &E{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: str("")}}},
			core.Response{Kind: core.RespCreate, HasStreamID: true}},
		{"create without id", &E{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{}}},
			core.Response{Kind: core.RespCreate}},
		{"create nil inner", &E{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{}},
			core.Response{Kind: core.RespCreate}},

		{"ack", &E{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(3)}}},
			core.Response{Kind: core.RespAck, Offset: 3, HasOffset: true}},
		{"ack max", &E{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(math.MaxInt64)}}},
			core.Response{Kind: core.RespAck, Offset: math.MaxInt64, HasOffset: true}},
		{"ack min", &E{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: i64(math.MinInt64)}}},
			core.Response{Kind: core.RespAck, Offset: math.MinInt64, HasOffset: true}},
		{"ack without offset", &E{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{}}},
			core.Response{Kind: core.RespAck}},
		{"ack nil inner", &E{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{}},
			core.Response{Kind: core.RespAck}},

		{"close signal nil inner", &E{Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{}},
			core.Response{Kind: core.RespCloseSignal}},
	}
	for _, dc := range durationCases {
		tests = append(tests, struct {
			name string
			msg  *E
			want core.Response
		}{"close signal " + dc.name, &E{Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{
			CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: dc.d}}},
			core.Response{Kind: core.RespCloseSignal, Duration: dc.want, HasDuration: dc.wantHas}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := grpcio.DecodeEphemeral(tc.msg); got != tc.want {
				t.Errorf("DecodeEphemeral = %+v, want %+v", got, tc.want)
			}
			b, err := proto.Marshal(tc.msg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got, err := grpcio.UnmarshalEphemeral(b)
			if err != nil || got != tc.want {
				t.Errorf("UnmarshalEphemeral = %+v, %v; want %+v, nil", got, err, tc.want)
			}
		})
	}
}

// TestUnmarshalWire checks hand-built wire bytes, including ones no Go
// message would marshal: the last of repeated oneof fields wins, unknown
// fields are skipped, and the two stream kinds number their payloads
// differently.
func TestUnmarshalWire(t *testing.T) {
	// msg appends a length-delimited field num holding inner.
	msg := func(b []byte, num protowire.Number, inner []byte) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, inner)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	ack7 := varint(1, 7)
	tests := []struct {
		name              string
		in                []byte
		wantEph, wantPers core.Response
		ephErr, persErr   bool
	}{
		{name: "empty", in: nil,
			wantEph: core.Response{Kind: core.RespEmpty}, wantPers: core.Response{Kind: core.RespEmpty}},
		{name: "field 2 holding an ack offset", in: msg(nil, 2, ack7),
			wantEph:  core.Response{Kind: core.RespAck, Offset: 7, HasOffset: true},
			wantPers: core.Response{Kind: core.RespResume, Offset: 7, HasOffset: true}},
		{name: "field 3 empty", in: msg(nil, 3, nil),
			wantEph:  core.Response{Kind: core.RespCloseSignal},
			wantPers: core.Response{Kind: core.RespAck}},
		{name: "field 4 empty", in: msg(nil, 4, nil),
			wantEph:  core.Response{Kind: core.RespEmpty}, // unknown field, skipped
			wantPers: core.Response{Kind: core.RespCloseSignal}},
		{name: "last oneof field wins", in: msg(msg(nil, 1, msg(nil, 1, []byte("s"))), 2, ack7),
			wantEph:  core.Response{Kind: core.RespAck, Offset: 7, HasOffset: true},
			wantPers: core.Response{Kind: core.RespResume, Offset: 7, HasOffset: true}},
		{name: "unknown field only", in: varint(99, 1),
			wantEph: core.Response{Kind: core.RespEmpty}, wantPers: core.Response{Kind: core.RespEmpty}},
		{name: "negative varint offset", in: msg(nil, 3, varint(1, math.MaxUint64)),
			wantEph:  core.Response{Kind: core.RespCloseSignal},
			wantPers: core.Response{Kind: core.RespAck, Offset: -1, HasOffset: true}},
		{name: "truncated tag", in: []byte{0x80}, ephErr: true, persErr: true},
		{name: "truncated length", in: []byte{0x0a, 0x05, 0x01}, ephErr: true, persErr: true},
		{name: "field number 0", in: []byte{0x00, 0x00}, ephErr: true, persErr: true},
		// A known number with the wrong wire type is kept as an unknown field.
		{name: "wrong wire type for payload", in: varint(1, 5),
			wantEph: core.Response{Kind: core.RespEmpty}, wantPers: core.Response{Kind: core.RespEmpty}},
		{name: "wrong wire type inside ack", in: msg(nil, 3, msg(nil, 1, nil)),
			wantEph:  core.Response{Kind: core.RespCloseSignal, HasDuration: true}, // an empty Duration: 0s
			wantPers: core.Response{Kind: core.RespAck}},
		{name: "bad inner message", in: msg(nil, 1, []byte{0xff}), ephErr: true, persErr: true},
		{name: "end group without start", in: protowire.AppendTag(nil, 5, protowire.EndGroupType), ephErr: true, persErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(fn string, got core.Response, err error, want core.Response, wantErr bool) {
				t.Helper()
				if wantErr {
					var de *grpcio.DecodeError
					if !errors.As(err, &de) {
						t.Fatalf("%s: err = %v (%T), want a *DecodeError", fn, err, err)
					}
					if de.Err == nil || !errors.Is(err, de.Err) || de.Error() == "" {
						t.Errorf("%s: DecodeError %+v does not wrap the proto error", fn, de)
					}
					if got != (core.Response{}) {
						t.Errorf("%s: response %+v with an error, want the zero Response", fn, got)
					}
					return
				}
				if err != nil || got != want {
					t.Errorf("%s = %+v, %v; want %+v, nil", fn, got, err, want)
				}
			}
			got, err := grpcio.UnmarshalEphemeral(tc.in)
			check("UnmarshalEphemeral", got, err, tc.wantEph, tc.ephErr)
			got, err = grpcio.UnmarshalPersistent(tc.in)
			check("UnmarshalPersistent", got, err, tc.wantPers, tc.persErr)
		})
	}
}

func TestDecodeErrorNames(t *testing.T) {
	_, err := grpcio.UnmarshalPersistent([]byte{0x80})
	var de *grpcio.DecodeError
	if !errors.As(err, &de) || de.Message != "zbstream.zerobus.v1.PersistentStreamResponse" {
		t.Fatalf("UnmarshalPersistent error = %#v", err)
	}
	_, err = grpcio.UnmarshalEphemeral([]byte{0x80})
	if !errors.As(err, &de) || de.Message != "zbstream.zerobus.v1.EphemeralStreamResponse" {
		t.Fatalf("UnmarshalEphemeral error = %#v", err)
	}
}

// ExampleDecodePersistent decodes the messages of a persistent stream's
// life: a create, an ack, a resume after a reconnect, and a close signal.
func ExampleDecodePersistent() {
	committed := int64(41)
	msgs := []*ingestpb.PersistentStreamResponse{
		{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{
			CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("s-1")}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{
			IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(40)}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: &committed}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{
			ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{}}}, // nothing committed
		{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{
			CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: durationpb.New(-time.Second)}}},
		{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{
			CloseStreamSignal: &ingestpb.CloseStreamSignal{}}},
	}
	for _, m := range msgs {
		r := grpcio.DecodePersistent(m)
		switch r.Kind {
		case core.RespCreate:
			fmt.Printf("create id=%q present=%v\n", r.StreamID, r.HasStreamID)
		case core.RespAck:
			fmt.Printf("ack up to %d present=%v\n", r.Offset, r.HasOffset)
		case core.RespResume:
			fmt.Printf("resume watermark=%d present=%v\n", r.Offset, r.HasOffset)
		case core.RespCloseSignal:
			fmt.Printf("close signal grace=%v present=%v\n", r.Duration, r.HasDuration)
		}
	}
	// Output:
	// create id="s-1" present=true
	// ack up to 40 present=true
	// resume watermark=41 present=true
	// resume watermark=0 present=false
	// close signal grace=0s present=true
	// close signal grace=0s present=false
}
