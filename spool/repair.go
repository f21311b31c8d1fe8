package spool

import (
	"errors"
	"fmt"
	"os"
)

// RepairReport says what Repair did.
type RepairReport struct {
	// Damage is the damage repaired (the first of the log); nil: the log
	// was clean and nothing was changed.
	Damage *CorruptError
	// Moved are the files moved aside, under their new names: the damaged
	// segment and every segment after it.
	Moved []string
	// Kept are the intact entries before the damage, which stay in the
	// log under the damaged segment's name (rewritten with them alone).
	Kept Offsets
	// AtStake are the offsets moved aside: those the server already holds
	// are safe, the others are lost. The next Open continues after the
	// server's watermark and reports the lost ones in Stats.Lost; new
	// calls get those offsets again, since a stream's offsets are dense.
	AtStake Offsets
}

// Repair moves the first damage of the spool in dir aside so that Open
// works again, and says which offsets that costs. It takes the
// directory's lock (ErrLocked while a process uses the spool). A clean log
// is left as it is (a zero report).
//
// The damaged segment is kept whole as NAME.damaged (a hard link: the
// bytes are never rewritten or removed), and its name is given a new file
// holding only its intact entries before the damage, which are kept.
// Every later segment is renamed NAME.damaged too: the entries after the
// damage can land at their offsets only if the server already holds the
// damaged ones, and without the server (Repair does not contact it) that
// cannot be known. Their offsets, from the damaged entry to the log's last
// known offset, are reported as at stake, and recorded in the header: the
// next Open then accepts a server watermark above the log's end once, and
// continues after it, so that no new call gets an offset the server
// holds; it reports the offsets at stake that the server does not hold in
// Stats.Lost (those calls are lost, and their offsets given to new calls)
// and clears the record. A damaged header is not repaired.
//
// Each step is atomic and Repair can be run again after a crash.
func Repair(dir string) (*RepairReport, error) {
	var r *RepairReport
	err := withLock(dir, func(m meta, hasMeta bool) error {
		gapFrom := int64(-1)
		if hasMeta && m.Repair != nil {
			gapFrom = m.Repair.From
		}
		sc, err := scanLog(dir, gapFrom)
		if err != nil {
			return err
		}
		r = &RepairReport{}
		if len(sc.damage) == 0 {
			return nil
		}
		if !hasMeta {
			return &CorruptError{File: dir, Reason: "log segments without a header: Repair needs the header"}
		}
		r, err = repair(dir, m, sc)
		return err
	})
	return r, err
}

// repair moves sc's first damage aside (see Repair).
func repair(dir string, m meta, sc *logScan) (*RepairReport, error) {
	d := sc.damage[0]
	seg := sc.segs[d.seg]
	r := &RepairReport{Damage: d.err, AtStake: span(d.next, sc.last),
		Kept: span(seg.first, seg.first+int64(sc.info[d.seg].entries)-1)}
	cut := d.pos < seg.size // else only the segments after it are damaged (a gap)
	var from []string
	if cut {
		from = append(from, seg.path)
	}
	for _, sg := range sc.segs[d.seg+1:] {
		from = append(from, sg.path)
	}
	for _, p := range from {
		name, err := damagedName(p)
		if err != nil {
			return nil, err
		}
		r.Moved = append(r.Moved, name)
	}

	// First the record: a crash after it leaves the log as it was, or
	// partly moved aside; the next Repair finishes, or the next Open
	// reports what was moved aside.
	rec := &repairRecord{From: r.AtStake.First, To: r.AtStake.Last(), Files: base(r.Moved)}
	if old := m.Repair; old != nil {
		rec.From, rec.To = min(rec.From, old.From), max(rec.To, old.To)
		rec.Files = append(append([]string{}, old.Files...), rec.Files...)
	}
	m.Repair = rec
	if err := writeMeta(dir, m); err != nil {
		return nil, err
	}
	// The damaged segment keeps its bytes under its new name (a link,
	// while its name still holds them), then the later segments are
	// renamed, the last first, so that the log stays a run of whole
	// segments; only then does its name get its intact prefix.
	if cut {
		if err := os.Link(seg.path, r.Moved[0]); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("spool: moving %s aside: %w", seg.path, err)
		}
	}
	stop := 0
	if cut {
		stop = 1 // linked, not renamed
	}
	for i := len(from) - 1; i >= stop; i-- {
		if err := os.Rename(from[i], r.Moved[i]); err != nil {
			return nil, fmt.Errorf("spool: moving %s aside: %w", from[i], err)
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	if cut {
		if err := rewritePrefix(seg.path, d.pos); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// rewritePrefix replaces the segment at path by its first n bytes.
func rewritePrefix(path string, n int64) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return replaceFile(path, data[:n])
}
