package zbotel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zbstream/zbstream"
)

// ScopeName is the instrumentation scope of the meter the Observer uses.
const ScopeName = "github.com/zbstream/zbstream/contrib/otel"

// Observer is a zbstream.EventObserver that records every stream's events
// in OpenTelemetry instruments. Give it to zbstream.WithObserver. It is
// safe for concurrent use by any number of streams and clients.
type Observer struct {
	zbstream.NopObserver
	in instruments

	mu   sync.Mutex
	sets map[setKey]*attrSets // per table and stream kind, made once
}

// New returns an Observer recording into a meter of mp named ScopeName.
func New(mp metric.MeterProvider) (*Observer, error) {
	in, err := newInstruments(mp.Meter(ScopeName))
	if err != nil {
		return nil, err
	}
	return &Observer{in: in, sets: make(map[setKey]*attrSets)}, nil
}

// Observe records one event. It does not allocate once the event's table
// and stream kind have been seen (and, for a failure or a reconnect, its
// code).
func (o *Observer) Observe(e zbstream.Event) {
	ctx := context.Background()
	a := o.attrs(e)
	in := &o.in
	switch e.Kind {
	case zbstream.EventOpened:
		in.openStreams.Add(ctx, 1, a.base)
	case zbstream.EventClosed:
		in.openStreams.Add(ctx, -1, a.base)
	case zbstream.EventAccepted:
		in.sentMessages.Add(ctx, int64(e.Records), a.send)
		in.sentBytes.Add(ctx, e.Bytes, a.base)
		in.inflightCalls.Add(ctx, 1, a.base)
		in.inflightBytes.Add(ctx, e.Bytes, a.base)
	case zbstream.EventDurable:
		in.ackedMessages.Add(ctx, int64(e.Records), a.base)
		in.duration.Record(ctx, e.Latency.Seconds(), a.send)
		if e.Reconciled {
			in.reconciledCalls.Add(ctx, 1, a.base)
		}
		in.inflightCalls.Add(ctx, -1, a.base)
		in.inflightBytes.Add(ctx, -e.Bytes, a.base)
	case zbstream.EventFailed:
		in.failedMessages.Add(ctx, int64(e.Records), o.coded(e, a))
		in.inflightCalls.Add(ctx, -1, a.base)
		in.inflightBytes.Add(ctx, -e.Bytes, a.base)
	case zbstream.EventResent:
		in.resentCalls.Add(ctx, 1, a.base)
	case zbstream.EventReconnecting:
		in.reconnects.Add(ctx, 1, o.coded(e, a))
	}
	in.callbackQueue.Record(ctx, e.CallbackQueue, a.base)
}

// setKey names the attribute sets of one table and stream kind.
type setKey struct {
	table string
	kind  zbstream.Kind
}

// attrSets are the measurement options of one table and stream kind, made
// once so that recording does not allocate.
type attrSets struct {
	attrs []attribute.KeyValue
	base  metric.MeasurementOption // system, table, kind
	send  metric.MeasurementOption // base and the operation
	codes map[zbstream.Code]metric.MeasurementOption
}

// attrs returns the sets of e's table and stream kind.
func (o *Observer) attrs(e zbstream.Event) *attrSets {
	k := setKey{e.Table, e.StreamKind}
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.sets[k]
	if a == nil {
		base := []attribute.KeyValue{
			attribute.String("messaging.system", "zerobus"),
			attribute.String("messaging.destination.name", e.Table),
			attribute.String("zbstream.stream.kind", e.StreamKind.String()),
		}
		send := append(base[:len(base):len(base)],
			attribute.String("messaging.operation.name", "ingest"),
			attribute.String("messaging.operation.type", "send"))
		a = &attrSets{
			attrs: base,
			base:  metric.WithAttributeSet(attribute.NewSet(base...)),
			send:  metric.WithAttributeSet(attribute.NewSet(send...)),
			codes: make(map[zbstream.Code]metric.MeasurementOption),
		}
		o.sets[k] = a
	}
	return a
}

// coded returns a's base set with error.type, the name of e's code.
func (o *Observer) coded(e zbstream.Event, a *attrSets) metric.MeasurementOption {
	o.mu.Lock()
	defer o.mu.Unlock()
	opt, ok := a.codes[e.Code]
	if !ok {
		kv := append(a.attrs[:len(a.attrs):len(a.attrs)], attribute.String("error.type", e.Code.String()))
		opt = metric.WithAttributeSet(attribute.NewSet(kv...))
		a.codes[e.Code] = opt
	}
	return opt
}
