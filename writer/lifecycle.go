package writer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/zbstream/zbstream"
)

// The Writer's flush, close, failure and inspection calls.

// Flush blocks until every call accepted by the Writer before Flush was
// called is durable, in every table (the flush before a source position
// is committed), and returns nil. Tables are flushed concurrently, each
// bounded by ctx and by its flush timeout ([zbstream.WithFlushTimeout]).
// Otherwise it returns one *TableError per table that is not durable,
// joined: tables failed before or during the flush (wrapping
// [zbstream.ErrStreamFailed] and the cause), flushes that timed out
// ([zbstream.ErrFlushTimeout]), or ctx's cause. A failed table fails
// every Flush until Reset, so that a source position is never committed
// past records that did not land.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	var (
		ts   []*wtable
		ss   []*zbstream.Stream
		errs []error
	)
	for _, t := range w.sorted() {
		switch t.state {
		case tableOpen, tableClosing:
			ts, ss = append(ts, t), append(ss, t.s)
		case tableFailed:
			errs = append(errs, t.err)
		}
	}
	w.mu.Unlock()
	ferrs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() { ferrs[i] = s.Flush(ctx) })
	}
	wg.Wait()
	for i, err := range ferrs {
		if err == nil {
			continue
		}
		if ss[i].Err() != nil {
			err = w.streamFailed(ts[i], ss[i], err)
		}
		errs = append(errs, tableErr(ts[i].name, err))
	}
	return errors.Join(errs...)
}

// Close flushes and closes every open stream (concurrently, each as
// [zbstream.Stream.Close] does, bounded by ctx) and stops the Writer:
// later calls return [zbstream.ErrClosed]. It waits, honouring ctx, for
// streams being opened or closed by other calls. It returns nil when
// every table's records are durable, and otherwise one *TableError per
// table that failed, before or during Close, joined. Close never retires
// a stream, and does not close the Client. It is idempotent: every call
// returns the first one's result.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		select {
		case <-w.closed:
			return w.result
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	w.closing = true
	w.broadcastLocked()
	// Streams being opened or evicted by other calls finish first: Close
	// then closes every stream that remains.
	var errs []error
	for w.busyLocked() {
		if err := w.waitLocked(ctx); err != nil {
			// Close what is open; an open or eviction still under way
			// closes its own stream when it ends (see acquire).
			errs = append(errs, err)
			break
		}
	}
	var ts []*wtable
	for _, t := range w.sorted() {
		if t.state == tableOpen {
			t.state = tableClosing
			ts = append(ts, t)
		}
	}
	w.mu.Unlock()
	cerrs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() { cerrs[i] = t.s.Close(ctx) })
	}
	wg.Wait()
	w.mu.Lock()
	for i, t := range ts {
		w.closedLocked(t, cerrs[i])
	}
	for _, t := range w.sorted() {
		if t.state == tableFailed {
			errs = append(errs, t.err)
		}
	}
	w.result = errors.Join(errs...)
	close(w.closed)
	w.mu.Unlock()
	return w.result
}

// Reset clears table's failure (see Writer) and returns the calls that
// did not land, as [zbstream.Stream.Unacked] returns them, each with its
// offset in the table; the table's next call opens its stream again (a
// persistent table resumes its stream by id, and Watermark then says what
// the server holds, as after a restart: Reset also forgets what the
// table's earlier streams knew, see Writer). A table that has not failed
// is left as it is: (nil, nil). An invalid table name is a *TableError
// wrapping a *[zbstream.ConfigError].
func (w *Writer) Reset(table string) ([]zbstream.Batch, error) {
	if err := zbstream.CheckTable(table); err != nil {
		return nil, tableErr(table, err)
	}
	w.mu.Lock()
	t := w.tables[table]
	if t == nil || t.state != tableFailed {
		w.mu.Unlock()
		return nil, nil
	}
	s, base := t.failedStream, t.base
	t.state, t.err, t.failedStream = tableClosed, nil, nil
	t.history, t.historyID = nil, "" // as after a restart: Watermark tells
	if s != nil && t.cfg.Ephemeral {
		t.base += s.LastAssigned() + 1
	}
	w.stats.Failed--
	w.broadcastLocked()
	w.mu.Unlock()
	if s == nil { // its open failed (see opened): nothing was accepted
		return nil, nil
	}
	lost := s.Unacked()
	for i := range lost {
		lost[i].Offset += base
	}
	return lost, nil
}

// Failed returns the *TableError of every table that is failed now (see
// Writer), ordered by table. It does not block.
func (w *Writer) Failed() []*TableError {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*TableError
	for _, t := range w.sorted() {
		if t.state == tableFailed {
			out = append(out, t.err)
		}
	}
	return out
}

// OpenTables returns the tables whose stream is open now (or being opened
// or closed), ordered by name. It does not block.
func (w *Writer) OpenTables() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, t := range w.sorted() {
		if t.state == tableOpening || t.state == tableOpen || t.state == tableClosing {
			out = append(out, t.name)
		}
	}
	return out
}

// Stats returns a snapshot of the Writer's counters. It does not block.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.Tables, st.Open = len(w.tables), w.open
	return st
}

// sorted returns the tables ordered by name. w.mu is held.
func (w *Writer) sorted() []*wtable {
	ts := make([]*wtable, 0, len(w.tables))
	for _, t := range w.tables {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *wtable) int { return strings.Compare(a.name, b.name) })
	return ts
}
