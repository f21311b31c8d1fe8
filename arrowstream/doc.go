// Package arrowstream ingests Apache Arrow record batches into a Zerobus
// table over Arrow Flight DoPut (docs/protocol.md §12), on the connection
// and with the credentials of a *zbstream.Client. It is a module of its
// own, so that the zbstream library does not depend on Arrow.
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
// The stream itself lives in the root module's internal/arrowflight, so
// that the zbstream command and the drop-in's Arrow API (package zerobus,
// built with the arrow tag) share it without the root module depending on
// this one; this package is its public face. The protocol's rules are
// kept by a pure machine there (internal/arrowflight/flightfsm), like
// package core for the other streams, and the stream drives it with the
// network.
//
// # Files
//
//	stream.go   Stream, New, IngestBatch, IngestIPC, Wait, Flush, Close, Unacked
//	options.go  Option and the With* options, Compression, defaults
//	errors.go   MaxFrameBytes, ErrSchemaMismatch, ProtocolError and its rules
package arrowstream
