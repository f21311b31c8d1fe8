package record

import "google.golang.org/protobuf/encoding/protowire"

// batchRecordField is the field number of the records of a batch
// (JsonRecordBatch.records, ProtoEncodedRecordBatch.records). The record
// of a single-record request is field 2 or 3 (proto_encoded_record,
// json_record): below 16 too, so in either a record's tag is one byte.
const batchRecordField protowire.Number = 1

// FramedSize returns the bytes a record of n bytes takes in an ingest
// request: a tag, its length as a varint, and the record itself
// (1+SizeVarint(n)+n). It is what the per-call limit counts of each
// record of a call, one record or a batch, since a call of many small
// records weighs in the message far more than its payload (a 1-byte
// record takes 3).
func FramedSize(n int) int64 {
	return int64(protowire.SizeTag(batchRecordField) + protowire.SizeBytes(n))
}

// CallSize returns the size of one ingest call of records as the per-call
// limit (core.Config.MaxCallBytes, zbstream.WithMaxCallBytes) counts it:
// the sum of FramedSize over its records. What the rest of a request
// takes (its offset, the batch field's header, the outer message) is
// covered by the headroom between the default limit, 10 MiB - 64 KiB,
// and the server's 10 MiB message limit.
func CallSize(records [][]byte) int64 {
	var n int64
	for _, r := range records {
		n += FramedSize(len(r))
	}
	return n
}
