package io

import "sync/atomic"

// A Loan lets a transport keep a call's records after Send returns: a
// call whose Loan is set (Call.Loan) has its payload in Go heap memory
// that the stream writes again only once every Borrow has been matched by
// a Return. A transport that borrows may then hand the payload itself to
// code it does not own, gRPC's transport for one, rather than copy it into
// memory of its own first: the record is copied once on its way to the
// wire, into the stream's copy, where it was copied twice.
//
// Why heap memory: a transport may never give back what it holds (gRPC
// does not free what a failed connection had queued). The stream then
// drops that memory rather than reuse it, and the collector frees it once
// nothing refers to it, which memory mapped outside the heap (the arena's
// usual blocks) would not allow. Only a bounded part of what a stream
// holds is lent (LendBytes), so that the heap grows by little.
//
// The payload remains read-only: neither the transport nor anything it
// hands it to may modify it.
type Loan struct{ out atomic.Int64 }

// Borrow records that the transport is about to hand the call's payload to
// code that may read it after Send returns. Each Borrow needs one Return.
func (l *Loan) Borrow() { l.out.Add(1) }

// Return ends one Borrow: nothing the transport handed the payload to
// reads it any more. It may be called from any goroutine.
func (l *Loan) Return() { l.out.Add(-1) }

// Outstanding returns how many Borrows have no Return yet.
func (l *Loan) Outstanding() int64 { return l.out.Load() }

// outstanding reports whether a Borrow has no Return yet.
func (l *Loan) outstanding() bool { return l.Outstanding() != 0 }

// Borrower is implemented by a Conn that may borrow (Loan): its Send hands
// a lent payload on rather than copy it, when the stream says it may.
// While the stream's connection borrows, the stream keeps the copies of
// calls of at least LendMin bytes in memory it can lend, up to LendBytes of
// them; beyond that, and while the connection does not borrow, calls carry
// no Loan and are copied by the transport as before. A wrapper that embeds a Conn hides the
// method, and its calls are not lent.
type Borrower interface {
	Conn
	// Borrows reports whether Send may borrow on this connection.
	Borrows() bool
}

// LendMin is the smallest call payload kept in lendable memory: below it,
// the copy a transport saves costs less than a loan's bookkeeping (and
// gRPC does not give back buffers of 1 KiB or less, so they could never
// be reused). LendBytes bounds the lendable memory a stream holds, in use
// and kept for reuse, in blocks of the arena's size (at least one): heap
// memory, which counts towards the collector's goal, where the arena's
// does not. What a borrower still holds of a block the stream has dropped
// (a failed gRPC connection may never free what it had queued: some 64
// KiB, its write quota, and the message being written) is outside that
// bound until the borrower lets go; a held payload keeps its whole block.
const (
	LendMin   = 4 << 10
	LendBytes = 4 << 20
)
