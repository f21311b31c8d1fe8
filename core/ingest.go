package core

import (
	"fmt"
	"math"

	"github.com/zbstream/zbstream/fsm"
)

// IngestRecord accepts one record and returns its offset. The record is kept
// by reference until it is durable or failed; the caller must not modify it.
//
// ErrWindowFull is backpressure and changes nothing. Misuse (wrong type, too
// large, closed, not yet opened, time going backwards) returns an error and
// changes nothing. When the offset space is exhausted the stream fails and
// the record is not accepted.
func (m *Machine) IngestRecord(now Instant, rt RecordType, record []byte) (int64, error) {
	return m.ingest(now, rt, entry{one: record, size: int64(len(record))})
}

// IngestBatch accepts a batch of records under one offset. An empty batch
// gets no offset: it returns NoOffset and a nil error and changes nothing.
// The slice and its records are kept by reference, as in IngestRecord.
func (m *Machine) IngestBatch(now Instant, rt RecordType, records [][]byte) (int64, error) {
	if len(records) == 0 {
		if err := m.canIngest(now, rt); err != nil {
			return NoOffset, err
		}
		return NoOffset, nil
	}
	var size int64
	for _, r := range records {
		size += int64(len(r))
	}
	return m.ingest(now, rt, entry{many: records, size: size})
}

// canIngest checks everything about a call except its size.
func (m *Machine) canIngest(now Instant, rt RecordType) error {
	if err := m.checkTime(now); err != nil {
		return err
	}
	switch {
	case m.err != nil:
		return Errorf("%w: %w", ErrStreamFailed, m.err)
	case m.closeRequested || m.State() == fsm.Closing || m.State() == fsm.Closed:
		return ErrClosed
	case !m.opened:
		return ErrNotOpened
	case rt != m.cfg.RecordType:
		return fmt.Errorf("%w: got %s, stream takes %s", ErrRecordType, rt, m.cfg.RecordType)
	}
	return nil
}

func (m *Machine) ingest(now Instant, rt RecordType, e entry) (int64, error) {
	if err := m.canIngest(now, rt); err != nil {
		return NoOffset, err
	}
	if e.size > m.cfg.MaxCallBytes {
		return NoOffset, &LimitError{Limit: "per-call bytes", Max: m.cfg.MaxCallBytes, Got: e.size}
	}
	if m.win.len() >= int64(m.cfg.MaxInflightCalls) || m.win.bytes+e.size > m.cfg.MaxInflightBytes {
		return NoOffset, ErrWindowFull
	}
	// From here on the call acts, accepted or failing the stream, so it
	// stores its time.
	m.now = now
	if m.win.next == math.MaxInt64 {
		err := offsetExhausted("next offset", m.win.next)
		m.fail(err)
		return NoOffset, err
	}
	return m.win.push(e), nil
}
