package core

import "fmt"

// entry is one accepted ingest call. Exactly one of one and many holds the
// payload: a single record travels in one (no slice header to allocate), a
// batch in many.
type entry struct {
	one  []byte
	many [][]byte
	size int64
}

// window is the landing zone: every accepted call that is not yet durable,
// in a power-of-two ring indexed by offset.
//
// Invariants: 0 <= head <= next; the entries for [head, next) are live and
// every other slot is zero (so acked payloads are released to the GC);
// bytes is the sum of live sizes; next-head <= len(ring).
type window struct {
	ring  []entry
	head  int64 // first offset not yet durable: ack floor + 1
	next  int64 // next offset to assign
	bytes int64
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
