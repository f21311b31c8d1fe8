package server

import (
	"bytes"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// refDecode is what decodeRequest must agree with: proto.Unmarshal and the
// generated types.
func refDecode(kind StreamKind, b []byte) *clientMsg {
	ingest := func(r *ingestpb.IngestRecordRequest) *clientMsg {
		m := &clientMsg{kind: msgIngest, offset: r.OffsetId}
		switch rec := r.Record.(type) {
		case *ingestpb.IngestRecordRequest_ProtoEncodedRecord:
			m.recType, m.records = ingestpb.RecordType_PROTO, [][]byte{rec.ProtoEncodedRecord}
		case *ingestpb.IngestRecordRequest_JsonRecord:
			m.recType, m.records = ingestpb.RecordType_JSON, [][]byte{[]byte(rec.JsonRecord)}
		case *ingestpb.IngestRecordRequest_AvroEncodedRecord:
			m.recType, m.records = ingestpb.RecordType_AVRO, [][]byte{rec.AvroEncodedRecord}
		}
		return m
	}
	batch := func(r *ingestpb.IngestRecordBatchRequest) *clientMsg {
		m := &clientMsg{kind: msgIngest, offset: r.OffsetId, batch: true}
		switch bt := r.Batch.(type) {
		case *ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch:
			m.recType, m.records = ingestpb.RecordType_PROTO, bt.ProtoEncodedBatch.GetRecords()
		case *ingestpb.IngestRecordBatchRequest_JsonBatch:
			m.recType = ingestpb.RecordType_JSON
			for _, s := range bt.JsonBatch.GetRecords() {
				m.records = append(m.records, []byte(s))
			}
		case *ingestpb.IngestRecordBatchRequest_AvroBatch:
			m.recType, m.records = ingestpb.RecordType_AVRO, bt.AvroBatch.GetRecords()
		}
		return m
	}
	if kind == KindPersistent {
		r := &ingestpb.PersistentStreamRequest{}
		if proto.Unmarshal(b, r) != nil {
			return &clientMsg{kind: msgMalformed}
		}
		switch p := r.Payload.(type) {
		case *ingestpb.PersistentStreamRequest_IngestRecord:
			return ingest(p.IngestRecord)
		case *ingestpb.PersistentStreamRequest_IngestRecordBatch:
			return batch(p.IngestRecordBatch)
		}
		return decodeOpen(kind, b)
	}
	r := &ingestpb.EphemeralStreamRequest{}
	if proto.Unmarshal(b, r) != nil {
		return &clientMsg{kind: msgMalformed}
	}
	switch p := r.Payload.(type) {
	case *ingestpb.EphemeralStreamRequest_IngestRecord:
		return ingest(p.IngestRecord)
	case *ingestpb.EphemeralStreamRequest_IngestRecordBatch:
		return batch(p.IngestRecordBatch)
	}
	return decodeOpen(kind, b)
}

func sameDecoded(a, b *clientMsg) bool {
	if a.kind != b.kind {
		return false
	}
	if a.kind != msgIngest {
		return true
	}
	if (a.offset == nil) != (b.offset == nil) || (a.offset != nil && *a.offset != *b.offset) {
		return false
	}
	return a.recType == b.recType && a.batch == b.batch && len(a.records) == len(b.records) &&
		slices.EqualFunc(a.records, b.records, bytes.Equal)
}

// decodeSeeds are requests of every shape proto allows: merged repeated
// message fields, oneof members replacing each other, wrong wire types,
// unknown fields, truncations.
func decodeSeeds() [][]byte {
	m := func(v proto.Message) []byte { b, _ := proto.Marshal(v); return b }
	tag := func(b []byte, n protowire.Number, v []byte) []byte {
		b = protowire.AppendTag(b, n, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	jb := m(&ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(7), Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{JsonBatch: &ingestpb.JsonRecordBatch{Records: []string{`{"a":1}`, `{}`}}}})
	pb := m(&ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(8), Batch: &ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch{ProtoEncodedBatch: &ingestpb.ProtoEncodedRecordBatch{Records: [][]byte{{1, 2}, {}}}}})
	jr := m(&ingestpb.IngestRecordRequest{OffsetId: proto.Int64(3), Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: `{"x":"y"}`}})
	ab := m(&ingestpb.IngestRecordBatchRequest{OffsetId: proto.Int64(9), Batch: &ingestpb.IngestRecordBatchRequest_AvroBatch{AvroBatch: &ingestpb.AvroRecordBatch{Records: [][]byte{{2, 'a'}, {}}}}})
	ar := m(&ingestpb.IngestRecordRequest{OffsetId: proto.Int64(4), Record: &ingestpb.IngestRecordRequest_AvroEncodedRecord{AvroEncodedRecord: []byte{0x02, 'x'}}})
	cr := m(&ingestpb.CreateIngestStreamRequest{TableName: proto.String("a.b.c"), RecordType: ingestpb.RecordType_JSON.Enum()})
	seeds := [][]byte{
		tag(nil, 4, jb), tag(nil, 4, pb), tag(nil, 3, jr), tag(nil, 3, jb), tag(nil, 2, jr),
		tag(tag(nil, 4, jb), 4, pb), // merged: offset of the second, records of both kinds' last member
		tag(tag(nil, 4, jb), 4, jb), // merged: records of both
		tag(tag(nil, 3, jr), 4, jb), // the last member wins
		tag(tag(nil, 4, jb), 1, m(&ingestpb.CreatePersistentStreamRequest{CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: proto.String("a.b.c")}})),
		tag(tag(nil, 1, []byte{0x0a, 0x05}), 4, jb), // a discarded member that does not parse
		tag(tag(nil, 4, []byte{0x1a, 0x03, 0x0a, 0x09}), 4, jb),
		append(tag(nil, 4, jb), 0x20, 0x01), // field 4 as a varint: unknown
		append(tag(nil, 99, []byte("xx")), tag(nil, 4, pb)...),
		tag(nil, 4, append(slices.Clone(jb), 0x1a, 0x02, 0x08, 0x01)), // json_batch with an unknown varint inside
		tag(nil, 4, append([]byte{0x08, 0x01, 0x10, 0x05}, jb...)),    // batch field 2 as a varint
		tag(nil, 4, ab), tag(nil, 3, ar), tag(nil, 3, ab), tag(nil, 2, ar),
		tag(tag(nil, 4, ab), 4, jb), // merged: json_batch after avro_batch wins
		tag(tag(nil, 4, jb), 4, ab), // and the other way round
		tag(tag(nil, 3, jr), 3, ar), // the last record wins
		tag(nil, 1, cr), tag(nil, 2, []byte{0x0a, 0x01, 'x'}),
		{}, {0x00}, {0x22}, {0x22, 0x05, 0x01}, {0x0b, 0x0c},
	}
	for _, s := range slices.Clone(seeds) {
		for cut := 1; cut < len(s); cut += 3 {
			seeds = append(seeds, s[:cut])
		}
	}
	return seeds
}

func checkDecode(t *testing.T, b []byte) {
	for _, kind := range []StreamKind{KindEphemeral, KindPersistent} {
		got := decodeRequest(kind, b)
		got.fillRecords()
		if want := refDecode(kind, b); !sameDecoded(got, want) {
			t.Fatalf("%s %x: decoded %+v, proto.Unmarshal gives %+v", kindName(kind), b, got, want)
		}
		if got.kind == msgIngest && got.batch && got.nrec != len(got.records) {
			t.Fatalf("%x: counted %d records, sliced %d", b, got.nrec, len(got.records))
		}
	}
}

// TestDecodeRequestMatchesProto (issue 21): the server's own decoding of
// stream requests gives what proto.Unmarshal gives.
func TestDecodeRequestMatchesProto(t *testing.T) {
	for _, s := range decodeSeeds() {
		checkDecode(t, s)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range decodeSeeds() {
		f.Add(s)
	}
	f.Fuzz(checkDecode)
}
