package io

import (
	"context"

	"github.com/zbstream/zbstream/core"
)

// Transport opens connections to a Zerobus-compatible server for a Stream.
// The same driver runs over gRPC (package grpcio), over the in-memory
// transport (package memtransport) and over anything else that keeps this
// contract.
//
// A Stream calls Open from a goroutine of its own for every connection
// attempt (the first open and each reconnect), so Open may block, but it
// must return promptly once ctx is done. InvalidateCredentials may be called
// concurrently with Open and must not block.
type Transport interface {
	// Open starts one connection and sends its first message: a create, or
	// for a persistent stream whose id is known, a resume (see OpenRequest).
	// Credentials and call headers are produced afresh for every call, so a
	// reconnect always carries a fresh token. Open returns once the first
	// message is written; it does not wait for the server's answer, which
	// arrives through Conn.Recv. ctx governs the whole connection: when it
	// is done, Open returns and any Conn it returned ends as if aborted.
	//
	// An error ends the attempt; it should be a *core.ConnectionError
	// whose Code classifies it (see ConnectionError for plain errors).
	Open(ctx context.Context, req OpenRequest) (Conn, error)

	// InvalidateCredentials drops any cached credentials: the server
	// rejected them (core.ActInvalidateCredentials), so the next Open must
	// mint new ones.
	InvalidateCredentials()
}

// OpenRequest is what one connection attempt must send first. Table name,
// descriptor and credentials are the transport's own configuration.
type OpenRequest struct {
	// Kind is the stream kind: the RPC to call.
	Kind core.Kind
	// RecordType is the stream's record type, sent in create and resume.
	RecordType core.RecordType
	// Resume: send a resume of StreamID (persistent only); otherwise a
	// create, carrying RequestID when it is a persistent create.
	Resume    bool
	StreamID  string
	RequestID string
}

// Call is one ingest call to send: exactly one of Record (a single record,
// sent as an IngestRecordRequest) and Records (a batch of one or more,
// sent as an IngestRecordBatchRequest when it holds two or more and as an
// IngestRecordRequest when it holds one) is set. Wire is the offset_id to
// put on the wire.
//
// Framed, when set, holds a batch's records (two or more) as the batch
// message's record list carries them: each record's tag and length, then
// the record, one after the other, with Records pointing into it (the
// stream's copy, made that way). A transport may copy it as one piece
// rather than frame each record; it is lent as the records are. A wrapper
// that changes Records must clear Framed, and one that changes Record or
// Records must clear Loan.
//
// Ownership: the payload slices are the stream's copies of the records, in
// memory outside the Go heap (but for Loan, below) that the stream unmaps
// or reuses once the call is durable (the application's own buffers with Options.NoCopy). They are
// lent to Send for its duration only: a transport must not modify them,
// must not read them after Send returns, and must never hand them, or
// anything that aliases them, to code it does not own (a network library,
// its codecs, stats handlers, interceptors or tracing, which may keep what
// they are given). It copies (encodes) them into memory of its own first,
// as package grpcio does.
//
// Loan is the one exception: when set, the payload (Record, or the record
// of a one-record batch, or Framed) is in heap memory the stream reuses
// only once every Loan.Borrow has its Loan.Return, so a transport that
// borrows may hand that payload on, unmodified, and keep it past Send (see
// Loan). It must Borrow before Send returns: the stream may reuse the
// memory once the call is durable, and it learns that only after Send has
// returned. The other slices (Records, the batch's headers) are never lent.
type Call struct {
	Wire    int64
	Record  []byte
	Records [][]byte
	Framed  []byte
	Loan    *Loan

	size int64 // the payload bytes, for the sender's backlog
}

// Conn is one open connection. Its methods may be called by at most one
// sending goroutine (Send, then CloseSend) and one receiver goroutine
// (Recv) at the same time, as gRPC allows, plus Abort from any goroutine
// at any time. The sending goroutine is the connection's sender, or for an
// IdleSender sometimes the goroutine that ingests, never two at once.
type Conn interface {
	// Send writes one ingest call. It may block on flow control; it
	// returns an error once the connection has ended, and must return
	// promptly then. A Send error must end the connection: the driver
	// learns the end from Recv, after every message the server sent
	// before it, so that no ack is lost to the race between the two.
	Send(c Call) error
	// Recv blocks for the next server message, decoded. The connection's
	// end is an error: io.EOF (or a *core.ConnectionError with CodeOK) for
	// a clean end of stream, else a *core.ConnectionError with the status.
	// A message that cannot be decoded is an error as well, with
	// CodeInternal or another code the transport chooses.
	Recv() (core.Response, error)
	// CloseSend half-closes the sending side: no more Sends follow. The
	// server's end of the call still arrives through Recv.
	CloseSend() error
	// Abort tears the connection down and releases everything it holds:
	// a blocked Send or Recv returns at once with an error. It is
	// idempotent and must not block.
	Abort()
}

// IdleSender is implemented by a Conn whose Send returns without waiting
// for the network or the peer whenever every call sent before it on the
// connection has been acknowledged (gRPC's does: a stream's write quota is
// whole again once what was written under it has reached the peer, and a
// Send waits only while that quota is spent).
//
// On such a connection, a call ingested while nothing is in flight and the
// sender is idle is written by the goroutine that ingests it, before
// IngestRecord or IngestBatch returns, rather than handed to the sender:
// an awaited call (ingest, then Wait) saves a goroutine hand-off. A
// wrapper that embeds a Conn hides the method, and its calls go to the
// sender as before.
type IdleSender interface {
	Conn
	// SendsWhenIdle reports whether the promise above holds for this
	// connection.
	SendsWhenIdle() bool
}
