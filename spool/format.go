package spool

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The log's entry format (all integers little-endian):
//
//	length  uint32   bytes of the body
//	crc     uint32   CRC-32C (Castagnoli) of the length field and the body
//	body:
//	  offset  int64  the call's offset
//	  kind    byte   1: a single record (IngestRecord), 2: a batch (IngestBatch),
//	                 plus 0x80 (kindGrouped) when a group field follows
//	  group   uvarint, only with 0x80: offset minus the offset of the first
//	          entry of the entry's group commit (0: it starts a group)
//	  count   uvarint, then count times: uvarint length, the record's bytes
//
// A segment file is nothing but entries, back to back, with dense offsets;
// its name holds the offset of its first entry (the offset its first entry
// will have, while it is empty). A group commit (one write and one fsync)
// never spans two segments, so a segment's first entry starts a group.
// Entries without 0x80 were written before groups were recorded: they are
// read as before, their group unknown (see findLater for what that costs).

const (
	entryHeader = 8
	kindRecord  = 1
	kindBatch   = 2
	// kindGrouped marks an entry that records its group commit.
	kindGrouped = 0x80
	// minEntry is the smallest entry: header, offset, kind, a count of one
	// and an empty record.
	minEntry = entryHeader + 8 + 1 + 1 + 1
	// maxEntryBody bounds an entry's body: a length above it is garbage
	// (a torn or corrupt header), never a call.
	maxEntryBody = 64 << 20
	// maxCallLimit is the largest MaxCallBytes a spool takes, so that every
	// entry stays below maxEntryBody.
	maxCallLimit = 32 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one ingest call in the log.
type entry struct {
	offset int64
	batch  bool
	// group is the offset of the first entry of the entry's group commit;
	// -1: unknown (an entry written before groups were recorded).
	group   int64
	records [][]byte
}

// encodedSize returns the bytes appendEntry writes for e.
func encodedSize(records [][]byte) int {
	n := entryHeader + 8 + 1 + 2*binary.MaxVarintLen64
	for _, r := range records {
		n += binary.MaxVarintLen64 + len(r)
	}
	return n
}

// appendEntry appends e's encoding to dst.
func appendEntry(dst []byte, e *entry) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, entryHeader)...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(e.offset))
	kind := byte(kindRecord)
	if e.batch {
		kind = kindBatch
	}
	if e.group >= 0 {
		dst = append(dst, kind|kindGrouped)
		dst = binary.AppendUvarint(dst, uint64(e.offset-e.group))
	} else {
		dst = append(dst, kind)
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.records)))
	for _, r := range e.records {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start-entryHeader))
	crc := crc32.Update(0, castagnoli, dst[start:start+4])
	crc = crc32.Update(crc, castagnoli, dst[start+entryHeader:])
	binary.LittleEndian.PutUint32(dst[start+4:], crc)
	return dst
}

// decodeBody decodes an entry's body (its checksum already checked).
func decodeBody(b []byte) (entry, error) {
	var e entry
	if len(b) < 9 {
		return e, fmt.Errorf("entry body of %d bytes", len(b))
	}
	e.offset = int64(binary.LittleEndian.Uint64(b))
	if e.offset < 0 || e.offset == 1<<63-1 {
		return e, fmt.Errorf("entry offset %d", e.offset)
	}
	switch b[8] &^ kindGrouped {
	case kindRecord:
	case kindBatch:
		e.batch = true
	default:
		return e, fmt.Errorf("entry kind %d", b[8])
	}
	grouped := b[8]&kindGrouped != 0
	b = b[9:]
	e.group = -1
	if grouped {
		d, k := binary.Uvarint(b)
		// A non-minimal varint would not re-encode to the same bytes.
		if k <= 0 || k != len(binary.AppendUvarint(nil, d)) || d > uint64(e.offset) {
			return e, fmt.Errorf("entry group")
		}
		e.group = e.offset - int64(d)
		b = b[k:]
	}
	count, k := binary.Uvarint(b)
	if k <= 0 || count == 0 || count > uint64(len(b)) {
		return e, fmt.Errorf("entry record count")
	}
	if !e.batch && count != 1 {
		return e, fmt.Errorf("single-record entry with %d records", count)
	}
	b = b[k:]
	e.records = make([][]byte, 0, count)
	for range count {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return e, fmt.Errorf("entry record length")
		}
		e.records = append(e.records, b[k:k+int(n):k+int(n)])
		b = b[k+int(n):]
	}
	if len(b) != 0 {
		return e, fmt.Errorf("%d bytes after the entry's records", len(b))
	}
	return e, nil
}
