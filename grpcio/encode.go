package grpcio

import (
	"encoding/binary"
	"unsafe"

	"google.golang.org/grpc/mem"
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
	fieldAvroRecord      = 4 // IngestRecordRequest.avro_encoded_record; IngestRecordBatchRequest.avro_batch
	fieldBatchRecords    = 1 // JsonRecordBatch.records, ProtoEncodedRecordBatch.records, AvroRecordBatch.records
)

// encoded is one ingest call ready for gRPC: wire is its encoding, in
// buffers taken for this call alone, and msg is the same call as a message
// whose records alias wire (with a pool: passThrough, which nobody but our
// codec reads). Neither is modified after it is made, and neither points
// into the stream's record memory (but for a lent payload, below): both
// are handed to gRPC by Send.
//
// Where the buffers come from is the conn's choice (encodingPool). With a
// pool, they go back to it when gRPC frees them, which gRPC does once its
// transport has written them: only chosen when nothing but gRPC's own code
// ever sees msg. Without one, they are fresh heap buffers that belong to
// gRPC, and to whatever gRPC hands msg to, for as long as anyone keeps
// them; the garbage collector frees them.
//
// With a pool, the last piece of wire may instead be the call's payload
// itself, lent by the stream (lent: see streamio.Loan), which gRPC holds
// under a Borrow that it returns when it frees the buffer.
type encoded struct {
	msg  any
	wire [][]byte
	// owners holds each wire buffer as the pool gave it, to return it;
	// nil without a pool, and nil for the lent piece.
	owners []*[]byte
	pool   mem.BufferPool
	data   mem.BufferSlice // room for buffers' answer
	lent   *lentPayload    // the lent piece, or nil
}

// lentPayload is a call's payload lent by the stream, as gRPC holds it: a
// buffer (b, which gRPC takes by address) whose pool is the payload itself,
// so that gRPC's last Free of it returns the loan rather than pool memory.
type lentPayload struct {
	b    []byte
	loan *streamio.Loan
}

var _ mem.BufferPool = (*lentPayload)(nil)

// Get is never called for a lent buffer (gRPC asks a buffer's pool only to
// put it back); it returns a fresh slice all the same.
func (l *lentPayload) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

// Put returns the loan: gRPC has let go of the payload.
func (l *lentPayload) Put(*[]byte) { l.loan.Return() }

// lends reports whether payload may go to gRPC as it is rather than be
// copied: it is lent (loan), and large enough that gRPC gives its buffer
// back (mem.NewBuffer treats one of at most 1 KiB as a plain slice that it
// never frees, so the loan would never return).
func lends(loan *streamio.Loan, payload []byte) bool {
	return loan != nil && !mem.IsBelowBufferPoolingThreshold(cap(payload))
}

// buffers returns the encoding as gRPC takes it from a codec: buffers that
// go back to the pool when gRPC frees them, or plain slices.
func (e encoded) buffers() mem.BufferSlice {
	data := e.data[:0]
	if cap(data) < len(e.wire) {
		data = make(mem.BufferSlice, 0, len(e.wire))
	}
	data = data[:len(e.wire)]
	for i, b := range e.wire {
		switch {
		case e.pool == nil:
			data[i] = mem.SliceBuffer(b)
		case e.owners[i] == nil:
			e.lent.loan.Borrow()
			data[i] = mem.NewBuffer(&e.lent.b, e.lent)
		default:
			*e.owners[i] = b
			data[i] = mem.NewBuffer(e.owners[i], e.pool)
		}
	}
	return data
}

// chunkSize bounds each buffer of an encoding: allocations up to 32 KiB
// come from the Go runtime's per-P caches (and the transport's pool has a
// class of that size), larger ones from the heap under its lock, and once
// freed are given back to the OS (madvise) and faulted in again: measured,
// a 108 KiB buffer per call cost several times the copy itself. A record
// larger than a chunk gets a buffer of its own.
const chunkSize = 32 << 10

// chunks builds an encoding in buffers of at most chunkSize bytes (or one
// record's size), never splitting a record, so that the message built over
// them can alias each record (record, records). Each buffer is sized for
// what will go into it: the pieces already asked for and the records that
// follow, as many as fit. A pooled encoding of a framed batch (framed)
// builds no message and splits records where the chunks end.
type chunks struct {
	bufs   [][]byte
	owners []*[]byte        // with a pool: each buffer as the pool gave it
	pool   mem.BufferPool   // nil: fresh heap buffers
	recs   [][]byte         // the records not yet appended, in order
	rest   int              // the encoded size of recs' fields, if known; -1: not known
	field  protowire.Number // the field they are appended as
	data   mem.BufferSlice  // room for the encoding's buffers as gRPC takes them
	lent   *lentPayload     // the lent last piece (lend), or nil
}

// chunkStore holds a call's chunks with room for the few buffers most
// calls need, and what is made of them, in one allocation rather than one
// each.
type chunkStore struct {
	c      chunks
	one    [1][]byte // the record of a single-record call
	bufs   [2][]byte
	owners [2]*[]byte
	data   [2]mem.Buffer
	lent   lentPayload
}

func newChunks(pool mem.BufferPool, field protowire.Number, recs [][]byte) *chunks {
	return new(chunkStore).chunks(pool, field, recs)
}

// newChunksOne is newChunks for the single record rec.
func newChunksOne(pool mem.BufferPool, field protowire.Number, rec []byte) *chunks {
	st := new(chunkStore)
	st.one[0] = rec
	return st.chunks(pool, field, st.one[:])
}

// chunks makes the store's chunks, over its room.
func (st *chunkStore) chunks(pool mem.BufferPool, field protowire.Number, recs [][]byte) *chunks {
	st.c = chunks{bufs: st.bufs[:0], owners: st.owners[:0], data: st.data[:0], pool: pool, recs: recs, field: field, rest: -1}
	return &st.c
}

// room returns the buffer to append the next n bytes to, starting a new
// one when the current one lacks room. The caller appends exactly n bytes
// and stores the result with set.
func (c *chunks) room(n int) []byte {
	if len(c.bufs) > 0 {
		if b := c.bufs[len(c.bufs)-1]; cap(b)-len(b) >= n {
			return b
		}
	}
	size := n
	if c.rest >= 0 && size+c.rest <= chunkSize {
		size += c.rest // all that is left fits: no need to look at each
	} else {
		size = c.lookAhead(size)
	}
	if c.pool == nil {
		c.bufs = append(c.bufs, make([]byte, 0, size))
	} else {
		p := c.pool.Get(size)
		c.owners = append(c.owners, p)
		c.bufs = append(c.bufs, (*p)[:0])
	}
	return c.bufs[len(c.bufs)-1]
}

// lookAhead returns size grown by the records that follow, as many as fit
// in a chunk.
func (c *chunks) lookAhead(size int) int {
	for _, r := range c.recs {
		p := protowire.SizeTag(c.field) + sizeBytes(len(r))
		if size+p > chunkSize {
			break
		}
		size += p
	}
	return size
}

// done returns the encoding with msg, the message built over it.
func (c *chunks) done(msg any) encoded {
	return encoded{msg: msg, wire: c.bufs, owners: c.owners, pool: c.pool, data: c.data, lent: c.lent}
}

// lend ends a pooled encoding with payload, lent under loan, as its last
// piece: gRPC reads it where the stream keeps it, and nothing is copied.
func (st *chunkStore) lend(payload []byte, loan *streamio.Loan) {
	c := &st.c
	st.lent = lentPayload{b: payload, loan: loan}
	c.lent = &st.lent
	c.bufs = append(c.bufs, payload)
	c.owners = append(c.owners, nil)
}

// newLending returns the chunks of a pooled encoding whose payload is lent
// (lend): its own chunks hold only what precedes the payload.
func newLending(pool mem.BufferPool) (*chunkStore, *chunks) {
	st := new(chunkStore)
	c := st.chunks(pool, 0, nil)
	c.rest = 0 // nothing but the header is copied: room sizes for it alone
	return st, c
}

// set stores b, the buffer room returned after appending to it.
func (c *chunks) set(b []byte) { c.bufs[len(c.bufs)-1] = b }

// record appends the next record as one length-delimited field and returns
// its copy within the encoding.
func (c *chunks) record() []byte {
	r := c.recs[0]
	c.recs, c.rest = c.recs[1:], -1
	b := c.room(protowire.SizeTag(c.field) + protowire.SizeBytes(len(r)))
	b = protowire.AppendTag(b, c.field, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(len(r)))
	at := len(b)
	b = append(b, r...)
	c.set(b)
	return b[at:len(b):len(b)]
}

// records appends every record not yet appended, each as one
// length-delimited field: record's work without its per-record calls and
// the copies it returns, for an encoding that needs none (the pooled one).
// With small records the calls were most of the encoding's cost.
func (c *chunks) records() {
	var tagBuf [binary.MaxVarintLen32]byte
	tag := protowire.AppendTag(tagBuf[:0], c.field, protowire.BytesType)
	// A one-byte tag (every field records travel in) and a record under
	// 128 bytes: two bytes of framing, appended as such.
	short := len(tag) == 1
	b := c.bufs[len(c.bufs)-1] // the header's buffer, sized for what follows
	recs := c.recs
	for i, r := range recs {
		n := len(tag) + sizeBytes(len(r))
		if cap(b)-len(b) < n {
			c.set(b)
			c.recs, c.rest = recs[i+1:], -1 // what follows r: room sizes the buffer for r and as many of them as fit
			b = c.room(n)
		}
		if short && len(r) < 0x80 {
			b = append(b, tag[0], byte(len(r)))
		} else {
			b = append(b, tag...)
			b = protowire.AppendVarint(b, uint64(len(r)))
		}
		b = append(b, r...)
	}
	c.set(b)
	c.recs, c.rest = nil, 0
}

// framed appends the records already framed, as one piece split into
// chunks of at most chunkSize bytes wherever they fall: nothing aliases a
// record in the pooled encoding, so a record may span two chunks.
func (c *chunks) framed(framed []byte) {
	c.recs, c.rest = nil, 0 // room sizes each chunk from what it is asked for
	b := c.bufs[len(c.bufs)-1]
	for {
		n := copy(b[len(b):cap(b)], framed)
		b, framed = b[:len(b)+n], framed[n:]
		if len(framed) == 0 {
			break
		}
		c.set(b)
		b = c.room(min(len(framed), chunkSize))
	}
	c.set(b)
}

// header appends what precedes the records: the outer field's tag and
// length, the offset and, for a batch (batch non-zero), the batch field's
// tag and the length list of its records.
func (c *chunks) header(outer protowire.Number, inner int, off int64, batch protowire.Number, list int) {
	n := protowire.SizeTag(outer) + protowire.SizeVarint(uint64(inner)) +
		protowire.SizeTag(fieldOffsetID) + protowire.SizeVarint(uint64(off))
	if batch != 0 {
		n += protowire.SizeTag(batch) + protowire.SizeVarint(uint64(list))
	}
	b := c.room(n)
	b = protowire.AppendTag(b, outer, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(inner))
	b = protowire.AppendTag(b, fieldOffsetID, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(off))
	if batch != 0 {
		b = protowire.AppendTag(b, batch, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(list))
	}
	c.set(b)
}

// passThrough is what gRPC is handed in place of the message when an
// encoding's buffers come from a pool: then nothing but gRPC's own code
// sees what SendMsg is given (encodingPool), and gRPC reads nothing of it
// but its identity, which our codec matches to hand over the encoding
// (sendCodec.Marshal). Building the message over the encoding, which
// tracing, a stats handler or an interceptor may read, is work (some 2 KiB
// and 3 allocations a batch of 100 JSON records) that nobody would read.
// It is a value no one modifies: one for the package is enough.
var passThrough any = &struct{ byte }{}

// encodeCall encodes call for a stream of the given kind and record type:
// one record as an IngestRecordRequest, two or more as an
// IngestRecordBatchRequest. Encoding is the one copy of the records that
// sending costs; the message shown to gRPC is built over the encoding
// rather than copied again. With a pool, a lent payload (streamio.Loan) is
// not copied at all: the encoding is its header, followed by the payload
// where the stream keeps it.
func encodeCall(pool mem.BufferPool, kind core.Kind, rt core.RecordType, call streamio.Call) encoded {
	recs := call.Records
	if recs == nil {
		return encodeOne(pool, kind, rt, call.Wire, call.Record, call.Loan)
	}
	if len(recs) == 1 {
		return encodeOne(pool, kind, rt, call.Wire, recs[0], call.Loan)
	}
	return encodeBatch(pool, kind, rt, call.Wire, recs, call.Framed, call.Loan)
}

// recordField is the field of IngestRecordRequest's record oneof, and of
// IngestRecordBatchRequest's batch oneof, for records of type rt.
func recordField(rt core.RecordType) protowire.Number {
	switch rt {
	case core.RecordJSON:
		return fieldJSONRecord
	case core.RecordAvro:
		return fieldAvroRecord
	}
	return fieldProtoRecord
}

// oneView holds every part of a single-record message in one allocation.
type oneView struct {
	off   int64
	req   ingestpb.IngestRecordRequest
	json  ingestpb.IngestRecordRequest_JsonRecord
	proto ingestpb.IngestRecordRequest_ProtoEncodedRecord
	avro  ingestpb.IngestRecordRequest_AvroEncodedRecord
	eph   ingestpb.EphemeralStreamRequest
	ephIn ingestpb.EphemeralStreamRequest_IngestRecord
	per   ingestpb.PersistentStreamRequest
	perIn ingestpb.PersistentStreamRequest_IngestRecord
}

func encodeOne(pool mem.BufferPool, kind core.Kind, rt core.RecordType, off int64, rec []byte, loan *streamio.Loan) encoded {
	recField := recordField(rt)
	inner := protowire.SizeTag(fieldOffsetID) + protowire.SizeVarint(uint64(off)) +
		protowire.SizeTag(recField) + protowire.SizeBytes(len(rec))
	outerField := protowire.Number(fieldPerIngestRecord)
	if kind == core.Ephemeral {
		outerField = fieldEphIngestRecord
	}
	if pool != nil && lends(loan, rec) {
		st, c := newLending(pool)
		c.header(outerField, inner, off, 0, 0)
		b := c.room(protowire.SizeTag(recField) + protowire.SizeVarint(uint64(len(rec))))
		b = protowire.AppendTag(b, recField, protowire.BytesType)
		c.set(protowire.AppendVarint(b, uint64(len(rec))))
		st.lend(rec, loan)
		return c.done(passThrough)
	}
	c := newChunksOne(pool, recField, rec)
	c.header(outerField, inner, off, 0, 0)
	own := c.record()
	if pool != nil {
		return c.done(passThrough)
	}

	v := &oneView{off: off}
	v.req.OffsetId = &v.off
	switch rt {
	case core.RecordJSON:
		v.json.JsonRecord = bytesString(own)
		v.req.Record = &v.json
	case core.RecordAvro:
		v.avro.AvroEncodedRecord = own
		v.req.Record = &v.avro
	default:
		v.proto.ProtoEncodedRecord = own
		v.req.Record = &v.proto
	}
	if kind == core.Ephemeral {
		v.ephIn.IngestRecord = &v.req
		v.eph.Payload = &v.ephIn
		return c.done(&v.eph)
	}
	v.perIn.IngestRecord = &v.req
	v.per.Payload = &v.perIn
	return c.done(&v.per)
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
	avro      ingestpb.AvroRecordBatch
	avroCase  ingestpb.IngestRecordBatchRequest_AvroBatch
	eph       ingestpb.EphemeralStreamRequest
	ephIn     ingestpb.EphemeralStreamRequest_IngestRecordBatch
	per       ingestpb.PersistentStreamRequest
	perIn     ingestpb.PersistentStreamRequest_IngestRecordBatch
}

// With a pool, a batch whose records come framed (framed: see
// streamio.Call.Framed) is copied as one piece after the header, in
// chunks, rather than framed record by record: one copy of the records
// where framing each cost a call and its bookkeeping per record.
func encodeBatch(pool mem.BufferPool, kind core.Kind, rt core.RecordType, off int64, recs [][]byte, framed []byte, loan *streamio.Loan) encoded {
	// Unpooled, the records are encoded one by one (Framed is not used),
	// so the list's size is theirs.
	list, whole := recordListSize(recs), false
	if pool != nil {
		list, whole = listSize(recs, framed)
	}
	batchField := recordField(rt)
	inner := protowire.SizeTag(fieldOffsetID) + protowire.SizeVarint(uint64(off)) +
		protowire.SizeTag(batchField) + protowire.SizeBytes(list)
	outerField := protowire.Number(fieldPerIngestBatch)
	if kind == core.Ephemeral {
		outerField = fieldEphIngestBatch
	}
	if pool != nil && whole && lends(loan, framed) {
		st, c := newLending(pool)
		c.header(outerField, inner, off, batchField, list)
		st.lend(framed, loan)
		return c.done(passThrough)
	}
	c := newChunks(pool, fieldBatchRecords, recs)
	c.rest = list
	c.header(outerField, inner, off, batchField, list)
	if pool != nil {
		if whole {
			c.framed(framed)
		} else {
			c.records()
		}
		return c.done(passThrough)
	}

	v := &batchView{off: off}
	v.req.OffsetId = &v.off
	switch rt {
	case core.RecordJSON:
		strs := make([]string, len(recs))
		for i := range recs {
			strs[i] = bytesString(c.record())
		}
		v.json.Records = strs
		v.jsonCase.JsonBatch = &v.json
		v.req.Batch = &v.jsonCase
	default:
		owns := make([][]byte, len(recs))
		for i := range recs {
			owns[i] = c.record()
		}
		if rt == core.RecordAvro {
			v.avro.Records = owns
			v.avroCase.AvroBatch = &v.avro
			v.req.Batch = &v.avroCase
		} else {
			v.proto.Records = owns
			v.protoCase.ProtoEncodedBatch = &v.proto
			v.req.Batch = &v.protoCase
		}
	}
	if kind == core.Ephemeral {
		v.ephIn.IngestRecordBatch = &v.req
		v.eph.Payload = &v.ephIn
		return c.done(&v.eph)
	}
	v.perIn.IngestRecordBatch = &v.req
	v.per.Payload = &v.perIn
	return c.done(&v.per)
}

// sizeBytes is protowire.SizeBytes, without its arithmetic for the common
// case of a record under 128 bytes (a one-byte length): in batches of small
// records, SizeVarint's multiply and shift on every record were 7% of the
// client's CPU.
func sizeBytes(n int) int {
	if n < 0x80 {
		return 1 + n
	}
	return protowire.SizeBytes(n)
}

// listSize returns the size of a batch's record list as the message
// carries it, and whether the records lie in framed as the stream lays a
// framed batch out (streamio.Call.Framed): the first record right after
// its framing at framed's start, the last ending framed. Those two are
// checked on their addresses; the contract covers the records between
// (a wrapper that changes them must clear Framed). Then the size is
// framed's length, without a pass over the records, which costs as much as
// copying them when they are small. An empty first or last record has no
// address to check (a slice of nothing may point anywhere), so such a
// batch is summed, and taken as framed if the sizes agree, as before.
func listSize(recs [][]byte, framed []byte) (list int, whole bool) {
	if len(framed) == 0 || len(recs) == 0 {
		return recordListSize(recs), false
	}
	first, last := recs[0], recs[len(recs)-1]
	if len(first) == 0 || len(last) == 0 {
		list = recordListSize(recs)
		return list, list == len(framed)
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(framed)))
	head := uintptr(protowire.SizeTag(fieldBatchRecords) + protowire.SizeVarint(uint64(len(first))))
	if uintptr(unsafe.Pointer(unsafe.SliceData(first))) == at+head &&
		uintptr(unsafe.Pointer(unsafe.SliceData(last)))+uintptr(len(last)) == at+uintptr(len(framed)) {
		return len(framed), true
	}
	return recordListSize(recs), false
}

// recordListSize sums the size of recs as a batch's record list.
func recordListSize(recs [][]byte) (list int) {
	for _, r := range recs {
		list += protowire.SizeTag(fieldBatchRecords) + sizeBytes(len(r))
	}
	return list
}

// bytesString returns b's bytes as a string without copying them. Only for
// bytes that are never modified again: the encoding of a call is not.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
