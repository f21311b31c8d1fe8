package zbstream

import (
	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// Observer receives a stream's events as numbers, for metrics (Prometheus,
// OpenTelemetry, expvar) without this library depending on any of them.
// Embed NopObserver to implement only some methods. An Observer that also
// implements EventObserver is given the events with their details instead.
type Observer = streamio.Observer

// NopObserver implements Observer with methods that do nothing.
type NopObserver = streamio.NopObserver

// EventObserver is an Observer given every event with its details: table,
// stream id and kind, per-call ack latency, reconnect causes, resent and
// reconciled calls, the window's fill and the callback queue's depth. Its
// Observe method is called instead of the Observer's others; see
// streamio.EventObserver.
type EventObserver = streamio.EventObserver

// Event is one thing a stream did; see streamio.Event.
type Event = streamio.Event

// EventKind says what an Event reports.
type EventKind = streamio.EventKind

// The kinds of Event; see streamio.EventKind.
const (
	// EventOpened: the stream's first open succeeded.
	EventOpened = streamio.EventOpened
	// EventAccepted: an ingest call was accepted.
	EventAccepted = streamio.EventAccepted
	// EventDurable: a call became durable (acknowledged or reconciled).
	EventDurable = streamio.EventDurable
	// EventFailed: an accepted call failed with the stream.
	EventFailed = streamio.EventFailed
	// EventResent: a call was written again after a reconnect.
	EventResent = streamio.EventResent
	// EventConnected: a connection opened.
	EventConnected = streamio.EventConnected
	// EventDisconnected: a connection ended, with its status code.
	EventDisconnected = streamio.EventDisconnected
	// EventReconnecting: a connection after the first is being opened,
	// with the code that ended the previous one.
	EventReconnecting = streamio.EventReconnecting
	// EventClosed: a stream that had opened has ended.
	EventClosed = streamio.EventClosed
)

// Code is a connection's status code (gRPC's numbering), as events and
// *ConnectionError carry it.
type Code = core.Code
