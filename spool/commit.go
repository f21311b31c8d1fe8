package spool

import (
	"context"
	"errors"
	"fmt"
)

// commit is the committer goroutine, the only writer of the log once Open
// has returned: it takes every queued call (a group), gives them the next
// offsets, writes their entries with one write and one fsync, and only
// then hands them to the stream, in log order, answering each call as its
// entry is handed over.
func (s *Spool) commit() {
	defer close(s.done)
	var (
		buf   []byte
		group []*call
	)
	for {
		group = group[:0]
		s.mu.Lock()
		free := s.opts.MaxBytes - s.w.bytes
		total, needSpace := 0, false
		for len(s.queue) > 0 {
			c := s.queue[0]
			if c.gone {
				s.queue[0] = nil
				s.queue = s.queue[1:]
				continue
			}
			if total > 0 && total+c.size > maxGroupBytes {
				break
			}
			if int64(total+c.size) > free {
				needSpace = len(group) == 0
				break
			}
			c.taken = true
			group = append(group, c)
			total += c.size
			s.queue[0] = nil
			s.queue = s.queue[1:]
		}
		failed, closing, idle := s.err != nil, s.closing, len(s.queue) == 0
		s.mu.Unlock()
		switch {
		case failed:
			s.answer(group, fmt.Errorf("%w: %w", ErrFailed, s.Err()))
			return
		case len(group) > 0:
			buf = s.write(group, buf)
			continue
		case needSpace:
			s.waitSpace()
			continue
		case closing && idle:
			return
		}
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			s.fail(ErrClosed)
		}
	}
}

// write commits one group and hands it to the stream.
func (s *Spool) write(group []*call, buf []byte) []byte {
	w := s.w
	if a := w.active(); a.size >= w.segmentBytes && a.next > a.first {
		if err := w.roll(a.next); err != nil {
			s.answer(group, err)
			return buf
		}
	}
	first := w.next()
	buf = buf[:0]
	var records int64
	for i, c := range group {
		// Each entry records its group (one write, one fsync): Open tells
		// a torn last group from damage to synced ones by it.
		e := entry{offset: first + int64(i), batch: c.batch, group: first, records: c.records}
		buf = appendEntry(buf, &e)
		records += int64(len(c.records))
	}
	if err := w.append(buf, first+int64(len(group))-1); err != nil {
		if w.broken != nil {
			s.fail(err)
		}
		s.answer(group, err)
		return buf
	}
	s.st.syncs.Add(1)
	s.st.syncedBytes.Add(int64(len(buf)))
	s.st.calls.Add(int64(len(group)))
	s.st.records.Add(records)
	// Synced: from here on every entry of the group is the log's, and is
	// sent by this process or the next Open.
	for i, c := range group {
		e := entry{offset: first + int64(i), batch: c.batch, records: c.records}
		if err := s.handOff(s.ctx, &e); err != nil {
			if s.ctx.Err() != nil {
				err = errors.Join(ErrClosed, err)
			}
			s.fail(err)
			s.answer(group[i:], fmt.Errorf("%w: %w", ErrFailed, s.Err()))
			return buf
		}
		c.done <- result{off: e.offset}
	}
	s.trim()
	return buf
}

// answer fails every call of a group with err.
func (s *Spool) answer(group []*call, err error) {
	for _, c := range group {
		c.done <- result{NoOffset, err}
	}
}

// trim removes the segments durable on the server.
func (s *Spool) trim() {
	n, err := s.w.trim(s.stream.LastDurable())
	if err != nil {
		s.fail(err)
	}
	if n > 0 {
		s.st.removed.Add(int64(n))
	}
	s.publish()
}

// waitSpace waits until the call at the head of the queue fits: it seals
// the active segment (so that it can be removed once durable) and waits
// until the oldest sealed segment is durable, then removes it.
func (s *Spool) waitSpace() {
	w := s.w
	if a := w.active(); a.next > a.first {
		if err := w.roll(a.next); err != nil {
			s.fail(err)
			return
		}
	}
	if len(w.segs) > 1 {
		if err := s.stream.Wait(s.ctx, w.segs[0].next-1); err != nil {
			if s.ctx.Err() != nil {
				err = errors.Join(ErrClosed, err)
			}
			s.fail(err)
			return
		}
	}
	s.trim()
}

// handOff gives one synced entry to the stream and checks that the stream
// assigned it the log's offset.
func (s *Spool) handOff(ctx context.Context, e *entry) error {
	var (
		off int64
		err error
	)
	if e.batch {
		off, err = s.stream.IngestBatch(ctx, e.records)
	} else {
		off, err = s.stream.IngestRecord(ctx, e.records[0])
	}
	if err != nil {
		return err
	}
	if off != e.offset {
		return fmt.Errorf("%w: the log gave offset %d, the stream %d", ErrOffsetMismatch, e.offset, off)
	}
	return nil
}

// publish updates the size statistics (committer goroutine).
func (s *Spool) publish() {
	s.st.bytes.Store(s.w.bytes)
	s.st.segments.Store(int64(len(s.w.segs)))
}
