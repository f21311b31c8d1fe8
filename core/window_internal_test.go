package core

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// checkWindow asserts the window's written invariants.
func checkWindow(t *testing.T, w *window) {
	t.Helper()
	if w.head < 0 || w.head > w.next || w.len() > int64(len(w.ring)) {
		t.Fatalf("bounds broken: head %d next %d ring %d", w.head, w.next, len(w.ring))
	}
	var live, records int64
	for o := w.head; o < w.next; o++ {
		live += w.slot(o).size
		records += w.slot(o).count()
	}
	if live != w.bytes || records != w.records {
		t.Fatalf("bytes %d and records %d, live entries hold %d and %d", w.bytes, w.records, live, records)
	}
	zero := 0
	for i := range w.ring {
		if w.ring[i] == (entry{}) {
			zero++
		}
	}
	if want := len(w.ring) - int(w.len()); zero < want {
		t.Fatalf("%d zero slots, want at least %d: acked payloads are retained", zero, want)
	}
}

// TestWindowRing pushes and advances across ring growth and wrap-around,
// at small offsets and just below math.MaxInt64.
func TestWindowRing(t *testing.T) {
	for _, start := range []int64{0, 1 << 40, math.MaxInt64 - 5000} {
		var w window
		w.rebase(start)
		rng := rand.New(rand.NewPCG(1, 2))
		for step := 0; step < 3000; step++ {
			if rng.IntN(3) > 0 && w.next < math.MaxInt64-1 {
				rec := make([]byte, rng.IntN(5))
				rec = append(rec, byte(w.next))
				if o := w.push(oneEntry(rec)); o != w.next-1 {
					t.Fatalf("push returned %d, next is %d", o, w.next)
				}
			} else if w.len() > 0 {
				w.advance(w.head + rng.Int64N(w.len()+1))
			}
			checkWindow(t, &w)
			for o := w.head; o < w.next; o++ {
				if r := w.at(o).one(); r[len(r)-1] != byte(o) {
					t.Fatalf("offset %d holds the payload of another offset", o)
				}
			}
		}
	}
}

// TestWindowPanicsOnBrokenInvariant: misuse from inside the package is a bug
// and says so precisely.
func TestWindowPanicsOnBrokenInvariant(t *testing.T) {
	for name, f := range map[string]func(w *window){
		"at below head": func(w *window) { w.at(-1) },
		"at next":       func(w *window) { w.at(w.next) },
		"advance past":  func(w *window) { w.advance(w.next + 1) },
		"rebase busy":   func(w *window) { w.rebase(7) },
	} {
		t.Run(name, func(t *testing.T) {
			var w window
			w.push(oneEntry([]byte("x")))
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f(&w)
		})
	}
}

// TestBackoffFullJitter: each delay lies in [0, min(Max, Initial*Mult^(n-1))]
// and the same seed draws the same delays.
func TestBackoffFullJitter(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: 3 * time.Second, Multiplier: 2}
	r1 := rand.New(rand.NewPCG(7, 7))
	r2 := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 40; n++ {
		ceil := b.Initial * time.Duration(1<<min(n-1, 20))
		if ceil > b.Max {
			ceil = b.Max
		}
		var top time.Duration
		for i := 0; i < 200; i++ {
			d := b.delay(n, r1)
			if d2 := b.delay(n, r2); d != d2 {
				t.Fatalf("attempt %d: same seed drew %v and %v", n, d, d2)
			}
			if d < 0 || d > ceil {
				t.Fatalf("attempt %d: delay %v outside [0, %v]", n, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/2 {
			t.Fatalf("attempt %d: 200 draws never above %v of a %v ceiling: not full jitter", n, top, ceil)
		}
	}
}

// TestReconcilePure: the plan depends only on its inputs and every rejected
// watermark names its bound.
func TestReconcilePure(t *testing.T) {
	b := resumeBounds{history: true, floor: 4, maxAttempted: 9}
	w := func(o int64) Response { return Response{Kind: RespResume, Offset: o, HasOffset: true} }
	cases := []struct {
		name   string
		b      resumeBounds
		r      Response
		want   reconciliation
		reject Violation
	}{
		{"at floor", b, w(4), reconciliation{complete: offsetRange{5, 4}, resendFrom: 5, watermark: 4}, 0},
		{"inside", b, w(7), reconciliation{complete: offsetRange{5, 7}, resendFrom: 8, watermark: 7}, 0},
		{"at attempted", b, w(9), reconciliation{complete: offsetRange{5, 9}, resendFrom: 10, watermark: 9}, 0},
		{"below floor", b, w(3), reconciliation{}, WatermarkBelowFloor},
		{"absent below floor", b, Response{Kind: RespResume}, reconciliation{}, WatermarkBelowFloor},
		{"above attempted", b, w(10), reconciliation{}, WatermarkAboveAttempted},
		{"below -1", b, w(-2), reconciliation{}, WatermarkInvalid},
		{"fresh absent", resumeBounds{}, Response{Kind: RespResume}, reconciliation{complete: offsetRange{0, -1}, resendFrom: 0, watermark: -1}, 0},
		{"fresh far", resumeBounds{}, w(1 << 50), reconciliation{complete: offsetRange{0, -1}, resendFrom: 1<<50 + 1, watermark: 1 << 50}, 0},
		{"fresh below -1", resumeBounds{}, w(math.MinInt64), reconciliation{}, WatermarkInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := reconcile(c.b, c.r)
			if c.reject != 0 {
				pe, ok := err.(*ProtocolError)
				if !ok || pe.Rule != c.reject {
					t.Fatalf("err %v, want violation %s", err, c.reject)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestEntryRoundTrip holds the compact entry to the slices it was made
// from: a record (nil, empty or not) and a batch read back alike, with the
// other kind nil, and an entry of 24 bytes (see entry).
func TestEntryRoundTrip(t *testing.T) {
	if got := unsafe.Sizeof(entry{}); got != 24 {
		t.Fatalf("an entry is %d bytes, want 24", got)
	}
	for _, r := range [][]byte{nil, {}, []byte("x"), make([]byte, 3, 10)} {
		e := oneEntry(r)
		got := e.one()
		if (got == nil) != (r == nil) || !bytes.Equal(got, r) || e.many() != nil || e.size != int64(len(r)) {
			t.Fatalf("record %q (nil %v) read back as %q (nil %v), many %v, size %d", r, r == nil, got, got == nil, e.many(), e.size)
		}
		if len(r) > 0 && &got[0] != &r[0] {
			t.Fatal("the record read back is a copy, not the record")
		}
	}
	for _, b := range [][][]byte{{nil}, {[]byte("a"), {}, []byte("bc")}} {
		e := batchEntry(b, 3)
		got := e.many()
		if len(got) != len(b) || &got[0] != &b[0] || e.one() != nil || e.size != 3 {
			t.Fatalf("batch %q read back as %q, one %q, size %d", b, got, e.one(), e.size)
		}
	}
}

// TestWindowCountsRecords: the window counts a batch's records and one for
// a single record, empty or not, and forgets them as it advances.
func TestWindowCountsRecords(t *testing.T) {
	var w window
	w.push(oneEntry(nil))
	w.push(batchEntry([][]byte{[]byte("a"), {}, []byte("bc")}, 3))
	w.push(oneEntry([]byte("x")))
	if w.records != 5 {
		t.Fatalf("records %d after a record, a batch of 3 and a record, want 5", w.records)
	}
	w.advance(2)
	if w.records != 1 {
		t.Fatalf("records %d after the first two durable, want 1", w.records)
	}
	w.advance(3)
	if w.records != 0 || w.bytes != 0 {
		t.Fatalf("records %d, bytes %d in an empty window", w.records, w.bytes)
	}
}
