package core_test

// Table-driven tests for every rule of docs/protocol.md §5 ("Client
// obligations"), black-box, through the harness in helpers_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

var ruleKinds = []core.Kind{core.Persistent, core.Ephemeral}

// ---------------------------------------------------------------------------
// §5.1 Offsets

// TestRuleOffsetsDenseOnePerCall pins §5.1: one offset per ingest call,
// assigned at accept, dense, a batch takes one offset, an empty batch takes
// none and changes nothing.
func TestRuleOffsetsDenseOnePerCall(t *testing.T) {
	type call struct {
		batch [][]byte // nil: a single record
		want  int64
	}
	rec := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name  string
		calls []call
	}{
		{"singles", []call{{nil, 0}, {nil, 1}, {nil, 2}}},
		{"batches", []call{{[][]byte{rec("a"), rec("b")}, 0}, {[][]byte{rec("c"), rec("d"), rec("e")}, 1}}},
		{"one-record batch", []call{{[][]byte{rec("a")}, 0}, {nil, 1}}},
		{"mixed with empty batch", []call{{nil, 0}, {[][]byte{}, core.NoOffset}, {[][]byte{rec("x"), rec("y")}, 1}, {[][]byte{}, core.NoOffset}, {nil, 2}}},
		{"only empty batches", []call{{[][]byte{}, core.NoOffset}, {[][]byte{}, core.NoOffset}}},
		{"600 singles", func() []call {
			var cs []call
			for i := range 600 {
				cs = append(cs, call{nil, int64(i)})
			}
			return cs
		}()},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				h := startStream(t, kind, nil)
				wantPayload := map[int64][][]byte{}
				var wantBytes int64
				for i, c := range tc.calls {
					before := h.snapshot()
					var o int64
					var err error
					payload := c.batch
					if c.batch == nil {
						payload = [][]byte{ruleRecord(i)}
						o, err = h.m.IngestRecord(h.now, core.RecordJSON, payload[0])
					} else {
						o, err = h.m.IngestBatch(h.now, core.RecordJSON, c.batch)
					}
					if err != nil || o != c.want {
						t.Fatalf("call %d: offset %d, err %v; want %d, nil", i, o, err, c.want)
					}
					if o == core.NoOffset {
						if after := h.snapshot(); !reflect.DeepEqual(before, after) {
							t.Errorf("empty batch changed the machine:\nbefore %+v\nafter  %+v", before, after)
						}
						continue
					}
					// Assigned at accept time, before any send.
					if h.m.LastAssigned() != o {
						t.Errorf("LastAssigned %d, want %d", h.m.LastAssigned(), o)
					}
					wantPayload[o] = payload
					for _, p := range payload {
						wantBytes += int64(len(p))
					}
				}
				calls, b := h.m.Pending()
				if calls != len(wantPayload) || b != wantBytes {
					t.Errorf("Pending = %d calls, %d bytes; want %d, %d", calls, b, len(wantPayload), wantBytes)
				}
				sends := actsOf(h.sendAll(), core.ActSend)
				if len(sends) != len(wantPayload) {
					t.Fatalf("%d sends, want %d", len(sends), len(wantPayload))
				}
				for i, s := range sends {
					got := s.Records
					if got == nil {
						got = [][]byte{s.Record}
					}
					if s.Offset != int64(i) || s.Wire != int64(i) || !reflect.DeepEqual(got, wantPayload[s.Offset]) {
						t.Errorf("send %d: offset %d wire %d records %q; want offset %d records %q", i, s.Offset, s.Wire, got, i, wantPayload[int64(i)])
					}
				}
				h.invariant()
			})
		}
	}
}

// TestRuleOffsetsStableAcrossConnections pins §5.1: the same payload travels
// under the same offset on every connection (ephemeral: renumbered on the
// wire from 0, same logical offset).
func TestRuleOffsetsStableAcrossConnections(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, nil)
			h.ingest(4)
			first := actsOf(h.sendAll(), core.ActSend)
			h.ack(0)
			h.reconnect()
			again := actsOf(h.reopened(0), core.ActSend)
			if len(again) != 3 {
				t.Fatalf("resent %v, want offsets 1..3", sendOffsets(again))
			}
			for i, a := range again {
				orig := first[i+1]
				if a.Offset != orig.Offset || !bytes.Equal(a.Record, orig.Record) {
					t.Errorf("resend %d: offset %d %q, want %d %q", i, a.Offset, a.Record, orig.Offset, orig.Record)
				}
				wantWire := a.Offset
				if kind == core.Ephemeral {
					wantWire = int64(i) // restarts at 0 on every connection
				}
				if a.Wire != wantWire {
					t.Errorf("resend of %d: wire %d, want %d", a.Offset, a.Wire, wantWire)
				}
			}
		})
	}
}

// TestRuleOffsetSpaceExhausted pins §5.1: checked offset arithmetic near
// MaxInt64. The largest assignable offset is MaxInt64-1; the call that would
// need MaxInt64 fails the stream with ErrOffsetSpaceExhausted (nothing wraps,
// no panic); a watermark of MaxInt64 fails the resume the same way.
func TestRuleOffsetSpaceExhausted(t *testing.T) {
	const top = math.MaxInt64
	tests := []struct {
		name      string
		w         int64
		accepted  int // calls accepted before exhaustion
		batch     bool
		failOpen  bool // the resume itself fails
		withHist  bool // a resume of a stream with history, not a fresh one
		wantFirst int64
	}{
		{name: "fresh W=MaxInt64-2, singles", w: top - 2, accepted: 1, wantFirst: top - 1},
		{name: "fresh W=MaxInt64-2, batches", w: top - 2, accepted: 1, batch: true, wantFirst: top - 1},
		{name: "fresh W=MaxInt64-3, singles", w: top - 3, accepted: 2, wantFirst: top - 2},
		{name: "fresh W=MaxInt64-1: nothing assignable", w: top - 1, accepted: 0},
		{name: "fresh W=MaxInt64", w: top, failOpen: true},
		{name: "history W=MaxInt64", w: top, failOpen: true, withHist: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			if tc.withHist {
				h = startPersistent(t, nil)
				h.ingest(1)
				h.sendAll()
				h.reconnect()
				acts := h.resumed(tc.w)
				if !errors.Is(h.m.Err(), core.ErrOffsetSpaceExhausted) {
					t.Fatalf("Err %v, want ErrOffsetSpaceExhausted", h.m.Err())
				}
				wantFailedWith(t, acts, h.m.Err(), 0, 0)
				h.wantState(fsm.Failed)
				return
			}
			h = resumeFresh(t, core.Response{Offset: tc.w, HasOffset: true}, nil)
			if tc.failOpen {
				h.wantState(fsm.Failed)
				if !errors.Is(h.m.Err(), core.ErrOffsetSpaceExhausted) {
					t.Fatalf("Err %v, want ErrOffsetSpaceExhausted", h.m.Err())
				}
				var pe *core.ProtocolError
				if errors.As(h.m.Err(), &pe) {
					t.Errorf("exhaustion reported as a protocol violation %v", pe)
				}
				wantFailedWith(t, h.log[1:], h.m.Err(), 0, -1)
				return
			}
			h.wantState(fsm.Open)
			if h.m.LastAssigned() != tc.w || h.m.AckFloor() != tc.w {
				t.Fatalf("LastAssigned %d, AckFloor %d; want %d", h.m.LastAssigned(), h.m.AckFloor(), tc.w)
			}
			ingest := func(i int) (int64, error) {
				if tc.batch {
					return h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{ruleRecord(i), ruleRecord(i + 100)})
				}
				return h.m.IngestRecord(h.now, core.RecordJSON, ruleRecord(i))
			}
			for i := range tc.accepted {
				o, err := ingest(i)
				if err != nil || o != tc.wantFirst+int64(i) {
					t.Fatalf("ingest %d: %d, %v; want %d", i, o, err, tc.wantFirst+int64(i))
				}
				sends := actsOf(h.sendAll(), core.ActSend)
				if len(sends) != 1 || sends[0].Offset != o || sends[0].Wire != o {
					t.Fatalf("sends %+v, want offset %d", sends, o)
				}
			}
			if h.m.LastAssigned() > top-1 {
				t.Fatalf("LastAssigned %d above MaxInt64-1", h.m.LastAssigned())
			}
			lastOK := h.m.LastAssigned()
			o, err := ingest(99)
			if o != core.NoOffset || !errors.Is(err, core.ErrOffsetSpaceExhausted) {
				t.Fatalf("ingest past the top: %d, %v; want NoOffset, ErrOffsetSpaceExhausted", o, err)
			}
			h.wantState(fsm.Failed)
			if !errors.Is(h.m.Err(), core.ErrOffsetSpaceExhausted) {
				t.Errorf("Err %v, want ErrOffsetSpaceExhausted", h.m.Err())
			}
			if h.m.LastAssigned() != lastOK {
				t.Errorf("LastAssigned %d after refusal, want %d (nothing wraps)", h.m.LastAssigned(), lastOK)
			}
			wantFailedWith(t, h.poll(), h.m.Err(), tc.w+1, lastOK)
			if !slices.Equal(h.unackedOffsets(), offsetRange(tc.w+1, lastOK)) {
				t.Errorf("Unacked %v, want %v", h.unackedOffsets(), offsetRange(tc.w+1, lastOK))
			}
			// Sticky: the next call reports the stream's failure.
			if _, err := ingest(100); !errors.Is(err, core.ErrStreamFailed) || !errors.Is(err, core.ErrOffsetSpaceExhausted) {
				t.Errorf("ingest after exhaustion: %v, want ErrStreamFailed wrapping ErrOffsetSpaceExhausted", err)
			}
			h.checkOnce()
		})
	}
}

// ---------------------------------------------------------------------------
// §5.2 ACK validation

// ackSetup brings a stream to: offsets 0..3 accepted and emitted on the
// current connection, 0..2 reported sent, 0 acked. It returns the wire
// offset of logical offset 0 on the connection.
type ackSetup struct {
	name  string
	start func(t *testing.T) *harness
	// base: logical offset of wire 0 on the current connection. floor is
	// the logical floor; maxSent the logical highest reported send.
	base, floor, maxSent, last int64
}

var ackSetups = []ackSetup{
	{
		name: "persistent",
		start: func(t *testing.T) *harness {
			h := startPersistent(t, nil)
			h.ingest(4)
			h.poll()
			h.sent(0, 1, 2)
			h.ack(0)
			return h
		},
		base: 0, floor: 0, maxSent: 2, last: 3,
	},
	{
		name: "ephemeral",
		start: func(t *testing.T) *harness {
			h := startEphemeral(t, nil)
			h.ingest(4)
			h.poll()
			h.sent(0, 1, 2)
			h.ack(0)
			return h
		},
		base: 0, floor: 0, maxSent: 2, last: 3,
	},
	{
		// Second connection: logical 2..5 resent as wire 0..3, wire 0..2
		// reported sent, wire 0 acked.
		name: "ephemeral after reconnect",
		start: func(t *testing.T) *harness {
			h := startEphemeral(t, nil)
			h.ingest(6)
			h.sendAll()
			h.ack(1)
			h.reconnect()
			h.created("e-2")
			h.poll()
			h.sent(2, 3, 4)
			h.ack(0)
			return h
		},
		base: 2, floor: 2, maxSent: 4, last: 5,
	},
	{
		// Persistent after a resume with watermark 1: logical == wire.
		name: "persistent after resume",
		start: func(t *testing.T) *harness {
			h := startPersistent(t, nil)
			h.ingest(6)
			h.sendAll()
			h.ack(0)
			h.reconnect()
			h.resumed(1)
			h.sent(2, 3, 4)
			h.ack(2)
			return h
		},
		base: 0, floor: 2, maxSent: 4, last: 5,
	},
}

// TestRuleAckValidation pins §5.2: a missing value, A < floor and
// A > maxSent (the highest send REPORTED on this connection, not emitted, not
// buffered) fail the stream with a *ProtocolError naming the bound, before
// anything is mutated; pending records fail in one range, in order, and stay
// retrievable identically.
func TestRuleAckValidation(t *testing.T) {
	type tcase struct {
		name      string
		resp      func(s ackSetup) core.Response
		rule      core.Violation
		got, bnd  func(s ackSetup) int64
		wantValid bool
	}
	wire := func(s ackSetup, logical int64) int64 { return logical - s.base }
	tests := []tcase{
		{
			name: "missing value",
			resp: func(ackSetup) core.Response { return core.Response{Kind: core.RespAck} },
			rule: core.AckMissing,
			got:  func(ackSetup) int64 { return 0 }, bnd: func(ackSetup) int64 { return 0 },
		},
		{
			name: "below floor by one",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: wire(s, s.floor) - 1, HasOffset: true}
			},
			rule: core.AckBelowFloor,
			got:  func(s ackSetup) int64 { return wire(s, s.floor) - 1 }, bnd: func(s ackSetup) int64 { return wire(s, s.floor) },
		},
		{
			name: "far below floor",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: math.MinInt64, HasOffset: true}
			},
			rule: core.AckBelowFloor,
			got:  func(ackSetup) int64 { return math.MinInt64 }, bnd: func(s ackSetup) int64 { return wire(s, s.floor) },
		},
		{
			name: "emitted but not reported sent",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: wire(s, s.maxSent) + 1, HasOffset: true}
			},
			rule: core.AckAboveSent,
			got:  func(s ackSetup) int64 { return wire(s, s.maxSent) + 1 }, bnd: func(s ackSetup) int64 { return wire(s, s.maxSent) },
		},
		{
			name: "above everything buffered",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: wire(s, s.last) + 10, HasOffset: true}
			},
			rule: core.AckAboveSent,
			got:  func(s ackSetup) int64 { return wire(s, s.last) + 10 }, bnd: func(s ackSetup) int64 { return wire(s, s.maxSent) },
		},
		{
			name: "MaxInt64",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: math.MaxInt64, HasOffset: true}
			},
			rule: core.AckAboveSent,
			got:  func(ackSetup) int64 { return math.MaxInt64 }, bnd: func(s ackSetup) int64 { return wire(s, s.maxSent) },
		},
		{
			name: "exactly maxSent is valid",
			resp: func(s ackSetup) core.Response {
				return core.Response{Kind: core.RespAck, Offset: wire(s, s.maxSent), HasOffset: true}
			},
			wantValid: true,
		},
	}
	for _, s := range ackSetups {
		for _, tc := range tests {
			t.Run(s.name+"/"+tc.name, func(t *testing.T) {
				h := s.start(t)
				h.wantState(fsm.Open)
				if h.m.AckFloor() != s.floor || h.m.MaxSent() != s.maxSent || h.m.LastAssigned() != s.last {
					t.Fatalf("setup: floor %d maxSent %d last %d; want %d %d %d",
						h.m.AckFloor(), h.m.MaxSent(), h.m.LastAssigned(), s.floor, s.maxSent, s.last)
				}
				h.invariant()
				before := h.snapshot()
				acts := h.receive(tc.resp(s))
				if tc.wantValid {
					wantKinds(t, acts, core.ActComplete)
					if len(acts) == 1 && (acts[0].Offset != s.floor+1 || acts[0].Last != s.maxSent || acts[0].Reconciled) {
						t.Errorf("complete %+v, want %d..%d by ack", acts[0], s.floor+1, s.maxSent)
					}
					if h.m.AckFloor() != s.maxSent {
						t.Errorf("AckFloor %d, want %d", h.m.AckFloor(), s.maxSent)
					}
					h.invariant()
					return
				}
				h.wantState(fsm.Failed)
				err := h.m.Err()
				wantProtocolError(t, err, tc.rule, tc.got(s), tc.bnd(s))
				// Nothing mutated: floor, window, payloads.
				if h.m.AckFloor() != before.Floor || h.m.LastAssigned() != before.LastAssigned {
					t.Errorf("AckFloor %d LastAssigned %d after a rejected ack, want %d %d",
						h.m.AckFloor(), h.m.LastAssigned(), before.Floor, before.LastAssigned)
				}
				if calls, b := h.m.Pending(); calls != before.Calls || b != before.Bytes {
					t.Errorf("Pending %d,%d after a rejected ack, want %d,%d", calls, b, before.Calls, before.Bytes)
				}
				u1, u2 := h.m.Unacked(nil), h.m.Unacked(nil)
				if !reflect.DeepEqual(u1, before.Unacked) || !reflect.DeepEqual(u2, before.Unacked) {
					t.Errorf("Unacked changed or unstable:\nbefore %v\nnow    %v\nagain  %v", before.Unacked, u1, u2)
				}
				if !slices.Equal(h.unackedOffsets(), offsetRange(s.floor+1, s.last)) {
					t.Errorf("Unacked offsets %v, want %v", h.unackedOffsets(), offsetRange(s.floor+1, s.last))
				}
				wantFailedWith(t, acts, err, s.floor+1, s.last)
				if len(actsOf(acts, core.ActAbort)) != 1 {
					t.Errorf("actions %s, want the connection aborted once", kindsString(acts))
				}
				// Non-retryable: no reconnect, ever.
				h.advance(time.Hour)
				if acts := h.tick(); len(acts) != 0 {
					t.Errorf("after failure: %s", kindsString(acts))
				}
				for o := s.floor + 1; o <= s.last; o++ {
					if !h.m.Failed(o) || h.m.Durable(o) {
						t.Errorf("offset %d: Failed %v Durable %v, want failed", o, h.m.Failed(o), h.m.Durable(o))
					}
				}
				h.checkOnce()
			})
		}
	}
}

// TestRuleAckDuplicate pins §5.2 and §5.4: A == floor is a duplicate and
// changes nothing, not even the ack deadline.
func TestRuleAckDuplicate(t *testing.T) {
	for _, s := range ackSetups {
		t.Run(s.name, func(t *testing.T) {
			h := s.start(t)
			h.advance(7 * time.Second)
			before := h.snapshot()
			for range 3 {
				if acts := h.ack(s.floor - s.base); len(acts) != 0 {
					t.Errorf("duplicate ack emitted %s", kindsString(acts))
				}
				h.unchanged(before)
				h.wantState(fsm.Open)
			}
		})
	}
}

// TestRuleAckEphemeralWireOffsets pins §5.2 and §4: ephemeral acks are in wire
// offsets that restart at 0 on every connection and map back to logical
// offsets in FIFO order.
func TestRuleAckEphemeralWireOffsets(t *testing.T) {
	h := startEphemeral(t, nil)
	h.ingest(3) // 0..2
	h.sendAll()
	acts := h.ack(1)
	if len(acts) != 1 || acts[0].Offset != 0 || acts[0].Last != 1 {
		t.Fatalf("ack 1 on conn 1: %+v, want complete 0..1", acts)
	}
	h.drop(core.CodeUnavailable)
	h.ingest(2) // 3..4, accepted while recovering
	h.fire()
	sends := actsOf(h.created("e-2"), core.ActSend)
	h.report(sends)
	wantOff, wantWire := []int64{2, 3, 4}, []int64{0, 1, 2}
	for i, a := range sends {
		if i >= 3 || a.Offset != wantOff[i] || a.Wire != wantWire[i] {
			t.Fatalf("sends on conn 2: %+v, want offsets %v as wire %v", sends, wantOff, wantWire)
		}
	}
	// A fresh connection's wire floor is -1: an ack of -1 is a duplicate.
	if acts := h.ack(-1); len(acts) != 0 {
		t.Errorf("ack -1 on a fresh connection: %s, want nothing", kindsString(acts))
	}
	acts = h.ack(1)
	if len(acts) != 1 || acts[0].Offset != 2 || acts[0].Last != 3 {
		t.Fatalf("wire ack 1 on conn 2: %+v, want logical complete 2..3", acts)
	}
	if h.m.AckFloor() != 3 || !h.m.Durable(3) || h.m.Durable(4) {
		t.Errorf("AckFloor %d, want 3", h.m.AckFloor())
	}
	acts = h.ack(2)
	if len(acts) != 1 || acts[0].Offset != 4 || acts[0].Last != 4 {
		t.Fatalf("wire ack 2 on conn 2: %+v, want logical complete 4..4", acts)
	}
	h.invariant()
	h.checkOnce()
}

// TestRuleUnexpectedMessages pins the doc comments of the Violation
// constants: an ack before the open response and an empty message are
// UnexpectedMessage; a create answered with a resume (or the reverse) is
// OpenResponseKind; a create response without id is StreamIDMissing.
func TestRuleUnexpectedMessages(t *testing.T) {
	tests := []struct {
		name   string
		kind   core.Kind
		opened bool // deliver r after the open response
		r      core.Response
		rule   core.Violation
	}{
		{"ack before open response", core.Persistent, false, core.Response{Kind: core.RespAck, HasOffset: true}, core.UnexpectedMessage},
		{"ack before open response (ephemeral)", core.Ephemeral, false, core.Response{Kind: core.RespAck, HasOffset: true}, core.UnexpectedMessage},
		{"empty message before open response", core.Persistent, false, core.Response{Kind: core.RespEmpty}, core.UnexpectedMessage},
		{"empty message when open", core.Ephemeral, true, core.Response{Kind: core.RespEmpty}, core.UnexpectedMessage},
		{"second open response", core.Persistent, true, core.Response{Kind: core.RespCreate, StreamID: "x", HasStreamID: true}, core.UnexpectedMessage},
		{"create answered by resume", core.Persistent, false, core.Response{Kind: core.RespResume}, core.OpenResponseKind},
		{"create response without id", core.Persistent, false, core.Response{Kind: core.RespCreate}, core.StreamIDMissing},
		{"create response with empty id", core.Ephemeral, false, core.Response{Kind: core.RespCreate, HasStreamID: true}, core.StreamIDMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, ruleConfig(tc.kind))
			h.open()
			if tc.opened {
				h.created("s-1")
			}
			h.receive(tc.r)
			h.wantState(fsm.Failed)
			var pe *core.ProtocolError
			if !errors.As(h.m.Err(), &pe) || pe.Rule != tc.rule {
				t.Errorf("Err %v, want a *ProtocolError with rule %q", h.m.Err(), tc.rule)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// §5.3 Resume-watermark validation

// TestRuleResumeWatermarkWithHistory pins §5.3 for a process with history:
// floor <= W' <= maxAttempted, W' = W ?? -1; a violation fails closed,
// reconciles nothing and resends nothing; a valid W completes (floor, W]
// exactly once (Reconciled) and resends only offsets > W, under their
// original offsets, starting at W+1.
func TestRuleResumeWatermarkWithHistory(t *testing.T) {
	// Setup: 0..4 accepted; 0..3 emitted (maxAttempted 3), 0..1 reported
	// sent, 0 acked (floor 0); 4 ingested while recovering (never emitted).
	setup := func(t *testing.T) *harness {
		h := startPersistent(t, nil)
		h.ingest(4)
		h.poll()
		h.sent(0, 1)
		h.ack(0)
		h.drop(core.CodeUnavailable)
		h.ingest(1)
		acts := h.fire()
		if len(acts) != 1 || !acts[0].Resume || acts[0].StreamID != "s-1" {
			t.Fatalf("reconnect: %+v, want a resume of s-1", acts)
		}
		if h.m.AckFloor() != 0 || h.m.MaxAttempted() != 3 || h.m.LastAssigned() != 4 {
			t.Fatalf("setup: floor %d maxAttempted %d last %d", h.m.AckFloor(), h.m.MaxAttempted(), h.m.LastAssigned())
		}
		return h
	}
	tests := []struct {
		name      string
		r         core.Response
		rule      core.Violation
		got, bnd  int64
		reconcile []int64 // completed by reconciliation (nil: none)
	}{
		{name: "absent watermark is -1, below floor", r: core.Response{}, rule: core.WatermarkBelowFloor, got: -1, bnd: 0},
		{name: "explicit -1 below floor", r: core.Response{Offset: -1, HasOffset: true}, rule: core.WatermarkBelowFloor, got: -1, bnd: 0},
		{name: "below -1", r: core.Response{Offset: -5, HasOffset: true}, rule: core.WatermarkInvalid, got: -5},
		{name: "above maxAttempted", r: core.Response{Offset: 4, HasOffset: true}, rule: core.WatermarkAboveAttempted, got: 4, bnd: 3},
		{name: "far above maxAttempted", r: core.Response{Offset: 1 << 40, HasOffset: true}, rule: core.WatermarkAboveAttempted, got: 1 << 40, bnd: 3},
		{name: "equal to floor", r: core.Response{Offset: 0, HasOffset: true}},
		{name: "above maxSent, at most maxAttempted", r: core.Response{Offset: 3, HasOffset: true}, reconcile: []int64{1, 2, 3}},
		{name: "within sent", r: core.Response{Offset: 1, HasOffset: true}, reconcile: []int64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t)
			before := h.snapshot()
			r := tc.r
			r.Kind = core.RespResume
			acts := h.receive(r)
			if tc.rule != 0 {
				h.wantState(fsm.Failed)
				wantProtocolError(t, h.m.Err(), tc.rule, tc.got, tc.bnd)
				wantFailedWith(t, acts, h.m.Err(), 1, 4)
				if h.m.AckFloor() != 0 || !reflect.DeepEqual(h.m.Unacked(nil), before.Unacked) {
					t.Errorf("rejected resume changed the window: floor %d unacked %v", h.m.AckFloor(), h.unackedOffsets())
				}
				h.checkOnce()
				return
			}
			h.wantState(fsm.Open)
			w := r.Offset
			completes := actsOf(acts, core.ActComplete)
			if tc.reconcile == nil {
				if len(completes) != 0 {
					t.Errorf("completes %+v, want none", completes)
				}
			} else if len(completes) != 1 || !completes[0].Reconciled ||
				completes[0].Offset != tc.reconcile[0] || completes[0].Last != tc.reconcile[len(tc.reconcile)-1] {
				t.Errorf("completes %+v, want one reconciled range %v", completes, tc.reconcile)
			}
			// Reconciliation comes before any resend.
			if i, j := slices.Index(actKinds(acts), core.ActSend), slices.Index(actKinds(acts), core.ActComplete); i >= 0 && j > i {
				t.Errorf("resend before reconciliation: %s", kindsString(acts))
			}
			if got, want := sendOffsets(acts), offsetRange(w+1, 4); !slices.Equal(got, want) {
				t.Errorf("resent %v, want %v", got, want)
			}
			for _, a := range actsOf(acts, core.ActSend) {
				if a.Wire != a.Offset || !bytes.Equal(a.Record, ruleRecord(int(a.Offset))) {
					t.Errorf("resend of %d: wire %d record %q, want original", a.Offset, a.Wire, a.Record)
				}
			}
			if h.m.AckFloor() != w || h.m.MaxSent() != w {
				t.Errorf("AckFloor %d MaxSent %d, want %d", h.m.AckFloor(), h.m.MaxSent(), w)
			}
			for o := int64(0); o <= 4; o++ {
				if h.m.Durable(o) != (o <= w) {
					t.Errorf("Durable(%d) = %v, want %v", o, h.m.Durable(o), o <= w)
				}
			}
			// Exactly once: a second resume with the same W completes nothing.
			h.report(acts)
			h.reconnect()
			if acts := h.resumed(w); len(actsOf(acts, core.ActComplete)) != 0 {
				t.Errorf("second resume at %d completed again: %+v", w, acts)
			}
			h.invariant()
			h.checkOnce()
		})
	}
}

// TestRuleResumeWatermarkFreshProcess pins §5.3 for a fresh process: any
// W' >= -1 is accepted (W' < -1 is WatermarkInvalid), numbering continues at
// W'+1, and offsets <= W' are durable at once (§5.7).
func TestRuleResumeWatermarkFreshProcess(t *testing.T) {
	tests := []struct {
		name string
		r    core.Response
		w    int64
		bad  bool
	}{
		{name: "absent", r: core.Response{}, w: -1},
		{name: "explicit -1", r: core.Response{Offset: -1, HasOffset: true}, w: -1},
		{name: "zero", r: core.Response{Offset: 0, HasOffset: true}, w: 0},
		{name: "large", r: core.Response{Offset: 41, HasOffset: true}, w: 41},
		{name: "huge", r: core.Response{Offset: 1 << 50, HasOffset: true}, w: 1 << 50},
		{name: "below -1", r: core.Response{Offset: -2, HasOffset: true}, bad: true},
		{name: "MinInt64", r: core.Response{Offset: math.MinInt64, HasOffset: true}, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := resumeFresh(t, tc.r, nil)
			if tc.bad {
				h.wantState(fsm.Failed)
				wantProtocolError(t, h.m.Err(), core.WatermarkInvalid, tc.r.Offset, 0)
				return
			}
			h.wantState(fsm.Open)
			if h.m.LastAssigned() != tc.w || h.m.AckFloor() != tc.w || h.m.MaxAttempted() != tc.w {
				t.Errorf("LastAssigned %d AckFloor %d MaxAttempted %d, want all %d",
					h.m.LastAssigned(), h.m.AckFloor(), h.m.MaxAttempted(), tc.w)
			}
			if !h.m.Durable(tc.w) || !h.m.Durable(tc.w-1) || h.m.Durable(tc.w+1) {
				t.Errorf("Durable around %d wrong", tc.w)
			}
			if len(actsOf(h.log, core.ActComplete)) != 0 {
				t.Errorf("fresh resume reported completions for records it never had: %s", kindsString(h.log))
			}
			got := h.ingest(2)
			if !slices.Equal(got, []int64{tc.w + 1, tc.w + 2}) {
				t.Errorf("offsets %v, want %d, %d", got, tc.w+1, tc.w+2)
			}
			if sends := sendOffsets(h.sendAll()); !slices.Equal(sends, got) {
				t.Errorf("sends %v, want %v", sends, got)
			}
			h.invariant()
		})
	}
}

// TestRuleFreshResumeSeedsBounds pins §5.3: a fresh process's W' seeds the ack
// floor and the attempted bound for later resumes.
func TestRuleFreshResumeSeedsBounds(t *testing.T) {
	const w = 5
	tests := []struct {
		name     string
		sendNew  bool // emit offset 6 before the reconnect
		next     core.Response
		rule     core.Violation
		got, bnd int64
		complete []int64
	}{
		{name: "below seeded floor", next: core.Response{Offset: 4, HasOffset: true}, rule: core.WatermarkBelowFloor, got: 4, bnd: w},
		{name: "absent below seeded floor", next: core.Response{}, rule: core.WatermarkBelowFloor, got: -1, bnd: w},
		{name: "above seeded attempted", next: core.Response{Offset: 6, HasOffset: true}, rule: core.WatermarkAboveAttempted, got: 6, bnd: w},
		{name: "above attempted after a send", sendNew: true, next: core.Response{Offset: 7, HasOffset: true}, rule: core.WatermarkAboveAttempted, got: 7, bnd: 6},
		{name: "equal to seed", next: core.Response{Offset: w, HasOffset: true}},
		{name: "reconciles the new send", sendNew: true, next: core.Response{Offset: 6, HasOffset: true}, complete: []int64{6, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := resumeFresh(t, core.Response{Offset: w, HasOffset: true}, nil)
			h.ingest(1) // offset 6
			if tc.sendNew {
				h.sendAll()
			}
			acts := h.reconnect()
			if !acts[len(acts)-1].Resume || acts[len(acts)-1].StreamID != "s-old" {
				t.Fatalf("reconnect %+v, want a resume of s-old", acts[len(acts)-1])
			}
			r := tc.next
			r.Kind = core.RespResume
			acts = h.receive(r)
			if tc.rule != 0 {
				h.wantState(fsm.Failed)
				wantProtocolError(t, h.m.Err(), tc.rule, tc.got, tc.bnd)
				wantFailedWith(t, acts, h.m.Err(), 6, 6)
				return
			}
			h.wantState(fsm.Open)
			c := actsOf(acts, core.ActComplete)
			if tc.complete == nil && len(c) != 0 || tc.complete != nil && (len(c) != 1 || c[0].Offset != tc.complete[0] || c[0].Last != tc.complete[1] || !c[0].Reconciled) {
				t.Errorf("completes %+v, want %v", c, tc.complete)
			}
			h.checkOnce()
		})
	}
}

// ---------------------------------------------------------------------------
// §5.4 Lack-of-ack timer

// TestRuleAckTimerMoves pins §5.4: the ack timer is armed when a send is
// emitted, is not moved by later sends or duplicate acks, moves when the ack
// watermark advances, and is disarmed when nothing is left in flight.
func TestRuleAckTimerMoves(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, nil)
			const ackTO = 60 * time.Second
			h.wantDeadline(0, false) // open, nothing in flight
			h.ingest(3)
			h.wantDeadline(0, false) // accepted, not yet emitted
			h.sendAll()              // t=0: emitted
			h.wantDeadline(core.Instant(0).Add(ackTO), true)
			h.advance(10 * time.Second)
			h.ingest(1)
			h.sendAll() // another send does not move it
			h.wantDeadline(core.Instant(0).Add(ackTO), true)
			h.advance(10 * time.Second) // t=20s
			h.ack(0)
			h.wantDeadline(core.Instant(20*time.Second).Add(ackTO), true)
			h.advance(10 * time.Second) // t=30s: duplicates do not move it
			h.ack(0)
			h.ack(0)
			h.wantDeadline(core.Instant(20*time.Second).Add(ackTO), true)
			h.advance(10 * time.Second) // t=40s: everything acked
			h.ack(3)
			h.wantDeadline(0, false)
			h.ingest(1)
			h.sendAll() // re-armed by the next send
			h.wantDeadline(core.Instant(40*time.Second).Add(ackTO), true)
		})
	}
}

// TestRuleAckTimerFires pins §5.4 and §5.5: the ack timer firing is a
// retryable failure: the connection is aborted, a backoff starts and a new
// open follows; with no budget left it ends in a *RetryError whose last cause
// is the ack timeout.
func TestRuleAckTimerFires(t *testing.T) {
	for _, kind := range ruleKinds {
		for _, retries := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/retries=%d", kind, retries), func(t *testing.T) {
				h := startStream(t, kind, func(c *core.Config) { c.Retries = retries })
				h.ingest(2)
				h.sendAll()
				deadline, _ := h.m.NextDeadline()
				h.now = deadline - 1
				if acts := h.tick(); len(acts) != 0 {
					t.Fatalf("tick before the deadline: %s", kindsString(acts))
				}
				h.wantState(fsm.Open)
				acts := h.fire()
				if h.now != deadline {
					t.Fatalf("fired at %d, want the ack deadline %d", h.now, deadline)
				}
				if retries == 0 {
					h.wantState(fsm.Failed)
					var re *core.RetryError
					var ce *core.ConnectionError
					err := h.m.Err()
					if !errors.As(err, &re) || !errors.Is(err, core.ErrRetriesExhausted) || !errors.As(err, &ce) ||
						ce.Code != core.CodeDeadlineExceeded || !errors.Is(err, core.ErrAckTimeout) {
						t.Fatalf("Err %v, want a RetryError over DEADLINE_EXCEEDED / ErrAckTimeout", err)
					}
					wantFailedWith(t, acts, err, 0, 1)
					return
				}
				wantKinds(t, acts, core.ActAbort)
				h.wantState(fsm.Recovering)
				if h.m.Err() != nil {
					t.Fatalf("Err %v during recovery", h.m.Err())
				}
				at, ok := h.m.NextDeadline()
				if !ok || at < h.now || at > h.now.Add(time.Second) {
					t.Fatalf("backoff deadline %d,%v; want within [now, now+Initial]", at, ok)
				}
				acts = h.fire()
				wantKinds(t, acts, core.ActOpen)
				if acts[0].Conn != 2 {
					t.Errorf("new open on conn %d, want 2", acts[0].Conn)
				}
				if sends := sendOffsets(h.reopened(core.NoOffset)); !slices.Equal(sends, []int64{0, 1}) {
					t.Errorf("resent %v after an ack timeout, want [0 1]", sends)
				}
			})
		}
	}
}

// TestRuleAckTimerSuspendedDuringGrace pins §5.4: during an ephemeral
// close-signal grace pause the ack timer is suspended: acks may still arrive
// (and complete records) but the only timer is the end of the grace, which
// rotates without consuming the retry budget.
func TestRuleAckTimerSuspendedDuringGrace(t *testing.T) {
	tests := []struct {
		name     string
		dur      time.Duration
		hasDur   bool
		grace    time.Duration // expected grace
		ackAt    time.Duration // when a partial ack arrives (0: none)
		ingestAt time.Duration // when a record is ingested during the pause (0: none)
	}{
		{name: "no ack during pause", dur: 2 * time.Minute, hasDur: true, grace: 2 * time.Minute},
		{name: "partial ack during pause", dur: 2 * time.Minute, hasDur: true, grace: 2 * time.Minute, ackAt: 20 * time.Second},
		{name: "partial ack, server grace capped by MaxGrace", dur: time.Hour, hasDur: true, grace: 5 * time.Minute, ackAt: 30 * time.Second},
		{name: "partial ack, no server duration", grace: 5 * time.Minute, ackAt: 50 * time.Second},
		{name: "ingest during pause", dur: 2 * time.Minute, hasDur: true, grace: 2 * time.Minute, ingestAt: 15 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startEphemeral(t, func(c *core.Config) { c.Retries = 0 })
			h.ingest(3)
			h.sendAll() // t=0: ack deadline 60s
			h.advance(10 * time.Second)
			if acts := h.closeSignal(tc.dur, tc.hasDur); len(acts) != 0 {
				t.Fatalf("close signal with records in flight: %s, want a pause", kindsString(acts))
			}
			h.wantState(fsm.Paused)
			graceEnd := core.Instant(10 * time.Second).Add(tc.grace)
			h.wantDeadline(graceEnd, true)
			if tc.ackAt > 0 {
				h.now = core.Instant(tc.ackAt)
				acts := h.ack(0)
				wantKinds(t, acts, core.ActComplete)
				h.wantState(fsm.Paused)
				h.wantDeadline(graceEnd, true)
			}
			if tc.ingestAt > 0 {
				h.now = core.Instant(tc.ingestAt)
				if o := h.ingest(1); o[0] != 3 {
					t.Errorf("ingest during pause: offset %d, want 3", o[0])
				}
				if acts := h.poll(); len(acts) != 0 {
					t.Errorf("sent during the pause: %s", kindsString(acts))
				}
			}
			// Past every ack deadline that could have been armed, before
			// the grace ends: nothing happens.
			for _, at := range []time.Duration{60 * time.Second, tc.ackAt + 60*time.Second} {
				if core.Instant(at) < graceEnd && core.Instant(at) >= h.now {
					h.now = core.Instant(at)
					if acts := h.tick(); len(acts) != 0 {
						t.Errorf("tick at %s during the grace: %s", time.Duration(h.now), kindsString(acts))
					}
					h.wantState(fsm.Paused)
				}
			}
			acts := h.fire()
			if h.now != graceEnd {
				t.Errorf("fired at %s, want the grace end %s", time.Duration(h.now), time.Duration(graceEnd))
			}
			wantKinds(t, acts, core.ActAbort, core.ActOpen)
			h.wantState(fsm.Opening)
			// Rotation costs no budget (Retries is 0): the new create works.
			h.created("e-2")
			h.wantState(fsm.Open)
		})
	}
}

// ---------------------------------------------------------------------------
// §5.5 Recovery

// TestRuleRecoveryByCode pins §5.5: INVALID_ARGUMENT, UNAUTHENTICATED,
// PERMISSION_DENIED, OUT_OF_RANGE, UNIMPLEMENTED and NOT_FOUND fail the
// stream (keeping the cause); every other code, OK (a clean end of stream)
// included, reconnects after a backoff.
func TestRuleRecoveryByCode(t *testing.T) {
	nonRetryable := map[core.Code]bool{
		core.CodeInvalidArgument: true, core.CodeUnauthenticated: true, core.CodePermissionDenied: true,
		core.CodeOutOfRange: true, core.CodeUnimplemented: true, core.CodeNotFound: true,
	}
	var codes []core.Code
	for c := core.CodeOK; c <= core.CodeUnauthenticated; c++ {
		codes = append(codes, c)
	}
	codes = append(codes, core.Code(99))
	for _, kind := range ruleKinds {
		for _, code := range codes {
			t.Run(fmt.Sprintf("%s/%s", kind, code), func(t *testing.T) {
				if code.Retryable() == nonRetryable[code] {
					t.Errorf("%s.Retryable() = %v", code, code.Retryable())
				}
				h := startStream(t, kind, nil)
				h.ingest(2)
				h.sendAll()
				acts := h.drop(code)
				if nonRetryable[code] {
					h.wantState(fsm.Failed)
					err := h.m.Err()
					var ce *core.ConnectionError
					if !errors.As(err, &ce) || ce.Code != code || ce.Retryable() || !errors.Is(err, errInjected) {
						t.Fatalf("Err %v, want a *ConnectionError %s keeping the transport error", err, code)
					}
					var re *core.RetryError
					if errors.As(err, &re) {
						t.Errorf("non-retryable failure reported as retries exhausted: %v", err)
					}
					wantFailedWith(t, acts, err, 0, 1)
					if got := len(actsOf(acts, core.ActInvalidateCredentials)); got != map[bool]int{true: 1}[code == core.CodeUnauthenticated] {
						t.Errorf("%d ActInvalidateCredentials for %s", got, code)
					}
					h.advance(time.Hour)
					if acts := h.tick(); len(acts) != 0 {
						t.Errorf("after a non-retryable failure: %s", kindsString(acts))
					}
					return
				}
				wantKinds(t, acts, core.ActAbort)
				h.wantState(fsm.Recovering)
				if h.m.Err() != nil || h.m.Conn() != 0 {
					t.Errorf("recovering: Err %v conn %d", h.m.Err(), h.m.Conn())
				}
				acts = h.fire()
				wantKinds(t, acts, core.ActOpen)
				if sends := sendOffsets(h.reopened(core.NoOffset)); !slices.Equal(sends, []int64{0, 1}) {
					t.Errorf("resent %v, want [0 1]", sends)
				}
			})
		}
	}
}

// failWays are the ways a connection attempt can fail without durable
// progress, used to exhaust a retry budget.
var failWays = []struct {
	name string
	fail func(h *harness) // from Opening (after an ActOpen), fail the attempt
}{
	{"fails while opening", func(h *harness) { h.drop(core.CodeUnavailable) }},
	{"open timeout", func(h *harness) { h.fire() }},
	{"opens then ends cleanly", func(h *harness) {
		h.report(h.reopened(core.NoOffset))
		h.drop(core.CodeOK)
	}},
	{"opens then ack timeout", func(h *harness) {
		h.report(h.reopened(core.NoOffset))
		h.fire()
	}},
}

// TestRuleRecoveryBudget pins §5.5: one recovery episode makes at most
// Config.Retries reconnects without durable progress, then fails with a
// *RetryError (ErrRetriesExhausted, and the last *ConnectionError).
func TestRuleRecoveryBudget(t *testing.T) {
	for _, kind := range ruleKinds {
		for _, way := range failWays {
			for _, retries := range []int{0, 1, 3} {
				t.Run(fmt.Sprintf("%s/%s/retries=%d", kind, way.name, retries), func(t *testing.T) {
					h := startStream(t, kind, func(c *core.Config) { c.Retries = retries })
					h.ingest(2)
					h.sendAll()
					h.drop(core.CodeUnavailable) // starts the episode
					for i := 1; i <= retries; i++ {
						h.wantState(fsm.Recovering)
						acts := h.fire()
						wantKinds(t, acts, core.ActOpen)
						way.fail(h)
					}
					h.wantState(fsm.Failed)
					err := h.m.Err()
					var re *core.RetryError
					var ce *core.ConnectionError
					if !errors.As(err, &re) || !errors.Is(err, core.ErrRetriesExhausted) || !errors.As(err, &ce) {
						t.Fatalf("Err %v, want a *RetryError with a *ConnectionError", err)
					}
					if re.Attempts != retries {
						t.Errorf("RetryError.Attempts %d, want %d", re.Attempts, retries)
					}
					if opens := len(actsOf(h.log, core.ActOpen)); opens != 1+retries {
						t.Errorf("%d opens, want %d", opens, 1+retries)
					}
					fails := actsOf(h.log, core.ActFail)
					if len(fails) != 1 || fails[0].Offset != 0 || fails[0].Last != 1 {
						t.Errorf("fails %+v, want 0..1", fails)
					}
					h.checkOnce()
				})
			}
		}
	}
}

// TestRuleRecoveryBudgetResetByProgress pins §5.5: durable progress (an ack,
// or a reconciliation on resume) resets the retry budget; a reconnect that
// makes none does not.
func TestRuleRecoveryBudgetResetByProgress(t *testing.T) {
	const retries = 2
	tests := []struct {
		name     string
		kind     core.Kind
		progress func(h *harness) // on a fresh Opening connection: open and make progress
	}{
		{"ack/persistent", core.Persistent, func(h *harness) {
			h.report(h.resumed(core.NoOffset))
			h.ack(0)
		}},
		{"ack/ephemeral", core.Ephemeral, func(h *harness) {
			h.report(h.created("e-x"))
			h.ack(0)
		}},
		{"reconciliation", core.Persistent, func(h *harness) {
			acts := h.resumed(0)
			if c := actsOf(acts, core.ActComplete); len(c) != 1 || !c[0].Reconciled {
				h.t.Fatalf("resume at 0: %+v, want a reconciliation", acts)
			}
			h.report(acts)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startStream(t, tc.kind, func(c *core.Config) { c.Retries = retries })
			h.ingest(3)
			h.sendAll()
			h.drop(core.CodeUnavailable)
			for range retries - 1 {
				h.fire()
				h.drop(core.CodeUnavailable)
			}
			h.fire() // the last attempt of the budget...
			tc.progress(h)
			if h.m.AckFloor() != 0 {
				t.Fatalf("AckFloor %d after progress, want 0", h.m.AckFloor())
			}
			// ...made progress: a full budget again.
			h.drop(core.CodeUnavailable)
			for range retries {
				h.wantState(fsm.Recovering)
				h.fire()
				h.drop(core.CodeUnavailable)
			}
			h.wantState(fsm.Failed)
			var re *core.RetryError
			if !errors.As(h.m.Err(), &re) || re.Attempts != retries {
				t.Fatalf("Err %v, want a *RetryError after %d attempts", h.m.Err(), retries)
			}
			// No progress is not a reset: the same number of opens again.
			if opens := len(actsOf(h.log, core.ActOpen)); opens != 1+2*retries {
				t.Errorf("%d opens, want %d", opens, 1+2*retries)
			}
			h.checkOnce()
		})
	}
}

// TestRuleRotationCostsNoBudget pins §5.5 (Decision): a server rotation
// (close_stream_signal) does not consume the retry budget.
func TestRuleRotationCostsNoBudget(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, func(c *core.Config) {
				c.Retries = 1
				c.MaxGrace = 0 // ephemeral: rotate at once
			})
			h.ingest(1)
			h.sendAll()
			for i := range 5 {
				acts := h.closeSignal(time.Minute, true)
				wantKinds(t, acts, core.ActAbort, core.ActOpen)
				if kind == core.Persistent && (!acts[1].Resume || acts[1].StreamID != "s-1") {
					t.Errorf("rotation %d: %+v, want a resume of s-1", i, acts[1])
				}
				h.report(h.reopened(core.NoOffset))
			}
			// The whole budget is still there.
			acts := h.drop(core.CodeUnavailable)
			wantKinds(t, acts, core.ActAbort)
			h.wantState(fsm.Recovering)
			h.fire()
			h.drop(core.CodeUnavailable)
			h.wantState(fsm.Failed)
			var re *core.RetryError
			if !errors.As(h.m.Err(), &re) || re.Attempts != 1 {
				t.Errorf("Err %v, want a *RetryError after 1 attempt", h.m.Err())
			}
		})
	}
}

// TestRuleConnectionEndDuringPause pins §4/§5.5: when the server ends a
// rotated ephemeral session during the grace pause, a retryable end is the
// rotation itself (reconnect at once, no budget), a non-retryable one fails.
func TestRuleConnectionEndDuringPause(t *testing.T) {
	for _, code := range []core.Code{core.CodeOK, core.CodeUnavailable, core.CodeInternal, core.CodeInvalidArgument, core.CodeNotFound} {
		t.Run(code.String(), func(t *testing.T) {
			h := startEphemeral(t, func(c *core.Config) { c.Retries = 0 })
			h.ingest(2)
			h.sendAll()
			h.closeSignal(time.Minute, true)
			h.wantState(fsm.Paused)
			acts := h.drop(code)
			if !code.Retryable() {
				h.wantState(fsm.Failed)
				wantFailedWith(t, acts, h.m.Err(), 0, 1)
				return
			}
			wantKinds(t, acts, core.ActAbort, core.ActOpen)
			if sends := sendOffsets(h.created("e-2")); !slices.Equal(sends, []int64{0, 1}) {
				t.Errorf("resent %v, want [0 1]", sends)
			}
			h.wantState(fsm.Open)
		})
	}
}

// backoffDelays opens a stream with the given seed, fails n consecutive
// attempts while opening, and returns the backoff delay before each
// reconnect.
func backoffDelays(t *testing.T, kind core.Kind, seed uint64, b core.Backoff, n int) []time.Duration {
	t.Helper()
	cfg := ruleConfig(kind)
	cfg.Seed, cfg.Backoff, cfg.Retries = seed, b, n
	h := newHarness(t, cfg)
	h.open()
	var out []time.Duration
	for range n {
		h.drop(core.CodeUnavailable)
		at, ok := h.m.NextDeadline()
		if !ok {
			t.Fatal("no backoff deadline")
		}
		out = append(out, at.Sub(h.now))
		h.fire()
	}
	return out
}

// TestRuleBackoffFullJitter pins §5.5 (Decision): the delay before attempt n
// is drawn from [0, min(Max, Initial*Multiplier^(n-1))]; the ceiling grows
// and is capped.
func TestRuleBackoffFullJitter(t *testing.T) {
	tests := []struct {
		name string
		b    core.Backoff
	}{
		{"x2 cap 5s", core.Backoff{Initial: time.Second, Max: 5 * time.Second, Multiplier: 2}},
		{"x1 constant", core.Backoff{Initial: 300 * time.Millisecond, Max: time.Second, Multiplier: 1}},
		{"x3 cap 1m", core.Backoff{Initial: 100 * time.Millisecond, Max: time.Minute, Multiplier: 3}},
		{"initial == max", core.Backoff{Initial: 2 * time.Second, Max: 2 * time.Second, Multiplier: 10}},
	}
	const attempts, seeds = 8, 200
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ceil := make([]time.Duration, attempts)
			c := float64(tc.b.Initial)
			for i := range ceil {
				ceil[i] = min(tc.b.Max, time.Duration(c))
				c *= tc.b.Multiplier
			}
			maxSeen := make([]time.Duration, attempts)
			for seed := uint64(1); seed <= seeds; seed++ {
				for i, d := range backoffDelays(t, core.Ephemeral, seed, tc.b, attempts) {
					if d < 0 || d > ceil[i] {
						t.Fatalf("seed %d attempt %d: delay %s outside [0, %s]", seed, i+1, d, ceil[i])
					}
					maxSeen[i] = max(maxSeen[i], d)
				}
			}
			// Full jitter over 200 seeds reaches the top half of every ceiling.
			for i := range maxSeen {
				if maxSeen[i] <= ceil[i]/2 {
					t.Errorf("attempt %d: max delay %s over %d seeds, ceiling %s: not full jitter", i+1, maxSeen[i], seeds, ceil[i])
				}
			}
		})
	}
}

// runTrace drives a fixed scenario with failures and returns every action and
// deadline as text.
func runTrace(t *testing.T, kind core.Kind, seed uint64) []string {
	t.Helper()
	cfg := ruleConfig(kind)
	cfg.Seed, cfg.Retries = seed, 10
	h := newHarness(t, cfg)
	var out []string
	rec := func(acts []core.Action) {
		at, ok := h.m.NextDeadline()
		out = append(out, fmt.Sprintf("%+v deadline=%d,%v", acts, at, ok))
	}
	rec(h.open())
	rec(h.drop(core.CodeUnavailable))
	rec(h.fire())
	rec(h.reopened(core.NoOffset))
	h.ingest(3)
	acts := h.sendAll()
	rec(acts)
	rec(h.ack(0))
	for range 4 {
		rec(h.drop(core.CodeInternal))
		rec(h.fire())
	}
	rec(h.reopened(0))
	return out
}

// TestRuleBackoffDeterministicBySeed pins §5.5 and §6.5: the same seed and
// inputs give identical outputs; different seeds give different jitter.
func TestRuleBackoffDeterministicBySeed(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			a, b := runTrace(t, kind, 42), runTrace(t, kind, 42)
			if !slices.Equal(a, b) {
				t.Errorf("same seed, different runs:\n%v\n%v", a, b)
			}
			if c := runTrace(t, kind, 43); slices.Equal(a, c) {
				t.Errorf("seeds 42 and 43 gave identical runs")
			}
		})
	}
}

// TestRuleUnauthenticated pins §5.5: an auth rejection invalidates cached
// credentials; at the very first open it is retried once, immediately (no
// backoff, no budget); otherwise it fails the stream.
func TestRuleUnauthenticated(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String()+"/first open retried once", func(t *testing.T) {
			h := newHarness(t, ruleConfig(kind))
			h.now = 1000
			h.open()
			acts := h.drop(core.CodeUnauthenticated)
			if len(actsOf(acts, core.ActInvalidateCredentials)) != 1 || len(actsOf(acts, core.ActAbort)) != 1 {
				t.Fatalf("first rejection: %s, want abort + invalidate", kindsString(acts))
			}
			h.wantState(fsm.Recovering)
			h.wantDeadline(1000, true) // immediately
			acts = h.tick()
			wantKinds(t, acts, core.ActOpen)
			// A second rejection at the first open is terminal.
			acts = h.drop(core.CodeUnauthenticated)
			h.wantState(fsm.Failed)
			if len(actsOf(acts, core.ActInvalidateCredentials)) != 1 {
				t.Errorf("second rejection: %s, want invalidate", kindsString(acts))
			}
			var ce *core.ConnectionError
			if !errors.As(h.m.Err(), &ce) || ce.Code != core.CodeUnauthenticated {
				t.Errorf("Err %v, want UNAUTHENTICATED", h.m.Err())
			}
			wantFailedWith(t, acts, h.m.Err(), 0, -1)
		})
		t.Run(kind.String()+"/first open retry succeeds without using the budget", func(t *testing.T) {
			h := newHarness(t, func() core.Config { c := ruleConfig(kind); c.Retries = 0; return c }())
			h.open()
			h.drop(core.CodeUnauthenticated)
			h.tick()
			h.reopened(core.NoOffset)
			h.wantState(fsm.Open)
		})
		t.Run(kind.String()+"/after open", func(t *testing.T) {
			h := startStream(t, kind, nil)
			h.ingest(1)
			h.sendAll()
			acts := h.drop(core.CodeUnauthenticated)
			h.wantState(fsm.Failed)
			if len(actsOf(acts, core.ActInvalidateCredentials)) != 1 {
				t.Errorf("%s, want invalidate", kindsString(acts))
			}
			if i, j := slices.Index(actKinds(acts), core.ActInvalidateCredentials), slices.Index(actKinds(acts), core.ActFinished); i > j {
				t.Errorf("invalidate after finished: %s", kindsString(acts))
			}
			wantFailedWith(t, acts, h.m.Err(), 0, 0)
		})
	}
}

// TestRuleDisableRecovery pins §5.5: with DisableRecovery a retryable failure
// is terminal, with the failure itself (not a *RetryError) as the cause.
func TestRuleDisableRecovery(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(h *harness)
		code    core.Code
		wantErr error
	}{
		{"unavailable", func(h *harness) { h.drop(core.CodeUnavailable) }, core.CodeUnavailable, errInjected},
		{"clean end of stream", func(h *harness) { h.drop(core.CodeOK) }, core.CodeOK, errInjected},
		{"ack timeout", func(h *harness) { h.fire() }, core.CodeDeadlineExceeded, core.ErrAckTimeout},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				h := startStream(t, kind, func(c *core.Config) { c.DisableRecovery = true })
				h.ingest(2)
				h.sendAll()
				tc.fail(h)
				h.wantState(fsm.Failed)
				var ce *core.ConnectionError
				var re *core.RetryError
				if !errors.As(h.m.Err(), &ce) || ce.Code != tc.code || !errors.Is(h.m.Err(), tc.wantErr) || errors.As(h.m.Err(), &re) {
					t.Errorf("Err %v, want a *ConnectionError %s wrapping %v", h.m.Err(), tc.code, tc.wantErr)
				}
				if len(actsOf(h.log, core.ActOpen)) != 1 {
					t.Errorf("reconnected with recovery disabled: %s", kindsString(h.log))
				}
				if err := h.m.Close(h.now); err != nil || h.m.State() != fsm.Failed {
					t.Errorf("Close after failure: %v, state %s", err, h.m.State())
				}
			})
		}
	}
	t.Run("open timeout at first open", func(t *testing.T) {
		cfg := ruleConfig(core.Persistent)
		cfg.DisableRecovery = true
		h := newHarness(t, cfg)
		h.open()
		h.fire()
		h.wantState(fsm.Failed)
		if !errors.Is(h.m.Err(), core.ErrOpenTimeout) {
			t.Errorf("Err %v, want ErrOpenTimeout", h.m.Err())
		}
	})
}

// TestRulePersistentReconnectIdentity pins §4/§5.5/§6.4: before the first
// open succeeds every attempt is a create carrying the same RequestID; after
// it, every reconnect (failure or rotation) is a resume by the known id.
// Ephemeral reconnects are always creates.
func TestRulePersistentReconnectIdentity(t *testing.T) {
	tests := []struct {
		name      string
		kind      core.Kind
		requestID string
		streamID  string // Config.StreamID: fresh-process resume
	}{
		{name: "persistent explicit request id", kind: core.Persistent, requestID: "req-fixed"},
		{name: "persistent fresh-process resume", kind: core.Persistent, streamID: "s-old"},
		{name: "ephemeral", kind: core.Ephemeral},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ruleConfig(tc.kind)
			cfg.Retries = 10
			cfg.ClientRequestID, cfg.StreamID = tc.requestID, tc.streamID
			h := newHarness(t, cfg)
			rid := h.m.ClientRequestID()
			if tc.kind == core.Persistent && tc.streamID == "" && rid != tc.requestID {
				t.Fatalf("ClientRequestID %q (configured %q)", rid, tc.requestID)
			}
			h.open()
			h.drop(core.CodeUnavailable) // lost while opening
			h.fire()
			h.fire() // open timeout
			h.fire()
			switch {
			case tc.streamID != "":
				h.resumed(3)
			case tc.kind == core.Persistent:
				h.created("s-9")
			default:
				h.created("e-1")
			}
			h.wantState(fsm.Open)
			h.ingest(1)
			h.report(h.poll())
			h.reconnect()
			h.reopened(h.m.AckFloor())
			h.closeSignal(0, true) // rotation
			h.reopened(h.m.AckFloor())
			opens := actsOf(h.log, core.ActOpen)
			if len(opens) != 5 {
				t.Fatalf("%d opens, want 5", len(opens))
			}
			for i, a := range opens {
				if a.Conn != core.ConnID(i+1) {
					t.Errorf("open %d on conn %d", i, a.Conn)
				}
				switch {
				case tc.kind == core.Ephemeral:
					if a.Resume || a.RequestID != "" {
						t.Errorf("ephemeral open %d: %+v, want a plain create", i, a)
					}
				case tc.streamID != "":
					if !a.Resume || a.StreamID != tc.streamID {
						t.Errorf("open %d: %+v, want a resume of %s", i, a, tc.streamID)
					}
				case i < 3:
					if a.Resume || a.RequestID != rid {
						t.Errorf("open %d before the first response: %+v, want a create with request id %q", i, a, rid)
					}
				default:
					if !a.Resume || a.StreamID != "s-9" {
						t.Errorf("open %d after the first response: %+v, want a resume of s-9", i, a)
					}
				}
			}
		})
	}
	t.Run("no request id for a persistent create", func(t *testing.T) {
		cfg := ruleConfig(core.Persistent)
		cfg.ClientRequestID = ""
		var ce *core.ConfigError
		if _, err := core.New(cfg); !errors.As(err, &ce) || ce.Field != "ClientRequestID" {
			t.Fatalf("New without ClientRequestID: %v, want a ConfigError naming it", err)
		}
	})
}

// ---------------------------------------------------------------------------
// §5.6 Backpressure

// TestRuleBackpressureWindow pins §5.6: the window is bounded by calls and by
// bytes; a full window returns ErrWindowFull and changes nothing; completions
// free space.
func TestRuleBackpressureWindow(t *testing.T) {
	tests := []struct {
		name     string
		calls    int
		bytes    int64
		perCall  int64
		accept   []int // sizes accepted in order
		refuse   int   // size then refused
		afterAck int   // size accepted once offset 0 is acked
	}{
		{name: "by calls", calls: 3, bytes: 1 << 20, perCall: 1 << 10, accept: []int{1, 1, 1}, refuse: 1, afterAck: 1},
		{name: "by bytes", calls: 100, bytes: 20, perCall: 20, accept: []int{8, 8}, refuse: 5, afterAck: 8},
		{name: "by bytes, exact fit", calls: 100, bytes: 20, perCall: 20, accept: []int{10, 10}, refuse: 1, afterAck: 10},
		{name: "empty records count as calls", calls: 2, bytes: 10, perCall: 10, accept: []int{0, 0}, refuse: 0, afterAck: 0},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			for _, batch := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/batch=%v", kind, tc.name, batch)
				t.Run(name, func(t *testing.T) {
					h := startStream(t, kind, func(c *core.Config) {
						c.MaxInflightCalls, c.MaxInflightBytes, c.MaxCallBytes = tc.calls, tc.bytes, tc.perCall
					})
					ingest := func(size int) (int64, error) {
						if batch && size > 0 {
							half := size / 2
							return h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{make([]byte, half), make([]byte, size-half)})
						}
						return h.m.IngestRecord(h.now, core.RecordJSON, make([]byte, size))
					}
					for i, size := range tc.accept {
						if o, err := ingest(size); err != nil || o != int64(i) {
							t.Fatalf("ingest %d (%d bytes): %d, %v", i, size, o, err)
						}
					}
					h.report(h.poll())
					before := h.snapshot()
					for range 3 {
						if o, err := ingest(tc.refuse); !errors.Is(err, core.ErrWindowFull) || o != core.NoOffset {
							t.Fatalf("over the window: %d, %v; want NoOffset, ErrWindowFull", o, err)
						}
						h.unchanged(before)
					}
					h.ack(0)
					if o, err := ingest(tc.afterAck); err != nil || o != int64(len(tc.accept)) {
						t.Errorf("after an ack: %d, %v; want %d", o, err, len(tc.accept))
					}
					h.invariant()
				})
			}
		}
	}
}

// TestRuleCallTooLarge pins §5.6: a call larger than MaxCallBytes, each
// record counted with its framing (core.FramedSize), is refused with a
// *LimitError (ErrCallTooLarge) before anything is queued.
func TestRuleCallTooLarge(t *testing.T) {
	tests := []struct {
		name  string
		batch [][]byte
	}{
		{"single one over", [][]byte{make([]byte, 9)}},                                                      // 1+1+9
		{"single over by its framing", [][]byte{make([]byte, 10)}},                                          // its payload is the limit
		{"batch over in sum", [][]byte{make([]byte, 1), make([]byte, 1), make([]byte, 1), make([]byte, 1)}}, // 4 bytes of payload, 12 as sent
		{"batch of empty records", [][]byte{{}, {}, {}, {}, {}, {}}},                                        // 12 as sent
		{"single far over", [][]byte{make([]byte, 1<<20)}},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				h := startStream(t, kind, func(c *core.Config) { c.MaxCallBytes = 10; c.MaxInflightBytes = 100 })
				h.ingest(1)
				h.report(h.poll())
				before := h.snapshot()
				var o int64
				var err error
				if len(tc.batch) == 1 {
					o, err = h.m.IngestRecord(h.now, core.RecordJSON, tc.batch[0])
				} else {
					o, err = h.m.IngestBatch(h.now, core.RecordJSON, tc.batch)
				}
				var le *core.LimitError
				if o != core.NoOffset || !errors.Is(err, core.ErrCallTooLarge) || !errors.As(err, &le) {
					t.Fatalf("ingest: %d, %v; want NoOffset, *LimitError", o, err)
				}
				var size int64
				for _, r := range tc.batch {
					size += 2 + int64(len(r)) // a 1-byte tag, a 1-byte length below 128
				}
				if len(tc.batch[0]) == 1<<20 {
					size = 1<<20 + 4 // a 3-byte length
				}
				if le.Max != 10 || le.Got != size || !strings.Contains(err.Error(), "10") {
					t.Errorf("LimitError{Max: %d, Got: %d} %q, want {10, %d}", le.Max, le.Got, err, size)
				}
				h.unchanged(before)
				// Exactly at the limit is fine, one record or a batch.
				if o, err := h.m.IngestRecord(h.now, core.RecordJSON, make([]byte, 8)); err != nil || o != 1 {
					t.Errorf("ingest at the limit: %d, %v", o, err)
				}
				if o, err := h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{make([]byte, 1), make([]byte, 1), make([]byte, 2)}); err != nil || o != 2 {
					t.Errorf("batch at the limit: %d, %v", o, err)
				}
			})
		}
	}
}

// TestRuleIngestWhileRecovering pins §5.6: ingest is accepted while the
// stream recovers (recovering, reopening, paused), until the window is full;
// nothing is sent until a connection is open again.
func TestRuleIngestWhileRecovering(t *testing.T) {
	tests := []struct {
		name  string
		kind  core.Kind
		into  func(h *harness)
		state fsm.State
		back  func(h *harness) []core.Action // back to open: returns the sends
	}{
		{"recovering/persistent", core.Persistent, func(h *harness) { h.drop(core.CodeUnavailable) }, fsm.Recovering,
			func(h *harness) []core.Action { h.fire(); return h.resumed(core.NoOffset) }},
		{"recovering/ephemeral", core.Ephemeral, func(h *harness) { h.drop(core.CodeUnavailable) }, fsm.Recovering,
			func(h *harness) []core.Action { h.fire(); return h.created("e-2") }},
		{"reopening/persistent", core.Persistent, func(h *harness) { h.reconnect() }, fsm.Opening,
			func(h *harness) []core.Action { return h.resumed(core.NoOffset) }},
		{"paused/ephemeral", core.Ephemeral, func(h *harness) { h.closeSignal(time.Minute, true) }, fsm.Paused,
			func(h *harness) []core.Action { h.fire(); return h.created("e-2") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startStream(t, tc.kind, func(c *core.Config) { c.MaxInflightCalls = 4 })
			h.ingest(2)
			h.report(h.poll())
			tc.into(h)
			h.wantState(tc.state)
			if got := h.ingest(2); !slices.Equal(got, []int64{2, 3}) {
				t.Errorf("offsets %v, want [2 3]", got)
			}
			if acts := actsOf(h.poll(), core.ActSend); len(acts) != 0 {
				t.Errorf("sent while %s: %v", tc.state, sendOffsets(acts))
			}
			before := h.snapshot()
			if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")); !errors.Is(err, core.ErrWindowFull) {
				t.Errorf("fifth call: %v, want ErrWindowFull", err)
			}
			h.unchanged(before)
			if sends := sendOffsets(tc.back(h)); !slices.Equal(sends, []int64{0, 1, 2, 3}) {
				t.Errorf("sends after reopening %v, want [0 1 2 3]", sends)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// §5.7 Flush / wait

// TestRuleFlushAndDurable pins §5.7: LastAssigned is the flush target (the
// offset last assigned when flush is called); Durable(o) holds once o is
// acked or reconciled; after a fresh-process resume with W, Durable(o) holds
// at once for every o <= W.
func TestRuleFlushAndDurable(t *testing.T) {
	durable := func(t *testing.T, h *harness, upTo, last int64) {
		t.Helper()
		for o := int64(-1); o <= last+1; o++ {
			if h.m.Durable(o) != (o <= upTo) {
				t.Errorf("Durable(%d) = %v with floor %d", o, h.m.Durable(o), upTo)
			}
		}
	}
	for _, kind := range ruleKinds {
		t.Run(kind.String()+"/ack", func(t *testing.T) {
			h := startStream(t, kind, nil)
			if h.m.LastAssigned() != core.NoOffset || !h.m.Durable(h.m.LastAssigned()) {
				t.Errorf("empty stream: flush target %d should be durable at once", h.m.LastAssigned())
			}
			h.ingest(3)
			target := h.m.LastAssigned()
			if target != 2 {
				t.Fatalf("LastAssigned %d, want 2", target)
			}
			durable(t, h, -1, 3)
			h.sendAll()
			h.ack(1)
			durable(t, h, 1, 3)
			h.ingest(1) // a later call does not move an earlier flush's target
			if h.m.Durable(target) {
				t.Errorf("flush target %d durable too early", target)
			}
			h.ack(2)
			if !h.m.Durable(target) || h.m.Durable(h.m.LastAssigned()) {
				t.Errorf("after ack 2: Durable(%d)=%v Durable(%d)=%v", target, h.m.Durable(target), h.m.LastAssigned(), h.m.Durable(h.m.LastAssigned()))
			}
		})
	}
	t.Run("persistent/reconciliation", func(t *testing.T) {
		h := startPersistent(t, nil)
		h.ingest(4)
		h.sendAll()
		h.reconnect()
		durable(t, h, -1, 4)
		h.resumed(2)
		durable(t, h, 2, 4)
	})
	for _, w := range []int64{-1, 0, 41} {
		t.Run(fmt.Sprintf("fresh resume W=%d", w), func(t *testing.T) {
			h := resumeFresh(t, core.Response{Offset: w, HasOffset: true}, nil)
			if h.m.LastAssigned() != w {
				t.Errorf("LastAssigned %d, want %d", h.m.LastAssigned(), w)
			}
			durable(t, h, w, w+2)
		})
	}
}

// ---------------------------------------------------------------------------
// §5.8 Terminal failure

// TestRuleTerminalFailureSticky pins §5.8: failure is sticky; every later
// ingest returns an error wrapping ErrStreamFailed and the cause; Unacked
// returns the same records, grouped as ingested, on every call; nothing more
// is emitted.
func TestRuleTerminalFailureSticky(t *testing.T) {
	causes := []struct {
		name  string
		cause func(h *harness)
		is    error
	}{
		{"protocol violation", func(h *harness) { h.ack(99) }, core.ErrProtocol},
		{"non-retryable code", func(h *harness) { h.drop(core.CodePermissionDenied) }, errInjected},
		{"retries exhausted", func(h *harness) { h.drop(core.CodeUnavailable) }, core.ErrRetriesExhausted},
		{"close timeout", func(h *harness) {
			if err := h.m.Close(h.now); err != nil {
				h.t.Fatal(err)
			}
			h.advance(time.Hour)
			h.m.Tick(h.now) // only the close timeout is due first
			h.poll()
		}, core.ErrCloseTimeout},
	}
	for _, kind := range ruleKinds {
		for _, c := range causes {
			t.Run(kind.String()+"/"+c.name, func(t *testing.T) {
				h := startStream(t, kind, func(cfg *core.Config) {
					cfg.Retries = 0
					cfg.AckTimeout = 2 * time.Hour
				})
				h.ingest(1)
				b, err := h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{[]byte("a"), []byte("b")})
				if err != nil || b != 1 {
					t.Fatalf("batch: %d, %v", b, err)
				}
				h.ingest(1)
				h.sendAll()
				h.ack(0)
				c.cause(h)
				h.wantState(fsm.Failed)
				cause := h.m.Err()
				if !errors.Is(cause, c.is) {
					t.Fatalf("Err %v, want %v", cause, c.is)
				}
				want := []core.Batch{
					{Offset: 1, Records: [][]byte{[]byte("a"), []byte("b")}},
					{Offset: 2, Records: [][]byte{ruleRecord(1)}},
				}
				for range 3 {
					if got := h.m.Unacked(nil); !reflect.DeepEqual(got, want) {
						t.Errorf("Unacked %v, want %v", got, want)
					}
				}
				if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("x")); !errors.Is(err, core.ErrStreamFailed) || !errors.Is(err, c.is) {
					t.Errorf("IngestRecord after failure: %v, want ErrStreamFailed wrapping %v", err, c.is)
				}
				if _, err := h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{[]byte("x")}); !errors.Is(err, core.ErrStreamFailed) {
					t.Errorf("IngestBatch after failure: %v", err)
				}
				if err := h.m.Open(h.now); !errors.Is(err, core.ErrAlreadyOpened) {
					t.Errorf("Open after failure: %v", err)
				}
				before := h.snapshot()
				if err := h.m.Close(h.now); err != nil {
					t.Errorf("Close after failure: %v", err)
				}
				h.advance(24 * time.Hour)
				if err := h.m.Tick(h.now); err != nil {
					t.Errorf("Tick after failure: %v", err)
				}
				h.unchanged(before)
				if h.m.Err() != cause || !h.m.Failed(1) || !h.m.Failed(2) || h.m.Failed(0) || !h.m.Durable(0) {
					t.Errorf("after failure: Err %v Failed(0..2) %v %v %v", h.m.Err(), h.m.Failed(0), h.m.Failed(1), h.m.Failed(2))
				}
				if n := len(actsOf(h.log, core.ActFinished)); n != 1 {
					t.Errorf("%d ActFinished, want 1", n)
				}
				h.checkOnce()
			})
		}
	}
}

// TestRuleNeverCompletedTwice pins §5.8: every accepted record is completed
// once or failed once, in offset order, never both and never twice: not by
// an ack and a reconciliation, not by a late ack from an old connection.
func TestRuleNeverCompletedTwice(t *testing.T) {
	tests := []struct {
		name string
		end  func(h *harness)
	}{
		{"ends failed", func(h *harness) { h.ack(1 << 30) }},
		{"ends closed", func(h *harness) {
			h.m.Close(h.now)
			h.report(h.poll())
			h.ack(h.m.MaxSent())
			h.drop(core.CodeOK)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startPersistent(t, nil)
			h.ingest(6)
			h.sendAll()
			h.ack(1)
			old := h.m.Conn()
			h.reconnect()
			acts := h.resumed(3) // 2..3 reconciled; 4..5 resent
			h.report(acts)
			// Late news from the old connection is ignored: no double
			// completion of 2..5.
			if err := h.m.Receive(h.now, old, core.Response{Kind: core.RespAck, Offset: 5, HasOffset: true}); err != nil {
				t.Fatal(err)
			}
			if acts := h.poll(); len(acts) != 0 {
				t.Errorf("stale ack emitted %s", kindsString(acts))
			}
			h.ack(3) // duplicate of the watermark
			h.ack(4)
			h.ingest(2)
			h.report(h.poll())
			tc.end(h)
			h.wantState(map[bool]fsm.State{true: fsm.Failed, false: fsm.Closed}[tc.name == "ends failed"])
			h.checkOnce()
			// Every accepted offset was reported exactly once.
			covered := map[int64]bool{}
			for _, a := range h.log {
				if a.Kind == core.ActComplete || a.Kind == core.ActFail {
					if a.Offset < 0 || a.Last > h.m.LastAssigned() {
						t.Fatalf("%s range %d..%d outside the accepted offsets 0..%d", a.Kind, a.Offset, a.Last, h.m.LastAssigned())
					}
					for o := a.Offset; o <= a.Last; o++ {
						covered[o] = true
					}
				}
			}
			for o := int64(0); o <= h.m.LastAssigned(); o++ {
				if !covered[o] {
					t.Errorf("offset %d never completed nor failed", o)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// §5.9 Close

// TestRuleClose pins §5.9: Close is idempotent; it flushes what was accepted,
// then half-closes (ActCloseSend); the connection's end, whatever its code,
// closes the stream (ActAbort, ActFinished with a nil error), and an
// UNAUTHENTICATED end also invalidates the credentials (§5.5); ingest after
// Close is ErrClosed.
func TestRuleClose(t *testing.T) {
	codes := []core.Code{core.CodeOK, core.CodeUnavailable, core.CodeInternal, core.CodeInvalidArgument, core.CodeUnauthenticated, core.CodeCanceled}
	for _, kind := range ruleKinds {
		for _, pending := range []int{0, 3} {
			for _, code := range codes {
				t.Run(fmt.Sprintf("%s/pending=%d/end=%s", kind, pending, code), func(t *testing.T) {
					h := startStream(t, kind, nil)
					h.ingest(pending)
					h.report(h.poll())
					if err := h.m.Close(h.now); err != nil {
						t.Fatal(err)
					}
					acts := h.poll()
					if pending > 0 {
						if len(acts) != 0 {
							t.Fatalf("Close with pending records: %s, want to wait for acks", kindsString(acts))
						}
						if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")); !errors.Is(err, core.ErrClosed) {
							t.Errorf("ingest while flushing: %v, want ErrClosed", err)
						}
						flushing := h.snapshot()
						h.advance(time.Second)
						if err := h.m.Close(h.now); err != nil { // idempotent while flushing
							t.Errorf("Close while flushing: %v", err)
						}
						h.unchanged(flushing)
						h.ack(int64(pending - 2))
						if h.m.State() == fsm.Closing {
							t.Fatalf("closing before everything is durable")
						}
						acts = h.ack(int64(pending - 1))
						wantKinds(t, acts, core.ActComplete, core.ActCloseSend)
					} else {
						wantKinds(t, acts, core.ActCloseSend)
					}
					if len(acts) > 0 && acts[len(acts)-1].Conn != h.m.Conn() {
						t.Errorf("close-send on conn %d, current %d", acts[len(acts)-1].Conn, h.m.Conn())
					}
					h.wantState(fsm.Closing)
					h.wantDeadline(core.Instant(0).Add(5*time.Minute), true) // only the close timeout
					before := h.snapshot()
					for range 2 {
						h.advance(time.Minute) // a later Close must not move the close timeout
						if err := h.m.Close(h.now); err != nil {
							t.Errorf("second Close: %v", err)
						}
						h.unchanged(before)
					}
					if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")); !errors.Is(err, core.ErrClosed) {
						t.Errorf("ingest while closing: %v, want ErrClosed", err)
					}
					conn := h.m.Conn()
					acts = h.drop(code)
					if code == core.CodeUnauthenticated {
						// The close still succeeds, and the rejected
						// credentials are dropped (§5.5).
						wantKinds(t, acts, core.ActAbort, core.ActInvalidateCredentials, core.ActFinished)
					} else {
						wantKinds(t, acts, core.ActAbort, core.ActFinished)
					}
					if acts[0].Conn != conn || acts[len(acts)-1].Err != nil {
						t.Errorf("end: %+v", acts)
					}
					h.wantState(fsm.Closed)
					if h.m.Err() != nil {
						t.Errorf("Err %v after a clean close", h.m.Err())
					}
					if err := h.m.Close(h.now); err != nil {
						t.Errorf("Close after closed: %v", err)
					}
					if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")); !errors.Is(err, core.ErrClosed) {
						t.Errorf("ingest after close: %v, want ErrClosed", err)
					}
					h.wantDeadline(0, false)
					if acts := h.poll(); len(acts) != 0 {
						t.Errorf("after close: %s", kindsString(acts))
					}
					h.checkOnce()
				})
			}
		}
	}
}

// TestRuleCloseStates pins §5.9 in every other state: on an idle or
// connection-less stream with nothing pending Close ends at once; with
// pending records it keeps recovering and flushes; after a failure it
// succeeds and the stream stays failed.
func TestRuleCloseStates(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) *harness
		want  []core.ActionKind
		state fsm.State
		then  func(t *testing.T, h *harness) // optional continuation
	}{
		{
			name:  "idle, never opened",
			setup: func(t *testing.T) *harness { return newHarness(t, ruleConfig(core.Persistent)) },
			want:  []core.ActionKind{core.ActFinished}, state: fsm.Closed,
		},
		{
			name: "opening first connection",
			setup: func(t *testing.T) *harness {
				h := newHarness(t, ruleConfig(core.Persistent))
				h.open()
				return h
			},
			want: []core.ActionKind{core.ActAbort, core.ActFinished}, state: fsm.Closed,
		},
		{
			name: "recovering, nothing pending",
			setup: func(t *testing.T) *harness {
				h := startEphemeral(t, nil)
				h.drop(core.CodeUnavailable)
				return h
			},
			want: []core.ActionKind{core.ActFinished}, state: fsm.Closed,
		},
		{
			name: "paused, nothing pending",
			setup: func(t *testing.T) *harness {
				h := startEphemeral(t, nil)
				h.ingest(1)
				h.report(h.poll())
				h.closeSignal(time.Minute, true)
				h.ack(0) // drains: the pause ends at once
				return h
			},
			want: []core.ActionKind{core.ActAbort, core.ActFinished}, state: fsm.Closed,
		},
		{
			name: "recovering with pending records: flushes after reconnect",
			setup: func(t *testing.T) *harness {
				h := startPersistent(t, nil)
				h.ingest(2)
				h.report(h.poll())
				h.drop(core.CodeUnavailable)
				return h
			},
			want: nil, state: fsm.Recovering,
			then: func(t *testing.T, h *harness) {
				h.fire()
				acts := h.resumed(0) // 0 reconciled, 1 resent
				h.report(acts)
				if h.m.State() != fsm.Open {
					t.Fatalf("state %s", h.m.State())
				}
				wantKinds(t, h.ack(1), core.ActComplete, core.ActCloseSend)
				wantKinds(t, h.drop(core.CodeOK), core.ActAbort, core.ActFinished)
				h.wantState(fsm.Closed)
			},
		},
		{
			name: "after failure",
			setup: func(t *testing.T) *harness {
				h := startPersistent(t, nil)
				h.ingest(1)
				h.drop(core.CodeNotFound)
				return h
			},
			want: nil, state: fsm.Failed,
			then: func(t *testing.T, h *harness) {
				var ce *core.ConnectionError
				if !errors.As(h.m.Err(), &ce) || ce.Code != core.CodeNotFound {
					t.Errorf("Err %v, want NOT_FOUND kept", h.m.Err())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.setup(t)
			h.poll()
			if err := h.m.Close(h.now); err != nil {
				t.Fatalf("Close: %v", err)
			}
			acts := h.poll()
			wantKinds(t, acts, tc.want...)
			if len(acts) > 0 && acts[len(acts)-1].Kind == core.ActFinished && acts[len(acts)-1].Err != nil {
				t.Errorf("clean close finished with %v", acts[len(acts)-1].Err)
			}
			h.wantState(tc.state)
			if err := h.m.Close(h.now); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if tc.state == fsm.Closed {
				if acts := h.poll(); len(acts) != 0 {
					t.Errorf("second Close emitted %s", kindsString(acts))
				}
				h.wantDeadline(0, false)
				if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")); !errors.Is(err, core.ErrClosed) {
					t.Errorf("ingest after close: %v, want ErrClosed", err)
				}
			}
			if tc.then != nil {
				tc.then(t, h)
			}
			h.checkOnce()
		})
	}
}

// TestRuleCloseTimeout pins §5.9: Close waits at most CloseTimeout; records
// still not durable then fail with ErrCloseTimeout (and stay retrievable). A
// half-closed stream the server never ends is closed at the timeout.
func TestRuleCloseTimeout(t *testing.T) {
	const closeTO = 5 * time.Minute
	tests := []struct {
		name    string
		pending int
		acked   int64 // ack before the timeout (-1: none)
	}{
		{"nothing acked", 3, -1},
		{"partly acked", 3, 0},
		{"all acked, server never ends the stream", 3, 2},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				h := startStream(t, kind, func(c *core.Config) {
					c.CloseTimeout = closeTO
					c.AckTimeout = time.Hour
				})
				h.ingest(tc.pending)
				h.report(h.poll())
				h.advance(time.Second)
				start := h.now
				h.m.Close(h.now)
				if tc.acked >= 0 {
					h.ack(tc.acked)
				}
				h.now = start.Add(closeTO) - 1
				if acts := h.tick(); len(acts) != 0 {
					t.Fatalf("before the close timeout: %s", kindsString(acts))
				}
				h.now = start.Add(closeTO)
				acts := h.tick()
				if tc.acked == int64(tc.pending-1) {
					wantKinds(t, acts, core.ActAbort, core.ActFinished)
					h.wantState(fsm.Closed)
					return
				}
				h.wantState(fsm.Failed)
				if !errors.Is(h.m.Err(), core.ErrCloseTimeout) {
					t.Errorf("Err %v, want ErrCloseTimeout", h.m.Err())
				}
				wantFailedWith(t, acts, h.m.Err(), tc.acked+1, int64(tc.pending-1))
				if got, want := h.unackedOffsets(), offsetRange(tc.acked+1, int64(tc.pending-1)); !slices.Equal(got, want) {
					t.Errorf("Unacked %v, want %v", got, want)
				}
				if err := h.m.Close(h.now); err != nil {
					t.Errorf("Close after the timeout: %v", err)
				}
				h.checkOnce()
			})
		}
	}
}

// ---------------------------------------------------------------------------
// Misuse (doc.go "Failures"): typed errors, nothing changed.

// misuseStream is a persistent stream at t=100s: 0..3 accepted and
// emitted, 0..1 reported sent, 0 acked.
func misuseStream(t *testing.T) *harness {
	h := startPersistent(t, nil)
	h.now = core.Instant(100 * time.Second)
	h.ingest(4)
	h.poll()
	h.sent(0, 1)
	h.ack(0)
	return h
}

// TestRuleMisuseTimeBackwards pins doc.go: an input whose Instant is earlier
// than a previous one returns ErrTimeBackwards and changes nothing, on every
// input method.
func TestRuleMisuseTimeBackwards(t *testing.T) {
	tests := []struct {
		name string
		call func(h *harness, at core.Instant) error
	}{
		{"Open", func(h *harness, at core.Instant) error { return h.m.Open(at) }},
		{"IngestRecord", func(h *harness, at core.Instant) error {
			_, err := h.m.IngestRecord(at, core.RecordJSON, []byte("{}"))
			return err
		}},
		{"IngestBatch", func(h *harness, at core.Instant) error {
			_, err := h.m.IngestBatch(at, core.RecordJSON, [][]byte{[]byte("{}"), []byte("{}")})
			return err
		}},
		{"IngestBatch empty", func(h *harness, at core.Instant) error {
			_, err := h.m.IngestBatch(at, core.RecordJSON, nil)
			return err
		}},
		{"Sent", func(h *harness, at core.Instant) error { return h.m.Sent(at, h.m.Conn(), 2) }},
		{"Receive ack", func(h *harness, at core.Instant) error {
			return h.m.Receive(at, h.m.Conn(), core.Response{Kind: core.RespAck, Offset: 1, HasOffset: true})
		}},
		{"Receive violation", func(h *harness, at core.Instant) error {
			return h.m.Receive(at, h.m.Conn(), core.Response{Kind: core.RespAck})
		}},
		{"ConnectionFailed", func(h *harness, at core.Instant) error {
			return h.m.ConnectionFailed(at, h.m.Conn(), core.CodeInvalidArgument, nil)
		}},
		{"Tick", func(h *harness, at core.Instant) error { return h.m.Tick(at) }},
		{"Close", func(h *harness, at core.Instant) error { return h.m.Close(at) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := misuseStream(t)
			before := h.snapshot()
			for _, at := range []core.Instant{h.now - 1, 0, math.MinInt64} {
				if err := tc.call(h, at); !errors.Is(err, core.ErrTimeBackwards) {
					t.Errorf("%s at %d: %v, want ErrTimeBackwards", tc.name, at, err)
				}
				h.unchanged(before)
			}
			// The same call at the current time is not refused for its time.
			if err := tc.call(h, h.now); errors.Is(err, core.ErrTimeBackwards) {
				t.Errorf("%s at now: %v", tc.name, err)
			}
		})
	}
}

// TestRuleMisuseUnknownSend pins doc.go and Sent: a send outcome for an
// offset never emitted on the connection, or out of order, or twice, is
// ErrUnknownSend and changes nothing (in particular MaxSent).
func TestRuleMisuseUnknownSend(t *testing.T) {
	// Setup: 0..2 emitted, 0 reported and acked, 3 accepted but not emitted;
	// 1 reported too unless skip1.
	tests := []struct {
		name   string
		skip1  bool
		offset int64
	}{
		{"out of order (2 before 1)", true, 2},
		{"already reported", false, 1},
		{"acked and reported", false, 0},
		{"accepted, never emitted", false, 3},
		{"never assigned", false, 10},
		{"negative", false, -1},
		{"MaxInt64", false, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startPersistent(t, nil)
			h.ingest(3)
			h.poll() // 0..2 emitted
			h.sent(0)
			h.ack(0)
			h.m.IngestRecord(h.now, core.RecordJSON, []byte("{}")) // 3, not emitted
			if !tc.skip1 {
				h.sent(1)
			}
			before := h.snapshot()
			err := h.m.Sent(h.now, h.m.Conn(), tc.offset)
			if !errors.Is(err, core.ErrUnknownSend) {
				t.Fatalf("Sent(%d): %v, want ErrUnknownSend", tc.offset, err)
			}
			if after := h.snapshot(); !reflect.DeepEqual(before, after) {
				t.Errorf("changed:\nbefore %+v\nafter  %+v", before, after)
			}
			h.wantState(fsm.Open)
		})
	}
	t.Run("before the open response", func(t *testing.T) {
		h := startPersistent(t, nil)
		h.ingest(2)
		h.report(h.poll())
		h.reconnect()
		before := h.snapshot()
		if err := h.m.Sent(h.now, h.m.Conn(), 0); !errors.Is(err, core.ErrUnknownSend) {
			t.Errorf("Sent on an opening connection: %v, want ErrUnknownSend", err)
		}
		h.unchanged(before)
	})
}

// TestRuleMisuseUnknownConn pins eventFrom: an event naming a connection the
// machine never issued is ErrUnknownConn and changes nothing.
func TestRuleMisuseUnknownConn(t *testing.T) {
	for _, conn := range []core.ConnID{0, 2, 99} {
		for _, ev := range []string{"Sent", "Receive", "ConnectionFailed"} {
			t.Run(fmt.Sprintf("%s/conn=%d", ev, conn), func(t *testing.T) {
				h := misuseStream(t)
				before := h.snapshot()
				var err error
				switch ev {
				case "Sent":
					err = h.m.Sent(h.now, conn, 2)
				case "Receive":
					err = h.m.Receive(h.now, conn, core.Response{Kind: core.RespAck, Offset: 1, HasOffset: true})
				default:
					err = h.m.ConnectionFailed(h.now, conn, core.CodeInvalidArgument, nil)
				}
				if !errors.Is(err, core.ErrUnknownConn) {
					t.Errorf("%s on conn %d: %v, want ErrUnknownConn", ev, conn, err)
				}
				h.unchanged(before)
			})
		}
	}
	t.Run("before Open", func(t *testing.T) {
		h := newHarness(t, ruleConfig(core.Ephemeral))
		if err := h.m.Receive(0, 1, core.Response{Kind: core.RespCreate, StreamID: "x", HasStreamID: true}); !errors.Is(err, core.ErrUnknownConn) {
			t.Errorf("Receive before Open: %v", err)
		}
		h.wantState(fsm.Idle)
	})
}

// TestRuleStaleConnectionIgnored pins doc.go: events from a connection the
// machine has already left are ignored: nil error, nothing changes.
func TestRuleStaleConnectionIgnored(t *testing.T) {
	events := []struct {
		name string
		call func(h *harness, conn core.ConnID) error
	}{
		{"Sent", func(h *harness, c core.ConnID) error { return h.m.Sent(h.now, c, 2) }},
		{"valid ack", func(h *harness, c core.ConnID) error {
			return h.m.Receive(h.now, c, core.Response{Kind: core.RespAck, Offset: 1, HasOffset: true})
		}},
		{"violating ack", func(h *harness, c core.ConnID) error {
			return h.m.Receive(h.now, c, core.Response{Kind: core.RespAck, Offset: 1 << 40, HasOffset: true})
		}},
		{"missing ack", func(h *harness, c core.ConnID) error { return h.m.Receive(h.now, c, core.Response{Kind: core.RespAck}) }},
		{"close signal", func(h *harness, c core.ConnID) error {
			return h.m.Receive(h.now, c, core.Response{Kind: core.RespCloseSignal})
		}},
		{"open response", func(h *harness, c core.ConnID) error {
			return h.m.Receive(h.now, c, core.Response{Kind: core.RespResume, Offset: 2, HasOffset: true})
		}},
		{"non-retryable end", func(h *harness, c core.ConnID) error {
			return h.m.ConnectionFailed(h.now, c, core.CodeInvalidArgument, nil)
		}},
		{"retryable end", func(h *harness, c core.ConnID) error {
			return h.m.ConnectionFailed(h.now, c, core.CodeUnavailable, nil)
		}},
	}
	states := []struct {
		name string
		into func(h *harness)
	}{
		{"recovering", func(h *harness) { h.drop(core.CodeUnavailable) }},
		{"reopening", func(h *harness) { h.reconnect() }},
		{"reopened", func(h *harness) { h.reconnect(); h.resumed(0) }},
		{"rotated", func(h *harness) { h.closeSignal(0, false); h.resumed(0) }},
		{"failed", func(h *harness) { h.drop(core.CodePermissionDenied) }},
	}
	for _, st := range states {
		for _, ev := range events {
			t.Run(st.name+"/"+ev.name, func(t *testing.T) {
				h := startPersistent(t, nil)
				h.ingest(3)
				h.poll()
				h.sent(0, 1)
				h.ack(0)
				old := h.m.Conn()
				st.into(h)
				h.advance(time.Second)
				before := h.snapshot()
				if err := ev.call(h, old); err != nil {
					t.Errorf("stale %s on conn %d: %v, want nil", ev.name, old, err)
				}
				h.unchanged(before)
			})
		}
	}
}

// TestRuleMisuseOpenTwice pins Open: a second Open is ErrAlreadyOpened and
// changes nothing, including the machine's clock (doc.go: misuse changes
// nothing).
func TestRuleMisuseOpenTwice(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := newHarness(t, ruleConfig(kind))
			h.open()
			before := h.snapshot()
			if err := h.m.Open(h.now); !errors.Is(err, core.ErrAlreadyOpened) {
				t.Errorf("second Open: %v", err)
			}
			h.unchanged(before)
			if err := h.m.Open(h.now.Add(10 * time.Second)); !errors.Is(err, core.ErrAlreadyOpened) {
				t.Errorf("later Open: %v", err)
			}
			h.unchanged(before)
			// The refused Open at +10s must not have moved the clock.
			if err := h.m.Receive(h.now.Add(5*time.Second), 1, core.Response{Kind: core.RespCreate, StreamID: "s", HasStreamID: true}); err != nil {
				t.Errorf("Receive at +5s after a refused Open at +10s: %v", err)
			}
		})
	}
}

// TestRuleMisuseIngest pins Ingest*: before the first open succeeds
// (ErrNotOpened) and with the wrong record type (ErrRecordType) a call is
// refused and changes nothing.
func TestRuleMisuseIngest(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) *harness
		rt    core.RecordType
		want  error
	}{
		{"idle", func(t *testing.T) *harness { return newHarness(t, ruleConfig(core.Ephemeral)) }, core.RecordJSON, core.ErrNotOpened},
		{"opening", func(t *testing.T) *harness {
			h := newHarness(t, ruleConfig(core.Persistent))
			h.open()
			return h
		}, core.RecordJSON, core.ErrNotOpened},
		{"first open failed, recovering", func(t *testing.T) *harness {
			h := newHarness(t, ruleConfig(core.Persistent))
			h.open()
			h.drop(core.CodeUnavailable)
			return h
		}, core.RecordJSON, core.ErrNotOpened},
		{"fresh resume, opening", func(t *testing.T) *harness {
			cfg := ruleConfig(core.Persistent)
			cfg.StreamID = "s-old"
			h := newHarness(t, cfg)
			h.open()
			return h
		}, core.RecordJSON, core.ErrNotOpened},
		{"proto into json", func(t *testing.T) *harness { return startEphemeral(t, nil) }, core.RecordProto, core.ErrRecordType},
		{"unspecified into json", func(t *testing.T) *harness { return startPersistent(t, nil) }, core.RecordUnspecified, core.ErrRecordType},
		{"json into proto", func(t *testing.T) *harness {
			h := startPersistent(t, func(c *core.Config) { c.RecordType = core.RecordProto })
			return h
		}, core.RecordJSON, core.ErrRecordType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.setup(t)
			before := h.snapshot()
			calls := map[string]func() (int64, error){
				"record": func() (int64, error) { return h.m.IngestRecord(h.now, tc.rt, []byte("x")) },
				"batch":  func() (int64, error) { return h.m.IngestBatch(h.now, tc.rt, [][]byte{[]byte("x"), []byte("y")}) },
				"empty":  func() (int64, error) { return h.m.IngestBatch(h.now, tc.rt, nil) },
			}
			for name, call := range calls {
				if o, err := call(); o != core.NoOffset || !errors.Is(err, tc.want) {
					t.Errorf("%s: %d, %v; want NoOffset, %v", name, o, err, tc.want)
				}
				h.unchanged(before)
			}
		})
	}
}

// TestRuleConfigValidation pins Config.Validate: every missing, zero or
// negative limit is refused with a *ConfigError (ErrInvalidConfig) naming
// the field; New returns no machine.
// TestConfigRecordTypes: every record type a stream can carry validates,
// Avro included (its datums are bytes to the core).
func TestConfigRecordTypes(t *testing.T) {
	for _, rt := range []core.RecordType{core.RecordProto, core.RecordJSON, core.RecordAvro} {
		for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
			cfg := core.DefaultConfig(kind, rt)
			cfg.ClientRequestID = "id"
			if err := cfg.Validate(); err != nil {
				t.Errorf("%v %v: %v", kind, rt, err)
			}
		}
	}
}

func TestRuleConfigValidation(t *testing.T) {
	tests := []struct {
		field  string
		mutate func(c *core.Config)
	}{
		{"Kind", func(c *core.Config) { c.Kind = 0 }},
		{"Kind", func(c *core.Config) { c.Kind = 7 }},
		{"RecordType", func(c *core.Config) { c.RecordType = core.RecordUnspecified }},
		{"RecordType", func(c *core.Config) { c.RecordType = 9 }},
		{"StreamID", func(c *core.Config) { c.Kind = core.Ephemeral; c.StreamID = "s" }},
		{"MaxInflightCalls", func(c *core.Config) { c.MaxInflightCalls = 0 }},
		{"MaxInflightCalls", func(c *core.Config) { c.MaxInflightCalls = -1 }},
		{"MaxCallBytes", func(c *core.Config) { c.MaxCallBytes = 0 }},
		{"MaxCallBytes", func(c *core.Config) { c.MaxCallBytes = -1 }},
		{"MaxInflightBytes", func(c *core.Config) { c.MaxInflightBytes = 0 }},
		{"MaxInflightBytes", func(c *core.Config) { c.MaxInflightBytes = -1 }},
		{"MaxInflightBytes", func(c *core.Config) { c.MaxInflightBytes = c.MaxCallBytes - 1 }},
		{"OpenTimeout", func(c *core.Config) { c.OpenTimeout = 0 }},
		{"OpenTimeout", func(c *core.Config) { c.OpenTimeout = -time.Second }},
		{"AckTimeout", func(c *core.Config) { c.AckTimeout = 0 }},
		{"AckTimeout", func(c *core.Config) { c.AckTimeout = -1 }},
		{"CloseTimeout", func(c *core.Config) { c.CloseTimeout = 0 }},
		{"CloseTimeout", func(c *core.Config) { c.CloseTimeout = -1 }},
		{"MaxGrace", func(c *core.Config) { c.MaxGrace = -1 }},
		{"Retries", func(c *core.Config) { c.Retries = -1 }},
		{"Backoff.Initial", func(c *core.Config) { c.Backoff.Initial = 0 }},
		{"Backoff.Initial", func(c *core.Config) { c.Backoff.Initial = -1 }},
		{"Backoff.Max", func(c *core.Config) { c.Backoff.Max = c.Backoff.Initial - 1 }},
		{"Backoff.Max", func(c *core.Config) { c.Backoff.Max = -1 }},
		{"Backoff.Multiplier", func(c *core.Config) { c.Backoff.Multiplier = 0 }},
		{"Backoff.Multiplier", func(c *core.Config) { c.Backoff.Multiplier = -2 }},
		{"Backoff.Multiplier", func(c *core.Config) { c.Backoff.Multiplier = 0.5 }},
		{"Backoff.Multiplier", func(c *core.Config) { c.Backoff.Multiplier = math.NaN() }},
		{"Backoff.Multiplier", func(c *core.Config) { c.Backoff.Multiplier = math.Inf(1) }},
		{"", func(c *core.Config) {}},                                             // valid: defaults
		{"", func(c *core.Config) { c.MaxGrace = 0 }},                             // valid: rotate at once
		{"", func(c *core.Config) { c.Retries = 0 }},                              // valid: no reconnects
		{"", func(c *core.Config) { c.Kind = core.Persistent; c.StreamID = "s" }}, // valid: persistent resume
	}
	for i, tc := range tests {
		for _, kind := range ruleKinds {
			t.Run(fmt.Sprintf("%d/%s/%s", i, kind, tc.field), func(t *testing.T) {
				cfg := core.DefaultConfig(kind, core.RecordJSON)
				if kind == core.Persistent {
					cfg.ClientRequestID = "req"
				}
				tc.mutate(&cfg)
				m, err := core.New(cfg)
				verr := cfg.Validate()
				if tc.field == "" {
					if err != nil || m == nil || verr != nil {
						t.Fatalf("valid config refused: %v", err)
					}
					return
				}
				var ce *core.ConfigError
				if m != nil || !errors.Is(err, core.ErrInvalidConfig) || !errors.As(err, &ce) {
					t.Fatalf("New: %v, %v; want nil, *ConfigError", m, err)
				}
				if ce.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
					t.Errorf("ConfigError.Field %q, want %q (%v)", ce.Field, tc.field, err)
				}
				if !reflect.DeepEqual(verr, err) {
					t.Errorf("Validate %v differs from New %v", verr, err)
				}
			})
		}
	}
}

// TestFramedSize pins the size of a record as an ingest request carries
// it: a tag byte, the length as a varint (one more byte at each power of
// 128) and the record.
func TestFramedSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int64
	}{
		{0, 2}, {1, 3}, {127, 129}, {128, 131}, {16383, 16386}, {16384, 16388},
		{1<<21 - 1, 1<<21 + 3}, {1 << 21, 1<<21 + 5}, {1<<28 - 1, 1<<28 + 4}, {1 << 28, 1<<28 + 6},
	} {
		if got := core.FramedSize(tc.n); got != tc.want {
			t.Errorf("FramedSize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestCallSize pins a call's size as the per-call limit counts it: the sum
// of FramedSize over its records. IngestBatch makes its own pass (payload
// and call size at once), so CallSize, which drivers use, is pinned here.
func TestCallSize(t *testing.T) {
	for _, tc := range []struct {
		lens []int
		want int64
	}{
		{nil, 0}, {[]int{0}, 2}, {[]int{1, 127, 128}, 3 + 129 + 131}, {[]int{16384, 0, 5}, 16388 + 2 + 7},
	} {
		recs := make([][]byte, len(tc.lens))
		for i, n := range tc.lens {
			recs[i] = make([]byte, n)
		}
		if got := core.CallSize(recs); got != tc.want {
			t.Errorf("CallSize(records of %v bytes) = %d, want %d", tc.lens, got, tc.want)
		}
	}
}
