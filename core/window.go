package core

import (
	"fmt"
	"unsafe"
)

// entry is one accepted ingest call: a single record (no slice header to
// allocate) or a batch, and its payload bytes.
//
// Why 24 bytes and not two slices (56): the window holds an entry for every
// call in flight, up to MaxInflightCalls (a million by default), in a ring
// of a power of two, on the heap the collector lets grow to about twice
// what is live. Measured with 20-byte records one per call and acks held
// back 500 ms, the ring was 28 MiB of a client's 43 MiB of live heap.
// data keeps what it points to alive as the slices did; the slices read
// back have their length as capacity.
type entry struct {
	data unsafe.Pointer // the record's bytes, or the batch's records
	n    int            // a record's length, or ^(the batch's record count): negative
	size int64
}

// oneEntry is the entry of a single record.
func oneEntry(record []byte) entry {
	return entry{data: unsafe.Pointer(unsafe.SliceData(record)), n: len(record), size: int64(len(record))}
}

// batchEntry is the entry of a batch of records (at least one) of size
// payload bytes.
func batchEntry(records [][]byte, size int64) entry {
	return entry{data: unsafe.Pointer(unsafe.SliceData(records)), n: ^len(records), size: size}
}

// one returns the record of a single-record call, nil for a batch.
func (e *entry) one() []byte {
	if e.n < 0 {
		return nil
	}
	return unsafe.Slice((*byte)(e.data), e.n)
}

// count returns the entry's records: a batch's, or 1.
func (e *entry) count() int64 {
	if e.n < 0 {
		return int64(^e.n)
	}
	return 1
}

// many returns the records of a batch, nil for a single record.
func (e *entry) many() [][]byte {
	if e.n >= 0 {
		return nil
	}
	return unsafe.Slice((*[]byte)(e.data), ^e.n)
}

// window is the landing zone: every accepted call that is not yet durable,
// in a power-of-two ring indexed by offset.
//
// Invariants: 0 <= head <= next; the entries for [head, next) are live and
// every other slot is zero (so acked payloads are released to the GC);
// bytes is the sum of live sizes and records of live record counts;
// next-head <= len(ring).
type window struct {
	ring    []entry
	head    int64 // first offset not yet durable: ack floor + 1
	next    int64 // next offset to assign
	bytes   int64
	records int64 // the records of live entries
}

const initialRing = 64

func (w *window) len() int64 { return w.next - w.head }

func (w *window) floor() int64 { return w.head - 1 }

func (w *window) slot(o int64) *entry { return &w.ring[o&int64(len(w.ring)-1)] }

// at returns the live entry for offset o; o must be in [head, next).
func (w *window) at(o int64) *entry {
	if o < w.head || o >= w.next {
		panic(fmt.Sprintf("core: window.at(%d) outside [%d, %d)", o, w.head, w.next))
	}
	return w.slot(o)
}

// push appends e at offset next. The caller has checked that next+1 does not
// overflow.
func (w *window) push(e entry) int64 {
	if w.len() == int64(len(w.ring)) {
		w.grow()
	}
	o := w.next
	*w.slot(o) = e
	w.next++
	w.bytes += e.size
	w.records += e.count()
	return o
}

// grow doubles the ring, re-placing live entries by their offsets. It runs
// only when the window exceeds its previous peak, never in steady state.
func (w *window) grow() {
	n := len(w.ring) * 2
	if n == 0 {
		n = initialRing
	}
	old := w.ring
	w.ring = make([]entry, n)
	for o := w.head; o < w.next; o++ {
		*w.slot(o) = old[o&int64(len(old)-1)]
	}
}

// advance drops every entry below to (to <= next). Its cost is the number of
// entries dropped, whatever the window's size.
func (w *window) advance(to int64) {
	if to > w.next {
		panic(fmt.Sprintf("core: window.advance(%d) past next %d", to, w.next))
	}
	for o := w.head; o < to; o++ {
		e := w.slot(o)
		w.bytes -= e.size
		w.records -= e.count()
		*e = entry{}
	}
	if to > w.head {
		w.head = to
	}
}

// rebase starts an empty window at offset start: a fresh process resuming a
// stream continues numbering above the server's watermark.
func (w *window) rebase(start int64) {
	if w.len() != 0 {
		panic("core: window.rebase on a non-empty window")
	}
	w.head, w.next = start, start
}
