package propertytests

// Rapid state-machine tests: the persistent and the ephemeral core.Machine,
// driven by random inputs (ingest, sends and their outcomes, acks valid and
// not, drops, resumes with watermarks legal and not, close signals, time,
// close), against the model in model_test.go. Every rule checked here is from
// docs/protocol.md §4 and §5.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

func TestPersistentStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkPersistent(t, nil) })
}

func TestEphemeralStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkEphemeral(t, nil) })
}

// checkPersistent runs one random persistent stream against the model. plant,
// when not nil, is called right after core.New (to plant bugs in the
// zbstream_plantbugs build).
func checkPersistent(t *rapid.T, plant func(*core.Machine)) {
	h := smNew(t, core.Persistent, plant)
	h.smRun(t)
}

// checkEphemeral is checkPersistent for an ephemeral stream.
func checkEphemeral(t *rapid.T, plant func(*core.Machine)) {
	h := smNew(t, core.Ephemeral, plant)
	h.smRun(t)
}

// smRun runs random actions. A live stream gets up to four rounds of
// t.Repeat (each about rapid.steps long), so that long lives with many
// reconnects are common; a terminal one gets one more round at most, which
// is enough to check that failure and close are absorbing.
func (h *smHarness) smRun(t *rapid.T) {
	acts := h.smActions()
	for range 4 {
		terminal := h.terminal != ""
		t.Repeat(acts)
		if terminal {
			return
		}
	}
}

// smRange is an ActComplete or ActFail as the harness saw it.
type smRange struct {
	first, last int64
	reconciled  bool
}

// smHarness drives one machine (as a driver and a server would) and keeps
// the model in step with it.
type smHarness struct {
	m     *core.Machine
	md    *model
	cfg   core.Config
	now   core.Instant
	fresh bool // persistent, resumed from a fresh process (Config.StreamID)

	outbox []core.Action // sends emitted on the current connection, not yet reported

	// Per input: what the last smPoll saw.
	stepCompletes []smRange
	stepFails     []smRange
	stepSends     []int64
	stepActs      []core.Action

	skips        int       // actions skipped in a row (see smSkip)
	terminal     fsm.State // "" until ActFinished
	terminalErr  error
	flushTargets []int64
	recSeq       int
}

func smConfig(t *rapid.T, kind core.Kind) core.Config {
	rt := rapid.SampledFrom([]core.RecordType{core.RecordJSON, core.RecordProto}).Draw(t, "recordType")
	cfg := core.DefaultConfig(kind, rt)
	cfg.MaxInflightCalls = rapid.IntRange(1, 6).Draw(t, "maxCalls")
	cfg.MaxCallBytes = int64(rapid.IntRange(2, 14).Draw(t, "maxCallBytes")) // an empty record takes 2
	cfg.MaxInflightBytes = cfg.MaxCallBytes + int64(rapid.IntRange(0, 30).Draw(t, "extraBytes"))
	cfg.OpenTimeout = 3 * time.Second
	cfg.AckTimeout = time.Duration(rapid.IntRange(2, 6).Draw(t, "ackTimeoutS")) * time.Second
	cfg.CloseTimeout = time.Duration(rapid.IntRange(2, 8).Draw(t, "closeTimeoutS")) * time.Second
	cfg.MaxGrace = time.Duration(rapid.IntRange(0, 3).Draw(t, "maxGraceS")) * time.Second
	cfg.Retries = 4
	if smRare(t, "fewRetries", 5) {
		cfg.Retries = rapid.IntRange(0, 2).Draw(t, "retries")
	}
	cfg.DisableRecovery = smRare(t, "disableRecovery", 20)
	cfg.Backoff = core.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 2}
	cfg.Seed = rapid.Uint64().Draw(t, "seed")
	if kind == core.Persistent {
		cfg.ClientRequestID = "req-1"
	}
	return cfg
}

func smNew(t *rapid.T, kind core.Kind, plant func(*core.Machine)) *smHarness {
	cfg := smConfig(t, kind)
	fresh := kind == core.Persistent && rapid.Bool().Draw(t, "freshProcess")
	if fresh {
		cfg.StreamID = "s-fresh"
	}
	m, err := core.New(cfg)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	if plant != nil {
		plant(m)
	}
	h := &smHarness{m: m, md: newModel(kind, cfg), cfg: cfg, fresh: fresh}
	if err := m.Open(h.now); err != nil {
		t.Fatalf("Open: %v", err)
	}
	h.smPoll(t)
	if h.md.conn != 1 {
		t.Fatalf("Open emitted no ActOpen for conn 1: %v", h.stepActs)
	}
	before := h.smSnap()
	if err := m.Open(h.now); !errors.Is(err, core.ErrAlreadyOpened) {
		t.Fatalf("second Open: %v, want ErrAlreadyOpened", err)
	}
	if _, err := m.IngestRecord(h.now, cfg.RecordType, []byte("x")); !errors.Is(err, core.ErrNotOpened) {
		t.Fatalf("ingest before the open response: %v, want ErrNotOpened", err)
	}
	h.smUnchanged(t, "Open again and ingest before open", before)
	return h
}

var smStatHook func(*smHarness, string)

func (h *smHarness) smActions() map[string]func(*rapid.T) {
	// rapid favours the first names (in sorted order) and small draws, so
	// the common, non-destructive actions come first and appear under
	// several names: streams live long enough to get interesting, and the
	// destructive inputs still come often.
	acts := map[string]func(*rapid.T){
		"":                h.smCheck,
		"a_openResponse":  h.smOpenResponse,
		"b_ingest":        h.smIngest,
		"c_deliver":       h.smDeliver,
		"d_ackValid":      h.smAckValid,
		"e_ingestBatch":   h.smIngestBatch,
		"f_deliver":       h.smDeliver,
		"g_ackValid":      h.smAckValid,
		"h_openResponse":  h.smOpenResponse,
		"i_tick":          h.smTick,
		"j_ingestMany":    h.smIngestMany,
		"k_tickDeadline":  h.smTickDeadline,
		"l_flushOrClose":  h.smFlushOrClose,
		"m_signal":        h.smSignal,
		"n_drop":          h.smDrop,
		"o_staleOrMisuse": h.smStaleOrMisuse,
		"p_ack":           h.smAck,
	}
	if smStatHook != nil {
		for k, f := range acts {
			if k != "" {
				acts[k] = func(t *rapid.T) { f(t); smStatHook(h, k) }
			}
		}
	}
	return acts
}

// ---------------------------------------------------------------------------
// Polling and the generic action checks

// smPoll drains the machine's actions and checks each against the model.
func (h *smHarness) smPoll(t *rapid.T) {
	h.stepCompletes, h.stepFails, h.stepSends, h.stepActs = nil, nil, nil, nil
	for range 1000 {
		acts := h.m.Poll(nil)
		if len(acts) == 0 {
			return
		}
		for _, a := range acts {
			h.stepActs = append(h.stepActs, a)
			h.smObserve(t, a)
		}
		// §5.4: the lack-of-ack timer is armed when something enters
		// flight.
		if len(h.stepSends) > 0 && h.m.State() == fsm.Open {
			if _, armed := h.m.NextDeadline(); !armed {
				t.Fatalf("sends %v emitted but no timer armed", h.stepSends)
			}
		}
	}
	t.Fatalf("Poll never ran dry")
}

func (h *smHarness) smObserve(t *rapid.T, a core.Action) {
	md := h.md
	if md.finished {
		t.Fatalf("action %s after ActFinished (failure/close must be absorbing): %+v", a.Kind, a)
	}
	switch a.Kind {
	case core.ActSend, core.ActComplete, core.ActFail:
		if a.Offset < 0 || (a.Kind != core.ActSend && a.Last < 0) || (a.Kind == core.ActSend && a.Wire < 0) {
			t.Fatalf("negative offset in %s: %+v", a.Kind, a)
		}
	}
	switch a.Kind {
	case core.ActOpen:
		if md.conn != 0 {
			t.Fatalf("ActOpen conn %d while conn %d was never aborted", a.Conn, md.conn)
		}
		if a.Conn != md.lastConn+1 {
			t.Fatalf("ActOpen conn %d, want %d", a.Conn, md.lastConn+1)
		}
		wantResume := md.kind == core.Persistent && md.streamID != ""
		if a.Resume != wantResume {
			t.Fatalf("ActOpen resume=%v, want %v (stream id %q)", a.Resume, wantResume, md.streamID)
		}
		if wantResume && a.StreamID != md.streamID {
			t.Fatalf("resume of %q, want %q", a.StreamID, md.streamID)
		}
		if !wantResume && md.kind == core.Persistent && a.RequestID != "req-1" {
			t.Fatalf("persistent create carries request id %q, want req-1", a.RequestID)
		}
		md.lastConn, md.conn = a.Conn, a.Conn
		md.connOpened, md.resumeOpen, md.closeSent = false, a.Resume, false
		md.sendNext, md.maxSent = md.floor+1, md.floor
		h.outbox = nil
	case core.ActSend:
		if a.Conn != md.conn || !md.connOpened || md.closeSent {
			t.Fatalf("ActSend on conn %d (current %d, opened %v, closing %v)", a.Conn, md.conn, md.connOpened, md.closeSent)
		}
		if a.Offset != md.sendNext {
			t.Fatalf("ActSend offset %d, want %d (sends must be in order, from the floor+1 / W+1)", a.Offset, md.sendNext)
		}
		if a.Offset >= md.next {
			t.Fatalf("ActSend offset %d beyond LastAssigned %d", a.Offset, md.next-1)
		}
		wantWire := a.Offset
		if md.kind == core.Ephemeral {
			wantWire = a.Offset - md.base
		}
		if a.Wire != wantWire {
			t.Fatalf("ActSend offset %d wire %d, want %d", a.Offset, a.Wire, wantWire)
		}
		c := md.call(a.Offset)
		single, recs := modelPayloadOf(a)
		if single != c.single || !modelSameRecords(recs, c.records) {
			t.Fatalf("offset %d sent with payload %q (single %v), ingested %q (single %v)", a.Offset, recs, single, c.records, c.single)
		}
		md.sendNext++
		md.maxAttempted = max(md.maxAttempted, a.Offset)
		h.outbox = append(h.outbox, a)
		h.stepSends = append(h.stepSends, a.Offset)
	case core.ActComplete:
		if md.failed {
			t.Fatalf("ActComplete after failure: %+v", a)
		}
		if a.Offset != md.floor+1 || a.Last < a.Offset || a.Last >= md.next {
			t.Fatalf("ActComplete %d..%d, want a range from %d within LastAssigned %d", a.Offset, a.Last, md.floor+1, md.next-1)
		}
		for o := a.Offset; o <= a.Last; o++ {
			c := md.call(o)
			if c.completed != 0 || c.failed != 0 {
				t.Fatalf("offset %d completed again (completed %d, failed %d)", o, c.completed, c.failed)
			}
			c.completed++
		}
		md.floor = a.Last
		h.stepCompletes = append(h.stepCompletes, smRange{a.Offset, a.Last, a.Reconciled})
	case core.ActFail:
		if a.Offset != md.floor+1 || a.Last != md.next-1 {
			t.Fatalf("ActFail %d..%d, want every pending offset %d..%d", a.Offset, a.Last, md.floor+1, md.next-1)
		}
		if a.Err == nil {
			t.Fatalf("ActFail without an error")
		}
		for o := a.Offset; o <= a.Last; o++ {
			c := md.call(o)
			if c.completed != 0 || c.failed != 0 {
				t.Fatalf("offset %d failed after (completed %d, failed %d)", o, c.completed, c.failed)
			}
			c.failed++
		}
		h.stepFails = append(h.stepFails, smRange{first: a.Offset, last: a.Last})
	case core.ActAbort:
		if a.Conn == 0 || a.Conn != md.conn || md.aborted[a.Conn] {
			t.Fatalf("ActAbort conn %d (current %d, already aborted %v)", a.Conn, md.conn, md.aborted[a.Conn])
		}
		md.aborted[a.Conn] = true
		md.conn, md.connOpened, md.closeSent = 0, false, false
		h.outbox = nil
	case core.ActCloseSend:
		if a.Conn != md.conn || md.conn == 0 || !md.closeRequested || md.floor != md.next-1 {
			t.Fatalf("ActCloseSend conn %d (current %d, close requested %v, pending %d..%d)", a.Conn, md.conn, md.closeRequested, md.floor+1, md.next-1)
		}
		md.closeSent = true
	case core.ActInvalidateCredentials:
	case core.ActFinished:
		md.finished = true
		h.terminalErr = a.Err
		if a.Err == nil {
			h.terminal = fsm.Closed
			if md.floor != md.next-1 {
				t.Fatalf("closed cleanly with pending offsets %d..%d", md.floor+1, md.next-1)
			}
		} else {
			h.terminal = fsm.Failed
			md.failed = true
			if md.floor != md.next-1 && len(h.stepFails) == 0 {
				t.Fatalf("failed without failing pending offsets %d..%d", md.floor+1, md.next-1)
			}
		}
		if md.conn != 0 {
			t.Fatalf("finished with conn %d not aborted", md.conn)
		}
	default:
		t.Fatalf("unknown action %+v", a)
	}
}

// smSnapshot is everything observable without Poll.
type smSnapshot struct {
	State        fsm.State
	AckFloor     int64
	MaxSent      int64
	MaxAttempted int64
	LastAssigned int64
	Calls        int
	Bytes        int64
	Conn         core.ConnID
	Err          error
	Deadline     core.Instant
	Armed        bool
	Unacked      []core.Batch
}

func (h *smHarness) smSnap() smSnapshot {
	calls, b := h.m.Pending()
	d, ok := h.m.NextDeadline()
	return smSnapshot{
		State: h.m.State(), AckFloor: h.m.AckFloor(), MaxSent: h.m.MaxSent(), MaxAttempted: h.m.MaxAttempted(),
		LastAssigned: h.m.LastAssigned(), Calls: calls, Bytes: b, Conn: h.m.Conn(), Err: h.m.Err(),
		Deadline: d, Armed: ok, Unacked: h.m.Unacked(nil),
	}
}

// smUnchanged checks that an input changed nothing at all.
func (h *smHarness) smUnchanged(t *rapid.T, what string, before smSnapshot) {
	h.smPoll(t)
	if len(h.stepActs) != 0 {
		t.Fatalf("%s emitted %v, want nothing", what, h.stepActs)
	}
	if after := h.smSnap(); !reflect.DeepEqual(before, after) {
		t.Fatalf("%s changed the machine:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// smWantNoCompletes: inputs that must not complete anything.
func (h *smHarness) smWantNoCompletes(t *rapid.T, what string) {
	if len(h.stepCompletes) != 0 {
		t.Fatalf("%s completed %v", what, h.stepCompletes)
	}
}

// smWantFailedWith checks that the last input failed the stream and that
// the window was left untouched.
func (h *smHarness) smWantFailed(t *rapid.T, what string, before smSnapshot, ok func(error) bool) {
	if h.m.State() != fsm.Failed || h.terminal != fsm.Failed {
		t.Fatalf("%s: state %s, want failed", what, h.m.State())
	}
	if !ok(h.m.Err()) {
		t.Fatalf("%s: failed with %v (%T)", what, h.m.Err(), h.m.Err())
	}
	if h.terminalErr != h.m.Err() {
		t.Fatalf("%s: ActFinished err %v, Err() %v", what, h.terminalErr, h.m.Err())
	}
	if got := h.m.Unacked(nil); !reflect.DeepEqual(got, before.Unacked) {
		t.Fatalf("%s touched the window: Unacked %v before, %v after", what, before.Unacked, got)
	}
	if h.m.AckFloor() != before.AckFloor || h.m.LastAssigned() != before.LastAssigned {
		t.Fatalf("%s moved floor/last: %d/%d -> %d/%d", what, before.AckFloor, before.LastAssigned, h.m.AckFloor(), h.m.LastAssigned())
	}
	h.smWantNoCompletes(t, what)
}

func smIsProtocol(rules []core.Violation) func(error) bool {
	return func(err error) bool {
		var pe *core.ProtocolError
		if !errors.As(err, &pe) || !errors.Is(err, core.ErrProtocol) {
			return false
		}
		for _, r := range rules {
			if pe.Rule == r {
				return true
			}
		}
		return false
	}
}

// ---------------------------------------------------------------------------
// The invariants, after every action

func (h *smHarness) smCheck(t *rapid.T) {
	h.skips = 0
	m, md := h.m, h.md
	st := m.State()
	if h.terminal != "" && st != h.terminal {
		t.Fatalf("terminal state %s changed to %s", h.terminal, st)
	}
	if h.terminal == "" && st.Terminal() {
		t.Fatalf("state %s without ActFinished", st)
	}
	if (m.Err() != nil) != (h.terminal == fsm.Failed) || (h.terminal == fsm.Failed && m.Err() != h.terminalErr) {
		t.Fatalf("Err() %v in state %s (terminal error %v)", m.Err(), st, h.terminalErr)
	}
	floor, last := m.AckFloor(), m.LastAssigned()
	if floor != md.floor || last != md.next-1 {
		t.Fatalf("AckFloor/LastAssigned %d/%d, model %d/%d", floor, last, md.floor, md.next-1)
	}
	if m.MaxAttempted() != md.maxAttempted {
		t.Fatalf("MaxAttempted %d, model %d", m.MaxAttempted(), md.maxAttempted)
	}
	if m.Conn() != md.conn {
		t.Fatalf("Conn %d, model %d", m.Conn(), md.conn)
	}
	for _, v := range []int64{floor, last, m.MaxSent(), m.MaxAttempted()} {
		if v < -1 {
			t.Fatalf("accessor below -1: floor %d last %d maxSent %d attempted %d", floor, last, m.MaxSent(), m.MaxAttempted())
		}
	}
	if md.conn != 0 {
		if !(floor <= m.MaxSent() && m.MaxSent() < last+1) {
			t.Fatalf("want AckFloor %d <= MaxSent %d < LastAssigned+1 %d", floor, m.MaxSent(), last+1)
		}
		if m.MaxSent() != md.maxSent {
			t.Fatalf("MaxSent %d, model %d", m.MaxSent(), md.maxSent)
		}
	}
	if m.MaxAttempted() > last {
		t.Fatalf("MaxAttempted %d beyond LastAssigned %d", m.MaxAttempted(), last)
	}
	calls, b := m.Pending()
	wc, wb := md.pending()
	if calls != wc || b != wb {
		t.Fatalf("Pending %d/%dB, model %d/%dB", calls, b, wc, wb)
	}
	if calls > h.cfg.MaxInflightCalls || b > h.cfg.MaxInflightBytes {
		t.Fatalf("Pending %d/%dB beyond the window %d/%dB", calls, b, h.cfg.MaxInflightCalls, h.cfg.MaxInflightBytes)
	}
	if err := modelSameBatches(m.Unacked(nil), md.unacked()); err != nil {
		t.Fatalf("Unacked: %v", err)
	}
	// Every accepted call is durable (completed once), failed once, or
	// still pending; never two outcomes.
	for i := range md.calls {
		o, c := md.first+int64(i), &md.calls[i]
		switch {
		case c.completed+c.failed > 1:
			t.Fatalf("offset %d completed %d times and failed %d times", o, c.completed, c.failed)
		case o <= md.floor && c.completed != 1:
			t.Fatalf("offset %d durable but completed %d times", o, c.completed)
		case o > md.floor && c.completed != 0:
			t.Fatalf("offset %d above the floor but completed", o)
		case o > md.floor && h.terminal == fsm.Failed && c.failed != 1:
			t.Fatalf("offset %d pending after failure but failed %d times", o, c.failed)
		case h.terminal != fsm.Failed && c.failed != 0:
			t.Fatalf("offset %d failed while the stream has not", o)
		}
	}
	// Durable / Failed agree with the model, for flush targets (§5.7) and
	// the edges of the window.
	probe := append([]int64{floor, floor + 1, last, last + 1}, h.flushTargets...)
	for _, o := range probe {
		if o < 0 || o == math.MaxInt64 {
			continue
		}
		if m.Durable(o) != (o <= md.floor) {
			t.Fatalf("Durable(%d) = %v with floor %d", o, m.Durable(o), md.floor)
		}
		wantFailed := h.terminal == fsm.Failed && o > md.floor && o < md.next
		if m.Failed(o) != wantFailed {
			t.Fatalf("Failed(%d) = %v, want %v", o, m.Failed(o), wantFailed)
		}
	}
	for _, o := range h.flushTargets {
		switch h.terminal {
		case fsm.Closed:
			if !m.Durable(o) {
				t.Fatalf("closed, but flush target %d is not durable", o)
			}
		case fsm.Failed:
			if !m.Durable(o) && !m.Failed(o) {
				t.Fatalf("failed, but flush target %d is neither durable nor failed", o)
			}
		}
	}
	if h.terminal != "" {
		if m.Conn() != 0 {
			t.Fatalf("terminal with conn %d", m.Conn())
		}
		for c := core.ConnID(1); c <= md.lastConn; c++ {
			if !md.aborted[c] {
				t.Fatalf("terminal but conn %d never aborted", c)
			}
		}
		if _, armed := m.NextDeadline(); armed {
			t.Fatalf("terminal with a timer armed")
		}
	}
}

// ---------------------------------------------------------------------------
// Actions

func (h *smHarness) smRecord(t *rapid.T, label string) []byte {
	n := rapid.IntRange(0, int(h.cfg.MaxCallBytes)).Draw(t, label+"Len") // up to 2 bytes over the limit as sent
	h.recSeq++
	rec := make([]byte, n)
	for i := range rec {
		rec[i] = byte('a' + (h.recSeq+i)%26)
	}
	if n > 0 {
		rec[0] = byte(h.recSeq)
	}
	return rec
}

// smIngestOne ingests a single record (batch == nil) or a batch and checks
// the outcome against the model.
func (h *smHarness) smIngestOne(t *rapid.T, single bool, recs [][]byte, wrongType bool) {
	md := h.md
	var size, call int64
	for _, r := range recs {
		size += int64(len(r))
		call += modelFramed(len(r))
	}
	rt := h.cfg.RecordType
	if wrongType {
		rt = core.RecordJSON + core.RecordProto - rt
	}
	want := md.ingestOutcome(!single && len(recs) == 0, wrongType, size, call)
	before := h.smSnap()
	var off int64
	var err error
	if single {
		off, err = h.m.IngestRecord(h.now, rt, recs[0])
	} else {
		off, err = h.m.IngestBatch(h.now, rt, recs)
	}
	checkErr := func(target error) {
		if !errors.Is(err, target) || off != core.NoOffset {
			t.Fatalf("ingest: (%d, %v), want %v", off, err, target)
		}
		h.smUnchanged(t, "refused ingest", before)
	}
	switch want {
	case modelAccept:
		if err != nil || off != md.next {
			t.Fatalf("ingest: (%d, %v), want offset %d", off, err, md.next)
		}
		md.accept(single, recs)
		h.smPoll(t)
		h.smWantNoCompletes(t, "ingest")
	case modelNoOffset:
		if err != nil || off != core.NoOffset {
			t.Fatalf("empty batch: (%d, %v), want (-1, nil)", off, err)
		}
		h.smUnchanged(t, "empty batch", before)
	case modelErrFailed:
		checkErr(core.ErrStreamFailed)
	case modelErrClosed:
		checkErr(core.ErrClosed)
	case modelErrNotOpened:
		checkErr(core.ErrNotOpened)
	case modelErrRecordType:
		checkErr(core.ErrRecordType)
	case modelErrTooLarge:
		checkErr(core.ErrCallTooLarge)
	case modelErrWindowFull:
		checkErr(core.ErrWindowFull)
	case modelErrExhausted:
		if !errors.Is(err, core.ErrOffsetSpaceExhausted) || off != core.NoOffset {
			t.Fatalf("ingest at offset %d: (%d, %v), want ErrOffsetSpaceExhausted", md.next, off, err)
		}
		h.smPoll(t)
		h.smWantFailed(t, "offset exhaustion", before, func(err error) bool { return errors.Is(err, core.ErrOffsetSpaceExhausted) })
	}
}

// smSkipUnopened skips ingest actions before the first open response
// (ErrNotOpened is checked once in smNew): they would only waste steps.
func (h *smHarness) smSkipUnopened(t *rapid.T) bool {
	if !h.md.opened && !h.md.finished {
		h.smSkip(t, "not opened yet")
		return true
	}
	return false
}

func (h *smHarness) smIngest(t *rapid.T) {
	if h.smSkipUnopened(t) {
		return
	}
	wrong := smRare(t, "wrongType", 20)
	h.smIngestOne(t, true, [][]byte{h.smRecord(t, "rec")}, wrong)
}

func (h *smHarness) smIngestBatch(t *rapid.T) {
	if h.smSkipUnopened(t) {
		return
	}
	n := rapid.IntRange(0, 3).Draw(t, "batchLen")
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = h.smRecord(t, "batchRec")
	}
	h.smIngestOne(t, false, recs, false)
}

// smIngestMany fills the window: single records until it refuses.
func (h *smHarness) smIngestMany(t *rapid.T) {
	if h.smSkipUnopened(t) {
		return
	}
	n := rapid.IntRange(1, h.cfg.MaxInflightCalls+2).Draw(t, "many")
	for range n {
		rec := h.smRecord(t, "manyRec")
		h.smIngestOne(t, true, [][]byte{rec}, false)
	}
}

// smOpenResponse answers the pending open: create or resume, valid or not.
func (h *smHarness) smOpenResponse(t *rapid.T) {
	md := h.md
	if md.conn == 0 || md.connOpened || md.closeSent {
		h.smSkip(t, "no open awaiting a response")
		return
	}
	before := h.smSnap()
	if !md.resumeOpen {
		kind := "ok"
		if smRare(t, "badCreateResp", 8) {
			kind = rapid.SampledFrom([]string{"noID", "emptyID", "resume", "empty", "ack"}).Draw(t, "createResp")
		}
		r := core.Response{Kind: core.RespCreate, StreamID: fmt.Sprintf("s-%d", md.conn), HasStreamID: true}
		var rules []core.Violation
		switch kind {
		case "noID":
			r.HasStreamID, r.StreamID = false, ""
			rules = []core.Violation{core.StreamIDMissing}
		case "emptyID":
			r.StreamID = ""
			rules = []core.Violation{core.StreamIDMissing}
		case "resume":
			r = core.Response{Kind: core.RespResume, Offset: 0, HasOffset: true}
			rules = []core.Violation{core.OpenResponseKind}
		case "empty":
			r = core.Response{Kind: core.RespEmpty}
			rules = []core.Violation{core.UnexpectedMessage, core.OpenResponseKind}
		case "ack":
			r = core.Response{Kind: core.RespAck, Offset: md.floor, HasOffset: true}
			rules = []core.Violation{core.UnexpectedMessage}
		}
		if err := h.m.Receive(h.now, md.conn, r); err != nil {
			t.Fatalf("Receive create response: %v", err)
		}
		if len(rules) > 0 {
			h.smPoll(t)
			h.smWantFailed(t, "bad create response "+kind, before, smIsProtocol(rules))
			return
		}
		md.connOpened, md.opened, md.history = true, true, true
		md.sendNext, md.maxSent = md.floor+1, md.floor
		md.base = md.floor + 1
		if md.kind == core.Persistent {
			md.streamID = r.StreamID
		}
		h.smPoll(t)
		h.smWantNoCompletes(t, "create response")
		if h.m.State() != fsm.Open && h.m.State() != fsm.Closing && h.m.State() != fsm.Closed {
			t.Fatalf("after a create response: state %s", h.m.State())
		}
		if h.m.StreamID() != r.StreamID {
			t.Fatalf("StreamID %q, want %q", h.m.StreamID(), r.StreamID)
		}
		h.smWantFirstSend(t, md.floor+1)
		return
	}

	// A resume: draw a watermark inside and outside the legal bounds.
	var w int64
	has := true
	cat := "valid"
	if smRare(t, "badResume", 4) {
		cat = rapid.SampledFrom([]string{"absent", "below", "above", "invalid", "max", "wrongKind", "ack"}).Draw(t, "wmKind")
	}
	switch cat {
	case "valid":
		lo, hi := md.floor, md.maxAttempted
		if !md.history {
			lo, hi = -1, 40
		}
		if lo > hi {
			lo = hi // no legal watermark: draws an illegal one
		}
		w = rapid.Int64Range(lo, hi).Draw(t, "wm")
	case "absent":
		has = false
	case "below":
		w = md.floor - rapid.Int64Range(1, 3).Draw(t, "wmBelow")
	case "above":
		w = md.maxAttempted + rapid.Int64Range(1, 3).Draw(t, "wmAbove")
	case "invalid":
		w = rapid.Int64Range(math.MinInt64, -2).Draw(t, "wmInvalid")
	case "max":
		w = math.MaxInt64 - rapid.Int64Range(0, 1).Draw(t, "wmMax")
	case "ack":
		if err := h.m.Receive(h.now, md.conn, core.Response{Kind: core.RespAck, Offset: md.floor, HasOffset: true}); err != nil {
			t.Fatalf("Receive: %v", err)
		}
		h.smPoll(t)
		h.smWantFailed(t, "ack before the resume response", before, smIsProtocol([]core.Violation{core.UnexpectedMessage}))
		return
	case "wrongKind":
		r := core.Response{Kind: core.RespCreate, StreamID: "other", HasStreamID: true}
		if err := h.m.Receive(h.now, md.conn, r); err != nil {
			t.Fatalf("Receive: %v", err)
		}
		h.smPoll(t)
		h.smWantFailed(t, "create response to a resume", before, smIsProtocol([]core.Violation{core.OpenResponseKind}))
		return
	}
	v := md.resumeVerdict(w, has)
	if v.ok {
		// The model moves first: what the poll below must show follows
		// from the watermark alone.
		if !md.history {
			md.floor, md.next, md.maxAttempted = v.w, v.w+1, v.w
		}
		md.connOpened, md.opened = true, true
		md.sendNext, md.maxSent = v.w+1, v.w
	}
	if err := h.m.Receive(h.now, md.conn, core.Response{Kind: core.RespResume, Offset: w, HasOffset: has}); err != nil {
		t.Fatalf("Receive resume response: %v", err)
	}
	h.smPoll(t)
	switch {
	case len(v.rules) > 0:
		h.smWantFailed(t, fmt.Sprintf("resume watermark %d (has %v)", w, has), before, smIsProtocol(v.rules))
		return
	case v.exhausted:
		h.smWantFailed(t, fmt.Sprintf("resume watermark %d", w), before, func(err error) bool { return errors.Is(err, core.ErrOffsetSpaceExhausted) })
		return
	}
	// Valid: every offset <= W' completes locally, once, reconciled; only
	// offsets > W' are sent again, the first one being W'+1.
	var want []smRange
	if md.history && v.w > before.AckFloor {
		want = []smRange{{before.AckFloor + 1, v.w, true}}
	}
	if !reflect.DeepEqual(h.stepCompletes, want) {
		t.Fatalf("resume with watermark %d completed %v, want %v", v.w, h.stepCompletes, want)
	}
	if h.m.AckFloor() != v.w {
		t.Fatalf("after resume with watermark %d: AckFloor %d", v.w, h.m.AckFloor())
	}
	if !md.history && h.m.LastAssigned() != v.w {
		t.Fatalf("fresh-process resume with watermark %d: LastAssigned %d, want W", v.w, h.m.LastAssigned())
	}
	md.history = true
	h.smWantFirstSend(t, v.w+1)
}

// smWantFirstSend checks that the sends of the last poll start at first.
func (h *smHarness) smWantFirstSend(t *rapid.T, first int64) {
	if len(h.stepSends) > 0 && h.stepSends[0] != first {
		t.Fatalf("first send after open at %d, want %d", h.stepSends[0], first)
	}
}

// smDeliver reports the outcome of some of the emitted sends.
func (h *smHarness) smDeliver(t *rapid.T) {
	if len(h.outbox) == 0 {
		h.smSkip(t, "nothing to deliver")
		return
	}
	n := rapid.IntRange(1, len(h.outbox)).Draw(t, "deliver")
	failLast := smRare(t, "sendFails", 6)
	conn := h.md.conn
	for i := range n {
		a := h.outbox[0]
		if failLast && i == n-1 {
			code := smDrawCode(t)
			h.smConnFailed(t, conn, code, "send failure")
			return
		}
		if err := h.m.Sent(h.now, a.Conn, a.Offset); err != nil {
			t.Fatalf("Sent(%d, %d): %v", a.Conn, a.Offset, err)
		}
		h.outbox = h.outbox[1:]
		h.md.maxSent = a.Offset
		h.smPoll(t)
		if len(h.stepActs) != 0 {
			t.Fatalf("Sent emitted %v", h.stepActs)
		}
		if h.m.MaxSent() != a.Offset {
			t.Fatalf("MaxSent %d after Sent(%d)", h.m.MaxSent(), a.Offset)
		}
	}
}

var smCodes = []core.Code{
	core.CodeOK, core.CodeCanceled, core.CodeUnknown, core.CodeDeadlineExceeded, core.CodeUnavailable,
	core.CodeInternal, core.CodeAborted, core.CodeResourceExhausted,
	core.CodeInvalidArgument, core.CodeNotFound, core.CodePermissionDenied, core.CodeOutOfRange,
	core.CodeUnimplemented, core.CodeUnauthenticated,
}

// smDrawCode draws a status code, retryable ones three times as often.
func smDrawCode(t *rapid.T) core.Code {
	if smRare(t, "fatalCode", 5) {
		return rapid.SampledFrom(smCodes[8:]).Draw(t, "fatal")
	}
	return rapid.SampledFrom(smCodes[:8]).Draw(t, "retryable")
}

// smMaxSkips bounds the actions skipped in a row.
const smMaxSkips = 20

// smSkip skips an action that does not apply now, so that rapid draws
// another. After smMaxSkips skips in a row the caller runs as a no-op
// instead: a fuzzer's input can keep drawing the same action, and rapid
// fails a run in which it finds no valid action.
func (h *smHarness) smSkip(t *rapid.T, why string) {
	if h.skips < smMaxSkips {
		h.skips++
		t.Skip(why)
	}
}

// smRare draws true about once in n (rapid favours the ends of a range, so
// the true value sits in the middle of it).
func smRare(t *rapid.T, label string, n int) bool {
	return rapid.IntRange(0, n-1).Draw(t, label) == n/2
}

// smConnFailed reports the end of conn and checks the recovery decision.
func (h *smHarness) smConnFailed(t *rapid.T, conn core.ConnID, code core.Code, what string) {
	md := h.md
	before := h.smSnap()
	closing := md.closeSent
	paused := before.State == fsm.Paused
	cause := errors.New("injected")
	if err := h.m.ConnectionFailed(h.now, conn, code, cause); err != nil {
		t.Fatalf("ConnectionFailed: %v", err)
	}
	h.smPoll(t)
	h.smWantNoCompletes(t, what)
	st := h.m.State()
	retryable := code.Retryable()
	authRetry := code == core.CodeUnauthenticated && !md.opened && !md.authRetried
	if code == core.CodeUnauthenticated && !closing && !(paused && retryable) {
		md.authRetried = md.authRetried || !md.opened
	}
	switch {
	case closing:
		if st != fsm.Closed {
			t.Fatalf("%s while closing: state %s, want closed", what, st)
		}
	case paused && retryable:
		if st != fsm.Opening {
			t.Fatalf("%s while paused: state %s, want opening", what, st)
		}
	case authRetry:
		if st != fsm.Recovering {
			t.Fatalf("first-open auth rejection: state %s, want recovering", st)
		}
	case !retryable || h.cfg.DisableRecovery:
		h.smWantFailed(t, fmt.Sprintf("%s %s", what, code), before, func(err error) bool {
			var ce *core.ConnectionError
			return errors.As(err, &ce) && ce.Code == code && errors.Is(err, cause)
		})
	default:
		switch st {
		case fsm.Recovering:
		case fsm.Failed:
			if !errors.Is(h.m.Err(), core.ErrRetriesExhausted) || !errors.Is(h.m.Err(), cause) {
				t.Fatalf("retryable %s failed the stream with %v", code, h.m.Err())
			}
			h.smWantFailed(t, what, before, func(error) bool { return true })
		default:
			t.Fatalf("retryable %s: state %s", code, st)
		}
	}
}

func (h *smHarness) smDrop(t *rapid.T) {
	if h.md.conn == 0 {
		h.smSkip(t, "no connection")
		return
	}
	h.smConnFailed(t, h.md.conn, smDrawCode(t), "drop")
}

// smAckWith sends an ack of logical offset a (wire-mapped for ephemeral).
func (h *smHarness) smAckWith(t *rapid.T, kind string, logical int64, has bool) {
	md := h.md
	wire := logical
	if md.kind == core.Ephemeral && has {
		wire = logical - md.base
		if logical == math.MaxInt64 {
			wire = math.MaxInt64
		}
	}
	v := md.ackVerdict(wire, has)
	before := h.smSnap()
	if err := h.m.Receive(h.now, md.conn, core.Response{Kind: core.RespAck, Offset: wire, HasOffset: has}); err != nil {
		t.Fatalf("Receive ack: %v", err)
	}
	switch {
	case len(v.rules) > 0:
		h.smPoll(t)
		h.smWantFailed(t, fmt.Sprintf("%s ack %d (wire %d, has %v; floor %d, maxSent %d)", kind, logical, wire, has, before.AckFloor, before.MaxSent), before, smIsProtocol(v.rules))
	case !v.advance:
		// A duplicate changes nothing, the ack timer included.
		h.smUnchanged(t, "duplicate ack", before)
	default:
		h.smPoll(t)
		want := []smRange{{before.AckFloor + 1, v.to, false}}
		if !reflect.DeepEqual(h.stepCompletes, want) {
			t.Fatalf("ack %d completed %v, want %v", v.to, h.stepCompletes, want)
		}
		if len(h.stepFails) != 0 {
			t.Fatalf("valid ack failed %v", h.stepFails)
		}
	}
}

func (h *smHarness) smAck(t *rapid.T) {
	md := h.md
	if md.conn == 0 || !md.connOpened {
		h.smSkip(t, "no open connection") // an ack before the open response: see smOpenResponse
		return
	}
	kind := rapid.SampledFrom([]string{"valid", "dup"}).Draw(t, "ackKind")
	if smRare(t, "badAck", 3) {
		kind = rapid.SampledFrom([]string{"regressive", "beyond", "beyondFar", "missing"}).Draw(t, "badAckKind")
	}
	var a int64
	has := true
	switch kind {
	case "valid":
		if md.maxSent <= md.floor {
			a = md.floor
		} else {
			a = rapid.Int64Range(md.floor+1, md.maxSent).Draw(t, "ackValid")
		}
	case "dup":
		a = md.floor
	case "regressive":
		a = md.floor - rapid.Int64Range(1, 3).Draw(t, "ackBelow")
	case "beyond":
		a = md.maxSent + rapid.Int64Range(1, 3).Draw(t, "ackBeyond")
	case "beyondFar":
		a = math.MaxInt64
	case "missing":
		has = false
	}
	h.smAckWith(t, kind, a, has)
}

// smAckValid acknowledges some of what was reported sent: the common case,
// drawn more often so that streams make progress.
func (h *smHarness) smAckValid(t *rapid.T) {
	md := h.md
	if md.conn == 0 || !md.connOpened || md.maxSent <= md.floor {
		h.smSkip(t, "nothing to acknowledge")
		return
	}
	h.smAckWith(t, "valid", rapid.Int64Range(md.floor+1, md.maxSent).Draw(t, "ack"), true)
}

// smSignal sends a close signal on an open connection.
func (h *smHarness) smSignal(t *rapid.T) {
	md := h.md
	if md.conn == 0 {
		h.smSkip(t, "no connection")
		return
	}
	if !md.connOpened {
		h.smSignalBeforeOpen(t)
		return
	}
	r := core.Response{Kind: core.RespCloseSignal}
	if rapid.Bool().Draw(t, "hasDuration") {
		r.HasDuration = true
		r.Duration = time.Duration(rapid.IntRange(0, 5).Draw(t, "durationS")) * time.Second
	}
	before := h.smSnap()
	if err := h.m.Receive(h.now, md.conn, r); err != nil {
		t.Fatalf("Receive close signal: %v", err)
	}
	h.smPoll(t)
	h.smWantNoCompletes(t, "close signal")
	if len(h.stepFails) != 0 {
		t.Fatalf("close signal failed %v", h.stepFails)
	}
	st := h.m.State()
	if before.State != fsm.Open {
		if len(h.stepActs) != 0 || st != before.State {
			t.Fatalf("close signal in state %s: %v, now %s", before.State, h.stepActs, st)
		}
		return
	}
	if md.kind == core.Persistent {
		// Resume at once: no grace, no late-ack drain (§4).
		if st != fsm.Opening || md.conn != before.Conn+1 || !md.resumeOpen {
			t.Fatalf("persistent close signal: state %s, actions %v", st, h.stepActs)
		}
		return
	}
	if st != fsm.Paused && st != fsm.Opening {
		t.Fatalf("ephemeral close signal: state %s", st)
	}
}

// smSignalBeforeOpen sends a close signal before the open response. §4: the
// first server message is the open response, so anything else, a close
// signal included, is a violation (UnexpectedMessage).
func (h *smHarness) smSignalBeforeOpen(t *rapid.T) {
	before := h.smSnap()
	if err := h.m.Receive(h.now, h.md.conn, core.Response{Kind: core.RespCloseSignal}); err != nil {
		t.Fatalf("Receive close signal: %v", err)
	}
	h.smPoll(t)
	h.smWantFailed(t, "close signal before the open response", before, smIsProtocol([]core.Violation{core.UnexpectedMessage}))
}

func (h *smHarness) smTickTo(t *rapid.T, at core.Instant) {
	before := h.smSnap()
	if err := h.m.Tick(at); err != nil {
		t.Fatalf("Tick(%d): %v", at, err)
	}
	h.now = at
	h.smPoll(t)
	h.smWantNoCompletes(t, "tick")
	if h.m.State() == fsm.Failed && before.State != fsm.Failed {
		h.smWantFailed(t, "tick", before, func(err error) bool {
			var ce *core.ConnectionError
			return errors.Is(err, core.ErrCloseTimeout) || errors.Is(err, core.ErrRetriesExhausted) ||
				(h.cfg.DisableRecovery && errors.As(err, &ce) && ce.Code == core.CodeDeadlineExceeded)
		})
	}
	// §5.4: the ack timer is suspended during a grace pause, so a paused
	// stream leaves the pause only at the grace's end (a reconnect) or by
	// the close timeout, never into recovery.
	if before.State == fsm.Paused {
		if st := h.m.State(); st != fsm.Paused && st != fsm.Opening && !(st == fsm.Failed && errors.Is(h.m.Err(), core.ErrCloseTimeout)) {
			t.Fatalf("tick in a grace pause: state %s (err %v)", st, h.m.Err())
		}
	}
	// Tick fires every timer due at now.
	if d, ok := h.m.NextDeadline(); ok && d <= at {
		t.Fatalf("after Tick(%d) a timer is still due at %d (state %s)", at, d, h.m.State())
	}
}

func (h *smHarness) smTick(t *rapid.T) {
	step := time.Duration(rapid.Int64Range(0, int64(1500*time.Millisecond)).Draw(t, "step"))
	if smRare(t, "longStep", 5) {
		step = time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "step"))
	}
	h.smTickTo(t, h.now.Add(step))
}

func (h *smHarness) smTickDeadline(t *rapid.T) {
	d, ok := h.m.NextDeadline()
	if !ok {
		h.smSkip(t, "no deadline")
		return
	}
	if d < h.now {
		t.Fatalf("NextDeadline %d before now %d", d, h.now)
	}
	h.smTickTo(t, d)
}

// smFlushOrClose records a flush target, and sometimes closes.
func (h *smHarness) smFlushOrClose(t *rapid.T) {
	h.smFlush(t)
	if smRare(t, "close", 10) {
		h.smClose(t)
	}
}

// smFlush records the flush target: the offset last assigned when flush was
// called (§5.7).
func (h *smHarness) smFlush(t *rapid.T) {
	target := h.m.LastAssigned()
	if target != h.md.next-1 {
		t.Fatalf("flush target %d, model %d", target, h.md.next-1)
	}
	if target >= 0 {
		h.flushTargets = append(h.flushTargets, target)
	}
}

func (h *smHarness) smClose(t *rapid.T) {
	before := h.smSnap()
	if err := h.m.Close(h.now); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if h.terminal != "" || h.md.closeRequested {
		h.smUnchanged(t, "repeated close", before)
		return
	}
	h.md.closeRequested = true
	h.smPoll(t)
	h.smWantNoCompletes(t, "close")
	if len(h.stepFails) != 0 {
		t.Fatalf("close failed %v", h.stepFails)
	}
	if before.Calls == 0 {
		switch before.State {
		case fsm.Open, fsm.Paused:
			if h.m.State() != fsm.Closing || !h.md.closeSent {
				t.Fatalf("close with nothing pending in %s: state %s, actions %v", before.State, h.m.State(), h.stepActs)
			}
		case fsm.Opening, fsm.Recovering:
			if h.m.State() != fsm.Closed {
				t.Fatalf("close with nothing pending in %s: state %s", before.State, h.m.State())
			}
		}
	}
}

// smStaleOrMisuse feeds inputs that must change nothing: late news from a
// connection already left, an unknown connection, time going backwards, a
// send outcome never emitted.
func (h *smHarness) smStaleOrMisuse(t *rapid.T) {
	md := h.md
	before := h.smSnap()
	kind := rapid.SampledFrom([]string{"staleAck", "staleSent", "staleDrop", "unknownConn", "timeBackwards", "badSent"}).Draw(t, "misuse")
	stale := core.ConnID(0)
	for c := md.lastConn; c >= 1; c-- {
		if c != md.conn {
			stale = c
			break
		}
	}
	var err error
	switch kind {
	case "staleAck", "staleSent", "staleDrop":
		if stale == 0 {
			return // nothing to check
		}
		switch kind {
		case "staleAck":
			err = h.m.Receive(h.now, stale, core.Response{Kind: core.RespAck, Offset: md.next + 5, HasOffset: true})
		case "staleSent":
			err = h.m.Sent(h.now, stale, md.floor+1)
		default:
			err = h.m.ConnectionFailed(h.now, stale, core.CodeInvalidArgument, nil)
		}
		if err != nil {
			t.Fatalf("%s: %v, want it ignored", kind, err)
		}
	case "unknownConn":
		c := rapid.SampledFrom([]core.ConnID{0, md.lastConn + 1, md.lastConn + 7}).Draw(t, "conn")
		err = h.m.Receive(h.now, c, core.Response{Kind: core.RespAck, Offset: md.floor + 1, HasOffset: true})
		if !errors.Is(err, core.ErrUnknownConn) {
			t.Fatalf("ack on unknown conn %d: %v", c, err)
		}
	case "timeBackwards":
		err = h.m.Tick(h.now - 1)
		if !errors.Is(err, core.ErrTimeBackwards) {
			t.Fatalf("Tick backwards: %v", err)
		}
		_, err = h.m.IngestRecord(h.now-1, h.cfg.RecordType, []byte("x"))
		if !errors.Is(err, core.ErrTimeBackwards) {
			t.Fatalf("ingest backwards: %v", err)
		}
	case "badSent":
		if md.conn == 0 {
			return // nothing to check
		}
		o := rapid.SampledFrom([]int64{md.maxSent, md.maxSent + 2, md.sendNext, -5}).Draw(t, "badOffset")
		err = h.m.Sent(h.now, md.conn, o)
		if !errors.Is(err, core.ErrUnknownSend) {
			t.Fatalf("Sent(%d) with maxSent %d, emitted below %d: %v", o, md.maxSent, md.sendNext, err)
		}
	}
	h.smUnchanged(t, kind, before)
}
