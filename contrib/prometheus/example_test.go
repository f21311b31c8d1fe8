package zbprom_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zbstream/zbstream"
	zbprom "github.com/zbstream/zbstream/contrib/prometheus"
)

// A Collector is registered once and given to every client; here the
// events of a stream are fed to it by hand to show what it counts.
func Example() {
	col := zbprom.NewCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	client, err := zbstream.NewClient("http://localhost:7443", zbstream.WithToken("t"), zbstream.WithObserver(col))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ev := zbstream.Event{Table: "main.sales.orders", StreamKind: zbstream.Persistent, Records: 10, Bytes: 640}
	ev.Kind = zbstream.EventAccepted
	col.Observe(ev)
	ev.Kind, ev.Latency = zbstream.EventDurable, 30*time.Millisecond
	col.Observe(ev)

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if m := mf.GetMetric()[0]; m.GetCounter() != nil {
			fmt.Println(mf.GetName(), m.GetCounter().GetValue())
		}
	}
	// Output:
	// zbstream_bytes_sent_total 640
	// zbstream_calls_reconciled_total 0
	// zbstream_calls_resent_total 0
	// zbstream_records_acked_total 10
	// zbstream_records_sent_total 10
}
