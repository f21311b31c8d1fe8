// Package arrowflight is the Arrow Flight DoPut client (docs/protocol.md
// §12): the stream behind module arrowstream's Stream, the zbstream
// command's Arrow ingest and the drop-in's Arrow API (package zerobus with
// the arrow tag). It lives in the root module so that all three share it:
// the root module cannot require module arrowstream, which requires it.
// Only code that is itself built with Arrow imports it; the library's
// packages do not.
//
// A Stream sends the table's schema first and waits for the server's
// ready signal; each batch then goes out as one or more frames (a batch
// whose encoding is over MaxFrameBytes is split by rows, never refused),
// numbered from 0 on every connection. Acks are cumulative per frame and
// carry the rows they cover. After a dropped connection, a lost ack or a
// rotation the stream opens a new DoPut and sends again only the rows not
// yet acknowledged, each batch's unacknowledged suffix: delivery is at
// least once, and rows acknowledged before a fault are not sent again.
//
// A batch is encoded into its frames (IPC record-batch messages, LZ4 or
// Zstd compressed with WithCompression) when it is ingested: the caller
// may release it as soon as IngestBatch returns, and the stream holds the
// encoded bytes until every row is durable. The bytes and batches held
// are bounded (WithMaxInflight); IngestBatch waits for room.
//
// The protocol's rules are kept by a pure machine, flightfsm,
// like package core for the other streams; this package drives it with
// the network.
//
// # Files
//
//	stream.go   Stream, New, IngestBatch, IngestIPC, Wait, Flush, Unacked, Err
//	close.go    Close
//	options.go  Option and the With* options, Compression, defaults
//	encode.go   batches to frames of at most MaxFrameBytes, and back; CheckSchema
//	run.go      the connection loop: recovery, budget, backoff
//	conn.go     one DoPut call: open, ready signal, sending, acks, rotation
//	observe.go  the stream's events to a zbstream.Observer
package arrowflight
