package core

import "time"

// Instant is a point on the caller's monotonic clock, in nanoseconds from an
// origin the caller chooses. The core never reads a clock: every input carries
// the caller's Instant, and the core compares them only with each other, so a
// test can run it in virtual time and get the same outputs every time.
type Instant int64

// Add returns i+d, saturating instead of wrapping at the ends of the range.
func (i Instant) Add(d time.Duration) Instant {
	s := int64(i) + int64(d)
	switch {
	case d > 0 && s < int64(i):
		return Instant(1<<63 - 1)
	case d < 0 && s > int64(i):
		return Instant(-1 << 63)
	}
	return Instant(s)
}

// Sub returns the duration i-j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(int64(i) - int64(j)) }

// deadline is an optional Instant: the zero value is disarmed.
type deadline struct {
	at    Instant
	armed bool
}

func (d *deadline) arm(at Instant)      { *d = deadline{at: at, armed: true} }
func (d *deadline) disarm()             { *d = deadline{} }
func (d deadline) due(now Instant) bool { return d.armed && now >= d.at }
