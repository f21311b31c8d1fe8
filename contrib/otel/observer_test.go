package zbotel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zbstream/zbstream"
	zbotel "github.com/zbstream/zbstream/contrib/otel"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// setup starts a reference server and a client reporting to an Observer
// read by a ManualReader.
func setup(t *testing.T) (*servertest.Server, *zbstream.Client, *sdkmetric.ManualReader) {
	t.Helper()
	ts := servertest.Start(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	obs, err := zbotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token), zbstream.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ts, c, reader
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fast are stream options with quick reconnects.
func fast(more ...zbstream.StreamOption) []zbstream.StreamOption {
	return append([]zbstream.StreamOption{zbstream.WithRetries(8), zbstream.WithBackoff(zbstream.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond})}, more...)
}

// point is one data point: its attributes and its value (a sum, a gauge's
// value, or a histogram's count).
type point struct {
	attrs attribute.Set
	value float64
	sum   float64 // a histogram's sum
}

// collect reads every instrument's points by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != zbotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, zbotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Count), sum: p.Sum})
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// value is the single point of name whose attributes include want.
func value(t *testing.T, got map[string][]point, name string, want ...attribute.KeyValue) point {
	t.Helper()
	var found []point
	for _, p := range got[name] {
		ok := true
		for _, kv := range want {
			v, has := p.attrs.Value(kv.Key)
			ok = ok && has && v == kv.Value
		}
		if ok {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s with %v: %d points, want 1 (all: %+v)", name, want, len(found), got[name])
	}
	return found[0]
}

// TestObserverMetrics: a persistent stream that loses an ack, reconnects
// and reconciles it is measured call for call as its Stats say, under its
// table and kind, and never its stream id; an open stream counts as open
// until it is closed.
func TestObserverMetrics(t *testing.T) {
	ts, c, reader := setup(t)
	s, err := c.CreatePersistentStream(testCtx(t), ts.Table, fast()...)
	if err != nil {
		t.Fatal(err)
	}
	id := s.StreamID()
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	rec := []byte(`{"n":1}`)
	if _, err := s.IngestRecord(testCtx(t), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IngestBatch(testCtx(t), [][]byte{rec, rec, rec}); err != nil {
		t.Fatal(err)
	}
	<-h.Fired()
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	table := attribute.String("messaging.destination.name", ts.Table)
	kind := attribute.String("zbstream.stream.kind", "persistent")
	if open := value(t, collect(t, reader), "zbstream.client.open_streams", table, kind); open.value != 1 {
		t.Errorf("open streams %v while open, want 1", open.value)
	}
	if err := s.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	got := collect(t, reader)

	for name, want := range map[string]int64{
		"messaging.client.sent.messages":   st.Records,
		"zbstream.client.acked.messages":   st.Records,
		"zbstream.client.sent.bytes":       4 * int64(len(rec)),
		"zbstream.client.reconciled.calls": st.Reconciled,
		"zbstream.client.open_streams":     0,
		"zbstream.client.inflight.calls":   0,
		"zbstream.client.inflight.bytes":   0,
		"zbstream.client.callback_queue":   0,
	} {
		if p := value(t, got, name, table, kind); p.value != float64(want) {
			t.Errorf("%s = %v, want %d (stats %+v)", name, p.value, want, st)
		}
	}
	if st.Reconciled == 0 {
		t.Errorf("nothing reconciled: %+v", st)
	}
	reconnects := value(t, got, "zbstream.client.reconnects", table, attribute.String("error.type", "UNAVAILABLE"))
	if int64(reconnects.value) != st.Reconnects || st.Reconnects == 0 {
		t.Errorf("reconnects %v, stats %+v", reconnects.value, st)
	}
	d := value(t, got, "messaging.client.operation.duration", table, kind,
		attribute.String("messaging.system", "zerobus"), attribute.String("messaging.operation.name", "ingest"))
	if int64(d.value) != st.Accepted || d.sum <= 0 {
		t.Errorf("duration: %v calls, sum %vs; want %d calls and a positive sum", d.value, d.sum, st.Accepted)
	}
	for name, points := range got {
		for _, p := range points {
			for _, kv := range p.attrs.ToSlice() {
				if strings.Contains(kv.Value.String(), id) {
					t.Errorf("%s carries the stream id: %v", name, kv)
				}
			}
		}
	}
}

// TestObserverFailed: records of a stream that fails are counted failed
// with the error's code as error.type, and leave the in-flight gauges.
func TestObserverFailed(t *testing.T) {
	ts, c, reader := setup(t)
	s, err := c.CreateStream(testCtx(t), ts.Table, zbstream.WithoutRecovery())
	if err != nil {
		t.Fatal(err)
	}
	h := ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultCommitThenDrop, After: 1})
	if _, err := s.IngestBatch(testCtx(t), [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}); err != nil {
		t.Fatal(err)
	}
	<-h.Fired()
	<-s.Done()
	if err := s.Close(testCtx(t)); err == nil {
		t.Fatal("Close of a failed stream: no error")
	}
	got := collect(t, reader)
	table := attribute.String("messaging.destination.name", ts.Table)
	kind := attribute.String("zbstream.stream.kind", "ephemeral")
	if p := value(t, got, "zbstream.client.failed.messages", table, kind, attribute.String("error.type", "UNAVAILABLE")); p.value != 2 {
		t.Errorf("failed messages %v, want 2", p.value)
	}
	for _, name := range []string{"zbstream.client.inflight.calls", "zbstream.client.inflight.bytes", "zbstream.client.open_streams"} {
		if p := value(t, got, name, table, kind); p.value != 0 {
			t.Errorf("%s = %v after the failure, want 0", name, p.value)
		}
	}
}
