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
//	  kind    byte   1: a single record (IngestRecord), 2: a batch (IngestBatch)
//	  count   uvarint, then count times: uvarint length, the record's bytes
//
// A segment file is nothing but entries, back to back, with dense offsets;
// its name holds the offset of its first entry (the offset its first entry
// will have, while it is empty).

const (
	entryHeader = 8
	kindRecord  = 1
	kindBatch   = 2
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
	offset  int64
	batch   bool
	records [][]byte
}

// encodedSize returns the bytes appendEntry writes for e.
func encodedSize(records [][]byte) int {
	n := entryHeader + 8 + 1 + binary.MaxVarintLen64
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
	if e.batch {
		dst = append(dst, kindBatch)
	} else {
		dst = append(dst, kindRecord)
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

// decodeSegment reads the entries of a segment's bytes. It returns the
// entries of the longest valid prefix and its length in bytes: the bytes
// after it (if any) are a torn or corrupt tail, which a crash during a
// write leaves (a header or body cut short, a checksum that does not
// match). An entry whose checksum matches but whose body is malformed, or
// whose offset does not follow the one before (or first, unless first is
// negative), cannot come from a crash: that is a *CorruptError. Records
// alias data.
func decodeSegment(data []byte, first int64, file string) ([]entry, int, error) {
	var out []entry
	pos := 0
	next := first
	for {
		rest := data[pos:]
		if len(rest) < entryHeader {
			return out, pos, nil
		}
		n := binary.LittleEndian.Uint32(rest)
		if n > maxEntryBody || uint64(len(rest)-entryHeader) < uint64(n) {
			return out, pos, nil
		}
		body := rest[entryHeader : entryHeader+int(n)]
		crc := crc32.Update(0, castagnoli, rest[:4])
		crc = crc32.Update(crc, castagnoli, body)
		if crc != binary.LittleEndian.Uint32(rest[4:]) {
			return out, pos, nil
		}
		e, err := decodeBody(body)
		if err != nil {
			return out, pos, &CorruptError{File: file, Offset: int64(pos), Reason: err.Error()}
		}
		if next >= 0 && e.offset != next {
			return out, pos, &CorruptError{File: file, Offset: int64(pos),
				Reason: fmt.Sprintf("entry has offset %d, expected %d", e.offset, next)}
		}
		next = e.offset + 1
		out = append(out, e)
		pos += entryHeader + int(n)
	}
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
	switch b[8] {
	case kindRecord:
	case kindBatch:
		e.batch = true
	default:
		return e, fmt.Errorf("entry kind %d", b[8])
	}
	b = b[9:]
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
