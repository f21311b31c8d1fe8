package writer

import (
	"context"
	"slices"

	"github.com/zbstream/zbstream"
)

// openStream opens t's stream (t is tableOpening, and the caller alone
// acts on it): an ephemeral stream is created; a persistent one is
// resumed by the id the store holds, or else created with the request id
// the store holds (saved first if there is none), and its id saved before
// anything is sent into it. So a persistent table has one stream for
// life, whenever a process dies: at worst the next process creates again
// with the saved request id and gets the same stream back, still empty.
func (w *Writer) openStream(ctx context.Context, t *wtable) (*zbstream.Stream, error) {
	opts := w.streamOptions(t)
	if t.cfg.Ephemeral {
		s, err := w.c.CreateStream(ctx, t.name, opts...)
		if err == nil {
			w.count(&w.stats.Creates)
		}
		return s, err
	}
	e, _, err := w.store.Load(ctx, t.name)
	if err != nil {
		return nil, err
	}
	if e.StreamID != "" {
		w.mu.Lock()
		if h := t.history; h != nil && t.historyID == e.StreamID {
			opts = append(opts, zbstream.WithHistory(*h))
		}
		w.mu.Unlock()
		s, err := w.c.ResumeStream(ctx, t.name, e.StreamID, opts...)
		if err == nil {
			w.count(&w.stats.Resumes)
		}
		return s, err
	}
	if e.RequestID == "" {
		e.RequestID = zbstream.NewClientRequestID()
		if err := w.store.Save(ctx, t.name, e); err != nil {
			return nil, err
		}
	}
	s, err := w.c.CreatePersistentStream(ctx, t.name, append(opts, zbstream.WithClientRequestID(e.RequestID))...)
	if err != nil {
		return nil, err
	}
	e.StreamID = s.StreamID()
	if err := w.store.Save(ctx, t.name, e); err != nil {
		// Nothing was sent: the next open creates again with the same
		// request id, gets this stream back and saves it then.
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	w.count(&w.stats.Creates)
	return s, nil
}

// streamOptions are t's stream options: the Writer's, the table's, and
// the callbacks that name the table.
func (w *Writer) streamOptions(t *wtable) []zbstream.StreamOption {
	opts := slices.Concat(w.cfg.Options, t.cfg.Options)
	if !w.withAcks {
		return opts
	}
	name, base := t.name, t.base // base: fixed while this stream lives
	if f := w.cfg.OnAck; f != nil {
		opts = append(opts, zbstream.WithOnAck(func(o int64) { f(name, base+o) }))
	}
	if f := w.cfg.OnFail; f != nil {
		opts = append(opts, zbstream.WithOnFail(func(o int64, err error) { f(name, base+o, tableErr(name, err)) }))
	}
	return opts
}

// count adds one to a counter of w.stats.
func (w *Writer) count(n *int64) {
	w.mu.Lock()
	*n++
	w.mu.Unlock()
}
