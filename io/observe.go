package io

import (
	"time"

	"github.com/zbstream/zbstream/core"
)

// EventObserver is an Observer that wants every event with its details: the
// stream it belongs to, per-call ack latency, the window's fill, the cause
// of a reconnect. An Observer that implements it is given Observe instead
// of its other methods (embed NopObserver for those); one that does not is
// called as before. Metrics adapters (package contrib/otel,
// contrib/prometheus) implement it.
//
// Observe is called under the stream's lock, in the order events happen,
// and must return quickly without calling back into the Stream. The Event
// is passed by value: keeping it is safe, and nothing is allocated to make
// it.
type EventObserver interface {
	Observer
	Observe(e Event)
}

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of Event. Per-call events (Accepted, Durable, Failed, Resent)
// come once for every ingest call, a batch being one call.
const (
	// EventOpened: the stream's first open succeeded; it accepts records.
	// StreamID is the server's id.
	EventOpened EventKind = iota + 1
	// EventAccepted: one call of Records records and Bytes bytes was
	// accepted at Offset.
	EventAccepted
	// EventDurable: the call at Offset became durable, Latency after it
	// was accepted: acknowledged, or, with Reconciled, learned from a
	// resume watermark.
	EventDurable
	// EventFailed: the accepted call at Offset failed with the stream
	// (Err), Latency after it was accepted.
	EventFailed
	// EventResent: the call at Offset was written again after a
	// reconnect.
	EventResent
	// EventConnected: a connection opened; Resumed says by resume.
	EventConnected
	// EventDisconnected: a connection that was Connected ended, with Code:
	// the transport's status, or CodeCanceled when the stream left it
	// itself (a rotation, a timeout, the end of the stream).
	EventDisconnected
	// EventReconnecting: a connection after the first is being opened;
	// Code is what ended the previous one (or its failed open).
	EventReconnecting
	// EventClosed: a stream that had opened has ended, cleanly (Err nil)
	// or failed (Err).
	EventClosed
)

// String returns the kind's name, as "durable".
func (k EventKind) String() string {
	switch k {
	case EventOpened:
		return "opened"
	case EventAccepted:
		return "accepted"
	case EventDurable:
		return "durable"
	case EventFailed:
		return "failed"
	case EventResent:
		return "resent"
	case EventConnected:
		return "connected"
	case EventDisconnected:
		return "disconnected"
	case EventReconnecting:
		return "reconnecting"
	case EventClosed:
		return "closed"
	}
	return "unknown"
}

// Event is one thing a stream did. Every event names its stream (Table,
// StreamID, StreamKind, RecordType) and carries the window's fill and the
// callback queue's depth after it; the other fields are set by the kinds
// that say so.
type Event struct {
	Kind EventKind

	// Table is Options.Table (the root client sets it). StreamID is the
	// server's id: empty until the server has answered the first create
	// (so in the first Connected event of a new stream); an ephemeral
	// stream gets a new one on every connection. Both are unbounded sets: label metrics
	// with Table and StreamKind, never with StreamID.
	Table      string
	StreamID   string
	StreamKind core.Kind
	RecordType core.RecordType

	// Offset is the call's offset (Accepted, Durable, Failed, Resent).
	Offset int64
	// Records and Bytes are the call's record count and payload bytes
	// (Accepted, Durable, Failed, Resent).
	Records int
	Bytes   int64
	// Latency is the time from the call's acceptance to its end (Durable,
	// Failed), measured with the stream's own clock reads.
	Latency time.Duration
	// Reconciled: a Durable call was learned from a resume watermark.
	Reconciled bool
	// Resumed: a Connected connection resumed the stream.
	Resumed bool
	// Code is the status of a Disconnected connection, the cause of a
	// Reconnecting one, or the code of the stream's error (Failed, Closed:
	// the connection's status when the error carries one, else UNKNOWN; a
	// bounded set, fit for a metric label, where Err is not).
	Code core.Code
	// Err is the stream's error (Failed, and Closed after a failure).
	Err error

	// InFlightCalls and InFlightBytes are the window's fill after the
	// event: calls accepted and not yet durable, and their bytes.
	InFlightCalls int64
	InFlightBytes int64
	// CallbackQueue is the number of offsets whose OnAck or OnFail
	// callback has not run yet.
	CallbackQueue int64
}
