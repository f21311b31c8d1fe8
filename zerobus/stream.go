package zerobus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream"
)

// ZerobusStream is one ephemeral (at-least-once) stream into a table: a
// *zbstream.Stream underneath. Every method is safe for concurrent use.
// Offsets start at 0, one per ingest call (a batch has one offset).
type ZerobusStream struct {
	sdk          *ZerobusSdk
	st           *zbstream.Stream
	own          *zbstream.Client // the stream's own client, closed with it; nil for a shared one
	json         bool
	avro         any // an Avro stream's parsed writer schema (the avro build tag); nil for the others
	flushTimeout time.Duration
	nw           nowait

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// newStream wraps st, opened with the effective options o on the client
// own (nil when shared).
func newStream(sdk *ZerobusSdk, st *zbstream.Stream, own *zbstream.Client, o StreamConfigurationOptions) *ZerobusStream {
	zs := &ZerobusStream{sdk: sdk, st: st, own: own, json: o.RecordType == RecordTypeJson, flushTimeout: millis(o.FlushTimeoutMs)}
	zs.nw.init()
	return zs
}

// Stream returns the zbstream stream underneath, for what the official API
// lacks (contexts, Stats, Done, callbacks were set at creation). Do not
// Close it: Close the ZerobusStream.
func (st *ZerobusStream) Stream() *zbstream.Stream { return st.st }

// payload returns the bytes of one record: a string is a JSON record and
// []byte a serialized message; anything else, or a record of the other
// type than the stream's, is a non-retryable *ZerobusError.
func (st *ZerobusStream) payload(p interface{}) ([]byte, error) {
	if st.avro != nil {
		return nil, fatal(msgTypeMismatch) // an Avro stream takes the IngestAvro calls
	}
	switch v := p.(type) {
	case []byte:
		if len(v) == 0 {
			return nil, fatal(msgEmptyData)
		}
		if st.json {
			return nil, fatal(msgTypeMismatch)
		}
		return v, nil
	case string:
		if !st.json {
			return nil, fatal(msgTypeMismatch)
		}
		return []byte(v), nil
	}
	return nil, fatal(msgPayloadType)
}

// batchPayloads returns the bytes of a batch's records: every one a string
// (JSON) or every one a []byte (a serialized message; not copied), the
// first deciding, of the stream's type; anything else is a non-retryable
// *ZerobusError. records is not empty.
func (st *ZerobusStream) batchPayloads(records []interface{}) ([][]byte, error) {
	if st.avro != nil {
		return nil, fatal(msgTypeMismatch) // an Avro stream takes the IngestAvro calls
	}
	recs := make([][]byte, len(records))
	switch records[0].(type) {
	case []byte:
		for i, r := range records {
			b, ok := r.([]byte)
			if !ok {
				return nil, fatal("All records in batch must be of the same type ([]byte)")
			}
			recs[i] = b
		}
		if st.json {
			return nil, fatal(msgTypeMismatch)
		}
	case string:
		for i, r := range records {
			s, ok := r.(string)
			if !ok {
				return nil, fatal("All records in batch must be of the same type (string)")
			}
			recs[i] = []byte(s)
		}
		if !st.json {
			return nil, fatal(msgTypeMismatch)
		}
	default:
		return nil, fatal(msgPayloadType)
	}
	return recs, nil
}

// IngestRecord ingests one record, as IngestRecordOffset does, and returns
// its acknowledgement handle.
//
// Deprecated: use IngestRecordOffset and WaitForOffset, as the official SDK
// advises.
func (st *ZerobusStream) IngestRecord(payload interface{}) (*RecordAck, error) {
	off, err := st.IngestRecordOffset(payload)
	if err != nil {
		return nil, err
	}
	return &RecordAck{st: st, offset: off}, nil
}

// IngestRecordOffset ingests one record, a string (JSON, for a
// RecordTypeJson stream) or a []byte (a serialized message, for a
// RecordTypeProto stream), and returns its offset once the record is
// queued, not yet acknowledged (see WaitForOffset and Flush). The stream
// keeps a copy: the caller may reuse a []byte at once. It blocks while
// MaxInflightRequests calls are in flight. On error the offset is -1.
func (st *ZerobusStream) IngestRecordOffset(payload interface{}) (int64, error) {
	if st.closed.Load() {
		return -1, fatal(msgClosed)
	}
	b, err := st.payload(payload)
	if err != nil {
		return -1, err
	}
	off, err := st.st.IngestRecord(context.Background(), b)
	if err != nil {
		return -1, wrap(err)
	}
	return off, nil
}

// IngestRecordsOffset ingests records as one call under one offset, which
// it returns once they are queued; they land together. Every element is a
// string (JSON) or every one a []byte (serialized messages): the first
// decides, and an element of the other type is a non-retryable
// *ZerobusError and nothing is ingested. An empty batch returns -1 and no
// error.
func (st *ZerobusStream) IngestRecordsOffset(records []interface{}) (int64, error) {
	if st.closed.Load() {
		return -1, fatal(msgClosed)
	}
	if len(records) == 0 {
		return -1, nil
	}
	recs, err := st.batchPayloads(records)
	if err != nil {
		return -1, err
	}
	off, err := st.st.IngestBatch(context.Background(), recs)
	if err != nil {
		return -1, wrap(err)
	}
	return off, nil
}

// WaitForOffset blocks until the call at offset is acknowledged (durable),
// at most FlushTimeoutMs: then it returns a retryable *ZerobusError. If the
// stream failed first, the error is the failure's.
func (st *ZerobusStream) WaitForOffset(offset int64) error {
	if st.closed.Load() {
		return fatal(msgClosed)
	}
	return st.wait(offset)
}

// wait waits for offset within the flush timeout.
func (st *ZerobusStream) wait(offset int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
	defer cancel()
	err := st.st.Wait(ctx, offset)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return &ZerobusError{Message: "Stream is closed: Waiting for acknowledgement timed out", IsRetryable: true, err: err}
	}
	return wrap(err)
}

// GetUnackedRecords returns the records not acknowledged, flattened (a
// batch's records one by one), in offset order, followed by those of the
// Nowait calls the stream never accepted, in call order: each a string for
// a JSON stream, a []byte for a proto stream, never nil. Call it after the
// stream failed or was closed; on a stream still running it is a
// non-retryable *ZerobusError. (The official SDK refuses it after Close as
// well; here it works after Close.)
func (st *ZerobusStream) GetUnackedRecords() ([]interface{}, error) {
	if !st.ended() {
		return nil, fatal(msgActive)
	}
	// The Nowait goroutine stops at once on an ended stream; once it has,
	// a call is either accepted or queued, never both.
	st.waitStopped()
	var recs [][]byte
	for _, b := range st.st.Unacked() {
		recs = append(recs, b.Records...)
	}
	recs = append(recs, st.leftovers()...)
	out := make([]interface{}, 0, len(recs))
	for _, r := range recs {
		if st.json {
			out = append(out, string(r))
		} else {
			out = append(out, bytes.Clone(r))
		}
	}
	return out, nil
}

// Flush blocks until every record ingested before it is acknowledged,
// those of earlier Nowait calls included, at most FlushTimeoutMs (then a
// retryable *ZerobusError; the stream goes on).
func (st *ZerobusStream) Flush() error {
	if st.closed.Load() {
		return fatal(msgClosed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
	defer cancel()
	if err := st.waitQueued(ctx); err != nil {
		return &ZerobusError{Message: "Flush timed out: records of Nowait calls are still waiting for room in the stream", IsRetryable: true, err: zbstream.ErrFlushTimeout}
	}
	return wrap(st.st.Flush(context.Background()))
}

// Close flushes the stream (at most FlushTimeoutMs), ends it and releases
// it (and its connection, when it has one of its own); it returns the
// failure if records could not be delivered, whose records
// GetUnackedRecords then returns. A second Close returns nil, as in the
// official SDK; after Close the other calls return a non-retryable
// *ZerobusError. Unlike the official SDK, an unclosed stream is not closed
// by a finalizer: its goroutines run until Close.
func (st *ZerobusStream) Close() error {
	first := false
	st.closeOnce.Do(func() {
		first = true
		st.closed.Store(true)
		st.closeErr = st.close()
		st.sdk.release(st.own)
	})
	if !first {
		return nil
	}
	return st.closeErr
}

// close hands the queued Nowait calls to the stream (at most
// FlushTimeoutMs) and closes it.
func (st *ZerobusStream) close() error {
	st.closeQueue()
	ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
	defer cancel()
	_ = st.waitQueued(ctx)
	err := wrap(st.st.Close(context.Background()))
	// The closed stream refuses what is left: the goroutine stops.
	st.waitStopped()
	if n := len(st.leftovers()); err == nil && n > 0 {
		err = &ZerobusError{Message: fmt.Sprintf("Stream is closed: %d records of Nowait calls found no room in the stream in time (GetUnackedRecords returns them)", n), IsRetryable: true, err: zbstream.ErrCloseTimeout}
	}
	return err
}
