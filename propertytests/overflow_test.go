package propertytests

// Offset-space exhaustion (§5.1, core/doc.go "Offsets"): runs that start near
// math.MaxInt64 through a fresh-process resume. The largest assignable offset
// is MaxInt64-1; ErrOffsetSpaceExhausted must be reported exactly when the
// next offset would overflow, nothing may wrap, and no offset anywhere may be
// negative.

import (
	"errors"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

func TestOverflowNearMaxInt64(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkOverflow(t, nil) })
}

// ovHarness drives a persistent machine near the top of the offset space.
// All of its inputs are valid, so the only failure it may ever see is the
// exhaustion it predicts.
type ovHarness struct {
	m   *core.Machine
	cfg core.Config
	now core.Instant

	conn       core.ConnID // current connection, 0 if none
	opened     bool        // open response accepted on conn
	floor      int64
	next       int64
	sendNext   int64
	maxSent    int64
	attempted  int64
	outbox     []int64
	exhausted  bool // the model says the stream must have failed with exhaustion
	terminated bool
}

// checkOverflow runs one random stream resumed at W = MaxInt64-k. plant, when
// not nil, is called right after core.New.
func checkOverflow(t *rapid.T, plant func(*core.Machine)) {
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.StreamID = "s-top"
	cfg.ClientRequestID = "req-1"
	cfg.MaxInflightCalls = rapid.IntRange(1, 4).Draw(t, "maxCalls")
	cfg.Retries = 1 << 20 // drops here are never the failure under test
	cfg.Backoff = core.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}
	cfg.Seed = rapid.Uint64().Draw(t, "seed")
	m, err := core.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if plant != nil {
		plant(m)
	}
	h := &ovHarness{m: m, cfg: cfg, floor: -1, maxSent: -1, attempted: -1}
	if err := m.Open(0); err != nil {
		t.Fatalf("Open: %v", err)
	}
	h.poll(t)
	k := rapid.Int64Range(0, 6).Draw(t, "k")
	h.resume(t, math.MaxInt64-k)
	t.Repeat(map[string]func(*rapid.T){
		"":             h.check,
		"a_ingest":     h.ingest,
		"b_deliverAck": h.deliverAck,
		"c_ingestMany": h.ingestMany,
		"d_reconnect":  h.reconnect,
		"e_batch":      h.batch,
	})
}

// poll drains actions: nothing may carry a negative or unassignable offset.
func (h *ovHarness) poll(t *rapid.T) []core.Action {
	var all []core.Action
	for acts := h.m.Poll(nil); len(acts) > 0; acts = h.m.Poll(nil) {
		all = append(all, acts...)
	}
	for _, a := range all {
		if h.terminated {
			t.Fatalf("action after ActFinished: %+v", a)
		}
		switch a.Kind {
		case core.ActSend, core.ActComplete, core.ActFail:
			last := a.Last
			if a.Kind == core.ActSend {
				last = a.Offset
			}
			if a.Offset < 0 || last < a.Offset || last > math.MaxInt64-1 || a.Wire < 0 {
				t.Fatalf("offsets wrapped or out of range: %+v", a)
			}
		}
		switch a.Kind {
		case core.ActOpen:
			h.conn, h.opened = a.Conn, false
			if !a.Resume || a.StreamID != "s-top" {
				t.Fatalf("reconnect is not a resume of s-top: %+v", a)
			}
		case core.ActAbort:
			h.conn, h.opened, h.outbox = 0, false, nil
		case core.ActSend:
			if a.Offset != h.sendNext || a.Wire != a.Offset {
				t.Fatalf("send %d (wire %d), want %d", a.Offset, a.Wire, h.sendNext)
			}
			h.sendNext++
			h.attempted = max(h.attempted, a.Offset)
			h.outbox = append(h.outbox, a.Offset)
		case core.ActComplete:
			if a.Offset != h.floor+1 || a.Last >= h.next {
				t.Fatalf("complete %d..%d with floor %d next %d", a.Offset, a.Last, h.floor, h.next)
			}
			h.floor = a.Last
		case core.ActFail:
			if a.Offset != h.floor+1 || a.Last != h.next-1 {
				t.Fatalf("fail %d..%d with floor %d next %d", a.Offset, a.Last, h.floor, h.next)
			}
		case core.ActFinished:
			h.terminated = true
			h.conn = 0
		}
	}
	return all
}

// check: the failure state is exactly the predicted exhaustion, and no
// accessor is below -1 or beyond the assignable range.
func (h *ovHarness) check(t *rapid.T) {
	m := h.m
	for name, v := range map[string]int64{
		"AckFloor": m.AckFloor(), "LastAssigned": m.LastAssigned(), "MaxSent": m.MaxSent(), "MaxAttempted": m.MaxAttempted(),
	} {
		if v < -1 || v > math.MaxInt64-1 {
			t.Fatalf("%s = %d: wrapped or out of range", name, v)
		}
	}
	if m.AckFloor() != h.floor || m.LastAssigned() != h.next-1 || m.MaxAttempted() != h.attempted {
		t.Fatalf("floor/last/attempted %d/%d/%d, want %d/%d/%d", m.AckFloor(), m.LastAssigned(), m.MaxAttempted(), h.floor, h.next-1, h.attempted)
	}
	calls, _ := m.Pending()
	if int64(calls) != h.next-1-h.floor {
		t.Fatalf("Pending %d calls, want %d", calls, h.next-1-h.floor)
	}
	for _, b := range m.Unacked(nil) {
		if b.Offset < 0 || b.Offset > math.MaxInt64-1 {
			t.Fatalf("Unacked offset %d", b.Offset)
		}
	}
	failed := m.State() == fsm.Failed
	if failed != h.exhausted || h.terminated != h.exhausted {
		t.Fatalf("state %s (err %v), exhaustion predicted: %v", m.State(), m.Err(), h.exhausted)
	}
	if failed && !errors.Is(m.Err(), core.ErrOffsetSpaceExhausted) {
		t.Fatalf("failed with %v, want ErrOffsetSpaceExhausted", m.Err())
	}
}

// resume answers the pending resume with watermark w.
func (h *ovHarness) resume(t *rapid.T, w int64) {
	if h.conn == 0 || h.opened {
		t.Fatalf("no resume pending")
	}
	fresh := h.next == 0 && h.floor == -1 && h.attempted == -1
	if err := h.m.Receive(h.now, h.conn, core.Response{Kind: core.RespResume, Offset: w, HasOffset: true}); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if w == math.MaxInt64 {
		h.exhausted = true // W+1 would overflow
	} else {
		if fresh {
			h.floor, h.next, h.attempted = w, w+1, w
		}
		h.opened = true
		h.sendNext, h.maxSent = w+1, w
	}
	h.poll(t)
	if !h.exhausted && h.m.AckFloor() != w {
		t.Fatalf("after resume at %d: AckFloor %d", w, h.m.AckFloor())
	}
}

// ingestCall ingests one call and checks exhaustion is reported exactly when
// the next offset would be MaxInt64.
func (h *ovHarness) ingestCall(t *rapid.T, recs [][]byte) {
	if h.exhausted {
		_, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("x"))
		if !errors.Is(err, core.ErrStreamFailed) || !errors.Is(err, core.ErrOffsetSpaceExhausted) {
			t.Fatalf("ingest after exhaustion: %v", err)
		}
		return
	}
	full := h.next-1-h.floor >= int64(h.cfg.MaxInflightCalls)
	var off int64
	var err error
	if recs == nil {
		off, err = h.m.IngestRecord(h.now, core.RecordJSON, []byte(`{"n":1}`))
	} else {
		off, err = h.m.IngestBatch(h.now, core.RecordJSON, recs)
	}
	switch {
	case full:
		if !errors.Is(err, core.ErrWindowFull) {
			t.Fatalf("ingest into a full window: (%d, %v)", off, err)
		}
	case h.next == math.MaxInt64:
		if !errors.Is(err, core.ErrOffsetSpaceExhausted) || off != core.NoOffset {
			t.Fatalf("ingest with LastAssigned %d: (%d, %v), want ErrOffsetSpaceExhausted", h.next-1, off, err)
		}
		h.exhausted = true
	default:
		if err != nil || off != h.next {
			t.Fatalf("ingest with LastAssigned %d: (%d, %v), want offset %d", h.next-1, off, err, h.next)
		}
		if errors.Is(err, core.ErrOffsetSpaceExhausted) {
			t.Fatalf("exhaustion reported with offset %d still assignable", h.next)
		}
		h.next++
	}
	h.poll(t)
}

func (h *ovHarness) ingest(t *rapid.T) { h.ingestCall(t, nil) }

func (h *ovHarness) batch(t *rapid.T) {
	n := rapid.IntRange(1, 3).Draw(t, "batch")
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = []byte(`{"b":1}`)
	}
	h.ingestCall(t, recs)
}

func (h *ovHarness) ingestMany(t *rapid.T) {
	for range rapid.IntRange(1, 8).Draw(t, "many") {
		h.ingestCall(t, nil)
	}
}

// deliverAck reports some sends and acknowledges some of them.
func (h *ovHarness) deliverAck(t *rapid.T) {
	if h.conn == 0 || !h.opened || len(h.outbox) == 0 {
		t.Skip("nothing in flight")
	}
	n := rapid.IntRange(1, len(h.outbox)).Draw(t, "deliver")
	for _, o := range h.outbox[:n] {
		if err := h.m.Sent(h.now, h.conn, o); err != nil {
			t.Fatalf("Sent(%d): %v", o, err)
		}
		h.maxSent = o
	}
	h.outbox = h.outbox[n:]
	if rapid.Bool().Draw(t, "ack") {
		a := rapid.Int64Range(h.floor, h.maxSent).Draw(t, "ackTo")
		if err := h.m.Receive(h.now, h.conn, core.Response{Kind: core.RespAck, Offset: a, HasOffset: true}); err != nil {
			t.Fatalf("Receive ack: %v", err)
		}
	}
	h.poll(t)
}

// reconnect drops the connection, waits out the backoff and resumes with a
// legal watermark, or with MaxInt64.
func (h *ovHarness) reconnect(t *rapid.T) {
	if h.conn == 0 || !h.opened {
		t.Skip("no open connection")
	}
	if err := h.m.ConnectionFailed(h.now, h.conn, core.CodeUnavailable, nil); err != nil {
		t.Fatalf("ConnectionFailed: %v", err)
	}
	h.poll(t)
	at, ok := h.m.NextDeadline()
	if !ok {
		t.Fatalf("recovering without a backoff deadline")
	}
	h.now = at
	if err := h.m.Tick(at); err != nil {
		t.Fatalf("Tick: %v", err)
	}
	h.poll(t)
	w := int64(math.MaxInt64)
	if !rapid.Bool().Draw(t, "wmMax") || rapid.Bool().Draw(t, "wmMax2") {
		w = rapid.Int64Range(h.floor, h.attempted).Draw(t, "wm")
	}
	h.resume(t, w)
}
