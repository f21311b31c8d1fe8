package writer

import (
	"context"
	"errors"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// tableState is where a table of a Writer is in its stream's life.
type tableState int

const (
	// tableClosed: no stream; the next call opens one.
	tableClosed tableState = iota
	// tableOpening: a call is opening its stream, holding a slot.
	tableOpening
	// tableOpen: its stream takes calls.
	tableOpen
	// tableClosing: its stream is being flushed and closed, by an
	// eviction or by Close; it still holds its slot.
	tableClosing
	// tableFailed: its stream failed; calls return err until Reset.
	tableFailed
)

// wtable is one table of a Writer. Every field is guarded by Writer.mu,
// except that the goroutine which moved the table to tableOpening or
// tableClosing alone acts on its stream until it moves it on.
type wtable struct {
	name    string
	cfg     TableConfig
	state   tableState
	s       *zbstream.Stream // open or closing: its stream
	users   int              // calls using s now: an open table in use is not evicted
	lastUse uint64           // the Writer's tick at its last use
	base    int64            // ephemeral: calls numbered in its earlier streams

	err          *TableError      // failed: why
	failedStream *zbstream.Stream // failed: the stream, for Unacked

	// history is what the table's last persistent stream in this Writer
	// knew (ack floor, highest offset sent), and historyID that stream's
	// id: the next open resumes with it, so that a stream moved by another
	// writer meanwhile fails its open instead of numbering the table's
	// next call after records this Writer never sent (protocol.md §5.3).
	// nil until a stream was open; Reset clears it (as after a restart).
	history   *zbstream.History
	historyID string
}

// acquire returns table's open stream, opening it first if needed, and
// counts the caller as its user until release; base is what the stream's
// offsets add to be the table's.
func (w *Writer) acquire(ctx context.Context, table string) (*wtable, *zbstream.Stream, int64, error) {
	w.mu.Lock()
	t := w.tables[table]
	if t == nil {
		// A table's first call: its name is checked and its
		// configuration asked once, without the lock.
		w.mu.Unlock()
		cfg, err := w.tableConfig(table)
		if err != nil {
			return nil, nil, 0, err
		}
		w.mu.Lock()
		if t = w.tables[table]; t == nil {
			t = &wtable{name: table, cfg: cfg}
			w.tables[table] = t
		}
	}
	for {
		if w.closing {
			w.mu.Unlock()
			return nil, nil, 0, tableErr(table, errWriterClosed)
		}
		switch t.state {
		case tableOpen:
			w.tick++
			t.lastUse = w.tick
			t.users++
			s, base := t.s, t.base
			w.mu.Unlock()
			return t, s, base, nil
		case tableFailed:
			err := t.err
			w.mu.Unlock()
			return nil, nil, 0, err
		case tableClosed:
			if w.open < w.maxOpen {
				w.open++
				t.state = tableOpening
				w.mu.Unlock()
				s, err := w.openStream(ctx, t)
				w.mu.Lock()
				if err == nil && w.closing {
					// Close came meanwhile and did not wait for this open:
					// the stream is closed here, nothing sent into it.
					t.s, t.state = s, tableClosing
					w.mu.Unlock()
					cerr := s.Close(context.WithoutCancel(ctx))
					w.mu.Lock()
					w.closedLocked(t, cerr)
					continue
				}
				w.opened(t, s, err)
				if err != nil {
					if t.state == tableFailed {
						err = t.err
					}
					w.mu.Unlock()
					return nil, nil, 0, tableErr(table, err)
				}
				continue
			}
			if v := w.lruLocked(); v != nil {
				v.state = tableClosing
				w.mu.Unlock()
				err := w.evict(ctx, v)
				w.mu.Lock()
				if err != nil {
					w.mu.Unlock()
					return nil, nil, 0, err
				}
				continue
			}
		}
		// Opening or closing, or no slot free and every open stream in
		// use: wait for that to change.
		if err := w.waitLocked(ctx); err != nil {
			w.mu.Unlock()
			return nil, nil, 0, tableErr(table, err)
		}
	}
}

// release ends a use of t's stream that acquire began.
func (w *Writer) release(t *wtable) {
	w.mu.Lock()
	t.users--
	if t.users == 0 {
		w.broadcastLocked()
	}
	w.mu.Unlock()
}

// knownConfig returns the configuration of table, known or asked.
func (w *Writer) knownConfig(table string) (TableConfig, error) {
	w.mu.Lock()
	t := w.tables[table]
	w.mu.Unlock()
	if t != nil {
		return t.cfg, nil
	}
	return w.tableConfig(table)
}

// tableConfig checks table's name and asks its configuration. Two first
// calls of a table may both ask; the first to register the table keeps
// its answer.
func (w *Writer) tableConfig(table string) (TableConfig, error) {
	if err := zbstream.CheckTable(table); err != nil {
		return TableConfig{}, tableErr(table, err)
	}
	if w.cfg.Table == nil {
		return TableConfig{}, nil
	}
	cfg, err := w.cfg.Table(table)
	if err != nil {
		return TableConfig{}, tableErr(table, err)
	}
	return cfg, nil
}

// opened records the end of t's open: s on success, a free slot again
// otherwise. An open that failed lost nothing and does not fail the table,
// unless its resume broke the bounds the table's history sets (another
// writer moved the stream, or the server lost what it acknowledged): that
// sticks, as the same violation on a reconnect does, until Reset.
func (w *Writer) opened(t *wtable, s *zbstream.Stream, err error) {
	switch {
	case err == nil:
		t.s, t.state = s, tableOpen
	case t.history != nil && errors.As(err, new(*zbstream.ProtocolError)):
		w.open--
		w.failLocked(t, nil, err)
	default:
		t.state = tableClosed
		w.open--
	}
	w.broadcastLocked()
}

// lruLocked returns the least recently used open table that no call uses,
// or nil.
func (w *Writer) lruLocked() *wtable {
	var v *wtable
	for _, t := range w.tables {
		if t.state == tableOpen && t.users == 0 && (v == nil || t.lastUse < v.lastUse) {
			v = t
		}
	}
	return v
}

// evict flushes and closes v's stream (v is tableClosing, and the caller
// alone acts on it), freeing its slot. If ctx ends or the flush times out
// first, v stays open and the error is returned, naming v: evicting a
// table never fails it for another table's caller. A stream that fails
// fails v, and the caller goes on: the slot is free.
func (w *Writer) evict(ctx context.Context, v *wtable) error {
	if err := v.s.Flush(ctx); err != nil && v.s.Err() == nil {
		w.mu.Lock()
		v.state = tableOpen
		w.broadcastLocked()
		w.mu.Unlock()
		return tableErr(v.name, core.Errorf("flushing it to close its stream for another table: %w", err))
	}
	// Everything is durable (or the stream failed): closing does not wait
	// on the network for records, and is bounded by the close timeout, not
	// by a context that is not v's.
	err := v.s.Close(context.WithoutCancel(ctx))
	w.mu.Lock()
	w.stats.Evictions++
	w.closedLocked(v, err)
	w.mu.Unlock()
	return nil
}

// closedLocked records that t's stream (t was tableClosing) closed with
// err: the slot is free, and t is closed, or failed if err is not nil.
func (w *Writer) closedLocked(t *wtable, err error) {
	s := t.s
	t.s = nil
	w.open--
	w.rememberLocked(t, s)
	if err != nil {
		w.failLocked(t, s, err)
	} else {
		t.state = tableClosed
		if t.cfg.Ephemeral {
			t.base += s.LastAssigned() + 1
		}
	}
	w.broadcastLocked()
}

// streamFailed fails t if s is still its stream, and closes s so that its
// goroutines end; it returns the error to give the caller.
func (w *Writer) streamFailed(t *wtable, s *zbstream.Stream, err error) error {
	w.mu.Lock()
	mine := t.s == s && t.state == tableOpen
	if mine {
		t.s = nil
		w.open--
		w.rememberLocked(t, s)
		w.failLocked(t, s, s.Err())
		w.broadcastLocked()
	}
	w.mu.Unlock()
	if mine {
		_ = s.Close(context.Background()) // failed: returns at once with its error
	}
	return err
}

// rememberLocked keeps what t's persistent stream s knew, for the next
// open of the table (see wtable.history).
func (w *Writer) rememberLocked(t *wtable, s *zbstream.Stream) {
	if t.cfg.Ephemeral {
		return
	}
	h := s.History()
	t.history, t.historyID = &h, s.StreamID()
}

// failLocked moves t to tableFailed with err.
func (w *Writer) failLocked(t *wtable, s *zbstream.Stream, err error) {
	t.state, t.failedStream = tableFailed, s
	t.err = &TableError{Table: t.name, Err: core.Errorf("%w: %w (Writer.Reset clears it)", zbstream.ErrStreamFailed, err)}
	w.stats.Failed++
}

// busyLocked reports whether a table is being opened or closed.
func (w *Writer) busyLocked() bool {
	for _, t := range w.tables {
		if t.state == tableOpening || t.state == tableClosing {
			return true
		}
	}
	return false
}

// waitLocked waits, with w.mu held on entry and on return, until
// something changes (broadcastLocked) or ctx ends.
func (w *Writer) waitLocked(ctx context.Context) error {
	ch := w.changed
	w.waiters++
	w.mu.Unlock()
	var err error
	select {
	case <-ch:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	w.mu.Lock()
	w.waiters--
	return err
}

// broadcastLocked wakes every waiter; without waiters it costs nothing,
// which keeps the common path (an open table, nobody waiting) free of
// allocation.
func (w *Writer) broadcastLocked() {
	if w.waiters > 0 {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}
