package io

import (
	"encoding/binary"
	"unsafe"

	"github.com/zbstream/zbstream/core"
)

// recordArena holds the stream's copies of the records it has accepted and
// not yet seen durable.
//
// Why copies, and why here: a stream must keep every record until it is
// acknowledged, to send it again after a reconnect. Kept on the Go heap,
// those records count as live heap, and the garbage collector lets the heap
// grow to about twice the live heap before it collects: a 64 MiB in-flight
// bound then costs some 130 MiB of heap plus whatever the application
// allocates. The arena keeps the copies in memory the collector does not
// manage (anonymous mappings, where the platform has them; see
// arena_unix.go), so the bound costs what it says, and the caller may reuse
// its buffer as soon as an ingest call returns.
//
// Bytes and the headers of batches come from two slabs (both mapped, so
// the collector neither counts nor scans them), taken as calls are
// accepted and given back as offsets become durable. A block is given back
// only once nothing can read it any more: the current connection's sender
// has returned from every Send of a durable call (acks are held until it
// has), and the sender of a connection the stream has left may still be in
// a Send, so while one runs (Stream.strays) nothing is given back.
//
// Calls whose payload (the record, or a batch's framed records) has
// LendMin bytes or more go to a third slab, lent, while the stream's
// connection borrows (lend) and it has room: heap blocks, up to LendBytes,
// whose payload a transport may hand on (Loan) rather than copy.
type recordArena struct {
	bytes   slab[byte]
	headers slab[[]byte]
	lent    slab[byte]
	// lend: the stream's connection borrows (Borrower), so new calls may
	// go to lent. Set by the stream as connections open.
	lend bool
	// lastHeaders, lastCount and lastFramed are the address and length
	// of the header slice of the last batch copyBatch took whole, and its
	// size as a call; lastHeaders is 0 after a batch taken otherwise:
	// the batch a dispatch frames next is almost always that one, and
	// framedBatch then need not sum its records' sizes again (a pass over
	// every record, which costs as much as their copy when they are
	// small). Addresses only: no pointer into memory the arena unmaps.
	lastHeaders           uintptr
	lastCount, lastFramed int
}

const (
	// arenaMinBlock and arenaMaxBlock bound the size of a block of record
	// bytes: 1/64 of the in-flight byte bound, within these.
	arenaMinBlock = 64 << 10
	arenaMaxBlock = 1 << 20
	// arenaHeaders is the number of record headers in a block of them.
	arenaHeaders = 4096
	// arenaSpare is how many emptied blocks of each kind a stream keeps for
	// reuse at least.
	arenaSpare = 2
)

func newRecordArena(maxInflightBytes int64) *recordArena {
	size := int(min(max(maxInflightBytes/64, arenaMinBlock), arenaMaxBlock))
	size &^= arenaMinBlock - 1 // a multiple of any page size
	// Emptied blocks of record bytes are kept for reuse, as many as the
	// in-flight bound can hold in use: a block mapped afresh pays a page
	// fault on the first touch of each of its pages (some 13 µs a 4 KiB
	// page on a VM, 3 ms a MiB), which dominated large records when one
	// ack that made many blocks durable at once unmapped all but a quarter
	// of them. Blocks in
	// use and spare together never exceed the most that were ever in use at
	// once: from its first peak until it is freed, a stream's arena holds
	// what that peak mapped, and no more. The bytes of records in flight
	// are within the bound; their blocks hold more when records (or
	// batches, taken whole when they fit in a block: copyBatch) leave the
	// ends of blocks unused, up to twice the bound for ones of just over
	// half a block, hence the cap of twice the bound's blocks. The block of
	// a record larger than a block is freed when it is durable. Blocks of
	// record headers (batches' [][]byte, mapped too: see mapHeaders) are
	// kept by the same rule, up to as many.
	spare := max(arenaSpare, 2*int(maxInflightBytes/int64(size))+1)
	lentBlocks := max(1, LendBytes/size)
	lent := newSlab(size, lentBlocks, heapBytes, dropBytes)
	lent.limit = lentBlocks
	headers := newSlab(arenaHeaders, spare, mapHeaders, unmapHeaders)
	headers.scrub = clearHeaders
	return &recordArena{
		bytes:   newSlab(size, spare, mapBytes, unmapBytes),
		headers: headers,
		lent:    lent,
	}
}

// clearHeaders clears record headers given back, before their slots are
// written again. A slot left as it was would point into a block of record
// bytes that may have been freed since (a heap block: lent memory, or
// mapBytes' fallback), and writing over it then crashes the runtime: while
// the collector marks, a pointer store's write barrier reads the value it
// replaces and finds a pointer into no live object ("found bad pointer in
// Go heap"). Clearing mapped memory in bulk runs no barrier; clearing a
// heap block of headers (mapHeaders' fallback) runs one on pointers the
// collector kept alive through that very block.
func clearHeaders(h [][]byte) { clear(h) }

// heapBytes and dropBytes are a lent slab's memory: the heap's, which the
// collector frees once neither the slab nor a borrower refers to it.
func heapBytes(n int) []byte { return make([]byte, n) }
func dropBytes([]byte)       {}

// arenaMark is where the arena stood before an ingest call copied into it.
type arenaMark struct{ bytes, headers, lent slabMark }

func (a *recordArena) mark() arenaMark {
	return arenaMark{a.bytes.mark(), a.headers.mark(), a.lent.mark()}
}

// copyRecord returns a copy of r in the arena: in lendable memory when the
// stream lends and it fits (from), else in the arena's own.
func (a *recordArena) copyRecord(r []byte) []byte {
	return copyTo(a.from(len(r), len(r)), r)
}

// copyTo returns a copy of r taken from s.
func copyTo(s *slab[byte], r []byte) []byte {
	if len(r) == 0 {
		return []byte{}
	}
	p := s.take(len(r))
	copy(p, r)
	return p
}

// from returns the slab a call is copied into that would lend lent bytes
// (its record, or a batch's framed records) and takes n.
func (a *recordArena) from(lent, n int) *slab[byte] {
	if a.lend && lent >= LendMin && a.lent.fits(n) {
		return &a.lent
	}
	return &a.bytes
}

// loan returns the Loan of a call's payload (the record, or the framed
// records of a batch: framedBatch) when it lies in lendable memory and the
// connection borrows, else nil. The payload's memory must still be held.
func (a *recordArena) loan(payload []byte) *Loan {
	if !a.lend || len(payload) < LendMin || len(a.lent.blocks) == 0 {
		return nil
	}
	// Compared as addresses only: no pointer is made of them.
	at := uintptr(unsafe.Pointer(unsafe.SliceData(payload)))
	for _, b := range a.lent.blocks {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b.buf)))
		if at >= start && at-start < uintptr(len(b.buf)) {
			return &b.loan
		}
	}
	return nil
}

// copyBatch returns a copy of records, slice and records, in the arena.
// framed is the batch's size as sent (core.CallSize): a batch that fits in
// one block is taken from it at once, each record framed as the batch
// message carries it (framedBatch) and followed by the next, rather than
// each taken on its own (with small records, the takes cost as much as the
// copies).
func (a *recordArena) copyBatch(records [][]byte, framed int) [][]byte {
	if len(records) == 0 {
		return records
	}
	h := a.headers.take(len(records))
	if framed > a.bytes.size {
		a.lastHeaders = 0
		for i, r := range records {
			h[i] = copyTo(&a.bytes, r) // not framed: never lent
		}
		return h
	}
	lent := framed // what a transport would be lent (Loan)
	if len(records) == 1 {
		lent = len(records[0]) // sent as a single record
	}
	p := a.from(lent, framed).take(framed)
	for i, r := range records {
		p = p[putFrame(p, len(r)):]
		n := copy(p, r)
		h[i] = p[:n:n]
		p = p[n:]
	}
	a.lastHeaders, a.lastCount, a.lastFramed = uintptr(unsafe.Pointer(unsafe.SliceData(h))), len(h), framed
	return h
}

// batchRecordTag is the tag of each record in the record list of a batch
// call (field 1 of JsonRecordBatch, ProtoEncodedRecordBatch and
// AvroRecordBatch, length-delimited: docs/protocol.md), the one-byte tag
// that core.FramedSize counts.
const batchRecordTag = 1<<3 | 2

// putFrame writes the framing of a batch's record of n bytes at the start
// of p (its tag, then n as a varint) and returns its length: what
// core.FramedSize(n) counts beyond n.
func putFrame(p []byte, n int) int {
	p[0] = batchRecordTag
	if n < 0x80 {
		p[1] = byte(n)
		return 2
	}
	return 1 + binary.PutUvarint(p[1:], uint64(n))
}

// framedBatch returns the records of a batch copyBatch took whole, with
// their framing, as one slice: the batch's record list as the batch
// message carries it, which a transport may copy as one piece (Call.Framed).
// It returns nil for a batch taken record by record, which has no framing,
// and for records laid out otherwise (checked on their addresses). The
// records' memory must still be held.
func (a *recordArena) framedBatch(records [][]byte) []byte {
	if len(records) == 0 {
		return nil
	}
	// The header slots of a batch are taken by copyBatch alone, which
	// sets or clears the memo each time: a batch whose headers are at
	// lastHeaders is the last one it took, and lastFramed its size. A memo
	// left by a batch given back since (refused, or durable) names slots
	// no held batch is in, and only held batches are framed here; the
	// next copyBatch, the only one to take those slots again, resets it.
	var framed int64
	if uintptr(unsafe.Pointer(unsafe.SliceData(records))) == a.lastHeaders && len(records) == a.lastCount {
		framed = int64(a.lastFramed)
	} else {
		framed = core.CallSize(records)
	}
	if framed > int64(a.bytes.size) {
		return nil
	}
	// Taken whole: the first record's framing comes right before it, in
	// the same block, and the rest follow it, up to the last record's
	// end. Checked on the addresses before any pointer is made.
	first, last := records[0], records[len(records)-1]
	head := int(core.FramedSize(len(first))) - len(first)
	at := uintptr(unsafe.Pointer(unsafe.SliceData(first)))
	end := uintptr(unsafe.Pointer(unsafe.SliceData(last))) + uintptr(len(last))
	if end-at != uintptr(framed)-uintptr(head) {
		return nil
	}
	start := unsafe.Add(unsafe.Pointer(unsafe.SliceData(first)), -head)
	return unsafe.Slice((*byte)(start), framed)
}

// settle ends an ingest call that copied into the arena since m: what it
// took belongs to offset off if the machine accepted the call, and is
// given back at once if not.
func (a *recordArena) settle(m arenaMark, off int64, err error) {
	if err != nil || off < 0 {
		a.bytes.undo(m.bytes)
		a.headers.undo(m.headers)
		a.lent.undo(m.lent)
		return
	}
	a.bytes.commit(m.bytes, off)
	a.headers.commit(m.headers, off)
	a.lent.commit(m.lent, off)
}

// giveBack recycles the memory of every call at or below floor, the
// highest durable offset. The caller makes sure no sender reads it.
func (a *recordArena) giveBack(floor int64) {
	a.bytes.giveBack(floor)
	a.headers.giveBack(floor)
	a.lent.giveBack(floor)
}

// free releases all the arena's memory. Nothing may read the copies any
// more: the stream has ended, its goroutines have stopped and the machine
// holds none of them, or nothing refers to the stream at all.
func (a *recordArena) free() {
	a.bytes.freeAll()
	a.headers.freeAll()
	a.lent.freeAll()
}
