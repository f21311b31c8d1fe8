package core

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// checkWindow asserts the window's written invariants.
func checkWindow(t *testing.T, w *window) {
	t.Helper()
	if w.head < 0 || w.head > w.next || w.len() > int64(len(w.ring)) {
		t.Fatalf("bounds broken: head %d next %d ring %d", w.head, w.next, len(w.ring))
	}
	var live int64
	for o := w.head; o < w.next; o++ {
		live += w.slot(o).size
	}
	if live != w.bytes {
		t.Fatalf("bytes %d, live entries hold %d", w.bytes, live)
	}
	zero := 0
	for i := range w.ring {
		if w.ring[i].one == nil && w.ring[i].many == nil && w.ring[i].size == 0 {
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
				if o := w.push(entry{one: rec, size: int64(len(rec))}); o != w.next-1 {
					t.Fatalf("push returned %d, next is %d", o, w.next)
				}
			} else if w.len() > 0 {
				w.advance(w.head + rng.Int64N(w.len()+1))
			}
			checkWindow(t, &w)
			for o := w.head; o < w.next; o++ {
				if e := w.at(o); e.one[len(e.one)-1] != byte(o) {
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
			w.push(entry{one: []byte("x"), size: 1})
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
