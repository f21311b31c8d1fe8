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
	return m.ingest(now, rt, oneEntry(record), FramedSize(len(record)))
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
	size, call := BatchSizes(records)
	return m.ingest(now, rt, batchEntry(records, size), call)
}

// BatchSizes returns a batch's payload, the sum of its records' lengths
// (what the in-flight byte bound counts), and its size as a call
// (CallSize), in one pass: a batch of many small records costs as much in
// passes over its records as in copying them.
func BatchSizes(records [][]byte) (payload, call int64) {
	for _, r := range records {
		payload += int64(len(r))
		call += FramedSize(len(r))
	}
	return payload, call
}

// CallSize returns the size of a call of records as MaxCallBytes counts
// it: the sum of FramedSize over them.
func CallSize(records [][]byte) int64 {
	_, call := BatchSizes(records)
	return call
}

// CallTooLarge reports whether a call of call bytes (CallSize) is over the
// per-call limit, MaxCallBytes: IngestRecord and IngestBatch refuse such a
// call with a *LimitError. A driver that copies a call's records before it
// hands them over asks first, so as not to copy what will be refused.
func (m *Machine) CallTooLarge(call int64) bool {
	return call > m.cfg.MaxCallBytes
}

// FramedSize returns the bytes a record of n bytes takes in an ingest
// request: a one-byte tag, its length as a varint and the record itself.
// A call's size against MaxCallBytes is the sum of FramedSize over its
// records (CallSize), one record or a batch alike: that is what the request message
// carries, and a batch of many small records weighs far more than its
// payload (a 1-byte record takes 3), so a payload count would let through
// batches the server refuses. It is the same function as
// record.FramedSize (core imports neither protobuf nor record; a test of
// package record holds the two equal).
func FramedSize(n int) int64 {
	head := int64(2) // the tag, and the length's last varint byte
	for v := uint64(n); v >= 0x80; v >>= 7 {
		head++
	}
	return head + int64(n)
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

// ingest accepts the call e, of call bytes as the per-call limit counts
// them (FramedSize); e.size, its payload, is what the window's byte bound
// counts.
func (m *Machine) ingest(now Instant, rt RecordType, e entry, call int64) (int64, error) {
	if err := m.canIngest(now, rt); err != nil {
		return NoOffset, err
	}
	// The one check of the per-call limit: the core owns MaxCallBytes, and
	// the client, the driver and the spool leave the refusal to it.
	if m.CallTooLarge(call) {
		return NoOffset, &LimitError{Limit: "per-call bytes (as sent)", Max: m.cfg.MaxCallBytes, Got: call}
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
