package zbotel

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// latencyBuckets are the explicit bucket boundaries, in seconds, that the
// semantic conventions advise for messaging.client.operation.duration.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// instruments are the Observer's instruments; the README lists them.
type instruments struct {
	sentMessages, ackedMessages, failedMessages metric.Int64Counter
	sentBytes                                   metric.Int64Counter
	resentCalls, reconciledCalls, reconnects    metric.Int64Counter
	duration                                    metric.Float64Histogram
	openStreams, inflightCalls, inflightBytes   metric.Int64UpDownCounter
	callbackQueue                               metric.Int64Gauge
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs []error
	counter := func(dst *metric.Int64Counter, name, unit, desc string) {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		*dst = c
		errs = append(errs, err)
	}
	upDown := func(dst *metric.Int64UpDownCounter, name, unit, desc string) {
		c, err := m.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		*dst = c
		errs = append(errs, err)
	}
	counter(&in.sentMessages, "messaging.client.sent.messages", "{message}", "Records accepted for sending.")
	counter(&in.ackedMessages, "zbstream.client.acked.messages", "{message}", "Records durable on the server (acknowledged or reconciled).")
	counter(&in.failedMessages, "zbstream.client.failed.messages", "{message}", "Accepted records that failed with their stream, by error.type.")
	counter(&in.sentBytes, "zbstream.client.sent.bytes", "By", "Payload bytes accepted for sending.")
	counter(&in.resentCalls, "zbstream.client.resent.calls", "{call}", "Ingest calls written again after a reconnect.")
	counter(&in.reconciledCalls, "zbstream.client.reconciled.calls", "{call}", "Ingest calls found durable from a resume watermark.")
	counter(&in.reconnects, "zbstream.client.reconnects", "{reconnect}", "Connections opened after a stream's first, by the error.type that ended the previous one.")
	upDown(&in.openStreams, "zbstream.client.open_streams", "{stream}", "Streams opened and not yet ended.")
	upDown(&in.inflightCalls, "zbstream.client.inflight.calls", "{call}", "Ingest calls accepted and not yet durable or failed.")
	upDown(&in.inflightBytes, "zbstream.client.inflight.bytes", "By", "Payload bytes of the calls in flight.")
	var err error
	in.duration, err = m.Float64Histogram("messaging.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an ingest call's acceptance to its durability."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	errs = append(errs, err)
	in.callbackQueue, err = m.Int64Gauge("zbstream.client.callback_queue", metric.WithUnit("{offset}"),
		metric.WithDescription("Offsets waiting for their acknowledgement callback, as a stream of the table last reported."))
	errs = append(errs, err)
	return in, errors.Join(errs...)
}
