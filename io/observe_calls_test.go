package io

import (
	"testing"

	"github.com/zbstream/zbstream/core"
)

// TestCallLog: the log keeps every call pushed and not dropped, by offset,
// across growth with the ring wrapped around, forgets dropped calls, and
// restarts at a gap (a resumed stream numbering above its watermark).
func TestCallLog(t *testing.T) {
	var l callLog
	info := func(o int64) callInfo { return callInfo{at: core.Instant(o), bytes: 10 * o, records: int(o % 7)} }
	want := func(o int64, held bool) {
		t.Helper()
		got, ok := l.info(o)
		if ok != held || held && got != info(o) {
			t.Fatalf("info(%d) = %+v, %v; want %+v, %v", o, got, ok, info(o), held)
		}
	}
	next := int64(100)
	for round := range 5 {
		for range 50 + 40*round { // grows past 64, 128, 256 while wrapped
			l.push(next, info(next))
			next++
		}
		l.drop(next - 30) // keep the last 29
		for o := next - 40; o < next+2; o++ {
			want(o, o > next-30 && o < next)
		}
	}
	l.push(5000, info(5000)) // a gap: only the new call is held
	want(4999, false)
	want(next-1, false)
	want(5000, true)
	l.drop(5000)
	want(5000, false)
	if l.len() != 0 {
		t.Fatalf("len %d after dropping everything", l.len())
	}
}
