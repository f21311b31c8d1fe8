package spool

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error the package returns wraps one of them or is
// one of the typed errors below (errors.Is and errors.As work on both).
var (
	// ErrLocked: another process (or another Spool in this process) holds
	// the spool directory's lock.
	ErrLocked = errors.New("spool: the spool directory is in use by another process")
	// ErrMismatch is wrapped by *MismatchError: the spool belongs to
	// another table, record type, message descriptor or stream.
	ErrMismatch = errors.New("spool: the spool does not match the options")
	// ErrCorrupt is wrapped by *CorruptError: the log holds bytes that are
	// not a valid log, at a place a crash cannot explain.
	ErrCorrupt = errors.New("spool: corrupt spool")
	// ErrWatermark is wrapped by *WatermarkError: the server's watermark
	// contradicts the log, so the spool does not belong to this stream's
	// history. Nothing was sent.
	ErrWatermark = errors.New("spool: the server's watermark contradicts the spool")
	// ErrOffsetMismatch: the stream assigned an entry another offset than
	// the log did (something else ingested into the stream). The spool
	// fails; nothing after the entry is handed to the stream.
	ErrOffsetMismatch = errors.New("spool: the stream and the log disagree on an offset")
	// ErrClosed: the spool was closed.
	ErrClosed = errors.New("spool: closed")
	// ErrFailed wraps the error a spool failed with, returned to every
	// later call. Entries already in the log stay there and are sent by
	// the next Open.
	ErrFailed = errors.New("spool: failed")
	// ErrTooLarge: one call does not fit in the spool (Options.MaxBytes) or
	// is over the per-call limit (Options.MaxCallBytes).
	ErrTooLarge = errors.New("spool: call too large")
	// ErrWrite is wrapped by *WriteError: writing or syncing the log
	// failed (a full disk, an I/O error).
	ErrWrite = errors.New("spool: writing the log failed")
)

// MismatchError says which property of an existing spool differs from the
// options it is opened with.
type MismatchError struct {
	// Field is "table", "record type", "descriptor" or "stream id".
	Field string
	// Spool is the value stored in the spool, Given the one asked for.
	Spool, Given string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("spool: the spool's %s is %q, the options ask for %q", e.Field, e.Spool, e.Given)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// CorruptError locates bytes of the spool that are not valid at a place a
// crash cannot explain: damage to synced entries (a bad entry followed by
// an intact entry of a later group commit, any bad entry of a sealed
// segment), an entry whose checksum matches but whose content is wrong,
// a gap between segments, a damaged header. Open returns it before it
// changes anything on disk, and sends nothing. Check reports such damage;
// Repair moves it aside.
type CorruptError struct {
	// File is the damaged file's path, Offset the byte position of the
	// damage in it (not a log offset).
	File   string
	Offset int64
	// Reason says what is wrong.
	Reason string
	// AtStake are the log offsets from the first damaged entry to the
	// log's last known offset: the damaged entries, and the ones after
	// them, which can land at their offsets only if the server already
	// holds the damaged ones. None when the damage is not to entries (a
	// header, a segment's name).
	AtStake Offsets
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("spool: corrupt spool: %s at byte %d: %s", e.File, e.Offset, e.Reason)
	if e.AtStake.Count > 0 {
		msg += fmt.Sprintf("; offsets %s at stake. Nothing was changed or sent: run \"zbstream spool check DIR\" to see the damage, then \"zbstream spool repair DIR\" to move the damaged segment aside (the offsets at stake that the server does not hold are lost)", e.AtStake)
	}
	return msg
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Offsets is the range of log offsets First..First+Count-1; its zero value
// (Count 0) is none.
type Offsets struct {
	First, Count int64
}

// Last returns the range's last offset (First-1 when it is empty).
func (o Offsets) Last() int64 { return o.First + o.Count - 1 }

// String formats the range as "3..7", "3" or "none".
func (o Offsets) String() string {
	switch {
	case o.Count <= 0:
		return "none"
	case o.Count == 1:
		return fmt.Sprint(o.First)
	}
	return fmt.Sprintf("%d..%d", o.First, o.Last())
}

// WatermarkError reports a server watermark the log cannot explain: above
// the log's last offset (the spool belongs to another history, or the log
// was replaced by an older copy), or below the first offset the log still
// holds (the server lost acknowledged data).
type WatermarkError struct {
	StreamID  string
	Watermark int64
	// First and Last are the offsets the log holds entries for (First >
	// Last: none); Last is the last offset the log ever assigned.
	First, Last int64
}

func (e *WatermarkError) Error() string {
	if e.Watermark > e.Last {
		return fmt.Sprintf("spool: stream %s has watermark %d, above the spool's last offset %d: the spool does not belong to this stream's history; nothing was sent",
			e.StreamID, e.Watermark, e.Last)
	}
	return fmt.Sprintf("spool: stream %s has watermark %d, but the spool no longer holds offsets %d..%d (they were durable before): the server lost data; nothing was sent",
		e.StreamID, e.Watermark, e.Watermark+1, e.First-1)
}

// Unwrap returns ErrWatermark.
func (e *WatermarkError) Unwrap() error { return ErrWatermark }

// WriteError is a failed write or sync of the log. After a failed write
// the log is cut back to its last synced entry and the spool goes on (the
// calls of that write fail); after a failed sync the spool fails, since
// the kernel may have dropped the unsynced pages.
type WriteError struct {
	Op   string // "write", "sync", "truncate", "create"
	File string
	Err  error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("spool: %s %s: %v", e.Op, e.File, e.Err)
}

// Unwrap returns ErrWrite and the cause (a *fs.PathError, syscall.ENOSPC...).
func (e *WriteError) Unwrap() []error { return []error{ErrWrite, e.Err} }
