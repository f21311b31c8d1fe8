package spool

import (
	"context"
	"fmt"

	"github.com/zbstream/zbstream/record"
)

// The calls: checked, queued for the committer, answered once synced;
// and the spool's failure, which every later call returns.

// IngestRecord writes one record to the log as one call and returns its
// offset once the entry is synced and handed to the stream: from then on
// the record lands exactly once, whatever happens to this process, as long
// as the spool is opened again. Concurrent calls share one sync. The
// stream keeps the record by reference until it is durable: do not modify
// it.
//
// A record the server would refuse for its content (not a JSON object, or
// not a valid message of Options.ProtoMessage) is refused with an error
// wrapping zbstream.ErrRecordType before anything is written; a call over
// the per-call limit, or that cannot fit in the spool, with ErrTooLarge.
//
// When the log is full (Options.MaxBytes) the call blocks until the server
// has made enough entries durable, or ctx ends. If ctx ends, or the call
// fails, the record lands at most once (the next Open sends whatever the
// log holds).
func (s *Spool) IngestRecord(ctx context.Context, record []byte) (int64, error) {
	return s.ingest(ctx, [][]byte{record}, false)
}

// IngestBatch writes records to the log as one call under one offset, as
// IngestRecord does. An empty batch gets no offset: NoOffset and a nil
// error.
func (s *Spool) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	return s.ingest(ctx, records, true)
}

func (s *Spool) ingest(ctx context.Context, records [][]byte, batch bool) (int64, error) {
	if err := s.usable(); err != nil {
		return NoOffset, err
	}
	if len(records) == 0 {
		return NoOffset, nil
	}
	if err := s.checkSize(records); err != nil {
		return NoOffset, err
	}
	if err := s.checkRecords(records); err != nil {
		return NoOffset, err
	}
	c := &call{records: records, batch: batch, size: encodedSize(records), done: make(chan result, 1)}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return NoOffset, err
	}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-c.done:
		return r.off, r.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	if !c.taken {
		c.gone = true
		s.mu.Unlock()
		return NoOffset, context.Cause(ctx)
	}
	s.mu.Unlock()
	select {
	case r := <-c.done: // being written: the outcome is near
		return r.off, r.err
	default:
		return NoOffset, fmt.Errorf("%w (the call's entry is being written: it lands at most once)", context.Cause(ctx))
	}
}

// checkSize refuses a call the stream would refuse, before it reaches the
// log: an entry the stream cannot take must never be synced. The call is
// counted as the stream's limit counts it, as sent (record.CallSize).
func (s *Spool) checkSize(records [][]byte) error {
	if n := record.CallSize(records); n > s.opts.MaxCallBytes {
		return fmt.Errorf("%w: %d bytes as sent, the per-call limit is %d", ErrTooLarge, n, s.opts.MaxCallBytes)
	}
	if n := int64(encodedSize(records)); n > s.opts.MaxBytes-s.opts.SegmentBytes {
		return fmt.Errorf("%w: %d bytes in the log, the spool holds %d", ErrTooLarge, n, s.opts.MaxBytes)
	}
	return nil
}

func (s *Spool) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usableLocked()
}

func (s *Spool) usableLocked() error {
	switch {
	case s.err != nil:
		return fmt.Errorf("%w: %w", ErrFailed, s.err)
	case s.closing:
		return ErrClosed
	}
	return nil
}

// fail makes the spool fail with err (the first error wins) and fails
// every queued call.
func (s *Spool) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	q := s.queue
	s.queue = nil
	err = fmt.Errorf("%w: %w", ErrFailed, s.err)
	s.mu.Unlock()
	for _, c := range q {
		c.done <- result{NoOffset, err}
	}
}
