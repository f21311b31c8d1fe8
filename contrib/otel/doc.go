// Package zbotel reports zbstream's stream events as OpenTelemetry
// metrics. It is a module of its own, so that the zbstream library does not
// depend on OpenTelemetry:
//
//	obs, err := zbotel.New(meterProvider)
//	client, err := zbstream.NewClient(endpoint, zbstream.WithObserver(obs), ...)
//
// Instruments follow OpenTelemetry's semantic conventions for messaging
// clients where they fit (messaging.client.sent.messages,
// messaging.client.operation.duration, with messaging.system,
// messaging.destination.name and error.type), and are named
// zbstream.client.* where the conventions have nothing. Every measurement
// carries the table (messaging.destination.name) and the stream kind
// (zbstream.stream.kind); never the stream id, whose set is unbounded. The
// README lists the instruments.
package zbotel
