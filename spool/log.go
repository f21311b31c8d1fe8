package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const segmentSuffix = ".seg"

// logFile is the active segment as the log writes it; *os.File in
// production, a faulty file in tests.
type logFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// openSegmentFile opens a segment for appending; tests replace it to inject
// write and sync failures.
var openSegmentFile = func(path string, create bool) (logFile, error) {
	flag := os.O_WRONLY | os.O_APPEND
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	return os.OpenFile(path, flag, 0o600)
}

// segment is one file of the log: entries with offsets first..next-1.
type segment struct {
	first, next int64
	size        int64
	path        string
}

// wal is the write-ahead log: segments in offset order, the last one
// active (appended to). It is used by one goroutine at a time.
type wal struct {
	dir          string
	segs         []*segment
	f            logFile // the active segment, open for appending
	bytes        int64   // bytes of every segment
	segmentBytes int64
	tornBytes    int64 // cut off the active segment's tail at recovery
	broken       error // a failed sync or truncate: nothing more is written
}

func segmentName(first int64) string { return fmt.Sprintf("%020d%s", first, segmentSuffix) }

// listSegments returns dir's segments in offset order, sizes filled in and
// next unknown (-1).
func listSegments(dir string) ([]*segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: reading the spool directory: %w", err)
	}
	var segs []*segment
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segmentSuffix)
		if !ok {
			continue
		}
		first, err := strconv.ParseInt(name, 10, 64)
		if err != nil || first < 0 || len(name) != 20 {
			return nil, &CorruptError{File: filepath.Join(dir, e.Name()), Reason: "not a segment name"}
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		segs = append(segs, &segment{first: first, next: -1, size: info.Size(), path: filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(segs, func(a, b *segment) int { return int(min(max(a.first-b.first, -1), 1)) })
	return segs, nil
}

// readSegment reads a sealed segment's entries (Open validated it with
// scanLog: damage found now is a *CorruptError all the same).
func readSegment(sg *segment) ([]entry, error) {
	data, err := os.ReadFile(sg.path)
	if err != nil {
		return nil, fmt.Errorf("spool: reading %s: %w", sg.path, err)
	}
	ss, err := decodeSegment(data, sg.first, sg.path)
	if err != nil {
		return nil, err
	}
	if ss.damaged(len(data)) {
		return nil, &CorruptError{File: sg.path, Offset: int64(ss.valid), Reason: "invalid entry in a sealed segment"}
	}
	sg.next = sg.first + int64(len(ss.ents))
	return ss.ents, nil
}

// openWAL recovers the log of dir. It first reads every segment without
// changing anything (scanLog): any damage that is not a torn tail of the
// active segment is a *CorruptError, and the log is left as it was. Then
// it cuts the active segment's torn tail and syncs it, and returns the
// active segment's entries. With no segment at all, wal.segs is empty.
// gapFrom is scanLog's.
func openWAL(dir string, segmentBytes, gapFrom int64) (*wal, []entry, error) {
	sc, err := scanLog(dir, gapFrom)
	if err != nil {
		return nil, nil, err
	}
	if len(sc.damage) > 0 {
		return nil, nil, sc.damage[0].err
	}
	w := &wal{dir: dir, segs: sc.segs, segmentBytes: segmentBytes, tornBytes: sc.torn}
	if len(w.segs) == 0 {
		return w, nil, nil
	}
	for i, sg := range w.segs[:len(w.segs)-1] {
		// The real end, but for a gap a repair left (scanLog's gapFrom):
		// the next segment's first, so that trim sees it below the
		// watermark the Open after the repair continued from.
		sg.next = w.segs[i+1].first
	}
	last := w.active()
	if err := cutTail(last, sc.torn); err != nil {
		return nil, nil, err
	}
	for _, sg := range w.segs {
		w.bytes += sg.size
	}
	return w, sc.active, nil
}

// cutTail cuts torn bytes off the end of the active segment and syncs it,
// even when nothing is cut: a process killed after its write and before
// its fsync leaves entries in the page cache that a power loss could
// still take away; they are about to be sent, and nothing is sent before
// it is synced.
func cutTail(sg *segment, torn int64) error {
	f, err := os.OpenFile(sg.path, os.O_WRONLY, 0)
	if err != nil {
		return &WriteError{Op: "truncate", File: sg.path, Err: err}
	}
	if torn > 0 {
		err = f.Truncate(sg.size - torn)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &WriteError{Op: "truncate", File: sg.path, Err: err}
	}
	sg.size -= torn
	return nil
}

// start creates the first segment of an empty log at offset first.
func (w *wal) start(first int64) error {
	return w.roll(first)
}

// next returns the offset the next entry gets.
func (w *wal) next() int64 { return w.segs[len(w.segs)-1].next }

// first returns the first offset the log holds an entry for.
func (w *wal) first() int64 { return w.segs[0].first }

// active returns the active segment.
func (w *wal) active() *segment { return w.segs[len(w.segs)-1] }

// openActive opens the recovered active segment for appending.
func (w *wal) openActive() error {
	if w.f != nil { // rolled at Open (after a repair)
		return nil
	}
	f, err := openSegmentFile(w.active().path, false)
	if err != nil {
		return &WriteError{Op: "open", File: w.active().path, Err: err}
	}
	w.f = f
	return nil
}

// roll seals the active segment (if any) and starts a new, empty one whose
// first entry gets offset first. The new file's name is made durable (the
// directory is synced) before anything is written to it.
func (w *wal) roll(first int64) error {
	if w.broken != nil {
		return w.broken
	}
	path := filepath.Join(w.dir, segmentName(first))
	f, err := openSegmentFile(path, true)
	if err != nil {
		return &WriteError{Op: "create", File: path, Err: err}
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f = f
	w.segs = append(w.segs, &segment{first: first, next: first, path: path})
	return nil
}

// append writes buf (the encodings of entries up to offset last) at the
// end of the active segment and syncs it. A failed write is undone (the
// file is cut back to its synced size) and the log stays usable; a failed
// sync or undo breaks the log: nothing more is written, and the next Open
// finds its valid prefix.
func (w *wal) append(buf []byte, last int64) error {
	if w.broken != nil {
		return w.broken
	}
	a := w.active()
	if _, err := w.f.Write(buf); err != nil {
		werr := &WriteError{Op: "write", File: a.path, Err: err}
		if terr := w.f.Truncate(a.size); terr != nil {
			w.broken = &WriteError{Op: "truncate", File: a.path, Err: errors.Join(err, terr)}
			return w.broken
		}
		return werr
	}
	if err := w.f.Sync(); err != nil {
		w.broken = &WriteError{Op: "sync", File: a.path, Err: err}
		return w.broken
	}
	a.size += int64(len(buf))
	a.next = last + 1
	w.bytes += int64(len(buf))
	return nil
}

// trim removes the sealed segments whose every entry is at or below
// durable. It keeps the active segment, whose name and entries say where
// the log ends.
func (w *wal) trim(durable int64) (removed int, err error) {
	for len(w.segs) > 1 && w.segs[0].next-1 <= durable {
		sg := w.segs[0]
		if err := os.Remove(sg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("spool: removing a durable segment: %w", err)
		}
		w.bytes -= sg.size
		w.segs = w.segs[1:]
		removed++
	}
	return removed, nil
}

// close closes the active segment.
func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
