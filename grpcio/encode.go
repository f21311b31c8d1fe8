package grpcio

import (
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// Field numbers of the ingest messages (proto/zerobus_service.proto); the
// encoding is checked against proto.Marshal in encode_test.go.
const (
	fieldEphIngestRecord = 2 // EphemeralStreamRequest.ingest_record
	fieldEphIngestBatch  = 3 // EphemeralStreamRequest.ingest_record_batch
	fieldPerIngestRecord = 3 // PersistentStreamRequest.ingest_record
	fieldPerIngestBatch  = 4 // PersistentStreamRequest.ingest_record_batch
	fieldOffsetID        = 1 // IngestRecordRequest and IngestRecordBatchRequest.offset_id
	fieldProtoRecord     = 2 // IngestRecordRequest.proto_encoded_record; IngestRecordBatchRequest.proto_encoded_batch
	fieldJSONRecord      = 3 // IngestRecordRequest.json_record; IngestRecordBatchRequest.json_batch
	fieldBatchRecords    = 1 // JsonRecordBatch.records and ProtoEncodedRecordBatch.records
)

// encoded is one ingest call ready for gRPC: wire is its encoding, in a heap
// buffer made for this call alone, and msg is the same call as a message
// whose records alias wire. Neither is modified after it is made, and
// neither points into the stream's record memory: both belong to gRPC (and
// to whatever gRPC hands them to) once Send passes them on, for as long as
// anyone keeps them. The garbage collector frees them.
type encoded struct {
	msg  any
	wire []byte
}

// encodeCall encodes call for a stream of the given kind and record type:
// one record as an IngestRecordRequest, two or more as an
// IngestRecordBatchRequest. Encoding is the one copy of the records that
// sending costs; the message shown to gRPC is built over the encoding
// rather than copied again.
func encodeCall(kind core.Kind, jsonRecords bool, call streamio.Call) encoded {
	recs := call.Records
	if recs == nil {
		return encodeOne(kind, jsonRecords, call.Wire, call.Record)
	}
	if len(recs) == 1 {
		return encodeOne(kind, jsonRecords, call.Wire, recs[0])
	}
	return encodeBatch(kind, jsonRecords, call.Wire, recs)
}

// oneView holds every part of a single-record message in one allocation.
type oneView struct {
	off   int64
	req   ingestpb.IngestRecordRequest
	json  ingestpb.IngestRecordRequest_JsonRecord
	proto ingestpb.IngestRecordRequest_ProtoEncodedRecord
	eph   ingestpb.EphemeralStreamRequest
	ephIn ingestpb.EphemeralStreamRequest_IngestRecord
	per   ingestpb.PersistentStreamRequest
	perIn ingestpb.PersistentStreamRequest_IngestRecord
}

func encodeOne(kind core.Kind, jsonRecords bool, off int64, rec []byte) encoded {
	recField := protowire.Number(fieldProtoRecord)
	if jsonRecords {
		recField = fieldJSONRecord
	}
	inner := protowire.SizeTag(fieldOffsetID) + protowire.SizeVarint(uint64(off)) +
		protowire.SizeTag(recField) + protowire.SizeBytes(len(rec))
	outerField := protowire.Number(fieldPerIngestRecord)
	if kind == core.Ephemeral {
		outerField = fieldEphIngestRecord
	}
	b := make([]byte, 0, protowire.SizeTag(outerField)+protowire.SizeBytes(inner))
	b = protowire.AppendTag(b, outerField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = protowire.AppendTag(b, fieldOffsetID, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(off))
	b = protowire.AppendTag(b, recField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(rec)))
	at := len(b)
	b = append(b, rec...)
	own := b[at:len(b):len(b)] // the record, in the encoding

	v := &oneView{off: off}
	v.req.OffsetId = &v.off
	if jsonRecords {
		v.json.JsonRecord = bytesString(own)
		v.req.Record = &v.json
	} else {
		v.proto.ProtoEncodedRecord = own
		v.req.Record = &v.proto
	}
	if kind == core.Ephemeral {
		v.ephIn.IngestRecord = &v.req
		v.eph.Payload = &v.ephIn
		return encoded{msg: &v.eph, wire: b}
	}
	v.perIn.IngestRecord = &v.req
	v.per.Payload = &v.perIn
	return encoded{msg: &v.per, wire: b}
}

// batchView holds every part of a batch message but its record list in one
// allocation.
type batchView struct {
	off       int64
	req       ingestpb.IngestRecordBatchRequest
	json      ingestpb.JsonRecordBatch
	jsonCase  ingestpb.IngestRecordBatchRequest_JsonBatch
	proto     ingestpb.ProtoEncodedRecordBatch
	protoCase ingestpb.IngestRecordBatchRequest_ProtoEncodedBatch
	eph       ingestpb.EphemeralStreamRequest
	ephIn     ingestpb.EphemeralStreamRequest_IngestRecordBatch
	per       ingestpb.PersistentStreamRequest
	perIn     ingestpb.PersistentStreamRequest_IngestRecordBatch
}

func encodeBatch(kind core.Kind, jsonRecords bool, off int64, recs [][]byte) encoded {
	list := 0
	for _, r := range recs {
		list += protowire.SizeTag(fieldBatchRecords) + protowire.SizeBytes(len(r))
	}
	batchField := protowire.Number(fieldProtoRecord)
	if jsonRecords {
		batchField = fieldJSONRecord
	}
	inner := protowire.SizeTag(fieldOffsetID) + protowire.SizeVarint(uint64(off)) +
		protowire.SizeTag(batchField) + protowire.SizeBytes(list)
	outerField := protowire.Number(fieldPerIngestBatch)
	if kind == core.Ephemeral {
		outerField = fieldEphIngestBatch
	}
	b := make([]byte, 0, protowire.SizeTag(outerField)+protowire.SizeBytes(inner))
	b = protowire.AppendTag(b, outerField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = protowire.AppendTag(b, fieldOffsetID, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(off))
	b = protowire.AppendTag(b, batchField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(list))

	v := &batchView{off: off}
	v.req.OffsetId = &v.off
	if jsonRecords {
		strs := make([]string, len(recs))
		for i, r := range recs {
			var own []byte
			b, own = appendRecord(b, r)
			strs[i] = bytesString(own)
		}
		v.json.Records = strs
		v.jsonCase.JsonBatch = &v.json
		v.req.Batch = &v.jsonCase
	} else {
		owns := make([][]byte, len(recs))
		for i, r := range recs {
			b, owns[i] = appendRecord(b, r)
		}
		v.proto.Records = owns
		v.protoCase.ProtoEncodedBatch = &v.proto
		v.req.Batch = &v.protoCase
	}
	if kind == core.Ephemeral {
		v.ephIn.IngestRecordBatch = &v.req
		v.eph.Payload = &v.ephIn
		return encoded{msg: &v.eph, wire: b}
	}
	v.perIn.IngestRecordBatch = &v.req
	v.per.Payload = &v.perIn
	return encoded{msg: &v.per, wire: b}
}

// appendRecord appends r as one element of a batch's records field and
// returns the encoding and r's copy within it. b has the capacity for it.
func appendRecord(b, r []byte) ([]byte, []byte) {
	b = protowire.AppendTag(b, fieldBatchRecords, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(r)))
	at := len(b)
	b = append(b, r...)
	return b, b[at:len(b):len(b)]
}

// bytesString returns b's bytes as a string without copying them. Only for
// bytes that are never modified again: the encoding of a call is not.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
