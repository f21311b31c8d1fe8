package zerobus

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sync"

	"github.com/zbstream/zbstream"
)

// IngestRecordNowait ingests one record, a string (JSON) or a []byte (a
// serialized message), without waiting: it returns at once, with no offset,
// and whatever happens to the record later is not reported to the caller,
// as in the official SDK. The record gets an offset of the stream like
// any other, and is sent, acknowledged and resent after a reconnect like
// any other. The stream keeps a copy: the caller may reuse a []byte at
// once.
//
// When the stream has room, the record is accepted before
// IngestRecordNowait returns. When ingest would block (MaxInflightRequests
// calls in flight), the record waits in memory, without bound, and a
// goroutine of the stream hands the waiting calls over in the order they
// were made, before any later Nowait call: Nowait calls land in call
// order, but a blocking call (IngestRecordOffset) made meanwhile may land
// before them. Flush and Close wait for the Nowait calls made before them.
// A record the stream refuses (one over the size limit) is dropped, as
// the official SDK drops the records it fails to ingest; records the
// stream never accepted because it failed or was closed are returned by
// GetUnackedRecords.
//
// The error is a non-retryable *ZerobusError, for what can be checked at
// once: a closed stream, a payload neither string nor []byte, an empty
// []byte, a record of the other type than the stream's (which the official
// SDK drops silently instead).
func (st *ZerobusStream) IngestRecordNowait(payload interface{}) error {
	if st.closed.Load() {
		return fatal(msgClosed)
	}
	b, err := st.payload(payload)
	if err != nil {
		return err
	}
	_, isBytes := payload.([]byte)
	return st.submit(pending{records: [][]byte{b}}, isBytes)
}

// IngestRecordsNowait ingests records as one call under one offset, as
// IngestRecordsOffset does, without waiting, as IngestRecordNowait does.
// Every element is a string (JSON) or every one a []byte (serialized
// messages); an element of the other type, or a batch of the other type
// than the stream's, is a non-retryable *ZerobusError and nothing is
// ingested. An empty batch does nothing and returns nil.
func (st *ZerobusStream) IngestRecordsNowait(records []interface{}) error {
	if st.closed.Load() {
		return fatal(msgClosed)
	}
	if len(records) == 0 {
		return nil
	}
	recs, err := st.batchPayloads(records)
	if err != nil {
		return err
	}
	_, isBytes := records[0].([]byte)
	return st.submit(pending{records: recs, batch: true}, isBytes)
}

// pending is a Nowait call not yet accepted by the stream.
type pending struct {
	records [][]byte
	batch   bool // one call of all records (IngestBatch), or of the one record
}

// nowait holds a stream's Nowait calls that could not be accepted at once,
// and the goroutine that hands them to the stream in call order.
type nowait struct {
	try context.Context // cancelled: an ingest that would block returns at once

	mu      sync.Mutex
	closed  bool          // Close has begun: no more calls
	queue   []pending     // in call order; the first is being handed over
	queued  uint64        // calls ever queued
	handled uint64        // calls taken out of the queue: accepted or dropped
	running bool          // the goroutine runs
	changed chan struct{} // closed, and renewed, when handled grows or the goroutine stops
}

// init prepares an empty queue.
func (nw *nowait) init() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	nw.try = ctx
	nw.changed = make(chan struct{})
}

// notify wakes the waiters; nw.mu is held.
func (nw *nowait) notify() {
	close(nw.changed)
	nw.changed = make(chan struct{})
}

// submit hands one Nowait call to the stream: at once when nothing is
// queued before it and the stream accepts it without blocking; otherwise
// into the queue (copying records that are the caller's: fromCaller), for
// the goroutine.
func (st *ZerobusStream) submit(p pending, fromCaller bool) error {
	nw := &st.nw
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.closed {
		return fatal(msgClosed)
	}
	if len(nw.queue) == 0 {
		err := st.accept(nw.try, p)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, context.Canceled) && !st.terminal(err):
			return nil // refused by the stream (too large): dropped
		}
	}
	if fromCaller {
		for i, r := range p.records {
			p.records[i] = bytes.Clone(r)
		}
	}
	nw.queue = append(nw.queue, p)
	nw.queued++
	if !nw.running && !st.ended() {
		nw.running = true
		go st.handOver()
	}
	return nil
}

// handOver is the goroutine that hands the queued calls to the stream,
// blocking while it has no room. It stops when the queue is empty, or when
// the stream has ended: what is left stays queued, for GetUnackedRecords.
func (st *ZerobusStream) handOver() {
	nw := &st.nw
	for {
		nw.mu.Lock()
		if len(nw.queue) == 0 {
			nw.queue = nil
			break
		}
		p := nw.queue[0]
		nw.mu.Unlock()
		if err := st.accept(context.Background(), p); err != nil && st.terminal(err) {
			nw.mu.Lock()
			break
		}
		// Accepted, or refused by the stream and dropped.
		nw.mu.Lock()
		nw.queue[0] = pending{}
		nw.queue = nw.queue[1:]
		nw.handled++
		nw.notify()
		nw.mu.Unlock()
	}
	nw.running = false
	nw.notify()
	nw.mu.Unlock()
}

// accept gives one call to the stream.
func (st *ZerobusStream) accept(ctx context.Context, p pending) error {
	var err error
	if p.batch {
		_, err = st.st.IngestBatch(ctx, p.records)
	} else {
		_, err = st.st.IngestRecord(ctx, p.records[0])
	}
	return err
}

// terminal reports whether err means the stream takes no more records.
func (st *ZerobusStream) terminal(err error) bool {
	return errors.Is(err, zbstream.ErrClosed) || errors.Is(err, zbstream.ErrStreamFailed) || st.ended()
}

// ended reports whether the stream has ended (closed or failed).
func (st *ZerobusStream) ended() bool {
	select {
	case <-st.st.Done():
		return true
	default:
		return false
	}
}

// waitQueued blocks until the Nowait calls queued so far are taken out of
// the queue, the goroutine has stopped (the stream ended), or ctx ends
// (then it returns ctx's error).
func (st *ZerobusStream) waitQueued(ctx context.Context) error {
	nw := &st.nw
	nw.mu.Lock()
	target := nw.queued
	nw.mu.Unlock()
	return st.waitHandled(ctx, target)
}

// waitStopped blocks until the goroutine has stopped.
func (st *ZerobusStream) waitStopped() {
	_ = st.waitHandled(context.Background(), math.MaxUint64)
}

// waitHandled blocks until target calls are taken out of the queue or the
// goroutine is not running, or ctx ends.
func (st *ZerobusStream) waitHandled(ctx context.Context, target uint64) error {
	nw := &st.nw
	for {
		nw.mu.Lock()
		done, changed := nw.handled >= target || !nw.running, nw.changed
		nw.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closeQueue refuses further Nowait calls.
func (st *ZerobusStream) closeQueue() {
	st.nw.mu.Lock()
	st.nw.closed = true
	st.nw.mu.Unlock()
}

// leftovers returns the records of the queued calls, which the stream
// never accepted, in call order; the goroutine has stopped.
func (st *ZerobusStream) leftovers() [][]byte {
	st.nw.mu.Lock()
	defer st.nw.mu.Unlock()
	var out [][]byte
	for _, p := range st.nw.queue {
		out = append(out, p.records...)
	}
	return out
}
