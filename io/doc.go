// Package io runs a zbstream protocol core (package core) over a pluggable
// transport and gives applications the blocking, concurrent stream API they
// expect. Import it as streamio where the standard io is also needed:
//
//	import streamio "github.com/zbstream/zbstream/io"
//
// The gRPC transport lives in package grpcio and the public client in the
// module root; package memtransport is an in-memory transport with a small
// server and injectable faults, for tests without a network.
//
// # Where each part lives
//
//	stream.go     Stream: Open, the one mutex around the core, accessors
//	options.go    Options, Observer and their defaults
//	ingest.go     IngestRecord and IngestBatch: the copy, backpressure
//	memory.go     what each call keeps, counted against the byte bound
//	arena.go      the off-heap blocks accepted records are copied into;
//	slab.go       the slabs their bytes and batch headers come from
//	loan.go       Loan and Borrower: large calls a transport may hand on
//	process.go    the core's actions applied, the timer, logging
//	conn.go       one connection's state, and acks held behind sends
//	reader.go     its reader: the open, messages fed in order, its end
//	sender.go     its sender: writes, send reports, the backlog bound
//	wait.go       Wait and Flush; close.go Close
//	callbacks.go  OnAck/OnFail on their own goroutine, a bounded queue
//	observe*.go   events for an EventObserver, per-call latency
//	stats.go      Stats; errors.go the driver's own errors
//	transport.go  the Transport and Conn contract, who owns what
//
// # Using the driver
//
//	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
//	cfg.ClientRequestID = id // unique per stream: crypto/rand
//	s, err := streamio.Open(ctx, transport, cfg, streamio.Options{
//		OnAck: func(offset int64) { ... }, // once per offset, in order
//	})
//	off, err := s.IngestRecord(ctx, []byte(`{"id":1}`)) // blocks while the window is full
//	err = s.Wait(ctx, off)                            // durable, or the stream's error
//	err = s.Flush(ctx)                                // everything accepted so far
//	err = s.Close(ctx)                                // flush, half-close, drain
//	left := s.Unacked()                               // after a failure: what did not land
//
// Every method is safe for concurrent use. Ingest returns an offset as soon
// as the call is accepted; Wait, Flush, callbacks or Stats tell when it is
// durable. A stream that fails stays failed: every accepted record is
// either completed once or failed once, and the failed ones stay in Unacked.
//
// Ingest copies the records: the caller may reuse its buffers as soon as
// the call returns. The copies live outside the Go heap (on Unix), in
// blocks given back as offsets become durable, so that the in-flight byte
// bound is what in-flight records cost: records kept on the heap would
// count as live heap, which the collector lets grow to twice its size.
// The exception is a connection that borrows (Borrower): up to LendBytes
// of large calls are then kept on the heap, so that the transport can hand
// them on uncopied (Loan).
// Options.NoCopy keeps records by reference instead. The byte bound counts
// what the window keeps for each call and record beyond their payload too
// (CallCost, RecordCost). Ingest also waits while the connection's sender
// is more than SendBacklog bytes or SendBacklogCalls calls behind, or
// SendBacklogTarget bytes in more than SendBacklogMinCalls calls.
//
// # How it runs
//
// One mutex guards the core.Machine. Application goroutines take it to
// ingest; one goroutine per connection opens it and reads it, and another
// writes the calls the machine hands it and reports each send back; a timer
// goroutine fires the machine's deadlines. After every input the driver
// drains the machine's actions and re-arms the timer; time.Now is read only
// when the lock is taken for an input. Callbacks run on a goroutine of their
// own, never under the lock, behind a bounded queue.
//
// One exception to who writes: on a Conn that is an IdleSender, a call
// ingested while nothing is in flight and the sender is idle is written by
// the ingesting goroutine before Ingest returns. An awaited call (ingest,
// then Wait) then makes one goroutine hand-off, from the reader to the
// waiter, rather than two; the sender is woken only for what came
// meanwhile. The transport's promise that such a Send does not wait on
// the network keeps Ingest from blocking where its context cannot reach.
//
// A lock around the core rather than an owner goroutine fed by channels: an
// ingest call then costs a lock and the core's own work, with no goroutine
// hand-off, which is what lets a single-record call stay within a few
// hundred nanoseconds (see BenchmarkDriverIngest).
//
// # Writing a transport
//
// A Transport opens connections; a Conn sends calls, receives decoded
// messages, half-closes and aborts. The driver calls Open from the
// connection's goroutine with a context that is cancelled when the machine
// leaves the connection, so Open may block (dialing, TLS, proxies) but must
// honour it. Open sends the first message (create or resume) and returns;
// the answer arrives through Recv. At most one goroutine sends and one
// receives on a Conn at a time; Abort may come from anywhere, at any time,
// and must unblock both. Errors carry their status as a
// *core.ConnectionError; the code decides whether the core retries.
//
// The records of a Call are lent to Send for its duration: they live in
// the stream's off-heap arena (or are the application's buffers, with
// NoCopy, or heap memory, for a call with a Loan) and are unmapped or
// reused once durable. A transport copies or
// encodes them into memory of its own before anything else may see them,
// and never passes a pointer into them to code it does not own (a network
// library, its handlers, interceptors or tracing may keep what it is given
// and read it later). See Call.
//
// A Conn that is a Borrower may instead hand the payload of a call that
// carries a Loan on as it is, borrowing it until whatever it handed it to
// lets go: such calls (LendMin bytes or more, up to LendBytes of them at
// once) are kept in heap memory the stream writes again only once every
// borrow has been returned, and leaves to the collector when one never is.
// Package grpcio borrows when nothing but gRPC's own code sees its
// messages: a record is then copied once on its way to the wire.
//
//	type myTransport struct{ ... }
//
//	func (t *myTransport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
//		c, err := t.dial(ctx, req.Kind) // fresh credentials on every open
//		if err != nil {
//			return nil, &core.ConnectionError{Code: core.CodeUnavailable, Err: err}
//		}
//		if req.Resume {
//			err = c.sendResume(req.StreamID, req.RecordType)
//		} else {
//			err = c.sendCreate(req.RecordType, req.RequestID)
//		}
//		...
//		return c, nil
//	}
//
//	func (t *myTransport) InvalidateCredentials() { t.tokens.drop() }
//
// Send writes Call.Record as one record, or Call.Records as a batch, under
// Call.Wire; Recv returns the next core.Response, or the end of the call
// (io.EOF when the server ended it cleanly).
package io
