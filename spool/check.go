package spool

import (
	"fmt"
	"os"
	"path/filepath"
)

// Report is what Check found in a spool directory.
type Report struct {
	// Dir is the spool's directory.
	Dir string
	// Segments are the log's segment files, in offset order.
	Segments []SegmentReport
	// Entries counts the intact entries before any damage; Offsets runs
	// from the log's first offset to the last one it is known to have
	// given (none: an empty log).
	Entries int64
	Offsets Offsets
	// TornBytes are bytes at the end of the active segment that a torn
	// write left (damage confined to the last group commit, whose calls
	// never returned): not damage, the next Open cuts them.
	TornBytes int64
	// Damage is every damage Open refuses (a *CorruptError each), in log
	// order; empty: Open accepts the log. Repair moves the first one
	// aside, and everything after it.
	Damage []*CorruptError
	// Repaired is set when a Repair moved offsets aside and no Open has
	// reconciled the log with the server since (see Stats.Lost).
	Repaired Offsets
}

// SegmentReport is one segment file as Check found it.
type SegmentReport struct {
	// File is the segment's path; First the offset of its first entry.
	File  string
	First int64
	// Entries counts its intact entries before any damage, Bytes its size.
	Entries int
	Bytes   int64
	// Damaged: the segment holds damage that Open refuses.
	Damaged bool
}

// Clean reports whether Open accepts the log: no damage (a torn tail is
// not damage).
func (r *Report) Clean() bool { return len(r.Damage) == 0 }

// Check reads the spool in dir without changing anything and reports its
// segments, entries and offsets, and any damage Open would refuse: where
// (segment file and byte position) and which offsets are at stake. It
// takes the directory's lock, so it fails with ErrLocked while a process
// uses the spool. An error means the directory could not be read as a
// spool at all.
func Check(dir string) (*Report, error) {
	var r *Report
	err := withLock(dir, func(m meta, hasMeta bool) error {
		gapFrom := int64(-1)
		if hasMeta && m.Repair != nil {
			gapFrom = m.Repair.From
		}
		sc, err := scanLog(dir, gapFrom)
		if err != nil {
			return err
		}
		r = report(dir, sc)
		if !hasMeta && len(sc.segs) > 0 {
			r.Damage = append([]*CorruptError{{File: dir, Reason: "log segments without a header"}}, r.Damage...)
		}
		if hasMeta && m.Repair != nil {
			r.Repaired = span(m.Repair.From, m.Repair.To)
		}
		return nil
	})
	return r, err
}

// withLock runs f with dir's lock held and its header read (hasMeta false:
// none). A damaged header is returned as its *CorruptError.
func withLock(dir string, f func(m meta, hasMeta bool) error) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("spool: %s is not a directory", dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	m, ok, err := readMeta(dir)
	if err != nil {
		return err
	}
	return f(m, ok)
}

// report turns a scan into a Report.
func report(dir string, sc *logScan) *Report {
	r := &Report{Dir: dir, TornBytes: sc.torn}
	bad := map[int]bool{}
	for _, d := range sc.damage {
		r.Damage = append(r.Damage, d.err)
		bad[d.seg] = true
	}
	for i, sg := range sc.segs {
		r.Segments = append(r.Segments, SegmentReport{File: sg.path, First: sg.first,
			Entries: sc.info[i].entries, Bytes: sg.size, Damaged: bad[i]})
		r.Entries += int64(sc.info[i].entries)
	}
	if len(sc.segs) > 0 {
		r.Offsets = span(sc.segs[0].first, sc.last)
	}
	return r
}

// damagedName returns the name a damaged file is moved aside to: its name
// and ".damaged", or ".damaged.N" if that is taken by another file.
func damagedName(path string) (string, error) {
	for n := 0; ; n++ {
		name := path + ".damaged"
		if n > 0 {
			name += fmt.Sprintf(".%d", n)
		}
		info, err := os.Lstat(name)
		if os.IsNotExist(err) {
			return name, nil
		}
		if err != nil {
			return "", fmt.Errorf("spool: %w", err)
		}
		// A repair a crash interrupted may have linked it already.
		if cur, err := os.Stat(path); err == nil && os.SameFile(cur, info) {
			return name, nil
		}
	}
}

// base returns the file names of paths.
func base(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
