// Package zbprom reports zbstream's stream events as Prometheus metrics. It
// is a module of its own, so that the zbstream library does not depend on
// client_golang:
//
//	c := zbprom.NewCollector()
//	prometheus.MustRegister(c)
//	client, err := zbstream.NewClient(endpoint, zbstream.WithObserver(c), ...)
//
// The metrics are named zbstream_* and labelled with the table and the
// stream kind (persistent, ephemeral); never with the stream id, whose set
// is unbounded. The README lists them.
package zbprom
