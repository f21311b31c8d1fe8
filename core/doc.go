// Package core is zbstream's protocol engine: a pure, I/O-free state machine
// for one Zerobus stream, ephemeral (at-least-once) or persistent
// (exactly-once). It assigns offsets, bounds the window of accepted calls,
// validates every ack and resume watermark before it changes anything,
// reconciles the window after a resume, and decides recovery. It has no
// goroutines, no clock, no network and no global randomness: the same inputs
// give the same outputs, so it can be embedded by any SDK and tested
// exhaustively.
//
// # Call order
//
// Inputs are methods that take the caller's monotonic time (an Instant);
// outputs are pulled. A driver owns one Machine and runs this loop:
//
//	m, err := core.New(cfg)
//	m.Open(now)                          // emits ActOpen
//	for {
//		for acts = m.Poll(acts[:0]); len(acts) > 0; acts = m.Poll(acts[:0]) {
//			for _, a := range acts {
//				switch a.Kind {
//				case core.ActOpen:      // dial a.Conn; send create or resume
//				case core.ActSend:      // send; then m.Sent(now, a.Conn, a.Offset)
//				                        //   or m.ConnectionFailed(now, a.Conn, code, err)
//				case core.ActComplete:  // offsets a.Offset..a.Last are durable
//				case core.ActFail:      // offsets a.Offset..a.Last failed with a.Err
//				case core.ActCloseSend, core.ActAbort, core.ActInvalidateCredentials:
//				case core.ActFinished:  // closed (a.Err == nil) or failed: stop
//				}
//			}
//		}
//		// then wait for one of:
//		//   an application call:  m.IngestRecord / m.IngestBatch / m.Close
//		//   a server message:     m.Receive(now, conn, decodedResponse)
//		//   a connection's end:   m.ConnectionFailed(now, conn, code, err)
//		//   the timer set from m.NextDeadline(): m.Tick(now)
//	}
//
// An ActSend is only a request: the highest offset an ack may cover moves
// when the driver reports the send with Sent. Events that name a connection
// the machine has already left are ignored, so a reader goroutine's late
// messages are harmless.
//
// # Failures
//
// Caller misuse (time going backwards, a send outcome for an offset never
// emitted, ingest after close, a bad Config) returns an error and changes
// nothing. Every Config that Validate accepts works: deadlines and the
// backoff saturate instead of overflowing, however large the durations. A full window returns ErrWindowFull and changes nothing. A
// misbehaving server fails the stream with a *ProtocolError naming the rule
// it broke; offset overflow fails it with ErrOffsetSpaceExhausted. Failure is
// sticky: every accepted record that is not durable fails exactly once, in
// offset order, and stays retrievable with Unacked. A broken internal
// invariant panics with a precise message.
//
// # Offsets
//
// Offsets are assigned at accept time, one per ingest call, dense. On a
// persistent stream the wire offset is the offset; after a resume with
// watermark W every offset <= W completes locally (exactly once) and only
// offsets > W are sent again, under their original offsets. An ephemeral
// stream renumbers from wire offset 0 on every connection and maps acks back.
// The largest offset ever assigned is math.MaxInt64-1, so that the next
// offset is always representable.
package core
