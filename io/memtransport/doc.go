// Package memtransport is an in-memory Zerobus server and a transport to
// it, for testing code built on package io (imported as streamio) without
// a network: Server keeps ephemeral and persistent streams in memory for
// its whole life (a durable log across connections), answers handshakes
// and ingest calls as a Zerobus server does, lets tests read back what it
// stored, and misbehaves on demand through injected faults.
//
//	srv := memtransport.NewServer(memtransport.Options{})
//	tr := srv.Transport() // a streamio.Transport
//	h := srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 2})
//	// ... run a stream over tr ...
//	<-h.Fired()
//	batches := srv.Batches(streamID)
//
// # Semantics
//
// Open performs the handshake synchronously and queues the answer (or the
// status that ends the call) for Conn.Recv; Send handles a call
// synchronously in the caller's goroutine and queues its ack. Each
// connection has a bounded queue of responses: Send blocks when the
// client does not read, as gRPC flow control does. Responses queued
// before the call's end are read before the end itself. Abort, or the end
// of the context given to Open, ends the connection at once instead: a
// blocked Send or Recv returns CodeCanceled (or CodeDeadlineExceeded).
// Errors are *core.ConnectionError values carrying the status code a gRPC
// server would send; a clean end of the call is io.EOF. The server copies
// the payloads it stores; it never keeps the caller's slices.
//
// Read-back (Streams, Stream, Watermark, Batches, Records, Stats) shows
// what the server holds at any time; DropConnections simulates a restart
// (every live connection ends UNAVAILABLE, the log stays).
//
// Ephemeral: every create makes a new stream; wire offsets start at 0 on
// every connection and each call must carry the next one (else
// OUT_OF_RANGE ends the call). Persistent: a create with a RequestID is
// idempotent; a resume answers the stream's last committed offset; wire
// offset equals offset, a call at or below the watermark is acknowledged
// again and not stored twice, a gap is OUT_OF_RANGE. A resume or repeated
// create fences the older live connection of its stream (ABORTED), so a
// stream has one writer. Acks are cumulative.
//
// # Virtual time
//
// Everything works inside a testing/synctest bubble provided the Server
// is created there: the server starts no goroutine of its own, waits only
// on channels of its connections, and measures time only with
// time.AfterFunc timers (delayed acks, close-signal grace), which Abort
// and the connection's end stop.
package memtransport
