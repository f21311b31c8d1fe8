package zbprom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zbstream/zbstream"
)

// Collector is a zbstream.EventObserver and a prometheus.Collector: it
// counts every stream's events and exposes them. Give it to
// zbstream.WithObserver and register it once. It is safe for concurrent
// use by any number of streams and clients.
type Collector struct {
	zbstream.NopObserver
	m metrics

	mu     sync.Mutex
	series map[seriesKey]*series // per table and stream kind
}

// NewCollector returns a Collector with no series yet.
func NewCollector() *Collector {
	return &Collector{m: newMetrics(), series: make(map[seriesKey]*series)}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.m.each(func(m prometheus.Collector) { m.Describe(ch) })
}

// Collect sends the current value of every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.m.each(func(m prometheus.Collector) { m.Collect(ch) })
}

// Observe counts one event. It does not allocate once the event's table
// and stream kind have been seen (and, for a failure or a reconnect, its
// code).
func (c *Collector) Observe(e zbstream.Event) {
	s := c.seriesOf(e)
	switch e.Kind {
	case zbstream.EventOpened:
		s.openStreams.Inc()
	case zbstream.EventClosed:
		s.openStreams.Dec()
	case zbstream.EventAccepted:
		s.recordsSent.Add(float64(e.Records))
		s.bytesSent.Add(float64(e.Bytes))
		s.inflightCalls.Inc()
		s.inflightBytes.Add(float64(e.Bytes))
	case zbstream.EventDurable:
		s.recordsAcked.Add(float64(e.Records))
		s.ackLatency.Observe(e.Latency.Seconds())
		if e.Reconciled {
			s.callsReconciled.Inc()
		}
		s.inflightCalls.Dec()
		s.inflightBytes.Sub(float64(e.Bytes))
	case zbstream.EventFailed:
		c.coded(s, e, c.m.recordsFailed).Add(float64(e.Records))
		s.inflightCalls.Dec()
		s.inflightBytes.Sub(float64(e.Bytes))
	case zbstream.EventResent:
		s.callsResent.Inc()
	case zbstream.EventReconnecting:
		c.coded(s, e, c.m.reconnects).Inc()
	}
	s.callbackQueue.Set(float64(e.CallbackQueue))
}

// seriesKey names the series of one table and stream kind.
type seriesKey struct {
	table string
	kind  zbstream.Kind
}

// series are the children of every metric for one table and stream kind,
// looked up once so that counting does not allocate.
type series struct {
	labels                                    [2]string
	recordsSent, recordsAcked, bytesSent      prometheus.Counter
	callsResent, callsReconciled              prometheus.Counter
	ackLatency                                prometheus.Observer
	openStreams, inflightCalls, inflightBytes prometheus.Gauge
	callbackQueue                             prometheus.Gauge
	coded                                     map[codedKey]prometheus.Counter
}

// codedKey names a child of a metric labelled with a code as well.
type codedKey struct {
	vec  *prometheus.CounterVec
	code zbstream.Code
}

func (c *Collector) seriesOf(e zbstream.Event) *series {
	k := seriesKey{e.Table, e.StreamKind}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.series[k]
	if s == nil {
		l := [2]string{e.Table, e.StreamKind.String()}
		m := &c.m
		s = &series{
			labels:          l,
			recordsSent:     m.recordsSent.WithLabelValues(l[:]...),
			recordsAcked:    m.recordsAcked.WithLabelValues(l[:]...),
			bytesSent:       m.bytesSent.WithLabelValues(l[:]...),
			callsResent:     m.callsResent.WithLabelValues(l[:]...),
			callsReconciled: m.callsReconciled.WithLabelValues(l[:]...),
			ackLatency:      m.ackLatency.WithLabelValues(l[:]...),
			openStreams:     m.openStreams.WithLabelValues(l[:]...),
			inflightCalls:   m.inflightCalls.WithLabelValues(l[:]...),
			inflightBytes:   m.inflightBytes.WithLabelValues(l[:]...),
			callbackQueue:   m.callbackQueue.WithLabelValues(l[:]...),
			coded:           make(map[codedKey]prometheus.Counter),
		}
		c.series[k] = s
	}
	return s
}

// coded returns the child of vec for s's labels and e's code.
func (c *Collector) coded(s *series, e zbstream.Event, vec *prometheus.CounterVec) prometheus.Counter {
	k := codedKey{vec, e.Code}
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := s.coded[k]
	if ch == nil {
		ch = vec.WithLabelValues(s.labels[0], s.labels[1], e.Code.String())
		s.coded[k] = ch
	}
	return ch
}
