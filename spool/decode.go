package spool

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// segScan is what decodeSegment finds in a segment's bytes.
type segScan struct {
	// ents are the entries of the longest valid prefix, valid its length
	// in bytes. Bytes after it (valid < len) are damage: a torn tail or
	// corruption.
	ents  []entry
	valid int
	// next is the offset the first damaged entry had (the one after the
	// prefix); -1 if unknown (no prefix and no first offset given).
	next int64
	// later are the entries found intact after the damage, by scanning
	// every byte position; last is the highest offset among them (-1:
	// none).
	later int
	last  int64
	// proof is the first of them that a later group commit wrote than
	// the damaged entry's (-1: none): the damage then hit synced entries
	// and is not a torn write. proofPos is its byte position.
	proof    int64
	proofPos int
}

// damaged reports whether bytes follow the valid prefix.
func (s *segScan) damaged(size int) bool { return s.valid < size }

// decodeSegment reads the entries of a segment's bytes: the longest valid
// prefix, then, if bytes follow it (an entry cut short or whose checksum
// does not match), the intact entries found after the damage (see
// findLater). An entry whose checksum matches but whose body is
// malformed, or whose offset does not follow the one before (or first,
// unless first is negative), or whose group does not continue the one
// before or start at itself, cannot come from a crash: that is a
// *CorruptError. Records alias data.
func decodeSegment(data []byte, first int64, file string) (segScan, error) {
	s := segScan{next: first, last: -1, proof: -1}
	pos := 0
	group := int64(-1)
	for {
		e, n, ok, err := entryAt(data, pos)
		if !ok {
			break
		}
		if err != nil {
			return s, &CorruptError{File: file, Offset: int64(pos), Reason: err.Error()}
		}
		if s.next >= 0 && e.offset != s.next {
			return s, &CorruptError{File: file, Offset: int64(pos),
				Reason: fmt.Sprintf("entry has offset %d, expected %d", e.offset, s.next)}
		}
		// A group starts at its own entry or continues the one before; a
		// segment starts with a group.
		if e.group >= 0 && e.group != e.offset && (pos == 0 || e.group != group) {
			return s, &CorruptError{File: file, Offset: int64(pos),
				Reason: fmt.Sprintf("entry %d says its group starts at %d, which is not its group", e.offset, e.group)}
		}
		group = e.group
		s.next = e.offset + 1
		s.ents = append(s.ents, e)
		pos += n
	}
	s.valid = pos
	if pos < len(data) {
		s.findLater(data)
	}
	return s, nil
}

// findLater scans the bytes after the valid prefix for intact entries,
// trying every byte position (a damaged length field says nothing about
// where the next entry starts) and skipping over each entry it finds.
//
// A torn write damages only the last group commit, but anywhere in it:
// the kernel may write the pages of one write back in any order, so an
// intact entry of that group may follow a damaged one. An intact entry of
// a LATER group than the damaged entry's (its group starts after the
// damaged offset) proves that the damaged entry's group had been synced
// before: that is corruption. An entry without a recorded group (written
// before groups were) counts as proof if its offset is above the damaged
// one: a torn old-format group may then be refused, which costs an
// operator's repair but no synced entry; cutting it could lose synced
// entries silently. Entries with offsets below the damaged one (stale
// bytes of a removed file a crash can expose) prove nothing.
func (s *segScan) findLater(data []byte) {
	k := s.next
	// An entry takes minEntry bytes at least: offsets beyond this are not
	// of this segment, whatever their checksum says.
	limit := int64(len(data)-s.valid)/minEntry + 1
	for q := s.valid + 1; q+minEntry <= len(data); {
		// Cheap tests before the checksum: an offset out of range, a kind
		// byte no writer writes.
		o := int64(binary.LittleEndian.Uint64(data[q+entryHeader:]))
		kind := data[q+entryHeader+8] &^ kindGrouped
		if (k >= 0 && (o < k || o-k > limit)) || (kind != kindRecord && kind != kindBatch) {
			q++
			continue
		}
		e, n, ok, err := entryAt(data, q)
		if !ok || err != nil {
			q++
			continue
		}
		s.later++
		s.last = max(s.last, e.offset)
		if s.proof < 0 && (e.group > k || (e.group < 0 && e.offset > k)) {
			s.proof, s.proofPos = e.offset, q
		}
		q += n
	}
}

// entryAt decodes the entry at data[pos:]: ok is false if there is none
// (too short, a length out of range, a checksum that does not match); err
// is set if its checksum matches but its body is malformed.
func entryAt(data []byte, pos int) (e entry, size int, ok bool, err error) {
	rest := data[pos:]
	if len(rest) < entryHeader {
		return e, 0, false, nil
	}
	n := binary.LittleEndian.Uint32(rest)
	if n > maxEntryBody || uint64(len(rest)-entryHeader) < uint64(n) {
		return e, 0, false, nil
	}
	body := rest[entryHeader : entryHeader+int(n)]
	crc := crc32.Update(0, castagnoli, rest[:4])
	crc = crc32.Update(crc, castagnoli, body)
	if crc != binary.LittleEndian.Uint32(rest[4:]) {
		return e, 0, false, nil
	}
	e, err = decodeBody(body)
	return e, entryHeader + int(n), true, err
}
