package io

import (
	"log/slog"
	"time"

	"github.com/zbstream/zbstream/core"
)

// Defaults for Options fields left zero.
const (
	// DefaultFlushTimeout bounds Flush (protocol default: 5 minutes).
	DefaultFlushTimeout = 5 * time.Minute
	// DefaultCallbackDrain bounds how long Close waits for pending callbacks.
	DefaultCallbackDrain = 5 * time.Second
	// DefaultCallbackQueue bounds the offsets whose callbacks have not run.
	DefaultCallbackQueue = 1 << 16
)

// Options configure a Stream beyond its core.Config. The zero value is
// usable: no callbacks, no logging, the defaults above.
type Options struct {
	// OnAck, when set, is called once for every offset that becomes
	// durable (acknowledged, or reconciled from a resume watermark), in
	// offset order, on one goroutine, never under the stream's lock.
	// Callbacks may call the Stream, but one that waits on it (an ingest
	// while the callback queue is full, a Wait, a Close) waits for itself:
	// hand such work to another goroutine. Close waits for queued
	// callbacks up to CallbackDrain (or its context); callbacks still
	// queued then are not called, and one that is running may finish
	// after Close returns.
	OnAck func(offset int64)
	// OnFail, when set, is called once for every accepted offset that
	// fails with the stream, with the stream's error, in the same order
	// and on the same goroutine as OnAck.
	OnFail func(offset int64, err error)
	// CallbackQueue bounds how many offsets may wait for their callback.
	// When it is reached, ingest blocks (backpressure) until callbacks
	// catch up, so a slow callback slows the producer instead of growing
	// memory. Zero: DefaultCallbackQueue.
	CallbackQueue int
	// CallbackDrain bounds how long Close waits for callbacks still
	// queued. Zero: DefaultCallbackDrain.
	CallbackDrain time.Duration
	// FlushTimeout bounds Flush. Zero: DefaultFlushTimeout.
	FlushTimeout time.Duration
	// Logger receives lifecycle events: opens, resumes with their
	// watermark, reconciled and resent counts, reconnect causes, the end
	// of the stream. Nil: nothing is logged. Payloads are never logged.
	Logger *slog.Logger
	// Observer, when set, is told of the same events as numbers, for
	// metrics (see Observer, and EventObserver for the details).
	Observer Observer
	// Table names the stream's table in the events an EventObserver is
	// given (the transport carries the table itself; the root client sets
	// it). Empty: events name no table.
	Table string
	// NoCopy keeps ingested records by reference instead of copying them:
	// the caller must then not modify a record, or a batch's slice, until
	// its offset is durable or failed. It saves one copy per record. By
	// default the stream copies each record into memory of its own,
	// outside the Go heap where the platform allows (Unix), so that the
	// caller may reuse its buffers at once and the in-flight bound costs
	// what it says: records kept on the heap count twice against a
	// process's memory, as the collector lets the heap grow to about
	// twice what is live. (Up to LendBytes of large calls are kept on the
	// heap instead while the connection borrows: see Loan.)
	NoCopy bool
}

// Observer receives a stream's events for metrics: wire it to Prometheus,
// OpenTelemetry or expvar without this library depending on any of them.
// Methods are called under the stream's lock and must return quickly
// without calling back into the Stream. Embed NopObserver to implement
// only some of them.
type Observer interface {
	// Accepted: one ingest call of n records and size bytes was accepted.
	Accepted(records int, bytes int64)
	// Completed: n offsets became durable; reconciled says they were
	// learned from a resume watermark.
	Completed(n int64, reconciled bool)
	// Failed: n accepted offsets failed with the stream.
	Failed(n int64)
	// Connected: a connection opened; resumed says by resume.
	Connected(resumed bool)
	// Disconnected: a connection that was Connected ended, with the status
	// code the transport reported, or CodeCanceled when the stream left it
	// itself (a rotation, a timeout, the end of the stream). Each
	// connection is Disconnected once.
	Disconnected(code core.Code)
}

// NopObserver implements Observer with methods that do nothing.
type NopObserver struct{}

// Accepted does nothing.
func (NopObserver) Accepted(int, int64) {}

// Completed does nothing.
func (NopObserver) Completed(int64, bool) {}

// Failed does nothing.
func (NopObserver) Failed(int64) {}

// Connected does nothing.
func (NopObserver) Connected(bool) {}

// Disconnected does nothing.
func (NopObserver) Disconnected(core.Code) {}

// withDefaults validates o and fills zero fields.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.CallbackQueue < 0:
		return o, &core.ConfigError{Field: "CallbackQueue", Reason: "must not be negative"}
	case o.CallbackDrain < 0:
		return o, &core.ConfigError{Field: "CallbackDrain", Reason: "must not be negative"}
	case o.FlushTimeout < 0:
		return o, &core.ConfigError{Field: "FlushTimeout", Reason: "must not be negative"}
	}
	if o.CallbackQueue == 0 {
		o.CallbackQueue = DefaultCallbackQueue
	}
	if o.CallbackDrain == 0 {
		o.CallbackDrain = DefaultCallbackDrain
	}
	if o.FlushTimeout == 0 {
		o.FlushTimeout = DefaultFlushTimeout
	}
	if o.Observer == nil {
		o.Observer = NopObserver{}
	}
	return o, nil
}
