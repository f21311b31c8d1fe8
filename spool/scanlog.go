package spool

import (
	"fmt"
	"os"
)

// logScan is a read-only look at every segment of a log: what Open checks
// before it changes anything, and what Check reports.
type logScan struct {
	// segs are the segments in offset order, next their real end (the
	// offset after their valid prefix).
	segs []*segment
	info []segInfo
	// active is the last segment's valid prefix, torn the bytes after it
	// when they are a torn tail (Open cuts them).
	active []entry
	torn   int64
	// damage is every damage found, in log order.
	damage []damage
	// last is the highest offset the log is known to have given: of the
	// valid entries, of the intact entries after a damage, and of the
	// sealed segments' ends (their next segment's first offset - 1).
	last int64
}

// segInfo is what the scan found in one segment.
type segInfo struct {
	entries int   // in the valid prefix
	valid   int64 // its bytes
	later   int   // intact entries after a damage
}

// damage is one damaged place of the log: the segment segs[seg], whose
// entries before byte pos are intact, and next the offset of the first
// entry at stake.
type damage struct {
	seg  int
	pos  int64
	next int64
	err  *CorruptError
}

// scanLog reads every segment of dir without changing anything. A gap
// between two segments is tolerated when it starts at or after gapFrom
// (>= 0): a repair moved those offsets aside and the Open after it rolled
// the log past the server's watermark (see Spool.open).
func scanLog(dir string, gapFrom int64) (*logScan, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	sc := &logScan{segs: segs, info: make([]segInfo, len(segs)), last: -1}
	for i := range segs {
		active := i == len(segs)-1
		if err := sc.scanSegment(i, active, gapFrom); err != nil {
			return nil, err
		}
		if !active {
			sc.last = max(sc.last, segs[i+1].first-1)
		}
	}
	for _, d := range sc.damage {
		d.err.AtStake = span(d.next, sc.last)
	}
	return sc, nil
}

// scanSegment reads segment i and records what it holds and any damage.
func (sc *logScan) scanSegment(i int, active bool, gapFrom int64) error {
	sg := sc.segs[i]
	data, err := os.ReadFile(sg.path)
	if err != nil {
		return fmt.Errorf("spool: reading %s: %w", sg.path, err)
	}
	sg.size = int64(len(data))
	ss, err := decodeSegment(data, sg.first, sg.path)
	sg.next = ss.next
	sc.info[i] = segInfo{entries: len(ss.ents), valid: int64(ss.valid), later: ss.later}
	sc.last = max(sc.last, sg.next-1, ss.last)
	if err != nil {
		ce := err.(*CorruptError) // decodeSegment returns no other error
		sc.damage = append(sc.damage, damage{seg: i, pos: ce.Offset, next: ss.next, err: ce})
		return nil
	}
	bad := func(pos int64, format string, args ...any) {
		sc.damage = append(sc.damage, damage{seg: i, pos: pos, next: ss.next,
			err: &CorruptError{File: sg.path, Offset: pos, Reason: fmt.Sprintf(format, args...)}})
	}
	after := ""
	if ss.later > 0 {
		after = fmt.Sprintf("; %d intact entries follow it, up to offset %d", ss.later, ss.last)
	}
	switch {
	case ss.damaged(len(data)) && !active:
		bad(int64(ss.valid), "the entry with offset %d is damaged (a bad length or checksum) in a sealed segment, which was synced whole%s",
			ss.next, after)
		return nil
	case ss.damaged(len(data)) && ss.proof >= 0:
		bad(int64(ss.valid), "the entry with offset %d is damaged (a bad length or checksum) and the intact entry %d of a later group commit follows it at byte %d: synced entries are damaged, this is not a torn write%s",
			ss.next, ss.proof, ss.proofPos, after)
		return nil
	case ss.damaged(len(data)):
		// Damage confined to the last group commit: a torn write, whose
		// calls never returned.
		sc.torn = int64(len(data) - ss.valid)
	}
	if active {
		sc.active = ss.ents
		return nil
	}
	if nf := sc.segs[i+1].first; sg.next != nf && !(sg.next < nf && gapFrom >= 0 && sg.next >= gapFrom) {
		bad(int64(len(data)), "segment ends at offset %d, the next segment starts at %d", sg.next-1, nf)
	}
	return nil
}

// span returns the offsets first..last.
func span(first, last int64) Offsets {
	if first < 0 || last < first {
		return Offsets{}
	}
	return Offsets{First: first, Count: last - first + 1}
}
