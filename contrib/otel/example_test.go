package zbotel_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/zbstream/zbstream"
	zbotel "github.com/zbstream/zbstream/contrib/otel"
)

// An Observer records into a MeterProvider's meter and is given to every
// client; here the events of a stream are fed to it by hand to show what
// it records.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	obs, err := zbotel.New(mp)
	if err != nil {
		panic(err)
	}
	client, err := zbstream.NewClient("http://localhost:7443", zbstream.WithToken("t"), zbstream.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ev := zbstream.Event{Table: "main.sales.orders", StreamKind: zbstream.Persistent, Records: 10, Bytes: 640}
	ev.Kind = zbstream.EventAccepted
	obs.Observe(ev)
	ev.Kind, ev.Latency = zbstream.EventDurable, 30*time.Millisecond
	obs.Observe(ev)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			if d.IsMonotonic {
				fmt.Println(m.Name, d.DataPoints[0].Value)
			}
		case metricdata.Histogram[float64]:
			fmt.Println(m.Name, d.DataPoints[0].Count, "call,", d.DataPoints[0].Sum, "s")
		}
	}
	// Output:
	// messaging.client.sent.messages 10
	// zbstream.client.acked.messages 10
	// zbstream.client.sent.bytes 640
	// messaging.client.operation.duration 1 call, 0.03 s
}
