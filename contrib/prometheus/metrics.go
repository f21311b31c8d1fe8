package zbprom

import "github.com/prometheus/client_golang/prometheus"

// Label names: every metric has table and stream_kind; failures and
// reconnects have code as well.
const (
	labelTable = "table"
	labelKind  = "stream_kind"
	labelCode  = "code"
)

// LatencyBuckets are the ack latency histogram's buckets, in seconds: those
// OpenTelemetry advises for messaging operation durations.
var LatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// metrics are the Collector's metric vectors; the README lists them.
type metrics struct {
	recordsSent, recordsAcked, recordsFailed, bytesSent *prometheus.CounterVec
	callsResent, callsReconciled, reconnects            *prometheus.CounterVec
	ackLatency                                          *prometheus.HistogramVec
	openStreams, inflightCalls, inflightBytes           *prometheus.GaugeVec
	callbackQueue                                       *prometheus.GaugeVec
}

func newMetrics() metrics {
	labels := []string{labelTable, labelKind}
	coded := []string{labelTable, labelKind, labelCode}
	counter := func(name, help string, l []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "zbstream", Name: name, Help: help}, l)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "zbstream", Name: name, Help: help}, labels)
	}
	return metrics{
		recordsSent:     counter("records_sent_total", "Records accepted for sending.", labels),
		recordsAcked:    counter("records_acked_total", "Records durable on the server (acknowledged or reconciled).", labels),
		recordsFailed:   counter("records_failed_total", "Accepted records that failed with their stream, by the error's code.", coded),
		bytesSent:       counter("bytes_sent_total", "Payload bytes accepted for sending.", labels),
		callsResent:     counter("calls_resent_total", "Ingest calls written again after a reconnect.", labels),
		callsReconciled: counter("calls_reconciled_total", "Ingest calls found durable from a resume watermark.", labels),
		reconnects:      counter("reconnects_total", "Connections opened after a stream's first, by the code that ended the previous one.", coded),
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "zbstream", Name: "ack_latency_seconds",
			Help:    "Time from an ingest call's acceptance to its durability.",
			Buckets: LatencyBuckets,
		}, labels),
		openStreams:   gauge("open_streams", "Streams opened and not yet ended."),
		inflightCalls: gauge("inflight_calls", "Ingest calls accepted and not yet durable or failed."),
		inflightBytes: gauge("inflight_bytes", "Payload bytes of the calls in flight."),
		callbackQueue: gauge("callback_queue", "Offsets waiting for their acknowledgement callback, as a stream of the table last reported."),
	}
}

// each calls f with every vector.
func (m *metrics) each(f func(prometheus.Collector)) {
	for _, c := range []prometheus.Collector{
		m.recordsSent, m.recordsAcked, m.recordsFailed, m.bytesSent,
		m.callsResent, m.callsReconciled, m.reconnects, m.ackLatency,
		m.openStreams, m.inflightCalls, m.inflightBytes, m.callbackQueue,
	} {
		f(c)
	}
}
