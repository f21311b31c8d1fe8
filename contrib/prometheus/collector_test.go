package zbprom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zbstream/zbstream"
	zbprom "github.com/zbstream/zbstream/contrib/prometheus"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// setup starts a reference server and a client reporting to a Collector
// registered in a pedantic registry (which checks what it collects).
func setup(t *testing.T) (*servertest.Server, *zbstream.Client, *zbprom.Collector, *prometheus.Registry) {
	t.Helper()
	ts := servertest.Start(t)
	col := zbprom.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token), zbstream.WithObserver(col))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ts, c, col, reg
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCollectorMetrics: a persistent stream that loses an ack, reconnects
// and reconciles it is counted call for call as its Stats say, labelled
// with its table and kind and never its stream id.
func TestCollectorMetrics(t *testing.T) {
	ts, c, col, reg := setup(t)
	s, err := c.CreatePersistentStream(testCtx(t), ts.Table, zbstream.WithRetries(8), zbstream.WithBackoff(zbstream.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}))
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
	if err := testutil.CollectAndCompare(col, strings.NewReader(`
# HELP zbstream_open_streams Streams opened and not yet ended.
# TYPE zbstream_open_streams gauge
zbstream_open_streams{stream_kind="persistent",table="main.default.events"} 1
`), "zbstream_open_streams"); err != nil {
		t.Errorf("while open: %v", err)
	}
	if err := s.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Reconciled == 0 || st.Reconnects == 0 {
		t.Fatalf("the fault did not make a reconnect and a reconciliation: %+v", st)
	}
	want := `
# HELP zbstream_records_sent_total Records accepted for sending.
# TYPE zbstream_records_sent_total counter
zbstream_records_sent_total{stream_kind="persistent",table="main.default.events"} 4
# HELP zbstream_records_acked_total Records durable on the server (acknowledged or reconciled).
# TYPE zbstream_records_acked_total counter
zbstream_records_acked_total{stream_kind="persistent",table="main.default.events"} 4
# HELP zbstream_bytes_sent_total Payload bytes accepted for sending.
# TYPE zbstream_bytes_sent_total counter
zbstream_bytes_sent_total{stream_kind="persistent",table="main.default.events"} 28
# HELP zbstream_open_streams Streams opened and not yet ended.
# TYPE zbstream_open_streams gauge
zbstream_open_streams{stream_kind="persistent",table="main.default.events"} 0
# HELP zbstream_inflight_calls Ingest calls accepted and not yet durable or failed.
# TYPE zbstream_inflight_calls gauge
zbstream_inflight_calls{stream_kind="persistent",table="main.default.events"} 0
# HELP zbstream_inflight_bytes Payload bytes of the calls in flight.
# TYPE zbstream_inflight_bytes gauge
zbstream_inflight_bytes{stream_kind="persistent",table="main.default.events"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want),
		"zbstream_records_sent_total", "zbstream_records_acked_total", "zbstream_bytes_sent_total",
		"zbstream_open_streams", "zbstream_inflight_calls", "zbstream_inflight_bytes"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				if strings.Contains(l.GetValue(), id) {
					t.Errorf("%s is labelled with the stream id: %v", mf.GetName(), l)
				}
			}
			switch {
			case m.GetCounter() != nil:
				values[mf.GetName()+"/"+labels["code"]] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				values[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
				if m.GetHistogram().GetSampleSum() <= 0 {
					t.Errorf("%s: sum %v, want positive", mf.GetName(), m.GetHistogram().GetSampleSum())
				}
			}
		}
	}
	for name, want := range map[string]int64{
		"zbstream_calls_reconciled_total/":      st.Reconciled,
		"zbstream_calls_resent_total/":          st.Resent,
		"zbstream_reconnects_total/UNAVAILABLE": st.Reconnects,
		"zbstream_ack_latency_seconds":          st.Accepted,
	} {
		if got := values[name]; got != float64(want) {
			t.Errorf("%s = %v, want %d (stats %+v)", name, got, want, st)
		}
	}
}

// TestCollectorFailed: records of a stream that fails are counted failed
// under the error's code and leave the in-flight gauges.
func TestCollectorFailed(t *testing.T) {
	ts, c, col, _ := setup(t)
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
	want := `
# HELP zbstream_records_failed_total Accepted records that failed with their stream, by the error's code.
# TYPE zbstream_records_failed_total counter
zbstream_records_failed_total{code="UNAVAILABLE",stream_kind="ephemeral",table="main.default.events"} 2
# HELP zbstream_inflight_calls Ingest calls accepted and not yet durable or failed.
# TYPE zbstream_inflight_calls gauge
zbstream_inflight_calls{stream_kind="ephemeral",table="main.default.events"} 0
# HELP zbstream_open_streams Streams opened and not yet ended.
# TYPE zbstream_open_streams gauge
zbstream_open_streams{stream_kind="ephemeral",table="main.default.events"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want),
		"zbstream_records_failed_total", "zbstream_inflight_calls", "zbstream_open_streams"); err != nil {
		t.Error(err)
	}
}
