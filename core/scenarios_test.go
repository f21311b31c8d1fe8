package core_test

// Conformance scenarios of protocol.md §8, shown at the core level: the test
// plays the driver (scnDriver) and a small model server (modelServer), and
// asserts what the machine asks the driver to do and what it reports.
//
// Scenarios that need a real driver or client are not here: "close works
// concurrently" (the core has one owner by design), "ingest blocks at the
// window" (the core refuses with ErrWindowFull; blocking is the thin
// client's) and "flush waits / times out" (a flush is the client waiting for
// Durable(LastAssigned()); the core has no flush timer, so a flush timing out
// cannot change it). Their core-level halves are covered: ErrWindowFull at
// the limit, the flush target and Durable.

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

// scnDriver plays the driver for one machine against a modelServer: it
// drains Poll, answers opens from the model, delivers sends and reports
// them, feeds the model's cumulative acks back, and ends a half-closed
// connection the way the server does. Every action is logged; each offset's
// completions and failures are counted so that "once per offset" is checked
// at the end of every test.
type scnDriver struct {
	t    *testing.T
	name string
	m    *core.Machine
	cfg  core.Config
	srv  *modelServer
	now  core.Instant

	// answerOpens: the model answers every ActOpen (default true).
	answerOpens bool
	// deliverSends: sends reach the model and are reported with Sent
	// (default true); when false they are only collected in held.
	deliverSends bool
	// autoAck: after each round of actions the model acks everything it
	// committed on the current connection (default true).
	autoAck bool
	// endOnCloseSend: the model ends a half-closed connection with OK
	// (default true).
	endOnCloseSend bool

	log       []core.Action
	held      []core.Action // sends not delivered (deliverSends false)
	completed map[int64]int
	reconcile map[int64]bool
	failed    map[int64]int
	reported  map[core.ConnID]bool // connection ends already reported
}

var scnKinds = []core.Kind{core.Ephemeral, core.Persistent}

// scnRequests numbers the request ids scnConfig hands out, so that every
// persistent machine of a test creates its own stream.
var scnRequests atomic.Int64

// scnConfig is a default config with a fixed seed and, for a persistent
// stream, a request id of its own.
func scnConfig(kind core.Kind) core.Config {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	if kind == core.Persistent {
		cfg.ClientRequestID = fmt.Sprintf("req-%d", scnRequests.Add(1))
	}
	return cfg
}

func newScn(t *testing.T, srv *modelServer, name string, cfg core.Config) *scnDriver {
	t.Helper()
	m, err := core.New(cfg)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	d := &scnDriver{
		t: t, name: name, m: m, cfg: cfg, srv: srv,
		answerOpens: true, deliverSends: true, autoAck: true, endOnCloseSend: true,
		completed: map[int64]int{}, reconcile: map[int64]bool{}, failed: map[int64]int{},
		reported: map[core.ConnID]bool{},
	}
	t.Cleanup(d.checkOnce)
	return d
}

// checkOnce asserts protocol.md §5.8: no offset completed twice, failed
// twice, or both.
func (d *scnDriver) checkOnce() {
	for o, n := range d.completed {
		if n != 1 {
			d.t.Errorf("%s: offset %d completed %d times", d.name, o, n)
		}
		if d.failed[o] != 0 {
			d.t.Errorf("%s: offset %d both completed and failed", d.name, o)
		}
	}
	for o, n := range d.failed {
		if n != 1 {
			d.t.Errorf("%s: offset %d failed %d times", d.name, o, n)
		}
	}
	// Every connection ends with at most one ActAbort, and with exactly one
	// once the stream is over (ActAbort's doc comment).
	aborts := map[core.ConnID]int{}
	for _, a := range d.log {
		if a.Kind == core.ActAbort {
			aborts[a.Conn]++
		}
	}
	for _, a := range d.log {
		if a.Kind != core.ActOpen {
			continue
		}
		if n := aborts[a.Conn]; n > 1 || (n == 0 && d.m.State().Terminal()) {
			d.t.Errorf("%s: connection %d ended with %d aborts (state %s)", d.name, a.Conn, n, d.m.State())
		}
	}
}

func (d *scnDriver) key(c core.ConnID) modelKey { return modelKey{client: d.name, conn: c} }

func (d *scnDriver) must(err error, what string) {
	d.t.Helper()
	if err != nil {
		d.t.Fatalf("%s: %s: unexpected error: %v", d.name, what, err)
	}
}

// open opens the machine and runs the resulting actions.
func (d *scnDriver) open() {
	d.t.Helper()
	d.must(d.m.Open(d.now), "Open")
	d.pump()
}

// pump drains Poll and plays every action until the machine and the model
// have nothing more to say.
func (d *scnDriver) pump() {
	d.t.Helper()
	for range 10_000 {
		acts := d.m.Poll(nil)
		for _, a := range acts {
			d.handle(a)
		}
		acked := false
		if d.autoAck && d.m.Conn() != 0 && d.m.State() != fsm.Opening {
			if r, ok := d.srv.ack(d.key(d.m.Conn())); ok {
				d.must(d.m.Receive(d.now, d.m.Conn(), r), "Receive(ack)")
				acked = true
			}
		}
		if len(acts) == 0 && !acked {
			return
		}
	}
	d.t.Fatalf("%s: pump does not settle", d.name)
}

func (d *scnDriver) handle(a core.Action) {
	d.t.Helper()
	d.log = append(d.log, a)
	switch a.Kind {
	case core.ActOpen:
		if !d.answerOpens {
			return
		}
		res := d.srv.open(d.key(a.Conn), d.cfg.Kind, a, d.cfg.RecordType)
		if res.code != core.CodeOK {
			d.reported[a.Conn] = true
			d.must(d.m.ConnectionFailed(d.now, a.Conn, res.code, fmt.Errorf("model: open refused")), "ConnectionFailed(open)")
			return
		}
		d.must(d.m.Receive(d.now, a.Conn, res.resp), "Receive(open response)")
	case core.ActSend:
		if !d.deliverSends {
			d.held = append(d.held, a)
			return
		}
		committed, alive := d.srv.receive(d.key(a.Conn), a)
		if committed {
			d.must(d.m.Sent(d.now, a.Conn, a.Offset), "Sent")
		}
		if !alive && !d.reported[a.Conn] {
			d.reported[a.Conn] = true
			d.must(d.m.ConnectionFailed(d.now, a.Conn, core.CodeUnavailable, errors.New("model: connection dropped")), "ConnectionFailed(send)")
		}
	case core.ActCloseSend:
		if d.endOnCloseSend && !d.reported[a.Conn] {
			d.reported[a.Conn] = true
			d.must(d.m.ConnectionFailed(d.now, a.Conn, core.CodeOK, nil), "ConnectionFailed(end after half-close)")
		}
	case core.ActAbort:
		d.srv.kill(d.key(a.Conn))
	case core.ActComplete:
		if a.Last < a.Offset || a.Last-a.Offset > 1<<20 {
			d.t.Fatalf("%s: bad completion range %d..%d", d.name, a.Offset, a.Last)
		}
		for o := a.Offset; o <= a.Last; o++ {
			d.completed[o]++
			d.reconcile[o] = a.Reconciled
		}
	case core.ActFail:
		if a.Last < a.Offset || a.Last-a.Offset > 1<<20 {
			d.t.Fatalf("%s: bad failure range %d..%d", d.name, a.Offset, a.Last)
		}
		if a.Err == nil {
			d.t.Errorf("%s: fail %d..%d without a cause", d.name, a.Offset, a.Last)
		}
		for o := a.Offset; o <= a.Last; o++ {
			d.failed[o]++
		}
	}
}

// at moves the driver's clock (never backwards).
func (d *scnDriver) at(t core.Instant) {
	d.t.Helper()
	if t < d.now {
		d.t.Fatalf("scenario clock going backwards: %d after %d", t, d.now)
	}
	d.now = t
}

// tick calls Tick at the current time and plays the actions.
func (d *scnDriver) tick() {
	d.t.Helper()
	d.must(d.m.Tick(d.now), "Tick")
	d.pump()
}

// advance jumps to the next deadline and ticks; false when none is armed.
func (d *scnDriver) advance() bool {
	d.t.Helper()
	at, ok := d.m.NextDeadline()
	if !ok {
		return false
	}
	if at > d.now {
		d.now = at
	}
	d.tick()
	return true
}

// runUntil advances through deadlines until cond holds.
func (d *scnDriver) runUntil(what string, cond func() bool) {
	d.t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		if !d.advance() {
			d.t.Fatalf("%s: waiting for %s: no deadline armed (state %s, err %v)", d.name, what, d.m.State(), d.m.Err())
		}
	}
	d.t.Fatalf("%s: waiting for %s: gave up (state %s)", d.name, what, d.m.State())
}

func (d *scnDriver) untilState(s fsm.State) {
	d.t.Helper()
	d.runUntil(string(s), func() bool { return d.m.State() == s })
}

// ingest accepts one JSON record and plays the resulting sends.
func (d *scnDriver) ingest(rec string) int64 {
	d.t.Helper()
	o, err := d.m.IngestRecord(d.now, d.cfg.RecordType, []byte(rec))
	d.must(err, "IngestRecord")
	d.pump()
	return o
}

func (d *scnDriver) ingestBatch(recs ...string) int64 {
	d.t.Helper()
	o, err := d.m.IngestBatch(d.now, d.cfg.RecordType, scnBytes(recs...))
	d.must(err, "IngestBatch")
	d.pump()
	return o
}

// recv feeds a server message on the current connection.
func (d *scnDriver) recv(r core.Response) {
	d.t.Helper()
	d.must(d.m.Receive(d.now, d.m.Conn(), r), "Receive")
	d.pump()
}

// ack feeds a cumulative ack for wire offset w on the current connection.
func (d *scnDriver) ack(w int64) {
	d.t.Helper()
	d.recv(core.Response{Kind: core.RespAck, Offset: w, HasOffset: true})
}

// drop reports that the current connection ended with code.
func (d *scnDriver) drop(code core.Code) {
	d.t.Helper()
	c := d.m.Conn()
	d.reported[c] = true
	d.must(d.m.ConnectionFailed(d.now, c, code, fmt.Errorf("test: drop with %s", code)), "ConnectionFailed")
	d.pump()
}

// close calls Close and plays the resulting actions.
func (d *scnDriver) close() {
	d.t.Helper()
	d.must(d.m.Close(d.now), "Close")
	d.pump()
}

// mark returns a position in the action log; since formats what followed.
func (d *scnDriver) mark() int { return len(d.log) }

func (d *scnDriver) since(mark int) []string {
	out := make([]string, 0, len(d.log)-mark)
	for _, a := range d.log[mark:] {
		out = append(out, scnFmt(a))
	}
	return out
}

// expect asserts the actions after mark, formatted with scnFmt.
func (d *scnDriver) expect(mark int, want ...string) {
	d.t.Helper()
	got := d.since(mark)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		d.t.Errorf("%s: actions\n got: %s\nwant: %s", d.name, strings.Join(got, " | "), strings.Join(want, " | "))
	}
}

// actions returns the logged actions of one kind after mark.
func (d *scnDriver) actions(mark int, k core.ActionKind) []core.Action {
	var out []core.Action
	for _, a := range d.log[mark:] {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

func (d *scnDriver) expectState(s fsm.State) {
	d.t.Helper()
	if got := d.m.State(); got != s {
		d.t.Fatalf("%s: state %s, want %s (err %v)", d.name, got, s, d.m.Err())
	}
}

func (d *scnDriver) expectDeadline(at core.Instant) {
	d.t.Helper()
	got, ok := d.m.NextDeadline()
	if !ok || got != at {
		d.t.Errorf("%s: NextDeadline = %v (armed %v), want %v", d.name, time.Duration(got), ok, time.Duration(at))
	}
}

func (d *scnDriver) expectNoDeadline() {
	d.t.Helper()
	if got, ok := d.m.NextDeadline(); ok {
		d.t.Errorf("%s: NextDeadline armed at %v, want none", d.name, time.Duration(got))
	}
}

// expectCompleted asserts exactly which offsets completed (each once is
// checked at cleanup).
func (d *scnDriver) expectCompleted(offsets ...int64) {
	d.t.Helper()
	got := slices.Sorted(maps.Keys(d.completed))
	if !slices.Equal(got, offsets) {
		d.t.Errorf("%s: completed offsets %v, want %v", d.name, got, offsets)
	}
}

func (d *scnDriver) expectFailed(offsets ...int64) {
	d.t.Helper()
	got := slices.Sorted(maps.Keys(d.failed))
	if !slices.Equal(got, offsets) {
		d.t.Errorf("%s: failed offsets %v, want %v", d.name, got, offsets)
	}
}

// expectProtocol asserts that the stream failed with a *ProtocolError for
// rule, with Got and Bound when the rule carries them.
func (d *scnDriver) expectProtocol(rule core.Violation, got, bound int64) {
	d.t.Helper()
	d.expectState(fsm.Failed)
	err := d.m.Err()
	var pe *core.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, core.ErrProtocol) {
		d.t.Fatalf("%s: Err = %v, want a *ProtocolError (%s)", d.name, err, rule)
	}
	if pe.Rule != rule {
		d.t.Errorf("%s: violation %q, want %q", d.name, pe.Rule, rule)
	}
	switch rule {
	case core.AckBelowFloor, core.AckAboveSent, core.WatermarkBelowFloor, core.WatermarkAboveAttempted:
		if pe.Got != got || pe.Bound != bound {
			d.t.Errorf("%s: %s got=%d bound=%d, want got=%d bound=%d", d.name, rule, pe.Got, pe.Bound, got, bound)
		}
	case core.WatermarkInvalid:
		if pe.Got != got {
			d.t.Errorf("%s: %s got=%d, want %d", d.name, rule, pe.Got, got)
		}
	}
}

// expectConnErr asserts a terminal *ConnectionError with code.
func (d *scnDriver) expectConnErr(code core.Code) {
	d.t.Helper()
	d.expectState(fsm.Failed)
	var ce *core.ConnectionError
	if !errors.As(d.m.Err(), &ce) || ce.Code != code {
		d.t.Fatalf("%s: Err = %v, want a *ConnectionError with %s", d.name, d.m.Err(), code)
	}
	if ce.Retryable() {
		d.t.Errorf("%s: terminal connection error %s reported retryable", d.name, code)
	}
}

func scnBytes(recs ...string) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = []byte(r)
	}
	return out
}

// scnFmt is a compact, comparable rendering of an action.
func scnFmt(a core.Action) string {
	switch a.Kind {
	case core.ActOpen:
		if a.Resume {
			return fmt.Sprintf("open c%d resume %s", a.Conn, a.StreamID)
		}
		return fmt.Sprintf("open c%d create", a.Conn)
	case core.ActSend:
		return fmt.Sprintf("send %d@c%d w%d", a.Offset, a.Conn, a.Wire)
	case core.ActComplete:
		if a.Reconciled {
			return fmt.Sprintf("complete %d..%d reconciled", a.Offset, a.Last)
		}
		return fmt.Sprintf("complete %d..%d", a.Offset, a.Last)
	case core.ActFail:
		return fmt.Sprintf("fail %d..%d", a.Offset, a.Last)
	case core.ActFinished:
		if a.Err != nil {
			return "finished err"
		}
		return "finished"
	case core.ActCloseSend, core.ActAbort:
		return fmt.Sprintf("%s c%d", a.Kind, a.Conn)
	}
	return a.Kind.String()
}

func scnAt(n float64) core.Instant {
	return core.Instant(0).Add(time.Duration(n * float64(time.Second)))
}

// ---------------------------------------------------------------------------
// Scenarios shared by both kinds (protocol.md §8, ephemeral list; each also
// holds for persistent streams, where the differences are asserted).

// TestScnOpen: create ok, create timeout (OpenTimeout fires, then a retry),
// a non-retryable error at open, retries then ok, retries exhausted, and the
// one credentials refresh allowed at the first open.
func TestScnOpen(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Run("create ok", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.expect(0, "open c1 create")
				d.expectState(fsm.Open)
				if got := d.m.StreamID(); got != "stream-1" {
					t.Errorf("StreamID %q, want stream-1", got)
				}
				open := d.actions(0, core.ActOpen)[0]
				if kind == core.Persistent && (open.RequestID == "" || open.RequestID != d.m.ClientRequestID()) {
					t.Errorf("persistent create carries request id %q, want %q", open.RequestID, d.m.ClientRequestID())
				}
				if kind == core.Ephemeral && open.RequestID != "" {
					t.Errorf("ephemeral create carries request id %q", open.RequestID)
				}
				if d.m.LastAssigned() != core.NoOffset || d.m.AckFloor() != core.NoOffset {
					t.Errorf("fresh stream: last assigned %d, floor %d", d.m.LastAssigned(), d.m.AckFloor())
				}
				d.expectNoDeadline() // the open is answered, nothing in flight
			})

			t.Run("create timeout then retry", func(t *testing.T) {
				cfg := scnConfig(kind)
				d := newScn(t, newModelServer(t), "a", cfg)
				d.answerOpens = false
				d.open()
				d.expectState(fsm.Opening)
				d.expectDeadline(scnAt(15))
				m := d.mark()
				d.at(scnAt(15) - 1)
				d.tick()
				d.expect(m)
				d.expectState(fsm.Opening)
				d.answerOpens = true
				d.at(scnAt(15))
				d.tick()
				d.untilState(fsm.Open)
				d.expect(m, "abort c1", "open c2 create")
				if d.m.Err() != nil || d.m.Conn() != 2 {
					t.Errorf("after retry: err %v, conn %d", d.m.Err(), d.m.Conn())
				}
				if opens := d.actions(0, core.ActOpen); opens[0].RequestID != opens[1].RequestID {
					t.Errorf("create retry changed the request id: %q then %q", opens[0].RequestID, opens[1].RequestID)
				}
			})

			for _, code := range []core.Code{core.CodeInvalidArgument, core.CodePermissionDenied, core.CodeNotFound, core.CodeOutOfRange, core.CodeUnimplemented} {
				t.Run("non-retryable "+code.String(), func(t *testing.T) {
					srv := newModelServer(t)
					srv.failOpens, srv.failOpenCode = 1, code
					d := newScn(t, srv, "a", scnConfig(kind))
					d.open()
					d.expect(0, "open c1 create", "abort c1", "finished err")
					d.expectConnErr(code)
					d.expectNoDeadline()
					if srv.opens != 1 {
						t.Errorf("%d open attempts, want 1", srv.opens)
					}
				})
			}

			t.Run("unauthenticated at first open is retried once", func(t *testing.T) {
				srv := newModelServer(t)
				srv.failOpens, srv.failOpenCode = 2, core.CodeUnauthenticated
				d := newScn(t, srv, "a", scnConfig(kind))
				d.open()
				d.expect(0, "open c1 create", "abort c1", "invalidate-credentials")
				d.expectState(fsm.Recovering)
				d.expectDeadline(0) // at once, no backoff
				d.untilState(fsm.Failed)
				d.expect(0, "open c1 create", "abort c1", "invalidate-credentials",
					"open c2 create", "abort c2", "invalidate-credentials", "finished err")
				d.expectConnErr(core.CodeUnauthenticated)
			})

			t.Run("retries then ok", func(t *testing.T) {
				srv := newModelServer(t)
				srv.failOpens = 2
				d := newScn(t, srv, "a", scnConfig(kind))
				d.open()
				d.untilState(fsm.Open)
				d.expect(0, "open c1 create", "abort c1", "open c2 create", "abort c2", "open c3 create")
				if got := d.ingest("a"); got != 0 {
					t.Errorf("first offset %d, want 0", got)
				}
				d.expectCompleted(0)
			})

			t.Run("retries exhausted", func(t *testing.T) {
				cfg := scnConfig(kind)
				cfg.Retries = 2
				srv := newModelServer(t)
				srv.failOpens = 100
				d := newScn(t, srv, "a", cfg)
				d.open()
				d.untilState(fsm.Failed)
				d.expect(0, "open c1 create", "abort c1", "open c2 create", "abort c2", "open c3 create", "abort c3", "finished err")
				var re *core.RetryError
				var ce *core.ConnectionError
				err := d.m.Err()
				if !errors.As(err, &re) || re.Attempts != 2 || !errors.Is(err, core.ErrRetriesExhausted) {
					t.Fatalf("Err = %v, want a *RetryError after 2 attempts", err)
				}
				if !errors.As(err, &ce) || ce.Code != core.CodeUnavailable {
					t.Errorf("last failure %v, want UNAVAILABLE", err)
				}
			})
		})
	}
}

// TestScnClose: close flushes what was accepted before it half-closes, is
// idempotent, succeeds after an error, before an open and during recovery,
// and is bounded by CloseTimeout.
func TestScnClose(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Run("flushes", func(t *testing.T) {
				srv := newModelServer(t)
				d := newScn(t, srv, "a", scnConfig(kind))
				d.open()
				d.autoAck = false
				d.ingest("a")
				d.ingest("b")
				m := d.mark()
				d.close()
				d.expect(m) // nothing is durable yet: no half-close
				d.expectState(fsm.Open)
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("c")); !errors.Is(err, core.ErrClosed) {
					t.Errorf("ingest while close flushes: %v, want ErrClosed", err)
				}
				d.ack(1)
				d.expect(m, "complete 0..1", "close-send c1", "abort c1", "finished")
				d.expectState(fsm.Closed)
				if d.m.Err() != nil {
					t.Errorf("Err = %v after a clean close", d.m.Err())
				}
				if got := len(srv.committed("stream-1")); got != 2 {
					t.Errorf("model committed %d calls, want 2", got)
				}
				d.expectNoDeadline()
			})

			t.Run("idempotent", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.endOnCloseSend = false
				d.close()
				d.expectState(fsm.Closing)
				m := d.mark()
				d.close() // while closing
				d.expect(m)
				d.drop(core.CodeOK) // the server ends the half-closed connection
				d.expect(m, "abort c1", "finished")
				d.expectState(fsm.Closed)
				m = d.mark()
				d.close()
				d.close()
				d.expect(m)
				d.expectState(fsm.Closed)
			})

			t.Run("after an error", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.autoAck = false
				d.ingest("a")
				d.drop(core.CodePermissionDenied)
				err := d.m.Err()
				m := d.mark()
				d.close()
				d.expect(m)
				d.expectState(fsm.Failed)
				if d.m.Err() != err {
					t.Errorf("Close changed Err from %v to %v", err, d.m.Err())
				}
			})

			t.Run("before open", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.close()
				d.expect(0, "finished")
				d.expectState(fsm.Closed)
				if err := d.m.Open(d.now); !errors.Is(err, core.ErrAlreadyOpened) {
					t.Errorf("Open after Close: %v, want ErrAlreadyOpened", err)
				}
			})

			t.Run("during recovery with nothing pending", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.drop(core.CodeUnavailable)
				d.expectState(fsm.Recovering)
				m := d.mark()
				d.close()
				d.expect(m, "finished")
				d.expectState(fsm.Closed)
				d.expectNoDeadline()
			})

			t.Run("server never ends the half-closed connection", func(t *testing.T) {
				// Everything was durable before the half-close, so the close
				// timeout ends the stream cleanly rather than failing it.
				cfg := scnConfig(kind)
				cfg.CloseTimeout = 10 * time.Second
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				d.ingest("a")
				d.endOnCloseSend = false
				m := d.mark()
				d.close()
				d.expect(m, "close-send c1")
				d.expectState(fsm.Closing)
				d.expectDeadline(scnAt(10))
				d.advance()
				d.expect(m, "close-send c1", "abort c1", "finished")
				d.expectState(fsm.Closed)
				if d.m.Err() != nil {
					t.Errorf("Err = %v, want a clean close", d.m.Err())
				}
			})

			t.Run("times out", func(t *testing.T) {
				cfg := scnConfig(kind)
				cfg.CloseTimeout = 10 * time.Second
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				d.autoAck = false
				d.ingest("a")
				d.close()
				d.expectDeadline(scnAt(10))
				m := d.mark()
				d.advance()
				d.expect(m, "abort c1", "fail 0..0", "finished err")
				if !errors.Is(d.m.Err(), core.ErrCloseTimeout) {
					t.Errorf("Err = %v, want ErrCloseTimeout", d.m.Err())
				}
			})
		})
	}
}

// TestScnIngestShapes: a single record, a batch, a mix, and an empty batch
// (no offset, nothing sent). One call is one offset; a batch travels as one
// send with its records, and lands whole.
func TestScnIngestShapes(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			srv := newModelServer(t)
			d := newScn(t, srv, "a", scnConfig(kind))
			d.open()
			offs := []int64{d.ingest("a"), d.ingestBatch("b", "c"), d.ingest("d")}
			if !slices.Equal(offs, []int64{0, 1, 2}) {
				t.Errorf("offsets %v, want [0 1 2]", offs)
			}
			m := d.mark()
			o, err := d.m.IngestBatch(d.now, core.RecordJSON, nil)
			if err != nil || o != core.NoOffset {
				t.Errorf("empty batch: (%d, %v), want (NoOffset, nil)", o, err)
			}
			if o, err := d.m.IngestBatch(d.now, core.RecordJSON, [][]byte{}); err != nil || o != core.NoOffset {
				t.Errorf("empty non-nil batch: (%d, %v), want (NoOffset, nil)", o, err)
			}
			d.pump()
			d.expect(m)
			if d.m.LastAssigned() != 2 {
				t.Errorf("LastAssigned %d after an empty batch, want 2", d.m.LastAssigned())
			}
			if got := d.ingest("e"); got != 3 {
				t.Errorf("offset after an empty batch %d, want 3", got)
			}
			sends := d.actions(0, core.ActSend)
			if len(sends) != 4 {
				t.Fatalf("%d sends, want 4", len(sends))
			}
			if string(sends[0].Record) != "a" || sends[0].Records != nil {
				t.Errorf("single record send: Record %q Records %q", sends[0].Record, sends[0].Records)
			}
			if !reflect.DeepEqual(sends[1].Records, scnBytes("b", "c")) || sends[1].Record != nil {
				t.Errorf("batch send: Record %q Records %q", sends[1].Record, sends[1].Records)
			}
			want := [][][]byte{scnBytes("a"), scnBytes("b", "c"), scnBytes("d"), scnBytes("e")}
			if got := srv.committed("stream-1"); !reflect.DeepEqual(got, want) {
				t.Errorf("model log %q, want %q", got, want)
			}
			d.expectCompleted(0, 1, 2, 3)
		})
	}
}

// TestScnIngestRejected: the wrong record type, an oversize call, ingest
// before the first open, after close and after failure are refused and
// change nothing.
func TestScnIngestRejected(t *testing.T) {
	unchanged := func(t *testing.T, d *scnDriver, last int64, calls int) {
		t.Helper()
		m := d.mark()
		d.pump()
		d.expect(m)
		if n, _ := d.m.Pending(); n != calls || d.m.LastAssigned() != last {
			t.Errorf("after a refused call: pending %d, last %d; want %d, %d", n, d.m.LastAssigned(), calls, last)
		}
	}
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Run("wrong record type", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.autoAck = false
				d.ingest("ok")
				for _, rt := range []core.RecordType{core.RecordProto, core.RecordUnspecified} {
					if o, err := d.m.IngestRecord(d.now, rt, []byte("x")); !errors.Is(err, core.ErrRecordType) || o != core.NoOffset {
						t.Errorf("IngestRecord(%s): (%d, %v), want ErrRecordType", rt, o, err)
					}
					if o, err := d.m.IngestBatch(d.now, rt, scnBytes("x", "y")); !errors.Is(err, core.ErrRecordType) || o != core.NoOffset {
						t.Errorf("IngestBatch(%s): (%d, %v), want ErrRecordType", rt, o, err)
					}
				}
				unchanged(t, d, 0, 1)
				d.expectState(fsm.Open)
			})

			t.Run("oversize", func(t *testing.T) {
				cfg := scnConfig(kind)
				// A call's size is its records as sent: each with a
				// tag byte and a length byte here.
				cfg.MaxCallBytes, cfg.MaxInflightBytes = 12, 64
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				_, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("1234567890!"))
				var le *core.LimitError
				if !errors.Is(err, core.ErrCallTooLarge) || !errors.As(err, &le) || le.Max != 12 || le.Got != 13 {
					t.Errorf("11-byte record: %v, want a LimitError 13 > 12", err)
				}
				if _, err := d.m.IngestBatch(d.now, core.RecordJSON, scnBytes("1234", "56789")); !errors.Is(err, core.ErrCallTooLarge) {
					t.Errorf("batch of 13 bytes as sent: %v, want ErrCallTooLarge", err)
				}
				unchanged(t, d, core.NoOffset, 0)
				if o := d.ingest("1234567890"); o != 0 {
					t.Errorf("10-byte record, 12 as sent, at the limit: offset %d, want 0", o)
				}
				if o := d.ingestBatch("1234", "5678"); o != 1 {
					t.Errorf("batch of 12 bytes as sent, at the limit: offset %d, want 1", o)
				}
			})

			t.Run("before the first open", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("x")); !errors.Is(err, core.ErrNotOpened) {
					t.Errorf("idle: %v, want ErrNotOpened", err)
				}
				d.answerOpens = false
				d.open()
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("x")); !errors.Is(err, core.ErrNotOpened) {
					t.Errorf("opening: %v, want ErrNotOpened", err)
				}
				unchanged(t, d, core.NoOffset, 0)
			})

			t.Run("after close", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.ingest("a")
				d.endOnCloseSend = false
				d.close()
				d.expectState(fsm.Closing)
				check := func(when string) {
					if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("x")); !errors.Is(err, core.ErrClosed) {
						t.Errorf("%s: IngestRecord: %v, want ErrClosed", when, err)
					}
					if _, err := d.m.IngestBatch(d.now, core.RecordJSON, scnBytes("x", "y")); !errors.Is(err, core.ErrClosed) {
						t.Errorf("%s: IngestBatch: %v, want ErrClosed", when, err)
					}
					if _, err := d.m.IngestBatch(d.now, core.RecordJSON, nil); !errors.Is(err, core.ErrClosed) {
						t.Errorf("%s: empty IngestBatch: %v, want ErrClosed", when, err)
					}
					unchanged(t, d, 0, 0)
				}
				check("closing")
				d.drop(core.CodeOK)
				d.expectState(fsm.Closed)
				check("closed")
			})

			t.Run("after failure", func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.drop(core.CodeInvalidArgument)
				_, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("x"))
				var ce *core.ConnectionError
				if !errors.Is(err, core.ErrStreamFailed) || !errors.As(err, &ce) || ce.Code != core.CodeInvalidArgument {
					t.Errorf("after failure: %v, want ErrStreamFailed wrapping the cause", err)
				}
				unchanged(t, d, core.NoOffset, 0)
			})
		})
	}
}

// TestScnWindowFull: the window refuses new work at its limit, by calls
// and by bytes, with ErrWindowFull and no change; a completion frees space;
// ingest is accepted while recovering until the window is full.
func TestScnWindowFull(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Run("calls", func(t *testing.T) {
				cfg := scnConfig(kind)
				cfg.MaxInflightCalls = 3
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				d.autoAck = false
				for i, r := range []string{"a", "b", "c"} {
					if o := d.ingest(r); o != int64(i) {
						t.Fatalf("offset %d, want %d", o, i)
					}
				}
				m := d.mark()
				if o, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("d")); !errors.Is(err, core.ErrWindowFull) || o != core.NoOffset {
					t.Errorf("4th call: (%d, %v), want ErrWindowFull", o, err)
				}
				if _, err := d.m.IngestBatch(d.now, core.RecordJSON, scnBytes("d", "e")); !errors.Is(err, core.ErrWindowFull) {
					t.Errorf("4th call (batch): %v, want ErrWindowFull", err)
				}
				d.pump()
				d.expect(m)
				if n, b := d.m.Pending(); n != 3 || b != 3 || d.m.LastAssigned() != 2 || d.m.Err() != nil {
					t.Errorf("after ErrWindowFull: pending %d/%dB, last %d, err %v", n, b, d.m.LastAssigned(), d.m.Err())
				}
				d.ack(0)
				if o := d.ingest("d"); o != 3 {
					t.Errorf("after an ack freed space: offset %d, want 3", o)
				}
			})

			t.Run("bytes", func(t *testing.T) {
				cfg := scnConfig(kind)
				cfg.MaxCallBytes, cfg.MaxInflightBytes = 8, 8 // the window counts payload bytes
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				d.autoAck = false
				d.ingest("aaaa")
				d.ingestBatch("bb", "bb")
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("c")); !errors.Is(err, core.ErrWindowFull) {
					t.Errorf("9th byte: %v, want ErrWindowFull", err)
				}
				d.ack(0)
				if o := d.ingest("cccc"); o != 2 {
					t.Errorf("after an ack freed bytes: offset %d, want 2", o)
				}
			})

			t.Run("accepted while recovering", func(t *testing.T) {
				cfg := scnConfig(kind)
				cfg.MaxInflightCalls = 2
				d := newScn(t, newModelServer(t), "a", cfg)
				d.open()
				d.autoAck = false
				d.ingest("a")
				d.drop(core.CodeUnavailable)
				d.expectState(fsm.Recovering)
				if o, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("b")); err != nil || o != 1 {
					t.Errorf("ingest while recovering: (%d, %v), want (1, nil)", o, err)
				}
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("c")); !errors.Is(err, core.ErrWindowFull) {
					t.Errorf("ingest while recovering, window full: %v, want ErrWindowFull", err)
				}
				d.autoAck = true
				d.untilState(fsm.Open)
				d.pump()
				d.expectCompleted(0, 1)
			})
		})
	}
}

// TestScnFlushTarget: a flush waits for LastAssigned() at the time of the
// call; it covers only earlier offsets, and on an empty stream the target
// (NoOffset) is durable at once.
func TestScnFlushTarget(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			d := newScn(t, newModelServer(t), "a", scnConfig(kind))
			d.open()
			if target := d.m.LastAssigned(); target != core.NoOffset || !d.m.Durable(target) {
				t.Errorf("empty stream: flush target %d durable %v, want NoOffset, true", target, d.m.Durable(target))
			}
			d.autoAck = false
			d.ingest("a")
			d.ingest("b")
			target := d.m.LastAssigned()
			if target != 1 || d.m.Durable(target) {
				t.Fatalf("flush target %d durable %v, want 1, false", target, d.m.Durable(target))
			}
			d.ingest("c") // after the flush call: not covered
			d.ack(0)
			if d.m.Durable(target) {
				t.Errorf("flush target %d durable after ack 0", target)
			}
			d.ack(1)
			if !d.m.Durable(target) || d.m.Durable(2) || d.m.Failed(2) {
				t.Errorf("after ack 1: durable(1)=%v durable(2)=%v failed(2)=%v", d.m.Durable(target), d.m.Durable(2), d.m.Failed(2))
			}
			if n, _ := d.m.Pending(); n != 1 {
				t.Errorf("pending %d, want 1 (offset 2, ingested after the flush)", n)
			}
		})
	}
}

// TestScnAckTimeout: records in flight with no ack for AckTimeout is a
// retryable failure: recovery reconnects and the record lands (resent on an
// ephemeral stream, reconciled from the watermark on a persistent one, whose
// model committed it).
func TestScnAckTimeout(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			srv := newModelServer(t)
			d := newScn(t, srv, "a", scnConfig(kind))
			d.open()
			d.autoAck = false
			d.ingest("a")
			d.expectDeadline(scnAt(60))
			m := d.mark()
			d.at(scnAt(60) - 1)
			d.tick()
			d.expect(m)
			d.autoAck = true
			d.at(scnAt(60))
			d.tick()
			d.untilState(fsm.Open)
			d.pump()
			if kind == core.Ephemeral {
				d.expect(m, "abort c1", "open c2 create", "send 0@c2 w0", "complete 0..0")
			} else {
				d.expect(m, "abort c1", "open c2 resume stream-1", "complete 0..0 reconciled")
				if w := srv.writes("stream-1"); w[0] != 1 || len(w) != 1 {
					t.Errorf("model writes %v, want offset 0 once", w)
				}
			}
			if d.m.Err() != nil {
				t.Errorf("ack timeout was terminal: %v", d.m.Err())
			}
		})
	}
}

// TestScnTerminalFailure: on a terminal error every pending call fails once,
// in order, and stays retrievable, grouped as ingested, identically on every
// call; later news from the dead connection is ignored.
func TestScnTerminalFailure(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			d := newScn(t, newModelServer(t), "a", scnConfig(kind))
			d.open()
			d.autoAck = false
			d.ingest("a")
			d.ingestBatch("b", "c")
			d.ingest("d")
			d.ack(0)
			m := d.mark()
			d.drop(core.CodePermissionDenied)
			d.expect(m, "abort c1", "fail 1..2", "finished err")
			d.expectConnErr(core.CodePermissionDenied)
			fail := d.actions(m, core.ActFail)[0]
			if fail.Err != d.m.Err() {
				t.Errorf("fail cause %v, want Err %v", fail.Err, d.m.Err())
			}
			want := []core.Batch{{Offset: 1, Records: scnBytes("b", "c")}, {Offset: 2, Records: scnBytes("d")}}
			for i := range 2 {
				if got := d.m.Unacked(nil); !reflect.DeepEqual(got, want) {
					t.Errorf("Unacked call %d: %v, want %v", i, got, want)
				}
			}
			if !d.m.Durable(0) || d.m.Failed(0) || !d.m.Failed(1) || !d.m.Failed(2) || d.m.Failed(3) {
				t.Errorf("durable(0)=%v failed(0..3)=%v %v %v %v", d.m.Durable(0), d.m.Failed(0), d.m.Failed(1), d.m.Failed(2), d.m.Failed(3))
			}
			m = d.mark()
			d.must(d.m.Receive(d.now, 1, core.Response{Kind: core.RespAck, Offset: 2, HasOffset: true}), "late ack")
			d.must(d.m.ConnectionFailed(d.now, 1, core.CodeUnavailable, nil), "late end")
			d.at(scnAt(3600))
			d.tick()
			d.expect(m)
			d.expectNoDeadline()
			if d.m.AckFloor() != 0 {
				t.Errorf("a late ack moved the floor of a failed stream to %d", d.m.AckFloor())
			}
		})
	}
}

// TestScnResendAfterRetryableError: after a retryable failure everything
// not durable is sent again, in order. Ephemeral: a new create, wire
// offsets restart at 0, logical offsets (and acks mapped back) unchanged,
// at-least-once on the server. Persistent: a resume by id, only offsets
// above the watermark are resent, under their own offsets, each written once.
func TestScnResendAfterRetryableError(t *testing.T) {
	t.Run("ephemeral partial ack", func(t *testing.T) {
		srv := newModelServer(t)
		d := newScn(t, srv, "a", scnConfig(core.Ephemeral))
		d.open()
		d.autoAck = false
		for _, r := range []string{"a", "b", "c", "d", "e"} {
			d.ingest(r)
		}
		d.ack(1)
		m := d.mark()
		d.drop(core.CodeUnavailable)
		d.untilState(fsm.Open)
		d.expect(m, "abort c1", "open c2 create", "send 2@c2 w0", "send 3@c2 w1", "send 4@c2 w2")
		if d.m.StreamID() != "stream-2" {
			t.Errorf("ephemeral reconnect kept stream id %q", d.m.StreamID())
		}
		if s := d.actions(m, core.ActSend); string(s[0].Record) != "c" || string(s[2].Record) != "e" {
			t.Errorf("resent payloads %q..%q, want c..e", s[0].Record, s[2].Record)
		}
		m = d.mark()
		d.ack(1)
		d.ack(2)
		d.expect(m, "complete 2..3", "complete 4..4")
		if got := srv.deliveries["a"]; !slices.Equal(got, []int64{0, 1, 2, 3, 4, 2, 3, 4}) {
			t.Errorf("deliveries %v", got)
		}
		want := [][][]byte{scnBytes("c"), scnBytes("d"), scnBytes("e")}
		if got := srv.committed("stream-2"); !reflect.DeepEqual(got, want) {
			t.Errorf("second server stream %q, want %q", got, want)
		}
	})
	t.Run("ephemeral large window resent in order across polls", func(t *testing.T) {
		const n = 600 // more than one Poll's worth of sends
		d := newScn(t, newModelServer(t), "a", scnConfig(core.Ephemeral))
		d.open()
		d.autoAck = false
		for i := range n {
			d.ingest(fmt.Sprint(i))
		}
		m := d.mark()
		d.drop(core.CodeUnavailable)
		d.untilState(fsm.Open)
		d.pump()
		sends := d.actions(m, core.ActSend)
		if len(sends) != n {
			t.Fatalf("%d resends, want %d", len(sends), n)
		}
		for i, a := range sends {
			if a.Conn != 2 || a.Offset != int64(i) || a.Wire != int64(i) || string(a.Record) != fmt.Sprint(i) {
				t.Fatalf("resend %d: %s %q", i, scnFmt(a), a.Record)
			}
		}
		d.ack(n - 1)
		d.expectFailed()
		if d.m.AckFloor() != n-1 {
			t.Errorf("floor %d, want %d", d.m.AckFloor(), n-1)
		}
	})
	for _, kind := range scnKinds {
		t.Run(kind.String()+" commit then drop", func(t *testing.T) {
			srv := newModelServer(t)
			d := newScn(t, srv, "a", scnConfig(kind))
			d.open()
			srv.dropAfterCommit = 1
			for _, r := range []string{"a", "b", "c", "d", "e"} {
				if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte(r)); err != nil {
					t.Fatal(err)
				}
			}
			d.pump()
			d.untilState(fsm.Open)
			d.pump()
			first := []string{"open c1 create", "send 0@c1 w0", "send 1@c1 w1", "send 2@c1 w2", "send 3@c1 w3", "send 4@c1 w4", "abort c1"}
			if kind == core.Ephemeral {
				d.expect(0, append(first, "open c2 create",
					"send 0@c2 w0", "send 1@c2 w1", "send 2@c2 w2", "send 3@c2 w3", "send 4@c2 w4", "complete 0..4")...)
				if got := srv.deliveries["a"]; !slices.Equal(got, []int64{0, 1, 0, 1, 2, 3, 4}) {
					t.Errorf("deliveries %v", got)
				}
			} else {
				d.expect(0, append(first, "open c2 resume stream-1", "complete 0..1 reconciled",
					"send 2@c2 w2", "send 3@c2 w3", "send 4@c2 w4", "complete 2..4")...)
				for o, n := range srv.writes("stream-1") {
					if n != 1 {
						t.Errorf("offset %d written %d times", o, n)
					}
				}
				want := [][][]byte{scnBytes("a"), scnBytes("b"), scnBytes("c"), scnBytes("d"), scnBytes("e")}
				if got := srv.committed("stream-1"); !reflect.DeepEqual(got, want) {
					t.Errorf("model log %q, want %q", got, want)
				}
			}
			d.expectCompleted(0, 1, 2, 3, 4)
		})
	}
}

// TestScnCloseSignalGrace: an ephemeral close signal stops new sends and
// drains acks for min(server duration, MaxGrace) with the ack timer
// suspended, then reconnects with a fresh create and resends; it leaves at
// once when MaxGrace is 0, when nothing is in flight, or as soon as
// everything in flight is acked. Records ingested during the pause are sent
// after the reconnect. A rotation costs no retry.
func TestScnCloseSignalGrace(t *testing.T) {
	signal := func(dur time.Duration, has bool) core.Response {
		return core.Response{Kind: core.RespCloseSignal, Duration: dur, HasDuration: has}
	}
	// paused returns a stream with offsets 0 and 1 in flight (unacked) that
	// received signal r at t=1s.
	paused := func(t *testing.T, maxGrace time.Duration, r core.Response) (*scnDriver, int) {
		cfg := scnConfig(core.Ephemeral)
		cfg.MaxGrace = maxGrace
		d := newScn(t, newModelServer(t), "a", cfg)
		d.open()
		d.autoAck = false
		d.ingest("a")
		d.ingest("b")
		d.at(scnAt(1))
		m := d.mark()
		d.recv(r)
		return d, m
	}
	resent := []string{"abort c1", "open c2 create", "send 0@c2 w0", "send 1@c2 w1"}

	for _, tc := range []struct {
		name     string
		maxGrace time.Duration
		signal   core.Response
		grace    time.Duration // 0: reconnect at once
	}{
		{"server duration", 15 * time.Minute, signal(5*time.Second, true), 5 * time.Second},
		{"server duration longer than the ack timeout", 15 * time.Minute, signal(2*time.Minute, true), 2 * time.Minute},
		{"max grace 0 reconnects at once", 0, signal(5*time.Second, true), 0},
		{"max grace shorter than the server's", 2 * time.Second, signal(10*time.Second, true), 2 * time.Second},
		{"max grace longer than the server's", time.Minute, signal(3*time.Second, true), 3 * time.Second},
		{"no server duration: max grace", 7 * time.Second, signal(0, false), 7 * time.Second},
		{"server duration 0 reconnects at once", time.Minute, signal(0, true), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m := paused(t, tc.maxGrace, tc.signal)
			if tc.grace == 0 {
				d.expect(m, resent...)
				d.expectState(fsm.Open)
				return
			}
			d.expectState(fsm.Paused)
			d.expect(m) // nothing sent, nothing left yet
			end := scnAt(1).Add(tc.grace)
			d.expectDeadline(end) // the ack timer (61s) is suspended
			d.at(end - 1)
			d.tick()
			d.expect(m)
			d.expectState(fsm.Paused)
			d.at(end)
			d.tick()
			d.expect(m, resent...)
			d.expectState(fsm.Open)
			if d.m.Err() != nil {
				t.Errorf("rotation failed the stream: %v", d.m.Err())
			}
		})
	}

	t.Run("early exit when all acked", func(t *testing.T) {
		d, m := paused(t, 15*time.Minute, signal(5*time.Minute, true))
		d.ack(1)
		d.expect(m, "complete 0..1", "abort c1", "open c2 create")
		d.expectState(fsm.Open)
	})

	t.Run("a partial ack keeps the ack timer suspended", func(t *testing.T) {
		// protocol.md §5.4: the lack-of-ack timer is suspended during an
		// ephemeral grace pause; an ack that advances but leaves records in
		// flight must not re-arm it (else it fires inside the grace and turns
		// a rotation into a retry-consuming recovery).
		d, m := paused(t, 15*time.Minute, signal(5*time.Minute, true))
		d.ack(0)
		d.expect(m, "complete 0..0")
		d.expectState(fsm.Paused)
		d.expectDeadline(scnAt(1).Add(5 * time.Minute))
		d.advance()
		d.expect(m, "complete 0..0", "abort c1", "open c2 create", "send 1@c2 w0")
	})

	t.Run("records ingested during the pause are sent after reconnect", func(t *testing.T) {
		d, m := paused(t, 15*time.Minute, signal(5*time.Second, true))
		o, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("c"))
		if err != nil || o != 2 {
			t.Fatalf("ingest during the pause: (%d, %v), want (2, nil)", o, err)
		}
		d.pump()
		d.expect(m) // not sent during the pause
		d.advance()
		d.expect(m, "abort c1", "open c2 create", "send 0@c2 w0", "send 1@c2 w1", "send 2@c2 w2")
	})

	t.Run("nothing in flight: reconnect at once", func(t *testing.T) {
		d := newScn(t, newModelServer(t), "a", scnConfig(core.Ephemeral))
		d.open()
		d.ingest("a") // acked by the model
		m := d.mark()
		d.recv(signal(time.Minute, true))
		d.expect(m, "abort c1", "open c2 create")
		d.expectState(fsm.Open)
	})

	t.Run("the server ending the paused session reconnects at once", func(t *testing.T) {
		d, m := paused(t, 15*time.Minute, signal(time.Minute, true))
		d.drop(core.CodeOK)
		d.expect(m, resent...)
	})

	t.Run("a rotation costs no retry", func(t *testing.T) {
		cfg := scnConfig(core.Ephemeral)
		cfg.MaxGrace, cfg.Retries = 0, 1
		d := newScn(t, newModelServer(t), "a", cfg)
		d.open()
		d.autoAck = false
		d.ingest("a")
		for range 3 {
			d.recv(signal(time.Second, true))
		}
		d.expectState(fsm.Open)
		if d.m.Conn() != 4 {
			t.Errorf("conn %d after three rotations, want 4", d.m.Conn())
		}
		d.drop(core.CodeUnavailable)
		d.expectState(fsm.Recovering) // the one retry is still there
	})
}

// TestScnPersistentCloseSignal: on a persistent stream a close signal means
// resume at once: no pause, no grace; the model's watermark reconciles what
// it committed.
func TestScnPersistentCloseSignal(t *testing.T) {
	d := newScn(t, newModelServer(t), "a", scnConfig(core.Persistent))
	d.open()
	d.autoAck = false
	d.ingest("a")
	d.ingest("b")
	m := d.mark()
	d.recv(core.Response{Kind: core.RespCloseSignal, Duration: 5 * time.Minute, HasDuration: true})
	d.expect(m, "abort c1", "open c2 resume stream-1", "complete 0..1 reconciled")
	d.expectState(fsm.Open)
	if o := d.ingest("c"); o != 2 {
		t.Errorf("offset after resume %d, want 2", o)
	}
	d.expect(m, "abort c1", "open c2 resume stream-1", "complete 0..1 reconciled", "send 2@c2 w2")
}

// TestScnCompletionsOncePerOffset: through partial and duplicate acks, a
// lost connection, a late ack from the old connection and a reconnect, every
// offset completes exactly once, in order (checked at cleanup too).
func TestScnCompletionsOncePerOffset(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			d := newScn(t, newModelServer(t), "a", scnConfig(kind))
			d.open()
			d.autoAck = false
			for _, r := range []string{"a", "b", "c", "d", "e", "f"} {
				d.ingest(r)
			}
			d.ack(1)
			d.ack(1)
			d.drop(core.CodeUnavailable)
			m := d.mark()
			d.must(d.m.Receive(d.now, 1, core.Response{Kind: core.RespAck, Offset: 3, HasOffset: true}), "late ack")
			d.pump()
			d.expect(m)
			d.autoAck = true
			d.untilState(fsm.Open)
			d.pump()
			d.close()
			d.expectState(fsm.Closed)
			d.expectCompleted(0, 1, 2, 3, 4, 5)
			next := int64(0)
			for _, a := range d.actions(0, core.ActComplete) {
				if a.Offset != next {
					t.Errorf("completion %d..%d out of order, want from %d", a.Offset, a.Last, next)
				}
				next = a.Last + 1
			}
		})
	}
}

// TestScnDuplicateAck: a duplicate ack changes nothing, the ack deadline
// included; only an advancing ack moves it.
func TestScnDuplicateAck(t *testing.T) {
	for _, kind := range scnKinds {
		t.Run(kind.String(), func(t *testing.T) {
			d := newScn(t, newModelServer(t), "a", scnConfig(kind))
			d.open()
			d.autoAck = false
			d.ingest("a")
			d.ingest("b")
			d.expectDeadline(scnAt(60))
			m := d.mark()
			d.at(scnAt(5))
			d.ack(-1) // nothing acked yet: a duplicate of the floor
			d.expect(m)
			d.expectDeadline(scnAt(60))
			d.at(scnAt(10))
			d.ack(0)
			d.expectDeadline(scnAt(70))
			m = d.mark()
			d.at(scnAt(20))
			d.ack(0)
			d.at(scnAt(30))
			d.ack(0)
			d.expect(m)
			d.expectDeadline(scnAt(70))
			d.at(scnAt(70) - 1)
			d.tick()
			d.expect(m)
			d.at(scnAt(70))
			d.tick()
			if got := d.since(m); len(got) == 0 || got[0] != "abort c1" {
				t.Errorf("at the ack deadline: %v, want the connection aborted", got)
			}
		})
	}
}

// TestScnBadAcks: an ack above the highest offset reported sent on the
// connection (not merely emitted), a regressive ack and an ack without an
// offset fail the stream with a *ProtocolError before anything changes;
// every pending call fails once. Ephemeral bounds are per connection, in
// wire offsets.
func TestScnBadAcks(t *testing.T) {
	type setup func(t *testing.T, d *scnDriver)
	three := func(t *testing.T, d *scnDriver) {
		for _, r := range []string{"a", "b", "c"} {
			d.ingest(r)
		}
	}
	for _, kind := range scnKinds {
		for _, tc := range []struct {
			name         string
			only         core.Kind
			setup        setup
			ack          core.Response
			rule         core.Violation
			got, bound   int64
			floor        int64
			failed       []int64
			completedPre []int64
		}{
			{
				name: "above reported sent", setup: func(t *testing.T, d *scnDriver) {
					d.deliverSends = false
					three(t, d)
					if len(d.held) != 3 {
						t.Fatalf("%d sends emitted, want 3", len(d.held))
					}
					d.must(d.m.Sent(d.now, d.held[0].Conn, 0), "Sent(0)")
				},
				ack: core.Response{Kind: core.RespAck, Offset: 1, HasOffset: true}, rule: core.AckAboveSent,
				got: 1, bound: 0, floor: -1, failed: []int64{0, 1, 2},
			},
			{
				name: "above everything", setup: three,
				ack: core.Response{Kind: core.RespAck, Offset: 7, HasOffset: true}, rule: core.AckAboveSent,
				got: 7, bound: 2, floor: -1, failed: []int64{0, 1, 2},
			},
			{
				name: "regressive", setup: func(t *testing.T, d *scnDriver) { three(t, d); d.ack(1) },
				ack: core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true}, rule: core.AckBelowFloor,
				got: 0, bound: 1, floor: 1, failed: []int64{2}, completedPre: []int64{0, 1},
			},
			{
				name: "missing offset", setup: three,
				ack: core.Response{Kind: core.RespAck}, rule: core.AckMissing,
				floor: -1, failed: []int64{0, 1, 2},
			},
			{
				name: "above sent on the second connection", only: core.Ephemeral,
				setup: func(t *testing.T, d *scnDriver) {
					three(t, d)
					d.ack(0)
					d.drop(core.CodeUnavailable)
					d.untilState(fsm.Open) // 1 and 2 resent as wire 0 and 1
				},
				ack: core.Response{Kind: core.RespAck, Offset: 2, HasOffset: true}, rule: core.AckAboveSent,
				got: 2, bound: 1, floor: 0, failed: []int64{1, 2}, completedPre: []int64{0},
			},
			{
				name: "regressive on the second connection", only: core.Ephemeral,
				setup: func(t *testing.T, d *scnDriver) {
					three(t, d)
					d.ingest("d")
					d.ack(0)
					d.drop(core.CodeUnavailable)
					d.untilState(fsm.Open) // 1..3 resent as wire 0..2
					d.ack(1)               // logical 1..2
				},
				ack: core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true}, rule: core.AckBelowFloor,
				got: 0, bound: 1, floor: 2, failed: []int64{3}, completedPre: []int64{0, 1, 2},
			},
		} {
			if tc.only != 0 && tc.only != kind {
				continue
			}
			t.Run(kind.String()+"/"+tc.name, func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.open()
				d.autoAck = false
				tc.setup(t, d)
				d.expectCompleted(tc.completedPre...)
				before := d.m.Unacked(nil)
				m := d.mark()
				d.recv(tc.ack)
				d.expectProtocol(tc.rule, tc.got, tc.bound)
				if len(d.actions(m, core.ActComplete)) != 0 {
					t.Errorf("a bad ack completed something: %v", d.since(m))
				}
				if d.m.AckFloor() != tc.floor {
					t.Errorf("ack floor %d after a bad ack, want %d (unchanged)", d.m.AckFloor(), tc.floor)
				}
				d.expectFailed(tc.failed...)
				if got := d.m.Unacked(nil); !reflect.DeepEqual(got, before) {
					t.Errorf("Unacked changed by the failure: %v, was %v", got, before)
				}
				if got := d.since(m); got[len(got)-1] != "finished err" {
					t.Errorf("last action %q, want finished err", got[len(got)-1])
				}
			})
		}
	}
}

// TestScnOpenResponseMismatch: a create response without an id, and an
// open answered with the wrong response kind (a resume response to a create,
// a create response to a resume, in a fresh process and on an in-process
// reconnect) fail the stream with a *ProtocolError; so does a second open
// response on an open stream.
func TestScnOpenResponseMismatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   core.Kind
		resume bool // a fresh process resuming stream-1
		resp   core.Response
		rule   core.Violation
	}{
		{"create without id", core.Persistent, false, core.Response{Kind: core.RespCreate}, core.StreamIDMissing},
		{"create with empty id", core.Persistent, false, core.Response{Kind: core.RespCreate, HasStreamID: true}, core.StreamIDMissing},
		{"create answered with a resume response", core.Persistent, false, core.Response{Kind: core.RespResume}, core.OpenResponseKind},
		{"resume answered with a create response", core.Persistent, true, core.Response{Kind: core.RespCreate, StreamID: "stream-1", HasStreamID: true}, core.OpenResponseKind},
		{"ephemeral create without id", core.Ephemeral, false, core.Response{Kind: core.RespCreate}, core.StreamIDMissing},
		{"ephemeral create answered with a resume response", core.Ephemeral, false, core.Response{Kind: core.RespResume, Offset: 0, HasOffset: true}, core.OpenResponseKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newModelServer(t)
			cfg := scnConfig(tc.kind)
			wantOpen := "open c1 create"
			if tc.resume {
				cfg.StreamID = srv.seed(core.RecordJSON, []string{"x"})
				wantOpen = "open c1 resume stream-1"
			}
			d := newScn(t, srv, "a", cfg)
			d.answerOpens = false
			d.open()
			d.recv(tc.resp)
			d.expect(0, wantOpen, "abort c1", "finished err")
			d.expectProtocol(tc.rule, 0, 0)
		})
	}

	t.Run("in-process resume answered with a create response", func(t *testing.T) {
		srv := newModelServer(t)
		d := newScn(t, srv, "a", scnConfig(core.Persistent))
		d.open()
		d.autoAck = false
		d.ingest("a")
		d.drop(core.CodeUnavailable)
		srv.wrongOpenKind = true
		m := d.mark()
		d.untilState(fsm.Failed)
		d.expect(m, "open c2 resume stream-1", "abort c2", "fail 0..0", "finished err")
		d.expectProtocol(core.OpenResponseKind, 0, 0)
	})

	t.Run("model create answered with a resume response", func(t *testing.T) {
		srv := newModelServer(t)
		srv.wrongOpenKind = true
		d := newScn(t, srv, "a", scnConfig(core.Persistent))
		d.open()
		d.expect(0, "open c1 create", "abort c1", "finished err")
		d.expectProtocol(core.OpenResponseKind, 0, 0)
	})

	for _, kind := range scnKinds {
		t.Run(kind.String()+" second open response", func(t *testing.T) {
			d := newScn(t, newModelServer(t), "a", scnConfig(kind))
			d.open()
			d.recv(core.Response{Kind: core.RespCreate, StreamID: "again", HasStreamID: true})
			d.expectProtocol(core.UnexpectedMessage, 0, 0)
		})
	}
}

// TestScnUnexpectedBeforeOpen: the doc comment of core.UnexpectedMessage
// names "an ack before the open response" and "an empty one" as unexpected
// messages; before the open response they must fail the stream with that
// rule.
func TestScnUnexpectedBeforeOpen(t *testing.T) {
	for _, kind := range scnKinds {
		for _, tc := range []struct {
			name string
			resp core.Response
		}{
			{"ack", core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true}},
			{"empty", core.Response{Kind: core.RespEmpty}},
		} {
			t.Run(kind.String()+" "+tc.name, func(t *testing.T) {
				d := newScn(t, newModelServer(t), "a", scnConfig(kind))
				d.answerOpens = false
				d.open()
				d.recv(tc.resp)
				d.expect(0, "open c1 create", "abort c1", "finished err")
				d.expectProtocol(core.UnexpectedMessage, 0, 0)
			})
		}
	}
}

// ---------------------------------------------------------------------------
// Persistent scenarios (protocol.md §8, persistent list).

// TestScnPersistentCreateResume: create, ingest 0 and 1, acks, flush target
// durable, close: the model has 2 committed. A new machine (a fresh process)
// with Config.StreamID resumes with watermark 1: offsets up to 1 are durable
// at once, the next offset is 2, sent under wire offset 2.
func TestScnPersistentCreateResume(t *testing.T) {
	srv := newModelServer(t)
	a := newScn(t, srv, "a", scnConfig(core.Persistent))
	a.open()
	if o0, o1 := a.ingest("r0"), a.ingest("r1"); o0 != 0 || o1 != 1 {
		t.Fatalf("offsets %d, %d; want 0, 1", o0, o1)
	}
	if target := a.m.LastAssigned(); target != 1 || !a.m.Durable(target) {
		t.Errorf("flush target %d durable %v, want 1, true", target, a.m.Durable(target))
	}
	a.close()
	a.expect(0, "open c1 create", "send 0@c1 w0", "complete 0..0", "send 1@c1 w1", "complete 1..1",
		"close-send c1", "abort c1", "finished")
	a.expectState(fsm.Closed)
	if got := srv.committed("stream-1"); !reflect.DeepEqual(got, [][][]byte{scnBytes("r0"), scnBytes("r1")}) {
		t.Fatalf("model log %q, want [[r0] [r1]]", got)
	}

	cfg := scnConfig(core.Persistent)
	cfg.StreamID = "stream-1"
	b := newScn(t, srv, "b", cfg)
	b.open()
	b.expect(0, "open c1 resume stream-1")
	if open := b.actions(0, core.ActOpen)[0]; open.StreamID != "stream-1" || !open.Resume {
		t.Errorf("resume action %+v", open)
	}
	b.expectState(fsm.Open)
	if b.m.AckFloor() != 1 || b.m.LastAssigned() != 1 || !b.m.Durable(0) || !b.m.Durable(1) || b.m.Durable(2) {
		t.Errorf("after resume: floor %d, last %d, durable(0..2) %v %v %v",
			b.m.AckFloor(), b.m.LastAssigned(), b.m.Durable(0), b.m.Durable(1), b.m.Durable(2))
	}
	if n, _ := b.m.Pending(); n != 0 {
		t.Errorf("fresh resume has %d pending calls", n)
	}
	if o := b.ingest("r2"); o != 2 {
		t.Errorf("next offset %d, want 2", o)
	}
	b.close()
	b.expect(0, "open c1 resume stream-1", "send 2@c1 w2", "complete 2..2", "close-send c1", "abort c1", "finished")
	if got := len(srv.committed("stream-1")); got != 3 {
		t.Errorf("model committed %d calls, want 3", got)
	}
	if w := srv.writes("stream-1"); !reflect.DeepEqual(w, map[int64]int{0: 1, 1: 1, 2: 1}) {
		t.Errorf("model writes %v, want each offset once", w)
	}
}

// TestScnPersistentResumeFailures: a resume of an unknown id (the driver
// reports NOT_FOUND) and a resume with a different record type (the model
// answers INVALID_ARGUMENT) fail the stream, non-retryably, after one attempt.
func TestScnPersistentResumeFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		rt   core.RecordType
		code core.Code
	}{
		{"unknown id", "no-such-stream", core.RecordJSON, core.CodeNotFound},
		{"different record type", "stream-1", core.RecordProto, core.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newModelServer(t)
			srv.seed(core.RecordJSON, []string{"x"})
			cfg := core.DefaultConfig(core.Persistent, tc.rt)
			cfg.StreamID = tc.id
			d := newScn(t, srv, "a", cfg)
			d.open()
			d.expect(0, "open c1 resume "+tc.id, "abort c1", "finished err")
			d.expectConnErr(tc.code)
			d.expectNoDeadline()
			if srv.opens != 1 {
				t.Errorf("%d open attempts, want 1", srv.opens)
			}
		})
	}
}

// TestScnPersistentResumeEmpty: resuming a stream with nothing committed
// (no watermark) starts at offset 0.
func TestScnPersistentResumeEmpty(t *testing.T) {
	srv := newModelServer(t)
	cfg := scnConfig(core.Persistent)
	cfg.StreamID = srv.seed(core.RecordJSON)
	d := newScn(t, srv, "a", cfg)
	d.open()
	d.expectState(fsm.Open)
	if d.m.AckFloor() != core.NoOffset || d.m.LastAssigned() != core.NoOffset || d.m.Durable(0) {
		t.Errorf("empty resume: floor %d, last %d", d.m.AckFloor(), d.m.LastAssigned())
	}
	if o := d.ingest("a"); o != 0 {
		t.Errorf("first offset %d, want 0", o)
	}
	d.expect(0, "open c1 resume stream-1", "send 0@c1 w0", "complete 0..0")
}

// TestScnPersistentBatch: a batch takes one offset and every record lands
// under it.
func TestScnPersistentBatch(t *testing.T) {
	srv := newModelServer(t)
	d := newScn(t, srv, "a", scnConfig(core.Persistent))
	d.open()
	offs := []int64{d.ingestBatch("a", "b", "c"), d.ingest("d"), d.ingestBatch("e", "f")}
	if !slices.Equal(offs, []int64{0, 1, 2}) {
		t.Errorf("offsets %v, want [0 1 2]", offs)
	}
	want := [][][]byte{scnBytes("a", "b", "c"), scnBytes("d"), scnBytes("e", "f")}
	if got := srv.committed("stream-1"); !reflect.DeepEqual(got, want) {
		t.Errorf("model log %q, want %q", got, want)
	}
	d.expectCompleted(0, 1, 2)
}

// TestScnPersistentTwoStreams: two machines on one server keep independent
// streams and offsets.
func TestScnPersistentTwoStreams(t *testing.T) {
	srv := newModelServer(t)
	a := newScn(t, srv, "a", scnConfig(core.Persistent))
	b := newScn(t, srv, "b", scnConfig(core.Persistent))
	a.open()
	b.open()
	if a.m.StreamID() == b.m.StreamID() || a.m.ClientRequestID() == "" {
		t.Errorf("stream ids %q and %q, request id %q", a.m.StreamID(), b.m.StreamID(), a.m.ClientRequestID())
	}
	got := []int64{a.ingest("a0"), b.ingest("b0"), a.ingest("a1"), b.ingest("b1"), b.ingest("b2")}
	if !slices.Equal(got, []int64{0, 0, 1, 1, 2}) {
		t.Errorf("offsets %v, want [0 0 1 1 2]", got)
	}
	if la := srv.committed(a.m.StreamID()); !reflect.DeepEqual(la, [][][]byte{scnBytes("a0"), scnBytes("a1")}) {
		t.Errorf("stream a log %q", la)
	}
	if lb := srv.committed(b.m.StreamID()); !reflect.DeepEqual(lb, [][][]byte{scnBytes("b0"), scnBytes("b1"), scnBytes("b2")}) {
		t.Errorf("stream b log %q", lb)
	}
	a.expectCompleted(0, 1)
	b.expectCompleted(0, 1, 2)
}

// TestScnPersistentLostAck: the server commits 1 and 2 and the connection
// drops before their ack. Recovery resumes by id; the watermark (2)
// completes them locally, once, Reconciled; nothing is resent, so the model
// holds exactly one write per offset. A late ack from the old connection is
// ignored. With DisableRecovery the drop fails the stream (1 and 2 fail,
// still retrievable) and Close still returns nil.
func TestScnPersistentLostAck(t *testing.T) {
	lose := func(t *testing.T, cfg core.Config) (*scnDriver, *modelServer, int) {
		srv := newModelServer(t)
		d := newScn(t, srv, "a", cfg)
		d.open()
		d.ingest("a") // committed and acked
		srv.dropAfterCommit = 2
		m := d.mark()
		for _, r := range []string{"b", "c"} {
			if _, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte(r)); err != nil {
				t.Fatal(err)
			}
		}
		d.pump()
		return d, srv, m
	}
	t.Run("reconciled", func(t *testing.T) {
		d, srv, m := lose(t, scnConfig(core.Persistent))
		d.untilState(fsm.Open)
		d.expect(m, "send 1@c1 w1", "send 2@c1 w2", "abort c1", "open c2 resume stream-1", "complete 1..2 reconciled")
		d.must(d.m.Receive(d.now, 1, core.Response{Kind: core.RespAck, Offset: 2, HasOffset: true}), "late ack")
		if o := d.ingest("d"); o != 3 {
			t.Errorf("offset after reconciliation %d, want 3", o)
		}
		d.close()
		d.expectState(fsm.Closed)
		d.expectCompleted(0, 1, 2, 3)
		if d.reconcile[0] || !d.reconcile[1] || !d.reconcile[2] || d.reconcile[3] {
			t.Errorf("reconciled flags %v, want only 1 and 2", d.reconcile)
		}
		if w := srv.writes("stream-1"); !reflect.DeepEqual(w, map[int64]int{0: 1, 1: 1, 2: 1, 3: 1}) {
			t.Errorf("model writes %v, want exactly one per offset", w)
		}
		want := [][][]byte{scnBytes("a"), scnBytes("b"), scnBytes("c"), scnBytes("d")}
		if got := srv.committed("stream-1"); !reflect.DeepEqual(got, want) {
			t.Errorf("model log %q, want %q", got, want)
		}
	})
	t.Run("recovery disabled", func(t *testing.T) {
		cfg := scnConfig(core.Persistent)
		cfg.DisableRecovery = true
		d, srv, m := lose(t, cfg)
		d.expect(m, "send 1@c1 w1", "send 2@c1 w2", "abort c1", "fail 1..2", "finished err")
		d.expectState(fsm.Failed)
		var ce *core.ConnectionError
		if !errors.As(d.m.Err(), &ce) || ce.Code != core.CodeUnavailable {
			t.Errorf("Err = %v, want the UNAVAILABLE connection error", d.m.Err())
		}
		want := []core.Batch{{Offset: 1, Records: scnBytes("b")}, {Offset: 2, Records: scnBytes("c")}}
		if got := d.m.Unacked(nil); !reflect.DeepEqual(got, want) {
			t.Errorf("Unacked %v, want %v", got, want)
		}
		m = d.mark()
		if err := d.m.Close(d.now); err != nil {
			t.Errorf("Close after the failure: %v", err)
		}
		d.pump()
		d.expect(m)
		if w := srv.writes("stream-1"); !reflect.DeepEqual(w, map[int64]int{0: 1, 1: 1, 2: 1}) {
			t.Errorf("model writes %v, want exactly one per offset", w)
		}
	})
}

// TestScnPersistentWatermark: a resume watermark is validated before
// anything is reconciled. In process: below the ack floor (absent included)
// or above the highest offset ever sent fails closed with a *ProtocolError,
// nothing reconciled, nothing resent. A watermark of MaxInt64 fails with
// ErrOffsetSpaceExhausted, in process and in a fresh one; a fresh process
// takes any W >= -1 and numbers from W+1 up to MaxInt64-1.
func TestScnPersistentWatermark(t *testing.T) {
	inProcess := func(t *testing.T, w *modelWatermark) *scnDriver {
		srv := newModelServer(t)
		d := newScn(t, srv, "a", scnConfig(core.Persistent))
		d.open()
		d.autoAck = false
		for _, r := range []string{"a", "b", "c"} {
			d.ingest(r)
		}
		d.ack(0)
		d.ack(1)
		d.drop(core.CodeUnavailable)
		srv.watermarkOverride = w
		m := d.mark()
		d.untilState(fsm.Failed)
		d.expect(m, "open c2 resume stream-1", "abort c2", "fail 2..2", "finished err")
		if d.m.AckFloor() != 1 {
			t.Errorf("floor %d after a bad watermark, want 1", d.m.AckFloor())
		}
		if got := d.m.Unacked(nil); len(got) != 1 || got[0].Offset != 2 {
			t.Errorf("Unacked %v, want offset 2", got)
		}
		return d
	}
	t.Run("below the ack floor", func(t *testing.T) {
		d := inProcess(t, &modelWatermark{offset: 0, present: true})
		d.expectProtocol(core.WatermarkBelowFloor, 0, 1)
	})
	t.Run("absent after acks", func(t *testing.T) {
		d := inProcess(t, &modelWatermark{})
		d.expectProtocol(core.WatermarkBelowFloor, -1, 1)
	})
	t.Run("above the highest sent offset", func(t *testing.T) {
		d := inProcess(t, &modelWatermark{offset: 3, present: true})
		d.expectProtocol(core.WatermarkAboveAttempted, 3, 2)
	})
	t.Run("MaxInt64 in process", func(t *testing.T) {
		d := inProcess(t, &modelWatermark{offset: math.MaxInt64, present: true})
		if !errors.Is(d.m.Err(), core.ErrOffsetSpaceExhausted) {
			t.Errorf("Err = %v, want ErrOffsetSpaceExhausted", d.m.Err())
		}
	})

	fresh := func(t *testing.T, w modelWatermark) *scnDriver {
		srv := newModelServer(t)
		cfg := scnConfig(core.Persistent)
		cfg.StreamID = srv.seed(core.RecordJSON, []string{"x"})
		srv.watermarkOverride = &w
		d := newScn(t, srv, "a", cfg)
		d.deliverSends = false
		d.open()
		return d
	}
	t.Run("MaxInt64 in a fresh process", func(t *testing.T) {
		d := fresh(t, modelWatermark{offset: math.MaxInt64, present: true})
		d.expect(0, "open c1 resume stream-1", "abort c1", "finished err")
		d.expectState(fsm.Failed)
		if !errors.Is(d.m.Err(), core.ErrOffsetSpaceExhausted) {
			t.Errorf("Err = %v, want ErrOffsetSpaceExhausted", d.m.Err())
		}
		var pe *core.ProtocolError
		if errors.As(d.m.Err(), &pe) {
			t.Errorf("exhaustion reported as a protocol error: %v", pe)
		}
	})
	t.Run("below -1 in a fresh process", func(t *testing.T) {
		d := fresh(t, modelWatermark{offset: -2, present: true})
		d.expectProtocol(core.WatermarkInvalid, -2, 0)
	})
	t.Run("near the end in a fresh process", func(t *testing.T) {
		d := fresh(t, modelWatermark{offset: math.MaxInt64 - 2, present: true})
		d.expectState(fsm.Open)
		if d.m.LastAssigned() != math.MaxInt64-2 || !d.m.Durable(math.MaxInt64-2) {
			t.Errorf("last %d durable %v", d.m.LastAssigned(), d.m.Durable(math.MaxInt64-2))
		}
		if o := d.ingest("y"); o != math.MaxInt64-1 {
			t.Errorf("offset %d, want MaxInt64-1", o)
		}
		o, err := d.m.IngestRecord(d.now, core.RecordJSON, []byte("z"))
		if o != core.NoOffset || !errors.Is(err, core.ErrOffsetSpaceExhausted) {
			t.Errorf("ingest past the end: (%d, %v), want ErrOffsetSpaceExhausted", o, err)
		}
		d.pump()
		d.expectState(fsm.Failed)
		d.expectFailed(math.MaxInt64 - 1)
		if !errors.Is(d.m.Err(), core.ErrOffsetSpaceExhausted) {
			t.Errorf("Err = %v", d.m.Err())
		}
	})
}
