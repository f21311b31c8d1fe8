package server

import (
	"encoding/binary"
	"errors"
)

// How the bolt store lays out a stream's batches: keys in offset order,
// values a record count and length-prefixed records.

// offsetKey is a batch's key in its stream's bucket: big endian, so that
// bbolt's byte order is offset order (offsets are never negative).
func offsetKey(off int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(off))
}

// encodedSize bounds the size of encodeBatch's output.
func encodedSize(records [][]byte) int {
	n := binary.MaxVarintLen64
	for _, r := range records {
		n += binary.MaxVarintLen64 + len(r)
	}
	return n
}

// encode encodes a batch in the committer, into a buffer given back when
// the transaction ends.
func (s *BoltStore) encode(records [][]byte) []byte {
	p := s.bufs.get(encodedSize(records))
	s.scratch = append(s.scratch, p)
	return encodeBatch(p.b[:0], records)
}

// encodeBatch appends a batch's stored value to v: uvarint record count,
// then each record as uvarint length and bytes.
func encodeBatch(v []byte, records [][]byte) []byte {
	v = binary.AppendUvarint(v, uint64(len(records)))
	for _, r := range records {
		v = binary.AppendUvarint(v, uint64(len(r)))
		v = append(v, r...)
	}
	return v
}

var errCorruptBatch = errors.New("corrupt batch")

// decodeBatch decodes encodeBatch's output into fresh slices (bbolt's
// values are valid only in their transaction).
func decodeBatch(v []byte) ([][]byte, error) {
	count, n := binary.Uvarint(v)
	if n <= 0 || count > uint64(len(v)) {
		return nil, errCorruptBatch
	}
	v = v[n:]
	records := make([][]byte, count)
	for i := range records {
		l, n := binary.Uvarint(v)
		if n <= 0 || l > uint64(len(v)-n) {
			return nil, errCorruptBatch
		}
		records[i] = append([]byte(nil), v[n:n+int(l)]...)
		v = v[n+int(l):]
	}
	if len(v) != 0 {
		return nil, errCorruptBatch
	}
	return records, nil
}
