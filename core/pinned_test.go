package core_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

// This file holds the regression tests of issue 8's two defects and the
// tests that pin behaviours the code has on purpose but no other test
// caught when mutation testing broke them (see internal/tools/mutate).

// TestRegressionBackoffUncapped: a Backoff that Validate accepts never
// panics, at either end of its range. Max = math.MaxInt64 (an "uncapped"
// backoff) used to wrap the jitter draw's bound, ceiling+1, negative and
// panic inside ConnectionFailed or Tick once the ceiling reached Max.
func TestRegressionBackoffUncapped(t *testing.T) {
	const top = time.Duration(math.MaxInt64)
	tests := []struct {
		name    string
		backoff core.Backoff
		retries int
	}{
		{"uncapped 1s x2, 40 retries", core.Backoff{Initial: time.Second, Max: top, Multiplier: 2}, 40},
		{"Initial = Max = MaxInt64", core.Backoff{Initial: top, Max: top, Multiplier: 1}, 3},
		{"MaxInt64, largest multiplier", core.Backoff{Initial: top - 1, Max: top, Multiplier: math.MaxFloat64}, 3},
		{"Max = MaxInt64-1", core.Backoff{Initial: time.Nanosecond, Max: top - 1, Multiplier: 1e300}, 3},
		{"smallest: 1ns, no growth", core.Backoff{Initial: time.Nanosecond, Max: time.Nanosecond, Multiplier: 1}, 40},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				cfg := ruleConfig(kind)
				cfg.Backoff, cfg.Retries = tc.backoff, tc.retries
				if err := cfg.Validate(); err != nil {
					t.Fatalf("Validate: %v, want the config accepted", err)
				}
				h := newHarness(t, cfg)
				h.open()
				for i := range tc.retries {
					// Alternate the two inputs that draw a delay:
					// ConnectionFailed, and Tick firing the open timeout.
					var acts []core.Action
					if i%2 == 0 {
						acts = h.drop(core.CodeUnavailable)
					} else {
						acts = h.fire()
					}
					if h.m.State() == fsm.Opening {
						// A zero delay drawn inside Tick reconnects at once.
						if i%2 == 0 || acts[len(acts)-1].Kind != core.ActOpen {
							t.Fatalf("attempt %d: state opening after %s", i+1, kindsString(acts))
						}
						continue
					}
					h.wantState(fsm.Recovering)
					at, ok := h.m.NextDeadline()
					// The ceiling min(Max, Initial*Multiplier^i), computed
					// apart from the code under test.
					ceiling := float64(tc.backoff.Initial) * math.Pow(tc.backoff.Multiplier, float64(i))
					if !ok || at < h.now || float64(at.Sub(h.now)) > min(ceiling, float64(tc.backoff.Max)) {
						t.Fatalf("attempt %d: backoff deadline %d,%v; want in [now %d, now + %g]", i+1, at, ok, h.now, min(ceiling, float64(tc.backoff.Max)))
					}
					wantKinds(t, h.fire(), core.ActOpen)
				}
				h.drop(core.CodeUnavailable)
				h.wantState(fsm.Failed)
				var re *core.RetryError
				if !errors.As(h.m.Err(), &re) || re.Attempts != tc.retries {
					t.Errorf("Err %v, want a *RetryError after %d attempts", h.m.Err(), tc.retries)
				}
			})
		}
	}
}

// TestRegressionExhaustingIngestStoresTime: the ingest call that finds the
// offset space exhausted acts (it fails the stream), so it stores its time
// like every input that acts (doc.go); an input with an earlier Instant is
// then ErrTimeBackwards.
func TestRegressionExhaustingIngestStoresTime(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := "single"
		if batch {
			name = "batch"
		}
		t.Run(name, func(t *testing.T) {
			h := resumeFresh(t, core.Response{Offset: math.MaxInt64 - 1, HasOffset: true}, nil)
			h.wantState(fsm.Open)
			h.now = 100
			var err error
			if batch {
				_, err = h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{ruleRecord(0)})
			} else {
				_, err = h.m.IngestRecord(h.now, core.RecordJSON, ruleRecord(0))
			}
			if !errors.Is(err, core.ErrOffsetSpaceExhausted) {
				t.Fatalf("ingest at the top of the offset space: %v, want ErrOffsetSpaceExhausted", err)
			}
			h.wantState(fsm.Failed)
			h.poll()
			before := h.snapshot()
			for _, call := range []struct {
				name string
				fn   func(core.Instant) error
			}{
				{"Tick", h.m.Tick},
				{"Close", h.m.Close},
			} {
				if err := call.fn(99); !errors.Is(err, core.ErrTimeBackwards) {
					t.Errorf("%s at 99 after the exhausting ingest at 100: %v, want ErrTimeBackwards", call.name, err)
				}
				h.unchanged(before)
			}
		})
	}
}

// TestPinIdleOpenResetsBudget pins Config.Retries: an open that finds
// nothing pending ends the recovery episode, so an idle stream whose
// connection flaps now and then never exhausts its retries.
func TestPinIdleOpenResetsBudget(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, func(c *core.Config) { c.Retries = 1 })
			h.ingest(1)
			h.sendAll()
			h.ack(0) // durable: nothing pending from here on
			for i := range 5 {
				h.drop(core.CodeUnavailable)
				h.wantState(fsm.Recovering)
				wantKinds(t, h.fire(), core.ActOpen)
				h.reopened(0)
				if h.m.State() != fsm.Open {
					t.Fatalf("flap %d: state %s (err %v), want open", i+1, h.m.State(), h.m.Err())
				}
			}
			// With something pending the open is no reset: the second
			// failure in a row exhausts the single retry.
			h.ingest(1)
			h.sendAll()
			h.drop(core.CodeUnavailable)
			h.fire()
			h.reopened(0)
			h.drop(core.CodeUnavailable)
			h.wantState(fsm.Failed)
			var re *core.RetryError
			if !errors.As(h.m.Err(), &re) || re.Attempts != 1 {
				t.Errorf("Err %v, want a *RetryError after 1 attempt", h.m.Err())
			}
		})
	}
}

// TestPinGraceEndsEarlyWithBufferedCalls pins §4: calls ingested during an
// ephemeral grace pause are buffered, not in flight, so the pause still ends
// early (rotates) once every call that was in flight is acknowledged, and
// the buffered calls go out on the new connection.
func TestPinGraceEndsEarlyWithBufferedCalls(t *testing.T) {
	h := startEphemeral(t, nil)
	h.ingest(2)
	h.sendAll()
	h.closeSignal(time.Minute, true)
	h.wantState(fsm.Paused)
	h.advance(time.Second)
	if o := h.ingest(2); !slices.Equal(o, []int64{2, 3}) {
		t.Fatalf("offsets %v during the pause, want [2 3]", o)
	}
	if acts := h.poll(); len(acts) != 0 {
		t.Fatalf("sent during the pause: %s", kindsString(acts))
	}
	h.advance(time.Second)
	acts := h.ack(1)
	wantKinds(t, acts, core.ActComplete, core.ActAbort, core.ActOpen)
	h.wantState(fsm.Opening)
	if sends := sendOffsets(h.created("e-2")); !slices.Equal(sends, []int64{2, 3}) {
		t.Errorf("sent %v on the new connection, want [2 3]", sends)
	}
}

// TestPinCloseDuringPause pins §4/§5.9: a close requested during a pause
// half-closes the paused connection once everything is durable; with calls
// buffered during the pause it rotates instead once the in-flight calls
// drain (it never half-closes with records still buffered), and closes on
// the new connection.
func TestPinCloseDuringPause(t *testing.T) {
	for _, buffered := range []int{0, 1} {
		t.Run(map[int]string{0: "nothing buffered", 1: "one call buffered"}[buffered], func(t *testing.T) {
			h := startEphemeral(t, nil)
			h.ingest(2)
			h.sendAll()
			h.closeSignal(time.Minute, true)
			h.wantState(fsm.Paused)
			h.ingest(buffered)
			if err := h.m.Close(h.now); err != nil {
				t.Fatal(err)
			}
			if acts := h.poll(); len(acts) != 0 {
				t.Fatalf("Close during the pause: %s, want to wait", kindsString(acts))
			}
			acts := h.ack(1)
			if buffered == 0 {
				wantKinds(t, acts, core.ActComplete, core.ActCloseSend)
				h.wantState(fsm.Closing)
			} else {
				wantKinds(t, acts, core.ActComplete, core.ActAbort, core.ActOpen)
				h.wantState(fsm.Opening)
				h.report(h.created("e-2"))
				wantKinds(t, h.ack(0), core.ActComplete, core.ActCloseSend)
				h.wantState(fsm.Closing)
			}
			h.drop(core.CodeOK)
			h.wantState(fsm.Closed)
			h.checkOnce()
		})
	}
}

// TestPinMaxAttemptedNeverFalls pins §5.3: maxAttempted is the highest
// offset ever handed to any transport, so a new connection that has sent
// fewer calls (one Poll emits at most 256) does not lower it, and a later
// watermark covering everything sent before is still legal.
func TestPinMaxAttemptedNeverFalls(t *testing.T) {
	const n = 600 // more than two Polls' worth of sends
	h := startPersistent(t, nil)
	h.ingest(n)
	h.sendAll()
	if h.m.MaxAttempted() != n-1 {
		t.Fatalf("MaxAttempted %d, want %d", h.m.MaxAttempted(), n-1)
	}
	h.reconnect()
	if err := h.m.Receive(h.now, h.m.Conn(), core.Response{Kind: core.RespResume}); err != nil {
		t.Fatal(err)
	}
	acts := h.m.Poll(nil) // one Poll: only the first sends of the window
	if s := sendOffsets(acts); len(s) == 0 || len(s) >= n || s[0] != 0 {
		t.Fatalf("one Poll after the resume sent %d calls from %v, want a first part from 0", len(s), s[:min(len(s), 1)])
	}
	if h.m.MaxAttempted() != n-1 {
		t.Errorf("MaxAttempted %d after resending a part, want %d", h.m.MaxAttempted(), n-1)
	}
	h.reconnect()
	acts = h.resumed(n - 1)
	h.wantState(fsm.Open)
	if c := actsOf(acts, core.ActComplete); len(c) != 1 || c[0].Offset != 0 || c[0].Last != n-1 || !c[0].Reconciled {
		t.Errorf("resume at %d: completes %+v, want 0..%d reconciled", n-1, c, n-1)
	}
	h.checkOnce()
}

// TestPinInputsStoreTime pins doc.go: Sent, every accepted ingest, Close and
// ConnectionFailed store their Instant, so a later input with an earlier one is
// ErrTimeBackwards.
func TestPinInputsStoreTime(t *testing.T) {
	tests := []struct {
		name string
		act  func(h *harness) error
	}{
		{"Sent", func(h *harness) error { return h.m.Sent(h.now, h.m.Conn(), 0) }},
		{"IngestRecord", func(h *harness) error {
			_, err := h.m.IngestRecord(h.now, core.RecordJSON, ruleRecord(9))
			return err
		}},
		{"IngestBatch", func(h *harness) error {
			_, err := h.m.IngestBatch(h.now, core.RecordJSON, [][]byte{ruleRecord(9), ruleRecord(10)})
			return err
		}},
		{"Close", func(h *harness) error { return h.m.Close(h.now) }},
		{"ConnectionFailed", func(h *harness) error {
			return h.m.ConnectionFailed(h.now, h.m.Conn(), core.CodeUnavailable, errInjected)
		}},
	}
	for _, kind := range ruleKinds {
		for _, tc := range tests {
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				h := startStream(t, kind, nil)
				h.now = 10
				h.ingest(1)
				h.poll() // emits the send of offset 0; Poll takes no time
				h.now = 20
				if err := tc.act(h); err != nil {
					t.Fatalf("%s at 20: %v", tc.name, err)
				}
				h.poll()
				before := h.snapshot()
				if err := h.m.Tick(15); !errors.Is(err, core.ErrTimeBackwards) {
					t.Errorf("Tick at 15 after %s at 20: %v, want ErrTimeBackwards", tc.name, err)
				}
				h.unchanged(before)
			})
		}
	}
}

// TestPinInstantAddSaturates pins Instant.Add at both ends of its range,
// and that a timeout of math.MaxInt64 therefore never fires early.
func TestPinInstantAddSaturates(t *testing.T) {
	const top, bottom = core.Instant(math.MaxInt64), core.Instant(math.MinInt64)
	for _, tc := range []struct {
		i    core.Instant
		d    time.Duration
		want core.Instant
	}{
		{0, 0, 0},
		{5, -3, 2},
		{-5, 3, -2},
		{top, 0, top},
		{top - 5, 5, top},
		{top - 5, 6, top},
		{top, 1, top},
		{1, math.MaxInt64, top},
		{0, math.MaxInt64, top},
		{-1, math.MaxInt64, top - 1},
		{top, -1, top - 1},
		{bottom, 0, bottom},
		{bottom + 5, -5, bottom},
		{bottom + 5, -6, bottom},
		{bottom, -1, bottom},
		{-1, math.MinInt64, bottom},
		{0, math.MinInt64, bottom},
		{1, math.MinInt64, bottom + 1},
		{bottom, 1, bottom + 1},
		{top, math.MinInt64, -1},
	} {
		if got := tc.i.Add(tc.d); got != tc.want {
			t.Errorf("Instant(%d).Add(%d) = %d, want %d", tc.i, tc.d, got, tc.want)
		}
	}

	forever := time.Duration(math.MaxInt64)
	for _, kind := range ruleKinds {
		t.Run(kind.String()+"/AckTimeout", func(t *testing.T) {
			h := startStream(t, kind, func(c *core.Config) { c.AckTimeout = forever })
			h.now = core.Instant(time.Hour)
			h.ingest(1)
			h.sendAll()
			h.wantDeadline(top, true)
			h.now = top - 1
			if acts := h.tick(); len(acts) != 0 {
				t.Errorf("tick before the saturated ack deadline: %s", kindsString(acts))
			}
			h.wantState(fsm.Open)
		})
		t.Run(kind.String()+"/CloseTimeout", func(t *testing.T) {
			h := startStream(t, kind, func(c *core.Config) { c.CloseTimeout = forever })
			h.now = core.Instant(time.Hour)
			h.ingest(1)
			h.sendAll()
			if err := h.m.Close(h.now); err != nil {
				t.Fatal(err)
			}
			h.advance(time.Second)
			if acts := h.tick(); len(acts) != 0 {
				t.Errorf("tick a second after Close: %s", kindsString(acts))
			}
			wantKinds(t, h.ack(0), core.ActComplete, core.ActCloseSend)
			h.wantDeadline(top, true) // only the close timeout is left
			h.now = top - 1
			if acts := h.tick(); len(acts) != 0 {
				t.Errorf("tick before the saturated close deadline: %s", kindsString(acts))
			}
			h.wantState(fsm.Closing)
		})
	}
}

// TestPinAuthRetryDespiteDisableRecovery pins Config.DisableRecovery: an
// UNAUTHENTICATED refusal of the very first open is retried once with fresh
// credentials even with recovery disabled (it is part of opening, not
// recovery); every failure after that is terminal.
func TestPinAuthRetryDespiteDisableRecovery(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := newHarness(t, func() core.Config {
				c := ruleConfig(kind)
				c.DisableRecovery = true
				return c
			}())
			h.open()
			wantKinds(t, h.drop(core.CodeUnauthenticated), core.ActAbort, core.ActInvalidateCredentials)
			h.wantState(fsm.Recovering)
			wantKinds(t, h.tick(), core.ActOpen)
			h.reopened(core.NoOffset)
			h.wantState(fsm.Open)
			h.ingest(1)
			h.sendAll()
			acts := h.drop(core.CodeUnavailable)
			h.wantState(fsm.Failed)
			var ce *core.ConnectionError
			if !errors.As(h.m.Err(), &ce) || ce.Code != core.CodeUnavailable {
				t.Errorf("Err %v, want the UNAVAILABLE *ConnectionError", h.m.Err())
			}
			wantFailedWith(t, acts, h.m.Err(), 0, 0)
		})
	}
}

// TestNames pins every enum's String: each named value has its name, and a
// value past the last one gets the fallback instead of a panic.
func TestNames(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{core.Ephemeral.String(), "ephemeral"},
		{core.Persistent.String(), "persistent"},
		{core.Kind(0).String(), "unknown-kind"},
		{core.RecordProto.String(), "proto"},
		{core.RecordJSON.String(), "json"},
		{core.RecordAvro.String(), "avro"},
		{core.RecordUnspecified.String(), "unspecified"},
		{core.CodeOK.String(), "OK"},
		{core.CodeUnauthenticated.String(), "UNAUTHENTICATED"},
		{core.Code(17).String(), "CODE(17)"},
		{core.ActOpen.String(), "open"},
		{core.ActFinished.String(), "finished"},
		{core.ActionKind(0).String(), "action(?)"},
		{(core.ActFinished + 1).String(), "action(?)"},
		{core.RespEmpty.String(), "empty"},
		{core.RespCloseSignal.String(), "close-signal"},
		{(core.RespCloseSignal + 1).String(), "response(?)"},
		{core.AckMissing.String(), "ack without an offset"},
		{core.UnexpectedMessage.String(), "unexpected message"},
		{core.Violation(0).String(), "violation(0)"},
		{(core.UnexpectedMessage + 1).String(), "violation(10)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}

// TestUnknownSendMessage pins the ErrUnknownSend message: it names the
// offset, the connection, the next offset expected and the emitted bound,
// the facts a driver author needs to find the bug.
func TestUnknownSendMessage(t *testing.T) {
	h := startPersistent(t, nil)
	h.ingest(3)
	h.poll()  // emits 0..2
	h.sent(0) // next expected: 1
	err := h.m.Sent(h.now, h.m.Conn(), 2)
	if !errors.Is(err, core.ErrUnknownSend) {
		t.Fatalf("Sent(2) after Sent(0): %v, want ErrUnknownSend", err)
	}
	want := "offset 2 on connection 1 (next expected 1, emitted below 3)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not contain %q", err, want)
	}
}

// TestPinFailDisarmsBackoff pins fail: a stream that fails while recovering
// (here: its close times out during the backoff) has no timer left, the
// backoff included.
func TestPinFailDisarmsBackoff(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, func(c *core.Config) {
				c.CloseTimeout = time.Nanosecond
				c.Backoff = core.Backoff{Initial: time.Hour, Max: time.Hour, Multiplier: 1}
			})
			h.ingest(1)
			h.sendAll()
			h.drop(core.CodeUnavailable)
			h.wantState(fsm.Recovering)
			if err := h.m.Close(h.now); err != nil {
				t.Fatal(err)
			}
			h.now++
			h.tick()
			h.wantState(fsm.Failed)
			if !errors.Is(h.m.Err(), core.ErrCloseTimeout) {
				t.Fatalf("Err %v, want ErrCloseTimeout", h.m.Err())
			}
			h.wantDeadline(0, false)
			h.checkOnce()
		})
	}
}

// TestPinSendCarriesSize: every ActSend carries its call's payload bytes,
// for a single record and a batch, first time and resent, so that a driver
// can account for what it hands a connection without summing the records
// again.
func TestPinSendCarriesSize(t *testing.T) {
	for _, kind := range ruleKinds {
		t.Run(kind.String(), func(t *testing.T) {
			h := startStream(t, kind, nil)
			if _, err := h.m.IngestRecord(h.now, core.RecordJSON, []byte(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			batch := [][]byte{[]byte(`{}`), []byte(`{"bb":22}`), nil}
			if _, err := h.m.IngestBatch(h.now, core.RecordJSON, batch); err != nil {
				t.Fatal(err)
			}
			check := func(what string, sends []core.Action) {
				t.Helper()
				if len(sends) != 2 {
					t.Fatalf("%s: %d sends, want 2", what, len(sends))
				}
				if got := []int64{sends[0].Size, sends[1].Size}; got[0] != 7 || got[1] != 11 {
					t.Fatalf("%s: sizes %v, want [7 11]", what, got)
				}
			}
			check("first sends", actsOf(h.sendAll(), core.ActSend))
			h.reconnect()
			check("resends", actsOf(h.reopened(core.NoOffset), core.ActSend))
		})
	}
}
