package io

import "github.com/zbstream/zbstream/core"

// callLog remembers, for every call accepted and not yet ended, when it was
// accepted and its size, so that an EventObserver is told each call's
// latency, records and bytes when it ends. It is kept only for an
// EventObserver: 24 bytes per call in flight. Like the core's window it is
// a power-of-two ring indexed by offset that grows only past its previous
// peak, so the steady state does not allocate.
//
// Calls end in offset order (acks are cumulative, reconciliation and
// failure take the lowest offsets first), so ending is popping the head.
type callLog struct {
	ring       []callInfo
	head, next int64 // the live calls are [head, next)
}

// callInfo is what the log keeps of one call.
type callInfo struct {
	at      core.Instant
	bytes   int64
	records int
}

// push records the call accepted at offset off. Offsets are pushed in
// order; a gap (a resumed stream starting above its watermark) restarts the
// log at off.
func (l *callLog) push(off int64, c callInfo) {
	if off != l.next || l.len() == 0 {
		l.head, l.next = off, off
	}
	if l.len() == int64(len(l.ring)) {
		l.grow()
	}
	l.ring[off&int64(len(l.ring)-1)] = c
	l.next = off + 1
}

// info returns the call at off, if the log holds it.
func (l *callLog) info(off int64) (callInfo, bool) {
	if off < l.head || off >= l.next {
		return callInfo{}, false
	}
	return l.ring[off&int64(len(l.ring)-1)], true
}

// drop forgets every call at or below last.
func (l *callLog) drop(last int64) {
	l.head = min(max(l.head, last+1), l.next)
}

func (l *callLog) len() int64 { return l.next - l.head }

// grow doubles the ring, re-placing live calls by their offsets.
func (l *callLog) grow() {
	n := max(2*len(l.ring), 64)
	old := l.ring
	l.ring = make([]callInfo, n)
	for o := l.head; o < l.next; o++ {
		l.ring[o&int64(n-1)] = old[o&int64(len(old)-1)]
	}
}
