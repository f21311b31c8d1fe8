package server

import (
	"errors"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// The server decodes stream requests from their wire format itself, over
// the one buffer the codec copied the message into (issue 21: 70% of the
// memory engine's CPU went to protobuf copying every record into a new
// string). Records are sub-slices of that buffer, so each record is copied
// once between the socket and the store, and the records of a batch are
// counted before their slice is allocated, so that the receive budget
// covers it before it exists. Create and resume requests, small and rare,
// go through proto.Unmarshal.
//
// The result is what proto.Unmarshal gives for the same bytes (merged
// repeated message fields, last oneof member wins, fields of the wrong
// wire type and unknown fields ignored, malformed input refused anywhere
// proto.Unmarshal would look); FuzzDecodeRequest checks it differentially.

// wireParts is a message given in parts: proto merges a message field
// that occurs several times, which is parsing the concatenation of its
// occurrences; the parts are walked in order instead of being joined.
type wireParts [][]byte

// walk calls f with every field of the parts, in order, and fails on
// malformed input.
func (p wireParts) walk(f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for _, b := range p {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			if num > protowire.MaxValidNumber { // ConsumeTag checks only the lower end
				return errors.New("invalid field number")
			}
			b = b[n:]
			var v []byte
			var x uint64
			switch typ {
			case protowire.VarintType:
				x, n = protowire.ConsumeVarint(b)
			case protowire.BytesType:
				v, n = protowire.ConsumeBytes(b)
			default:
				n = protowire.ConsumeFieldValue(num, typ, b)
			}
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			if err := f(num, typ, v, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneofMember returns the member of a oneof of message fields that proto
// keeps (the last one set) with its parts, and calls other with the parts
// of every member it discards, so that they are checked as proto checks
// them.
func oneofMember(p wireParts, members []protowire.Number, other func(protowire.Number, wireParts) error) (protowire.Number, wireParts, error) {
	var cur protowire.Number
	var parts wireParts
	err := p.walk(func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType || !slices.Contains(members, num) {
			return nil
		}
		if num != cur {
			if cur != 0 {
				if err := other(cur, parts); err != nil {
					return err
				}
			}
			cur, parts = num, nil
		}
		parts = append(parts, v)
		return nil
	})
	return cur, parts, err
}

// payload numbers of the two request messages.
func payloadNumbers(kind StreamKind) (create, resume, ingest, batch protowire.Number) {
	if kind == KindPersistent {
		return 1, 2, 3, 4
	}
	return 1, -1, 2, 3
}

// decodeRequest decodes a stream request of the given kind. An ingest
// batch comes back with its records counted (batchParts, nrec) but not yet
// sliced: fillRecords does that once the budget covers them.
func decodeRequest(kind StreamKind, b []byte) *clientMsg {
	create, resume, ingest, batch := payloadNumbers(kind)
	members := []protowire.Number{create, ingest, batch}
	if resume > 0 {
		members = append(members, resume)
	}
	check := func(num protowire.Number, parts wireParts) error {
		switch num {
		case ingest:
			_, err := decodeRecordRequest(parts)
			return err
		case batch:
			_, err := decodeBatchRequest(parts)
			return err
		}
		// A discarded create or resume, rare: proto checks it as its type.
		var v proto.Message = &ingestpb.ResumeIngestStreamRequest{}
		switch {
		case num == create && kind == KindPersistent:
			v = &ingestpb.CreatePersistentStreamRequest{}
		case num == create:
			v = &ingestpb.CreateIngestStreamRequest{}
		}
		return proto.Unmarshal(slices.Concat(parts...), v)
	}
	num, parts, err := oneofMember(wireParts{b}, members, check)
	if err == nil {
		switch num {
		case ingest:
			var m *clientMsg
			if m, err = decodeRecordRequest(parts); err == nil {
				return m
			}
		case batch:
			var m *clientMsg
			if m, err = decodeBatchRequest(parts); err == nil {
				return m
			}
		default:
			return decodeOpen(kind, b)
		}
	}
	return &clientMsg{kind: msgMalformed, malformed: "malformed message: " + err.Error()}
}

// decodeRecordRequest decodes an IngestRecordRequest.
func decodeRecordRequest(p wireParts) (*clientMsg, error) {
	m := &clientMsg{kind: msgIngest}
	var rec []byte
	err := p.walk(func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			off := int64(x)
			m.offset = &off
		case num == 2 && typ == protowire.BytesType:
			m.recType, rec = ingestpb.RecordType_PROTO, v
		case num == 3 && typ == protowire.BytesType:
			m.recType, rec = ingestpb.RecordType_JSON, v
		case num == 4 && typ == protowire.BytesType:
			m.recType, rec = ingestpb.RecordType_AVRO, v
		}
		return nil
	})
	if m.recType != ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED {
		m.records = [][]byte{rec[:len(rec):len(rec)]}
		m.nrec = 1
	}
	return m, err
}

// decodeBatchRequest decodes an IngestRecordBatchRequest, counting its records.
func decodeBatchRequest(p wireParts) (*clientMsg, error) {
	m := &clientMsg{kind: msgIngest, batch: true}
	err := p.walk(func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
		if num == 1 && typ == protowire.VarintType {
			off := int64(x)
			m.offset = &off
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	count := func(_ protowire.Number, parts wireParts) error {
		_, err := countRecords(parts)
		return err
	}
	num, parts, err := oneofMember(p, []protowire.Number{2, 3, 4}, count)
	if err != nil {
		return nil, err
	}
	switch num {
	case 2:
		m.recType = ingestpb.RecordType_PROTO
	case 3:
		m.recType = ingestpb.RecordType_JSON
	case 4:
		m.recType = ingestpb.RecordType_AVRO
	default:
		return m, nil
	}
	m.batchParts = parts
	m.nrec, err = countRecords(parts)
	return m, err
}

// countRecords counts the records of a JsonRecordBatch,
// ProtoEncodedRecordBatch or AvroRecordBatch (field 1, repeated) and
// checks its wire format.
func countRecords(p wireParts) (int, error) {
	n := 0
	err := p.walk(func(num protowire.Number, typ protowire.Type, _ []byte, _ uint64) error {
		if num == 1 && typ == protowire.BytesType {
			n++
		}
		return nil
	})
	return n, err
}

// fillRecords slices the records of a batch decoded by decodeBatchRequest out of
// the received buffer (no copy); each record's capacity ends with it, so
// that nothing appends over the next one.
func (m *clientMsg) fillRecords() {
	if m.batchParts == nil || m.records != nil {
		return
	}
	recs := make([][]byte, 0, m.nrec)
	_ = m.batchParts.walk(func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num == 1 && typ == protowire.BytesType {
			recs = append(recs, v[:len(v):len(v)])
		}
		return nil
	})
	m.records, m.batchParts = recs, nil
}

// decodeOpen decodes a request that is not an ingest request (create,
// resume, or none) with proto.Unmarshal.
func decodeOpen(kind StreamKind, b []byte) *clientMsg {
	if kind == KindPersistent {
		r := &ingestpb.PersistentStreamRequest{}
		if err := proto.Unmarshal(b, r); err != nil {
			return &clientMsg{kind: msgMalformed, malformed: "malformed message: " + err.Error()}
		}
		switch p := r.Payload.(type) {
		case *ingestpb.PersistentStreamRequest_CreateStream:
			return &clientMsg{kind: msgCreate, create: p.CreateStream.GetCreateStream()}
		case *ingestpb.PersistentStreamRequest_ResumeStream:
			return &clientMsg{kind: msgResume, resume: p.ResumeStream}
		}
		return &clientMsg{kind: msgEmpty}
	}
	r := &ingestpb.EphemeralStreamRequest{}
	if err := proto.Unmarshal(b, r); err != nil {
		return &clientMsg{kind: msgMalformed, malformed: "malformed message: " + err.Error()}
	}
	if p, ok := r.Payload.(*ingestpb.EphemeralStreamRequest_CreateStream); ok {
		return &clientMsg{kind: msgCreate, create: p.CreateStream}
	}
	return &clientMsg{kind: msgEmpty}
}
