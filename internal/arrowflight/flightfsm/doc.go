// Package flightfsm is the protocol engine of an Arrow Flight stream
// (docs/protocol.md §12): a pure, I/O-free machine for logical batches,
// the frames they are split into, the acks that make rows durable and
// what a new connection must replay. It has no goroutines, no clock and
// no network, like package core for the other streams, so that every
// rule can be tested exhaustively and the I/O around it stays thin.
//
// # Call order
//
// A driver owns one Machine, guards it with a mutex and runs:
//
//	off, err := m.Add(rows)        // per ingest call: the batch's offset
//	conn := m.Connect()            // per connection: frame offsets from 0
//	                               // send the schema frame, then for each PutResult:
//	res, err := m.Receive(conn, ack) // the first must be the ready signal
//	for _, s := range m.Pending(nil) {
//		// split s into frames; for each, before writing it:
//		frame, err := m.Sent(conn, s.Batch, from, to)
//	}
//	// res.Completed batches are durable; res.Rotate asks for a new
//	// connection within res.Grace; m.Unacked lists what is not durable.
//
// An ack is cumulative on its connection: a frame offset and the rows of
// every frame through it, which must agree. Rows become durable per frame,
// so a batch whose first frames were acknowledged replays only the rest.
//
// # Failures
//
// A call the driver should not make (rows out of order, a send before the
// ready signal) returns an error wrapping ErrMisuse and changes nothing.
// A server that breaks a rule fails the stream with a *ProtocolError,
// sticky: every later call returns it.
//
// # Files
//
//	machine.go  Machine: batches, frames, acks, replay
//	ack.go      ParseAck, the strict parser of a PutResult's JSON
//	errors.go   ProtocolError and its rules, ErrMisuse
package flightfsm
