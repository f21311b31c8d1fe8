package core_test

import (
	"fmt"
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

// openStream returns a machine whose first open has succeeded on conn 1.
func openStream(tb testing.TB, cfg core.Config) *core.Machine {
	tb.Helper()
	if cfg.Kind == core.Persistent {
		cfg.ClientRequestID = "req-bench"
	}
	m, err := core.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Open(0); err != nil {
		tb.Fatal(err)
	}
	m.Poll(nil)
	if err := m.Receive(0, 1, core.Response{Kind: core.RespCreate, StreamID: "s", HasStreamID: true}); err != nil {
		tb.Fatal(err)
	}
	if m.State() != fsm.Open {
		tb.Fatalf("state %s, want open", m.State())
	}
	return m
}

// BenchmarkIngestAck is the steady-state data path: one single-record ingest
// call, its send and its send report per op, and a cumulative ack every 64
// calls. It must not allocate.
func BenchmarkIngestAck(b *testing.B) {
	for _, kind := range []core.Kind{core.Persistent, core.Ephemeral} {
		b.Run(kind.String(), func(b *testing.B) {
			m := openStream(b, core.DefaultConfig(kind, core.RecordJSON))
			rec := []byte(`{"k":1}`)
			acts := make([]core.Action, 0, 64)
			ack := core.Response{Kind: core.RespAck, HasOffset: true}
			now := core.Instant(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				o, err := m.IngestRecord(now, core.RecordJSON, rec)
				if err != nil {
					b.Fatal(err)
				}
				acts = m.Poll(acts[:0])
				for j := range acts {
					if acts[j].Kind == core.ActSend {
						m.Sent(now, acts[j].Conn, acts[j].Offset)
					}
				}
				if i%64 == 63 {
					ack.Offset = o
					m.Receive(now, 1, ack)
				}
			}
			b.StopTimer()
			if err := m.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkReconcile measures a resume over a window of sent calls (1,000 or
// 1,000,000) whose watermark covers the first n of them: validation is
// constant time and reconciliation costs in proportion to n, not to the
// window. The constant part is the lifecycle transition to open.
//
// The window is filled and sent outside the timer, and only again once the
// resumes have reconciled most of it: a watermark only has to stay at or
// below the highest offset ever attempted, so the same sent window serves
// window/n resumes. The untimed work per op is thus proportional to n too
// (a few times the timed work), and the plain `go test -bench .` finishes.
func BenchmarkReconcile(b *testing.B) {
	for _, c := range []struct{ window, n int64 }{
		{1_000, 0}, {1_000, 1_000},
		{1_000_000, 0}, {1_000_000, 1}, {1_000_000, 1_000}, {1_000_000, 100_000},
	} {
		window, n := int(c.window), c.n
		b.Run(fmt.Sprintf("window=%d/reconciled=%d", window, n), func(b *testing.B) {
			cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
			cfg.Retries = 1 << 30 // a resume without progress is a retry; keep going
			m := openStream(b, cfg)
			rec := []byte(`{}`)
			var acts []core.Action
			var now core.Instant
			// fill tops the window up and hands every call to the transport:
			// a watermark is bounded by the highest offset ever attempted,
			// which Poll moves, so the sends need no Sent reports.
			fill := func() {
				for calls, _ := m.Pending(); calls < window; calls++ {
					if _, err := m.IngestRecord(now, core.RecordJSON, rec); err != nil {
						b.Fatal(err)
					}
				}
				for acts = m.Poll(acts[:0]); len(acts) > 0; acts = m.Poll(acts[:0]) {
				}
			}
			fill()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if m.AckFloor()+n > m.MaxAttempted() {
					fill() // on the current connection, which is open
				}
				m.ConnectionFailed(now, m.Conn(), core.CodeUnavailable, nil)
				at, _ := m.NextDeadline()
				now = at
				m.Tick(now)
				m.Poll(acts[:0]) // opening: drains the queue, sends nothing
				w := m.AckFloor() + n
				b.StartTimer()
				m.Receive(now, m.Conn(), core.Response{Kind: core.RespResume, Offset: w, HasOffset: true})
				b.StopTimer()
				if m.AckFloor() != w || m.Err() != nil {
					b.Fatalf("floor %d, want %d (err %v)", m.AckFloor(), w, m.Err())
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkLifecycleTransition is one looplab/fsm transition, the cost the
// core pays per connection event and never per record or ack.
func BenchmarkLifecycleTransition(b *testing.B) {
	l := fsm.New()
	l.Fire(fsm.StartOpen)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			l.Fire(fsm.Opened)
		} else {
			l.Fire(fsm.Reconnect)
		}
	}
}
