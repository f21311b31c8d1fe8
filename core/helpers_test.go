package core_test

import (
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

// errInjected is the transport error the harness reports with every
// connection failure, so tests can check that causes are kept.
var errInjected = errors.New("injected transport failure")

// ruleConfig is a complete config with small, round timers and backoff so
// that deadlines are easy to compute.
func ruleConfig(kind core.Kind) core.Config {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	if kind == core.Persistent {
		cfg.ClientRequestID = "req-rule"
	}
	cfg.OpenTimeout = 15 * time.Second
	cfg.AckTimeout = 60 * time.Second
	cfg.CloseTimeout = 5 * time.Minute
	cfg.MaxGrace = 5 * time.Minute
	cfg.Retries = 4
	cfg.Backoff = core.Backoff{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2}
	return cfg
}

// ruleRecord is the payload of the i-th record a harness ingests.
func ruleRecord(i int) []byte { return []byte(fmt.Sprintf(`{"i":%d}`, i)) }

// harness drives one Machine in virtual time and keeps a log of every action
// it polled.
type harness struct {
	t   testing.TB
	m   *core.Machine
	now core.Instant
	log []core.Action
	seq int // records ingested so far, for payloads
}

// newHarness returns an idle machine (not opened).
func newHarness(t testing.TB, cfg core.Config) *harness {
	t.Helper()
	m, err := core.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{t: t, m: m}
}

// startPersistent returns a persistent stream created as "s-1" on conn 1.
func startPersistent(t testing.TB, mutate func(*core.Config)) *harness {
	t.Helper()
	cfg := ruleConfig(core.Persistent)
	if mutate != nil {
		mutate(&cfg)
	}
	h := newHarness(t, cfg)
	h.open()
	h.created("s-1")
	h.wantState(fsm.Open)
	return h
}

// startEphemeral returns an ephemeral stream created as "e-1" on conn 1.
func startEphemeral(t testing.TB, mutate func(*core.Config)) *harness {
	t.Helper()
	cfg := ruleConfig(core.Ephemeral)
	if mutate != nil {
		mutate(&cfg)
	}
	h := newHarness(t, cfg)
	h.open()
	h.created("e-1")
	h.wantState(fsm.Open)
	return h
}

// startStream starts a stream of either kind.
func startStream(t testing.TB, kind core.Kind, mutate func(*core.Config)) *harness {
	t.Helper()
	if kind == core.Persistent {
		return startPersistent(t, mutate)
	}
	return startEphemeral(t, mutate)
}

// resumeFresh returns a persistent stream resumed by a fresh process
// (Config.StreamID set) with the given resume response.
func resumeFresh(t testing.TB, r core.Response, mutate func(*core.Config)) *harness {
	t.Helper()
	cfg := ruleConfig(core.Persistent)
	cfg.StreamID = "s-old"
	if mutate != nil {
		mutate(&cfg)
	}
	h := newHarness(t, cfg)
	acts := h.open()
	if len(acts) != 1 || !acts[0].Resume || acts[0].StreamID != "s-old" {
		t.Fatalf("fresh-process open: %+v, want one resume of s-old", acts)
	}
	r.Kind = core.RespResume
	h.receive(r)
	return h
}

// poll drains every action the machine has and logs it.
func (h *harness) poll() []core.Action {
	var out []core.Action
	for acts := h.m.Poll(nil); len(acts) > 0; acts = h.m.Poll(nil) {
		out = append(out, acts...)
	}
	h.log = append(h.log, out...)
	return out
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

// open calls Open and returns the polled actions.
func (h *harness) open() []core.Action {
	h.t.Helper()
	if err := h.m.Open(h.now); err != nil {
		h.t.Fatalf("Open: %v", err)
	}
	return h.poll()
}

// receive feeds r on the current connection; Receive must not return an error.
func (h *harness) receive(r core.Response) []core.Action {
	h.t.Helper()
	if err := h.m.Receive(h.now, h.m.Conn(), r); err != nil {
		h.t.Fatalf("Receive(%+v) on conn %d: %v", r, h.m.Conn(), err)
	}
	return h.poll()
}

func (h *harness) created(id string) []core.Action {
	h.t.Helper()
	return h.receive(core.Response{Kind: core.RespCreate, StreamID: id, HasStreamID: true})
}

// resumed answers the pending resume with watermark w (w == NoOffset is sent
// as an absent watermark).
func (h *harness) resumed(w int64) []core.Action {
	h.t.Helper()
	return h.receive(core.Response{Kind: core.RespResume, Offset: w, HasOffset: w != core.NoOffset})
}

// reopened answers the pending open as it was requested: a resume with
// watermark w, or a create (of "s-1" for a persistent stream, so that its id
// stays the same).
func (h *harness) reopened(w int64) []core.Action {
	h.t.Helper()
	opens := actsOf(h.log, core.ActOpen)
	if len(opens) == 0 || opens[len(opens)-1].Conn != h.m.Conn() {
		h.t.Fatalf("reopened: no pending open on conn %d", h.m.Conn())
	}
	switch {
	case opens[len(opens)-1].Resume:
		return h.resumed(w)
	case h.m.Kind() == core.Persistent:
		return h.created("s-1")
	}
	return h.created(fmt.Sprintf("e-%d", h.m.Conn()))
}

// ingest accepts n single-record calls and returns their offsets.
func (h *harness) ingest(n int) []int64 {
	h.t.Helper()
	var out []int64
	for range n {
		o, err := h.m.IngestRecord(h.now, core.RecordJSON, ruleRecord(h.seq))
		if err != nil {
			h.t.Fatalf("IngestRecord #%d: %v", h.seq, err)
		}
		h.seq++
		out = append(out, o)
	}
	return out
}

// sendAll polls and reports every emitted send as successful, in order.
func (h *harness) sendAll() []core.Action {
	h.t.Helper()
	acts := h.poll()
	for _, a := range acts {
		if a.Kind == core.ActSend {
			if err := h.m.Sent(h.now, a.Conn, a.Offset); err != nil {
				h.t.Fatalf("Sent(%d, %d): %v", a.Conn, a.Offset, err)
			}
		}
	}
	return acts
}

// report reports every ActSend in acts as successful, in order.
func (h *harness) report(acts []core.Action) {
	h.t.Helper()
	for _, a := range actsOf(acts, core.ActSend) {
		if err := h.m.Sent(h.now, a.Conn, a.Offset); err != nil {
			h.t.Fatalf("Sent(%d, %d): %v", a.Conn, a.Offset, err)
		}
	}
}

// sent reports the sends of the given offsets on the current connection.
func (h *harness) sent(offsets ...int64) {
	h.t.Helper()
	for _, o := range offsets {
		if err := h.m.Sent(h.now, h.m.Conn(), o); err != nil {
			h.t.Fatalf("Sent(%d, %d): %v", h.m.Conn(), o, err)
		}
	}
}

// ack feeds a cumulative ack of wire offset w on the current connection.
func (h *harness) ack(w int64) []core.Action {
	h.t.Helper()
	return h.receive(core.Response{Kind: core.RespAck, Offset: w, HasOffset: true})
}

// closeSignal feeds a close_stream_signal with the server's duration.
func (h *harness) closeSignal(d time.Duration, has bool) []core.Action {
	h.t.Helper()
	return h.receive(core.Response{Kind: core.RespCloseSignal, Duration: d, HasDuration: has})
}

// drop reports that the current connection ended with code.
func (h *harness) drop(code core.Code) []core.Action {
	h.t.Helper()
	if err := h.m.ConnectionFailed(h.now, h.m.Conn(), code, errInjected); err != nil {
		h.t.Fatalf("ConnectionFailed(%d, %s): %v", h.m.Conn(), code, err)
	}
	return h.poll()
}

// fire advances to the next deadline (which must be armed) and ticks.
func (h *harness) fire() []core.Action {
	h.t.Helper()
	at, ok := h.m.NextDeadline()
	if !ok {
		h.t.Fatalf("fire: no deadline armed (state %s)", h.m.State())
	}
	if at < h.now {
		h.t.Fatalf("fire: deadline %d is before now %d", at, h.now)
	}
	h.now = at
	return h.tick()
}

// tick ticks at the current time.
func (h *harness) tick() []core.Action {
	h.t.Helper()
	if err := h.m.Tick(h.now); err != nil {
		h.t.Fatalf("Tick(%d): %v", h.now, err)
	}
	return h.poll()
}

// reconnect drops the connection with a retryable code and waits out the
// backoff: the result must end with a new ActOpen.
func (h *harness) reconnect() []core.Action {
	h.t.Helper()
	acts := h.drop(core.CodeUnavailable)
	h.wantState(fsm.Recovering)
	acts = append(acts, h.fire()...)
	if len(acts) == 0 || acts[len(acts)-1].Kind != core.ActOpen {
		h.t.Fatalf("reconnect: %s, want to end with an open", kindsString(acts))
	}
	return acts
}

func (h *harness) wantState(s fsm.State) {
	h.t.Helper()
	if got := h.m.State(); got != s {
		h.t.Fatalf("state %s, want %s (err %v)", got, s, h.m.Err())
	}
}

// wantDeadline checks NextDeadline.
func (h *harness) wantDeadline(at core.Instant, armed bool) {
	h.t.Helper()
	got, ok := h.m.NextDeadline()
	if ok != armed || (armed && got != at) {
		h.t.Errorf("NextDeadline = %d,%v; want %d,%v", got, ok, at, armed)
	}
}

// invariant checks AckFloor <= MaxSent < LastAssigned+1 and MaxSent <= MaxAttempted.
func (h *harness) invariant() {
	h.t.Helper()
	f, s, l, a := h.m.AckFloor(), h.m.MaxSent(), h.m.LastAssigned(), h.m.MaxAttempted()
	if !(f <= s && s < l+1) {
		h.t.Errorf("invariant: AckFloor %d <= MaxSent %d < LastAssigned+1 %d broken", f, s, l+1)
	}
	if s > a && s > f {
		h.t.Errorf("invariant: MaxSent %d above MaxAttempted %d", s, a)
	}
}

// checkOnce checks the whole log: no offset appears in two ActComplete or
// ActFail ranges, ranges are reported in offset order, and ActFinished is
// emitted at most once, as the very last action.
func (h *harness) checkOnce() {
	h.t.Helper()
	// Ranges must be strictly ascending and disjoint, so comparing each
	// with the highest offset reported so far finds every overlap (without
	// walking ranges that may be huge near MaxInt64).
	last, lastKind := int64(math.MinInt64), core.ActionKind(0)
	for i, a := range h.log {
		switch a.Kind {
		case core.ActComplete, core.ActFail:
			if a.Offset > a.Last {
				h.t.Errorf("empty %s range %d..%d", a.Kind, a.Offset, a.Last)
			}
			if a.Offset <= last {
				h.t.Errorf("%s range %d..%d overlaps or precedes %s up to %d: an offset reported twice or out of order",
					a.Kind, a.Offset, a.Last, lastKind, last)
			}
			last, lastKind = max(last, a.Last), a.Kind
		case core.ActFinished:
			if i != len(h.log)-1 {
				h.t.Errorf("ActFinished at %d of %d actions: %s", i, len(h.log), kindsString(h.log))
			}
		}
	}
	// Once the stream is over, every connection it opened ended with
	// exactly one ActAbort (action.go).
	if h.m.State().Terminal() {
		aborts := map[core.ConnID]int{}
		for _, a := range actsOf(h.log, core.ActAbort) {
			aborts[a.Conn]++
		}
		for _, a := range actsOf(h.log, core.ActOpen) {
			if aborts[a.Conn] != 1 {
				h.t.Errorf("conn %d: %d ActAbort, want exactly 1", a.Conn, aborts[a.Conn])
			}
		}
		if len(aborts) != len(actsOf(h.log, core.ActOpen)) {
			h.t.Errorf("aborts %v for %d opens", aborts, len(actsOf(h.log, core.ActOpen)))
		}
	}
}

// snapshot is everything observable about a machine without polling it.
type snapshot struct {
	State        fsm.State
	Err          error
	Conn         core.ConnID
	StreamID     string
	Floor        int64
	MaxSent      int64
	MaxAttempted int64
	LastAssigned int64
	Calls        int
	Bytes        int64
	Deadline     core.Instant
	Armed        bool
	Unacked      []core.Batch
}

func (h *harness) snapshot() snapshot {
	calls, bytes := h.m.Pending()
	at, ok := h.m.NextDeadline()
	return snapshot{
		State: h.m.State(), Err: h.m.Err(), Conn: h.m.Conn(), StreamID: h.m.StreamID(),
		Floor: h.m.AckFloor(), MaxSent: h.m.MaxSent(), MaxAttempted: h.m.MaxAttempted(),
		LastAssigned: h.m.LastAssigned(), Calls: calls, Bytes: bytes,
		Deadline: at, Armed: ok, Unacked: h.m.Unacked(nil),
	}
}

// unchanged checks that the machine still matches before and has no action
// to report.
func (h *harness) unchanged(before snapshot) {
	h.t.Helper()
	if after := h.snapshot(); !reflect.DeepEqual(before, after) {
		h.t.Errorf("machine changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if acts := h.poll(); len(acts) != 0 {
		h.t.Errorf("machine emitted %s, want nothing", kindsString(acts))
	}
}

// unackedOffsets lists the offsets Unacked reports.
func (h *harness) unackedOffsets() []int64 {
	var out []int64
	for _, b := range h.m.Unacked(nil) {
		out = append(out, b.Offset)
	}
	return out
}

// actKinds lists the kinds of acts.
func actKinds(acts []core.Action) []core.ActionKind {
	out := make([]core.ActionKind, 0, len(acts))
	for _, a := range acts {
		out = append(out, a.Kind)
	}
	return out
}

func kindsString(acts []core.Action) string { return fmt.Sprint(actKinds(acts)) }

// wantKinds checks the exact sequence of action kinds.
func wantKinds(t testing.TB, acts []core.Action, want ...core.ActionKind) {
	t.Helper()
	if got := actKinds(acts); !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
}

// actsOf filters acts by kind.
func actsOf(acts []core.Action, k core.ActionKind) []core.Action {
	var out []core.Action
	for _, a := range acts {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

// sendOffsets lists the offsets of the ActSends in acts.
func sendOffsets(acts []core.Action) []int64 {
	var out []int64
	for _, a := range actsOf(acts, core.ActSend) {
		out = append(out, a.Offset)
	}
	return out
}

// offsetRange returns first..last inclusive.
func offsetRange(first, last int64) []int64 {
	var out []int64
	for o := first; o <= last; o++ {
		out = append(out, o)
	}
	return out
}

// wantProtocolError checks err is a *ProtocolError with the given rule,
// offending value and bound.
func wantProtocolError(t testing.TB, err error, rule core.Violation, got, bound int64) {
	t.Helper()
	var pe *core.ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v (%T), want a *ProtocolError", err, err)
	}
	if !errors.Is(err, core.ErrProtocol) {
		t.Errorf("errors.Is(%v, ErrProtocol) = false", err)
	}
	if pe.Rule != rule || pe.Got != got || pe.Bound != bound {
		t.Errorf("ProtocolError{Rule: %v, Got: %d, Bound: %d}, want {%v, %d, %d}", pe.Rule, pe.Got, pe.Bound, rule, got, bound)
	}
	// The message names the rule and, where the rule has them, the values.
	msg := err.Error()
	if !strings.Contains(msg, rule.String()) {
		t.Errorf("message %q does not name the rule %q", msg, rule)
	}
	switch rule {
	case core.AckBelowFloor, core.AckAboveSent, core.WatermarkBelowFloor, core.WatermarkAboveAttempted:
		if !strings.Contains(msg, fmt.Sprint(got)) || !strings.Contains(msg, fmt.Sprint(bound)) {
			t.Errorf("message %q does not give %d and %d", msg, got, bound)
		}
	case core.WatermarkInvalid:
		if !strings.Contains(msg, fmt.Sprint(got)) {
			t.Errorf("message %q does not give %d", msg, got)
		}
	}
}

// wantFailedWith checks that acts is the failure of a stream: an ActFail
// covering exactly pending (if any), then ActFinished, both carrying err.
func wantFailedWith(t testing.TB, acts []core.Action, err error, first, last int64) {
	t.Helper()
	fails := actsOf(acts, core.ActFail)
	if first <= last {
		if len(fails) != 1 || fails[0].Offset != first || fails[0].Last != last || fails[0].Err != err {
			t.Errorf("ActFail %+v, want one range %d..%d with %v", fails, first, last, err)
		}
	} else if len(fails) != 0 {
		t.Errorf("ActFail %+v, want none", fails)
	}
	if len(acts) == 0 || acts[len(acts)-1].Kind != core.ActFinished || acts[len(acts)-1].Err != err {
		t.Errorf("actions %s: want to end with ActFinished carrying %v", kindsString(acts), err)
	}
	if n := len(actsOf(acts, core.ActComplete)) + len(actsOf(acts, core.ActSend)); n != 0 {
		t.Errorf("failure emitted %d completes/sends: %s", n, kindsString(acts))
	}
}
