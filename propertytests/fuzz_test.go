package propertytests

// Fuzz targets over the decode path of every server message and over
// arbitrary sequences of core inputs (architecture.md, "Tests": any input
// yields a valid event or a typed error, never a panic).
//
//	FuzzDecodePersistent, FuzzDecodeEphemeral: arbitrary bytes through
//	grpcio.Unmarshal*, then the decoded Response into machines in several
//	states.
//	FuzzEventSequence: a byte string read as a sequence of inputs (ingest,
//	poll, send outcomes, acks, resumes, close signals, connection failures,
//	time, close) against persistent and ephemeral machines.
//
// The committed seed corpora live in testdata/fuzz/<FuzzName>/ and are
// rewritten from the seeds below with
//
//	go test ./propertytests -run TestWriteSeedCorpus -fuzz.writecorpus
//
// Every check is written against fzReporter rather than *testing.T, and
// machine construction goes through a plant hook, so that a test built with
// -tags zbstream_plantbugs can run the same checks with core.PlantBug and
// count the failures (see fuzzEventsWith).

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
	"github.com/zbstream/zbstream/grpcio"
	ingestpb "github.com/zbstream/zbstream/proto"
)

var fzWriteCorpus = flag.Bool("fuzz.writecorpus", false,
	"rewrite testdata/fuzz/<FuzzName>/ seed corpora from the seeds in fuzz_test.go")

// ---------------------------------------------------------------------------
// Targets

func FuzzDecodePersistent(f *testing.F) {
	for _, s := range fzPersistentSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, core.Persistent, data, nil) })
}

func FuzzDecodeEphemeral(f *testing.F) {
	for _, s := range fzEphemeralSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, core.Ephemeral, data, nil) })
}

func FuzzEventSequence(f *testing.F) {
	for _, s := range fzEventSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzEvents(t, data, nil) })
}

// fuzzEvents runs the event-sequence property on data. plant, when not nil,
// is called on the machine right after core.New (nil normally; a
// zbstream_plantbugs test passes core.PlantBug).
func fuzzEvents(t *testing.T, data []byte, plant func(*core.Machine)) {
	t.Helper()
	fuzzEventsWith(t, data, plant)
}

// fuzzDecode runs the decode property for one stream kind on data.
func fuzzDecode(t *testing.T, kind core.Kind, data []byte, plant func(*core.Machine)) {
	t.Helper()
	fuzzDecodeWith(t, kind, data, plant)
}

// fzReporter is the part of testing.TB the checks use. *testing.T satisfies
// it; a planted-bug test may pass a recorder instead.
type fzReporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// ---------------------------------------------------------------------------
// The decode property

// fuzzDecodeWith checks one input of a decode target: the bytes decode to a
// well-formed Response or a *grpcio.DecodeError, and the Response, fed to
// machines in each interesting state, never breaks the machine.
func fuzzDecodeWith(t fzReporter, kind core.Kind, data []byte, plant func(*core.Machine)) {
	t.Helper()
	unmarshal, msg := grpcio.UnmarshalPersistent, proto.Message(&ingestpb.PersistentStreamResponse{})
	if kind == core.Ephemeral {
		unmarshal, msg = grpcio.UnmarshalEphemeral, &ingestpb.EphemeralStreamResponse{}
	}
	resp, err := unmarshal(data)
	if err != nil {
		var de *grpcio.DecodeError
		switch {
		case !errors.As(err, &de):
			t.Errorf("Unmarshal(%q) error %v (%T) is not a *grpcio.DecodeError", data, err, err)
		case de.Err == nil || !errors.Is(err, de.Err):
			t.Errorf("DecodeError %v does not wrap the protobuf error", err)
		case resp != (core.Response{}):
			t.Errorf("Unmarshal(%q) returned %+v with error %v", data, resp, err)
		case proto.Unmarshal(data, msg) == nil:
			t.Errorf("Unmarshal(%q) failed (%v) but proto.Unmarshal accepts it", data, err)
		}
		return
	}
	if !fzWellFormed(t, resp) {
		return
	}
	// The decoded message survives a round trip through the wire unchanged.
	if err := proto.Unmarshal(data, msg); err != nil {
		t.Errorf("Unmarshal(%q) succeeded but proto.Unmarshal fails: %v", data, err)
		return
	}
	again, err := proto.Marshal(msg)
	if err != nil {
		t.Errorf("re-Marshal: %v", err)
		return
	}
	if r2, err := unmarshal(again); err != nil || r2 != resp {
		t.Errorf("round trip: %+v, %v; want %+v", r2, err, resp)
		return
	}

	for _, setup := range fzDecodeSetups(kind) {
		func() {
			r := &fzRun{t: t}
			defer r.recoverPanic("decode/" + setup.name)
			r.op = "setup " + setup.name
			setup.build(r, plant)
			r.check()
			if r.broken {
				return
			}
			if st := r.m.State(); st != setup.want {
				r.fail("setup %s reached state %s, want %s", setup.name, st, setup.want)
				return
			}
			r.op = "deliver decoded message"
			r.receive(r.m.Conn(), resp)
			r.poll()
			r.check()
			if st := r.m.State(); st == fsm.Failed {
				if err := r.m.Err(); !fzIsPeerFailure(err) {
					r.fail("setup %s: a server message failed the stream with %v (%T), want a *core.ProtocolError or ErrOffsetSpaceExhausted", setup.name, err, err)
				}
			}
			r.finish()
		}()
	}
}

// fzWellFormed checks the shape of a decoded Response: a defined kind, and
// fields only where that kind has them, absent fields zero.
func fzWellFormed(t fzReporter, r core.Response) bool {
	t.Helper()
	bad := func(why string) bool { t.Errorf("decoded %+v: %s", r, why); return false }
	switch r.Kind {
	case core.RespEmpty, core.RespCreate, core.RespResume, core.RespAck, core.RespCloseSignal:
	default:
		return bad("undefined kind")
	}
	switch {
	case !r.HasStreamID && r.StreamID != "":
		return bad("stream id without presence")
	case !r.HasOffset && r.Offset != 0:
		return bad("offset without presence")
	case !r.HasDuration && r.Duration != 0:
		return bad("duration without presence")
	case r.HasStreamID && r.Kind != core.RespCreate:
		return bad("stream id on a kind that has none")
	case r.HasOffset && r.Kind != core.RespResume && r.Kind != core.RespAck:
		return bad("offset on a kind that has none")
	case r.HasDuration && r.Kind != core.RespCloseSignal:
		return bad("duration on a kind that has none")
	case r.Duration < 0:
		return bad("negative duration")
	}
	return true
}

// fzIsPeerFailure: what a server message may fail a stream with.
func fzIsPeerFailure(err error) bool {
	var pe *core.ProtocolError
	return errors.As(err, &pe) || errors.Is(err, core.ErrOffsetSpaceExhausted)
}

// fzSetup builds a machine in one state for the decode targets.
type fzSetup struct {
	name  string
	want  fsm.State
	build func(r *fzRun, plant func(*core.Machine))
}

// fzDecodeConfig is the configuration the decode setups share.
func fzDecodeConfig(kind core.Kind, streamID string) core.Config {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	cfg.MaxGrace = 10 * time.Second
	if kind == core.Persistent {
		cfg.ClientRequestID = "fuzz-req-1"
		cfg.StreamID = streamID
	}
	return cfg
}

// fzDecodeSetups lists the machine states a decoded message is delivered in:
// (a) opening, (b) open with records in flight, and a few neighbours.
func fzDecodeSetups(kind core.Kind) []fzSetup {
	inFlight := func(r *fzRun) {
		// Three records; 0 and 1 reported sent, 0 acknowledged; 2 emitted
		// but not reported.
		for range 3 {
			r.ingest(false, 1, 4)
		}
		r.poll()
		r.sent(2)
		r.receive(r.m.Conn(), core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true})
		r.poll()
		if r.m.AckFloor() != 0 || r.m.MaxSent() != 1 || r.m.LastAssigned() != 2 {
			r.fail("in-flight setup: floor %d maxSent %d last %d, want 0 1 2", r.m.AckFloor(), r.m.MaxSent(), r.m.LastAssigned())
		}
	}
	if kind == core.Ephemeral {
		return []fzSetup{
			{"opening", fsm.Opening, func(r *fzRun, plant func(*core.Machine)) {
				r.start(fzDecodeConfig(kind, ""), plant, true)
			}},
			{"open in flight", fsm.Open, func(r *fzRun, plant func(*core.Machine)) {
				r.start(fzDecodeConfig(kind, ""), plant, true)
				r.receive(r.m.Conn(), core.Response{Kind: core.RespCreate, StreamID: "e-1", HasStreamID: true})
				inFlight(r)
			}},
			{"paused", fsm.Paused, func(r *fzRun, plant func(*core.Machine)) {
				r.start(fzDecodeConfig(kind, ""), plant, true)
				r.receive(r.m.Conn(), core.Response{Kind: core.RespCreate, StreamID: "e-1", HasStreamID: true})
				inFlight(r)
				r.receive(r.m.Conn(), core.Response{Kind: core.RespCloseSignal, Duration: time.Minute, HasDuration: true})
				r.poll()
			}},
		}
	}
	return []fzSetup{
		{"opening create", fsm.Opening, func(r *fzRun, plant func(*core.Machine)) {
			r.start(fzDecodeConfig(kind, ""), plant, true)
		}},
		{"opening fresh resume", fsm.Opening, func(r *fzRun, plant func(*core.Machine)) {
			r.start(fzDecodeConfig(kind, "s-0"), plant, true)
		}},
		{"open in flight", fsm.Open, func(r *fzRun, plant func(*core.Machine)) {
			r.start(fzDecodeConfig(kind, ""), plant, true)
			r.receive(r.m.Conn(), core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true})
			inFlight(r)
		}},
		{"resuming with history", fsm.Opening, func(r *fzRun, plant func(*core.Machine)) {
			r.start(fzDecodeConfig(kind, ""), plant, true)
			r.receive(r.m.Conn(), core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true})
			inFlight(r)
			r.connFailed(r.m.Conn(), core.CodeUnavailable)
			r.poll()
			r.tickDeadline()
			r.poll()
		}},
		{"closing", fsm.Closing, func(r *fzRun, plant func(*core.Machine)) {
			r.start(fzDecodeConfig(kind, ""), plant, true)
			r.receive(r.m.Conn(), core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true})
			r.close()
			r.poll()
		}},
	}
}

// ---------------------------------------------------------------------------
// The event-sequence property

// Event opcodes: the first byte of each step, modulo fzOpCount. Parameters
// follow in the order each step reads them (see fuzzEventsWith); missing
// bytes read as zero.
const (
	fzOpIngest          = iota // size
	fzOpIngestBatch            // count, size
	fzOpPoll                   //
	fzOpSent                   // how many
	fzOpAck                    // selector, [param bytes]
	fzOpOpenResponse           // selector, [param bytes]
	fzOpCloseSignal            // selector
	fzOpConnFailed             // conn selector, code
	fzOpTickDeadline           //
	fzOpTickForward            // unit, amount
	fzOpBackwards              // which input, how far
	fzOpClose                  //
	fzOpOpen                   //
	fzOpBogusSent              // conn selector, 8-byte offset
	fzOpArbitrary              // conn selector, kind, flags, 8-byte value
	fzOpIngestWrongType        //
	fzOpCount
)

var fzOpNames = [fzOpCount]string{
	"ingest", "ingest-batch", "poll", "sent", "ack", "open-response", "close-signal",
	"conn-failed", "tick-deadline", "tick-forward", "backwards", "close", "open",
	"bogus-sent", "arbitrary-response", "ingest-wrong-type",
}

// fzIn reads a fuzzer's bytes; reads past the end return zero.
type fzIn struct {
	b []byte
	i int
}

func (in *fzIn) more() bool { return in.i < len(in.b) }

func (in *fzIn) u8() byte {
	if in.i >= len(in.b) {
		return 0
	}
	in.i++
	return in.b[in.i-1]
}

func (in *fzIn) i64() int64 {
	var buf [8]byte
	for k := range buf {
		buf[k] = in.u8()
	}
	return int64(binary.BigEndian.Uint64(buf[:]))
}

// fzConfig reads a configuration from three bytes: kind and mode, limits,
// timers and recovery.
func fzConfig(in *fzIn) (cfg core.Config, origin core.Instant, openNow bool) {
	b0, b1, b2 := in.u8(), in.u8(), in.u8()
	kind, streamID := core.Ephemeral, ""
	switch (b0 & 3) % 3 {
	case 1:
		kind = core.Persistent
	case 2:
		kind, streamID = core.Persistent, "s-0" // a fresh process resuming
	}
	rt := core.RecordJSON
	if b0&0x04 != 0 {
		rt = core.RecordProto
	}
	cfg = core.DefaultConfig(kind, rt)
	cfg.StreamID = streamID
	if kind == core.Persistent {
		cfg.ClientRequestID = "fuzz-req-1"
	}
	if b1&0x80 == 0 { // small windows, so that backpressure is reached
		cfg.MaxInflightCalls = 1 + int(b1%8)
		cfg.MaxCallBytes = 8 + int64(b1>>3&0x0f)
		cfg.MaxInflightBytes = cfg.MaxCallBytes * int64(1+b1%3)
	}
	cfg.OpenTimeout = 3 * time.Second
	cfg.AckTimeout = 5 * time.Second
	cfg.CloseTimeout = 20 * time.Second
	cfg.MaxGrace = [...]time.Duration{0, time.Second, 10 * time.Second, 15 * time.Minute}[b2%4]
	cfg.Retries = int((b2 >> 2) % 4)
	cfg.DisableRecovery = b2&0x30 == 0x30
	cfg.Backoff = core.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}
	cfg.Seed = uint64(b0)<<16 | uint64(b1)<<8 | uint64(b2)
	// The caller's clock starts anywhere, negative instants included.
	origin = [...]core.Instant{0, -1 << 62, 1 << 40, math.MinInt64 / 2}[b2>>6]
	return cfg, origin, b0&0x08 == 0 || b0&0x10 == 0 // stays idle one time in four
}

// fzMaxSteps bounds the inputs one run reads, and with them the window: a
// reconnect re-emits the whole window, so a run costs O(steps^2) at worst.
const fzMaxSteps = 512

// fuzzEventsWith runs the event-sequence property on data, reporting to t.
// It stops at the first broken property.
func fuzzEventsWith(t fzReporter, data []byte, plant func(*core.Machine)) {
	t.Helper()
	in := &fzIn{b: data}
	r := &fzRun{t: t}
	defer r.recoverPanic("events")
	cfg, origin, openNow := fzConfig(in)
	r.now = origin
	r.start(cfg, plant, openNow)
	for in.more() && !r.broken && r.step < fzMaxSteps {
		r.step++
		op := int(in.u8()) % fzOpCount
		r.op = fzOpNames[op]
		switch op {
		case fzOpIngest:
			r.ingest(false, 1, int(in.u8()))
		case fzOpIngestBatch:
			r.ingest(false, int(in.u8()%6), int(in.u8()))
		case fzOpPoll:
			r.poll()
		case fzOpSent:
			r.poll()
			r.sent(int(in.u8() % 8))
		case fzOpAck:
			r.receive(r.currentOrStale(), r.pickAck(in))
		case fzOpOpenResponse:
			r.receive(r.currentOrStale(), r.pickOpenResponse(in))
		case fzOpCloseSignal:
			r.receive(r.currentOrStale(), fzPickCloseSignal(in))
		case fzOpConnFailed:
			conn := r.pickConn(in)
			r.connFailed(conn, core.Code(in.u8()%21))
		case fzOpTickDeadline:
			r.tickDeadline()
		case fzOpTickForward:
			sel, n := in.u8(), time.Duration(in.u8())
			d := [...]time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, time.Hour}[sel%6] * n
			if sel%8 >= 6 {
				d = math.MaxInt64 >> (n % 4) // far in the future, saturating
			}
			r.tick(r.now.Add(d))
		case fzOpBackwards:
			r.backwards(in)
		case fzOpClose:
			r.close()
		case fzOpOpen:
			r.open()
		case fzOpBogusSent:
			r.bogusSent(r.pickConn(in), in.i64())
		case fzOpArbitrary:
			conn := r.pickConn(in)
			r.receive(conn, fzPickArbitrary(in))
		case fzOpIngestWrongType:
			r.ingest(true, 1, 1)
		}
		r.check()
	}
	r.op = "final poll"
	r.poll()
	r.check()
	r.finish()
}

// ---------------------------------------------------------------------------
// The harness: one machine, driven as a driver and a server would, with
// every observable property checked after each input.

type fzSend struct {
	conn   core.ConnID
	offset int64
}

type fzRun struct {
	t      fzReporter
	broken bool
	step   int
	op     string

	m     *core.Machine
	cfg   core.Config
	now   core.Instant
	fresh bool // persistent, resuming from a fresh process, not yet opened

	opened    bool        // the first open response was accepted
	createdOn core.ConnID // the conn whose create response was accepted
	lastConn  core.ConnID // the last ActOpen polled
	maxIssued core.ConnID // the highest conn seen issued (see issued)
	aborted   map[core.ConnID]bool
	// Per connection: wire offset 0's logical offset, the highest offset
	// emitted and the highest reported sent.
	base     map[core.ConnID]int64
	emitted  map[core.ConnID]int64
	sentMax  map[core.ConnID]int64
	unsent   []fzSend // emitted, not yet reported, in emission order
	maxEmit  int64    // what MaxAttempted must be
	payloads map[int64][][]byte
	recSeq   int

	nextDone    int64 // every offset below it was completed or failed, once
	finished    bool  // ActFinished polled
	finishedErr error
	terminal    fsm.State
	terminalErr error
}

// fail reports a broken property with the step that broke it.
func (r *fzRun) fail(format string, args ...any) {
	r.t.Helper()
	if r.broken {
		return
	}
	r.broken = true
	var kind string
	if r.m != nil {
		kind = r.cfg.Kind.String()
	}
	r.t.Errorf("%s step %d (%s): %s", kind, r.step, r.op, fmt.Sprintf(format, args...))
}

func (r *fzRun) recoverPanic(where string) {
	if p := recover(); p != nil {
		r.t.Errorf("%s: panic at step %d (%s): %v\n%s", where, r.step, r.op, p, debug.Stack())
	}
}

func (r *fzRun) start(cfg core.Config, plant func(*core.Machine), openNow bool) {
	m, err := core.New(cfg)
	if err != nil {
		r.fail("core.New: %v", err)
		return
	}
	if plant != nil {
		plant(m)
	}
	// Anchor the machine's clock at the run's origin, so that every later
	// input at r.now or after is in order and anything earlier is not.
	if err := m.Tick(r.now); err != nil {
		r.fail("first Tick(%d): %v", r.now, err)
		return
	}
	r.m, r.cfg = m, cfg
	r.fresh = cfg.StreamID != ""
	r.aborted = map[core.ConnID]bool{}
	r.base = map[core.ConnID]int64{}
	r.emitted = map[core.ConnID]int64{}
	r.sentMax = map[core.ConnID]int64{}
	r.payloads = map[int64][][]byte{}
	r.maxEmit = core.NoOffset
	if openNow {
		r.op = "open"
		r.open()
		r.poll()
	}
	r.check()
}

// fzMisuse lists every error an input may return.
var fzMisuse = []error{
	core.ErrTimeBackwards, core.ErrUnknownSend, core.ErrUnknownConn, core.ErrWindowFull,
	core.ErrCallTooLarge, core.ErrClosed, core.ErrNotOpened, core.ErrStreamFailed,
	core.ErrRecordType, core.ErrAlreadyOpened, core.ErrOffsetSpaceExhausted,
}

func fzIsMisuse(err error) bool {
	for _, s := range fzMisuse {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fzSnap is everything observable without Poll.
type fzSnap struct {
	state                           fsm.State
	err                             error
	floor, last, maxSent, attempted int64
	calls                           int
	bytes                           int64
	conn                            core.ConnID
	deadline                        core.Instant
	armed                           bool
	streamID                        string
}

func (r *fzRun) snap() fzSnap {
	r.issued()
	calls, b := r.m.Pending()
	d, ok := r.m.NextDeadline()
	return fzSnap{
		state: r.m.State(), err: r.m.Err(), floor: r.m.AckFloor(), last: r.m.LastAssigned(),
		maxSent: r.m.MaxSent(), attempted: r.m.MaxAttempted(), calls: calls, bytes: b,
		conn: r.m.Conn(), deadline: d, armed: ok, streamID: r.m.StreamID(),
	}
}

// unchanged checks that an input changed nothing observable.
func (r *fzRun) unchanged(what string, before fzSnap) {
	r.t.Helper()
	if after := r.snap(); after != before {
		r.fail("%s changed the machine:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// misuse checks an input's error: one of the documented sentinels, and (but
// for offset exhaustion, which fails the stream) nothing changed.
func (r *fzRun) misuse(what string, err error, before fzSnap) {
	r.t.Helper()
	if !fzIsMisuse(err) {
		r.fail("%s returned %v (%T), not a documented misuse error", what, err, err)
		return
	}
	if !fzExhaustedNow(err) {
		r.unchanged(what+" (error "+err.Error()+")", before)
	}
}

// fzExhaustedNow: the input itself ran out of offsets (and failed the
// stream), as opposed to a call refused because the stream had already
// failed, whatever the cause.
func fzExhaustedNow(err error) bool {
	return errors.Is(err, core.ErrOffsetSpaceExhausted) && !errors.Is(err, core.ErrStreamFailed)
}

func (r *fzRun) open() {
	before := r.snap()
	if err := r.m.Open(r.now); err != nil {
		if !errors.Is(err, core.ErrAlreadyOpened) && !errors.Is(err, core.ErrTimeBackwards) {
			r.fail("Open: %v", err)
		}
		r.misuse("Open", err, before)
		if before.state == fsm.Idle {
			r.fail("Open on an idle machine: %v", err)
		}
		return
	}
	if before.state != fsm.Idle {
		r.fail("Open succeeded in state %s", before.state)
	}
}

// ingest offers a call of n records (n == 1 and !batch: IngestRecord) of
// about size bytes each.
func (r *fzRun) ingest(wrongType bool, n, size int) {
	rt := r.cfg.RecordType
	if wrongType {
		rt = core.RecordProto + core.RecordJSON - rt
	}
	recs := make([][]byte, n)
	var total int64
	for k := range recs {
		r.recSeq++
		rec := fmt.Appendf(nil, "r%d:", r.recSeq)
		if size > len(rec) {
			rec = append(rec, bytes.Repeat([]byte{'x'}, size-len(rec))...)
		}
		recs[k] = rec
		total += modelFramed(len(rec)) // the call as sent: what the limit counts
	}
	before := r.snap()
	var off int64
	var err error
	if n == 1 && size%2 == 0 {
		off, err = r.m.IngestRecord(r.now, rt, recs[0])
	} else {
		off, err = r.m.IngestBatch(r.now, rt, recs)
	}
	if err != nil {
		r.misuse("ingest", err, before)
		if off != core.NoOffset {
			r.fail("ingest returned offset %d with error %v", off, err)
		}
		switch {
		case fzExhaustedNow(err):
			if before.last != math.MaxInt64-1 || r.m.State() != fsm.Failed || !errors.Is(r.m.Err(), core.ErrOffsetSpaceExhausted) {
				r.fail("ingest exhausted the offset space at last=%d; state %s err %v", before.last, r.m.State(), r.m.Err())
			}
		case before.state == fsm.Failed && !errors.Is(err, core.ErrStreamFailed):
			r.fail("ingest after failure: %v, want ErrStreamFailed", err)
		case errors.Is(err, core.ErrCallTooLarge) && total <= r.cfg.MaxCallBytes:
			r.fail("ingest of %d bytes refused as too large (limit %d)", total, r.cfg.MaxCallBytes)
		}
		return
	}
	if n == 0 {
		if off != core.NoOffset {
			r.fail("empty batch got offset %d", off)
		}
		r.unchanged("empty batch", before)
		return
	}
	switch {
	case wrongType:
		r.fail("a call of the wrong record type was accepted at %d", off)
	case total > r.cfg.MaxCallBytes:
		r.fail("a call of %d bytes was accepted over the %d limit", total, r.cfg.MaxCallBytes)
	case off != before.last+1 || r.m.LastAssigned() != off:
		r.fail("ingest got offset %d, LastAssigned %d, want %d", off, r.m.LastAssigned(), before.last+1)
	case before.state.Terminal() || before.state == fsm.Closing || before.state == fsm.Idle:
		r.fail("ingest accepted in state %s", before.state)
	}
	r.payloads[off] = recs
}

// poll drains the machine's actions and checks each of them.
func (r *fzRun) poll() {
	if r.broken {
		return
	}
	// Poll until it adds nothing: one Poll emits at most a bounded number
	// of sends.
	for acts := r.m.Poll(nil); len(acts) > 0; acts = r.m.Poll(acts[:0]) {
		for _, a := range acts {
			r.observe(a)
			if r.broken {
				return
			}
		}
	}
	// The queue is drained: completions and failures account for every
	// offset up to the floor, or for everything after a failure.
	switch st := r.m.State(); {
	case st == fsm.Failed && r.nextDone != r.m.LastAssigned()+1:
		r.fail("failed with offsets up to %d accounted for, want every one up to %d", r.nextDone-1, r.m.LastAssigned())
	case st != fsm.Failed && r.nextDone != r.m.AckFloor()+1:
		r.fail("completions reached %d, ack floor is %d", r.nextDone-1, r.m.AckFloor())
	case st.Terminal() != r.finished:
		r.fail("state %s, ActFinished seen: %v", st, r.finished)
	}
}

func (r *fzRun) observe(a core.Action) {
	if r.finished {
		r.fail("action %s after ActFinished", a.Kind)
		return
	}
	if a.Kind != core.ActComplete && a.Kind != core.ActFail && a.Kind != core.ActSend && (a.Offset != 0 || a.Last != 0 || a.Wire != 0) {
		r.fail("%s action carries offsets %+v", a.Kind, a)
		return
	}
	switch a.Kind {
	case core.ActOpen:
		if a.Conn != r.lastConn+1 {
			r.fail("ActOpen conn %d after conn %d", a.Conn, r.lastConn)
			return
		}
		r.lastConn = a.Conn
		r.unsent = r.unsent[:0] // sends of connections left behind never matter again
		// A persistent stream creates until a create is answered, then
		// only resumes; a fresh process only resumes; ephemeral never.
		wantResume := r.cfg.Kind == core.Persistent &&
			(r.cfg.StreamID != "" || (r.createdOn != 0 && a.Conn > r.createdOn))
		switch {
		case a.Resume != wantResume:
			r.fail("ActOpen conn %d resume=%v, want %v", a.Conn, a.Resume, wantResume)
		case a.Resume && (a.StreamID == "" || a.StreamID != r.m.StreamID()):
			r.fail("resume of %q, stream is %q", a.StreamID, r.m.StreamID())
		case !a.Resume && r.cfg.Kind == core.Persistent && a.RequestID != r.cfg.ClientRequestID:
			r.fail("persistent create with request id %q, want %q", a.RequestID, r.cfg.ClientRequestID)
		case r.cfg.Kind == core.Ephemeral && (a.RequestID != "" || a.StreamID != ""):
			r.fail("ephemeral open %+v carries ids", a)
		}
	case core.ActSend:
		base, ok := r.base[a.Conn]
		prev, sentBefore := r.emitted[a.Conn]
		switch {
		case a.Offset < 0 || a.Wire < 0:
			r.fail("send with a negative offset: %+v", a)
		case a.Conn != r.m.Conn() || !ok:
			r.fail("send on conn %d, current %d (opened: %v)", a.Conn, r.m.Conn(), ok)
		case a.Wire != a.Offset-base:
			r.fail("send of %d under wire %d, want %d", a.Offset, a.Wire, a.Offset-base)
		case sentBefore && a.Offset != prev+1:
			r.fail("send of %d after %d on conn %d", a.Offset, prev, a.Conn)
		case !sentBefore && a.Offset != r.m.AckFloor()+1:
			r.fail("first send on conn %d is %d, ack floor %d", a.Conn, a.Offset, r.m.AckFloor())
		}
		if r.broken {
			return
		}
		want := r.payloads[a.Offset]
		got := a.Records
		if a.Record != nil || got == nil {
			got = [][]byte{a.Record}
		}
		if !fzSameRecords(got, want) {
			r.fail("send of %d carries %q, ingested %q", a.Offset, got, want)
			return
		}
		r.emitted[a.Conn] = a.Offset
		r.unsent = append(r.unsent, fzSend{a.Conn, a.Offset})
		r.maxEmit = max(r.maxEmit, a.Offset)
	case core.ActComplete, core.ActFail:
		switch {
		case a.Offset < 0 || a.Last < a.Offset:
			r.fail("%s of a bad range %d..%d", a.Kind, a.Offset, a.Last)
		case a.Offset != r.nextDone:
			r.fail("%s %d..%d, but every offset below %d is already done (completed or failed twice, or out of order)", a.Kind, a.Offset, a.Last, r.nextDone)
		case a.Last > r.m.LastAssigned():
			r.fail("%s %d..%d beyond the last accepted offset %d", a.Kind, a.Offset, a.Last, r.m.LastAssigned())
		case a.Kind == core.ActFail && (a.Err == nil || a.Err != r.m.Err()):
			r.fail("ActFail with %v, Err() %v", a.Err, r.m.Err())
		case a.Kind == core.ActFail && a.Last != r.m.LastAssigned():
			r.fail("ActFail %d..%d leaves accepted offsets up to %d", a.Offset, a.Last, r.m.LastAssigned())
		}
		if a.Last < math.MaxInt64 {
			r.nextDone = a.Last + 1
		}
		if a.Kind == core.ActComplete {
			for o := range r.payloads {
				if o <= a.Last {
					delete(r.payloads, o)
				}
			}
		}
	case core.ActAbort, core.ActCloseSend:
		switch {
		case a.Conn == 0 || a.Conn > r.lastConn:
			r.fail("%s of conn %d, never opened (last %d)", a.Kind, a.Conn, r.lastConn)
		case r.aborted[a.Conn]:
			r.fail("%s of conn %d, already aborted", a.Kind, a.Conn)
		}
		if a.Kind == core.ActAbort {
			r.aborted[a.Conn] = true
		}
	case core.ActInvalidateCredentials:
	case core.ActFinished:
		r.finished, r.finishedErr = true, a.Err
		if a.Err != r.m.Err() || (a.Err == nil) != (r.m.State() == fsm.Closed) {
			r.fail("ActFinished(%v) in state %s with Err %v", a.Err, r.m.State(), r.m.Err())
		}
	default:
		r.fail("undefined action %+v", a)
	}
}

func fzSameRecords(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}

// sent reports the next n emitted sends of the current connection as
// successful, in order; each must be accepted.
func (r *fzRun) sent(n int) {
	conn := r.m.Conn()
	kept := r.unsent[:0]
	for _, s := range r.unsent {
		if s.conn == conn && conn != 0 {
			kept = append(kept, s)
		}
	}
	r.unsent = kept
	for ; n > 0 && len(r.unsent) > 0 && !r.broken; n-- {
		s := r.unsent[0]
		r.unsent = r.unsent[1:]
		if err := r.m.Sent(r.now, s.conn, s.offset); err != nil {
			r.fail("Sent(conn %d, %d), emitted in order: %v", s.conn, s.offset, err)
			return
		}
		r.sentMax[s.conn] = s.offset
	}
}

// bogusSent reports an arbitrary send outcome: accepted only when it is
// exactly the next emitted send of the current connection, ignored on a
// stale connection, refused without change otherwise.
func (r *fzRun) bogusSent(conn core.ConnID, offset int64) {
	if r.broken {
		return
	}
	r.sent(0) // forget sends of connections already left
	before := r.snap()
	next := conn != 0 && conn == before.conn && len(r.unsent) > 0 && r.unsent[0].offset == offset
	err := r.m.Sent(r.now, conn, offset)
	switch {
	case conn == 0 || conn > r.issued():
		if !errors.Is(err, core.ErrUnknownConn) {
			r.fail("Sent on unknown conn %d: %v", conn, err)
		}
		r.misuse("Sent", err, before)
	case conn != before.conn:
		if err != nil {
			r.fail("Sent on stale conn %d: %v", conn, err)
		}
		r.unchanged("Sent on a stale conn", before)
	case next:
		if err != nil {
			r.fail("Sent of the next emitted offset %d refused: %v", offset, err)
		}
		r.unsent = r.unsent[1:]
		r.sentMax[conn] = offset
	default:
		if !errors.Is(err, core.ErrUnknownSend) {
			r.fail("Sent(conn %d, %d) not emitted next (%v): %v, want ErrUnknownSend", conn, offset, r.unsent, err)
		}
		r.misuse("Sent", err, before)
	}
}

// pickConn chooses a connection for an input: mostly the current one, else
// a stale one, else one never issued.
func (r *fzRun) pickConn(in *fzIn) core.ConnID {
	switch b := in.u8(); b % 8 {
	case 6:
		if n := r.issued(); n > 1 {
			return core.ConnID(1 + uint64(b>>3)%uint64(n-1))
		}
	case 7:
		if b&0x80 != 0 {
			return 0
		}
		return r.issued() + 1 + core.ConnID(b>>3)
	}
	return r.currentOrStale()
}

// issued is the highest connection the machine has issued, polled or not.
// A connection is issued last in the input that issues it, so it is always
// seen, as Conn() or as an ActOpen, before a later input can leave it.
func (r *fzRun) issued() core.ConnID {
	r.maxIssued = max(r.maxIssued, r.lastConn, r.m.Conn())
	return r.maxIssued
}

func (r *fzRun) currentOrStale() core.ConnID {
	if c := r.m.Conn(); c != 0 {
		return c
	}
	return r.lastConn
}

func fzAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// pickAck draws an ack near the connection's bounds (in wire offsets), or an
// arbitrary one, or one without an offset.
func (r *fzRun) pickAck(in *fzIn) core.Response {
	base := r.base[r.m.Conn()]
	f := r.m.AckFloor() - base
	s := r.m.MaxSent() - base
	var a int64
	switch sel := in.u8(); sel % 16 {
	case 0:
		return core.Response{Kind: core.RespAck}
	case 1:
		a = f - 1
	case 2:
		a = f
	case 3, 4, 5:
		a = s
	case 6, 7, 8:
		if s >= f {
			a = f + int64(in.u8())%(s-f+1)
		} else {
			a = s
		}
	case 9:
		a = fzAdd(s, 1)
	case 10:
		a = fzAdd(s, int64(in.u8()))
	case 11:
		a = in.i64()
	case 12:
		a = math.MaxInt64
	case 13:
		a = math.MinInt64
	case 14:
		a = fzAdd(f, -int64(in.u8()))
	case 15:
		a = s - 1
	}
	return core.Response{Kind: core.RespAck, Offset: a, HasOffset: true}
}

// pickWatermark draws a resume watermark near the bounds the client knows,
// near the top of the offset space, or arbitrary.
func (r *fzRun) pickWatermark(in *fzIn) core.Response {
	floor, att := r.m.AckFloor(), r.m.MaxAttempted()
	var w int64
	switch sel := in.u8(); sel % 16 {
	case 0:
		return core.Response{Kind: core.RespResume}
	case 1:
		w = -1
	case 2:
		w = -2
	case 3:
		w = floor - 1
	case 4:
		w = floor
	case 5, 6:
		if att >= floor {
			w = floor + int64(in.u8())%(att-floor+1)
		} else {
			w = floor
		}
	case 7:
		w = att
	case 8:
		w = fzAdd(att, 1)
	case 9:
		w = math.MaxInt64
	case 10:
		w = math.MaxInt64 - 1
	case 11:
		w = math.MaxInt64 - 1 - int64(in.u8()%4)
	case 12:
		w = in.i64()
	case 13:
		w = math.MinInt64
	case 14:
		w = int64(in.u8())
	case 15:
		w = fzAdd(att, int64(in.u8()))
	}
	return core.Response{Kind: core.RespResume, Offset: w, HasOffset: true}
}

// pickOpenResponse answers an open, mostly as asked.
func (r *fzRun) pickOpenResponse(in *fzIn) core.Response {
	resume := r.cfg.Kind == core.Persistent && r.m.StreamID() != ""
	sel := in.u8()
	switch sel % 8 {
	case 5:
		return core.Response{Kind: core.RespCreate}
	case 6:
		return core.Response{Kind: core.RespCreate, HasStreamID: true}
	case 7:
		resume = !resume // the wrong kind
	}
	if resume {
		return r.pickWatermark(in)
	}
	return core.Response{Kind: core.RespCreate, StreamID: fmt.Sprintf("s-%d", r.lastConn), HasStreamID: true}
}

func fzPickCloseSignal(in *fzIn) core.Response {
	durs := [...]time.Duration{0, -time.Second, time.Millisecond, time.Second, 5 * time.Second, time.Minute, time.Hour, math.MaxInt64, math.MinInt64}
	sel := in.u8()
	if sel%10 == 9 {
		return core.Response{Kind: core.RespCloseSignal}
	}
	return core.Response{Kind: core.RespCloseSignal, Duration: durs[sel%10], HasDuration: true}
}

// fzPickArbitrary builds any Response at all, undefined kinds included.
func fzPickArbitrary(in *fzIn) core.Response {
	kind, flags := in.u8(), in.u8()
	v := in.i64()
	r := core.Response{Kind: core.ResponseKind(kind % 6)}
	if kind%6 == 5 {
		r.Kind = core.ResponseKind(kind)
	}
	if flags&1 != 0 {
		r.StreamID, r.HasStreamID = fmt.Sprintf("x-%d", flags>>4), true
	}
	if flags&2 != 0 {
		r.Offset, r.HasOffset = v, true
	}
	if flags&4 != 0 {
		r.Duration, r.HasDuration = time.Duration(v), true
	}
	return r
}

// receive delivers a server message on conn and checks it against the
// protocol's rules for the state it arrived in.
func (r *fzRun) receive(conn core.ConnID, resp core.Response) {
	if r.broken {
		return
	}
	before := r.snap()
	current := conn != 0 && conn == before.conn
	err := r.m.Receive(r.now, conn, resp)
	switch {
	case conn == 0 || conn > r.issued():
		if !errors.Is(err, core.ErrUnknownConn) {
			r.fail("Receive on unknown conn %d: %v, want ErrUnknownConn", conn, err)
		}
		r.misuse("Receive", err, before)
		return
	case err != nil:
		r.fail("Receive(%+v) returned %v: peer input never returns an error", resp, err)
		return
	case !current:
		r.unchanged("Receive on stale conn", before)
		return
	}
	wantProtocol := func(what string) {
		if r.m.State() != fsm.Failed {
			r.fail("%s (%+v) did not fail the stream: state %s", what, resp, r.m.State())
			return
		}
		var pe *core.ProtocolError
		if !errors.As(r.m.Err(), &pe) {
			r.fail("%s (%+v) failed with %v (%T), want a *core.ProtocolError", what, resp, r.m.Err(), r.m.Err())
		}
		r.untouched(what, before)
	}
	wantOK := func(what string) bool {
		if r.m.State() == fsm.Failed {
			r.fail("%s (%+v) failed the stream: %v", what, resp, r.m.Err())
			return false
		}
		return true
	}
	switch st := before.state; {
	case st == fsm.Opening && (resp.Kind == core.RespCreate || resp.Kind == core.RespResume):
		r.checkOpen(resp, before, wantProtocol, wantOK)
	case resp.Kind == core.RespAck && (st == fsm.Open || st == fsm.Paused || st == fsm.Closing):
		base := r.base[conn]
		f, s := before.floor-base, before.maxSent-base
		switch {
		case !resp.HasOffset || resp.Offset < f || resp.Offset > s:
			wantProtocol("ack outside [floor, maxSent]")
		case resp.Offset == f:
			r.unchanged("duplicate ack", before)
		default:
			if wantOK("valid ack") && r.m.AckFloor() != base+resp.Offset {
				r.fail("ack %d (wire) moved the floor to %d, want %d", resp.Offset, r.m.AckFloor(), base+resp.Offset)
			}
			if r.m.AckFloor() > r.sentMax[conn] {
				r.fail("ack made %d durable, but only up to %d was reported sent on conn %d", r.m.AckFloor(), r.sentMax[conn], conn)
			}
		}
	case resp.Kind == core.RespCloseSignal && st == fsm.Open:
		if !wantOK("close signal") {
			return
		}
		grace := r.cfg.MaxGrace
		if resp.HasDuration && resp.Duration < grace {
			grace = resp.Duration
		}
		inFlight := r.emitted[conn] > before.floor && r.hasEmitted(conn)
		rotate := r.cfg.Kind == core.Persistent || grace <= 0 || !inFlight
		switch {
		case rotate && (r.m.State() != fsm.Opening || r.m.Conn() == conn):
			r.fail("close signal (grace %v, in flight %v) did not reconnect at once: state %s conn %d", grace, inFlight, r.m.State(), r.m.Conn())
		case !rotate && r.m.State() != fsm.Paused:
			r.fail("close signal (grace %v) did not pause: state %s", grace, r.m.State())
		}
	case resp.Kind == core.RespCloseSignal && (st == fsm.Paused || st == fsm.Closing):
		r.unchanged("close signal while leaving the connection", before)
	default:
		// Anything else, a close signal before the open response included
		// (the first server message must answer the open), is a violation.
		wantProtocol("unexpected message in state " + string(st))
	}
}

func (r *fzRun) hasEmitted(conn core.ConnID) bool {
	_, ok := r.emitted[conn]
	return ok
}

// untouched checks that a failing input did not move the window.
func (r *fzRun) untouched(what string, before fzSnap) {
	if r.m.AckFloor() != before.floor || r.m.LastAssigned() != before.last {
		r.fail("%s moved floor/last from %d/%d to %d/%d", what, before.floor, before.last, r.m.AckFloor(), r.m.LastAssigned())
	}
}

// checkOpen is the oracle for an open response (protocol.md §4, §5.3).
func (r *fzRun) checkOpen(resp core.Response, before fzSnap, wantProtocol func(string), wantOK func(string) bool) {
	conn := before.conn
	resume := r.cfg.Kind == core.Persistent && before.streamID != ""
	switch {
	case resume && resp.Kind != core.RespResume:
		wantProtocol("create response to a resume")
		return
	case !resume && resp.Kind != core.RespCreate:
		wantProtocol("resume response to a create")
		return
	case !resume && (!resp.HasStreamID || resp.StreamID == ""):
		wantProtocol("create response without a stream id")
		return
	}
	if resume {
		w := core.NoOffset
		if resp.HasOffset {
			w = resp.Offset
		}
		switch {
		case w < core.NoOffset:
			wantProtocol("watermark below -1")
			return
		case w == math.MaxInt64:
			if r.m.State() != fsm.Failed || !errors.Is(r.m.Err(), core.ErrOffsetSpaceExhausted) {
				r.fail("watermark MaxInt64: state %s err %v, want offset space exhausted", r.m.State(), r.m.Err())
			}
			r.untouched("watermark MaxInt64", before)
			return
		case r.fresh:
			if !wantOK("fresh-process resume") {
				return
			}
			if r.m.AckFloor() != w || r.m.LastAssigned() != w || r.m.MaxAttempted() != w {
				r.fail("fresh resume at %d: floor %d last %d attempted %d", w, r.m.AckFloor(), r.m.LastAssigned(), r.m.MaxAttempted())
			}
			r.nextDone, r.maxEmit = w+1, w
		case w < before.floor:
			wantProtocol("watermark below the ack floor")
			return
		case w > before.attempted:
			wantProtocol("watermark above the highest offset attempted")
			return
		default:
			if wantOK("resume") && r.m.AckFloor() != w {
				r.fail("resume at %d left the floor at %d", w, r.m.AckFloor())
			}
		}
	} else {
		if !wantOK("create response") {
			return
		}
		if r.cfg.Kind == core.Persistent {
			r.createdOn = conn
		}
		if r.m.StreamID() != resp.StreamID {
			r.fail("created %q, StreamID() %q", resp.StreamID, r.m.StreamID())
		}
	}
	if st := r.m.State(); st != fsm.Open && st != fsm.Closing {
		r.fail("open response left state %s", st)
		return
	}
	r.opened, r.fresh = true, false
	r.base[conn] = 0
	if r.cfg.Kind == core.Ephemeral {
		r.base[conn] = r.m.AckFloor() + 1
	}
	r.sentMax[conn] = r.m.AckFloor()
}

func (r *fzRun) connFailed(conn core.ConnID, code core.Code) {
	if r.broken {
		return
	}
	before := r.snap()
	err := r.m.ConnectionFailed(r.now, conn, code, errors.New("fuzz: injected"))
	switch {
	case conn == 0 || conn > r.issued():
		if !errors.Is(err, core.ErrUnknownConn) {
			r.fail("ConnectionFailed on unknown conn %d: %v", conn, err)
		}
		r.misuse("ConnectionFailed", err, before)
		return
	case err != nil:
		r.fail("ConnectionFailed(%d, %s): %v", conn, code, err)
		return
	case conn != before.conn:
		r.unchanged("ConnectionFailed on a stale conn", before)
		return
	}
	st := r.m.State()
	switch {
	case r.m.Conn() == conn:
		r.fail("conn %d still current after it failed", conn)
	case before.state == fsm.Closing && st != fsm.Closed:
		r.fail("end of the connection while closing: state %s, want closed", st)
	case before.state != fsm.Closing && !code.Retryable() && code != core.CodeUnauthenticated && st != fsm.Failed:
		r.fail("non-retryable %s: state %s, want failed", code, st)
	case st == fsm.Failed:
		if err := r.m.Err(); !errors.Is(err, core.ErrRetriesExhausted) {
			var ce *core.ConnectionError
			if !errors.As(err, &ce) || ce.Code != code {
				r.fail("failed with %v after %s", err, code)
			}
		}
	}
}

func (r *fzRun) tick(at core.Instant) {
	if r.broken {
		return
	}
	before := r.snap()
	if err := r.m.Tick(at); err != nil {
		r.misuse("Tick", err, before)
		if at >= r.now {
			r.fail("Tick(%d) at or after now %d: %v", at, r.now, err)
		}
		return
	}
	r.now = at
	// Everything due was handled (at the end of time, deadlines saturate
	// at now and are due again at once).
	if d, ok := r.m.NextDeadline(); ok && (d < at || (d == at && at != math.MaxInt64)) {
		r.fail("after Tick(%d) a deadline %d is still due in state %s", at, d, r.m.State())
	}
}

func (r *fzRun) tickDeadline() {
	if d, ok := r.m.NextDeadline(); ok {
		r.tick(max(d, r.now))
		return
	}
	r.tick(r.now)
}

func (r *fzRun) close() {
	if r.broken {
		return
	}
	before := r.snap()
	if err := r.m.Close(r.now); err != nil {
		r.fail("Close: %v", err)
		return
	}
	if before.state.Terminal() {
		r.unchanged("Close after the end", before)
	}
	if before.state == fsm.Idle && r.m.State() != fsm.Closed {
		r.fail("Close of an idle stream: state %s", r.m.State())
	}
}

// backwards offers one input at an earlier instant: it must be refused with
// ErrTimeBackwards and change nothing.
func (r *fzRun) backwards(in *fzIn) {
	which, d := in.u8(), core.Instant(1+int64(in.u8()))*core.Instant(time.Millisecond)
	at := r.now - d
	before := r.snap()
	var err error
	conn := r.currentOrStale()
	switch which % 8 {
	case 0:
		_, err = r.m.IngestRecord(at, r.cfg.RecordType, []byte("late"))
	case 1:
		_, err = r.m.IngestBatch(at, r.cfg.RecordType, nil)
	case 2:
		err = r.m.Sent(at, conn, r.m.MaxSent()+1)
	case 3:
		err = r.m.Receive(at, conn, core.Response{Kind: core.RespAck, Offset: r.m.MaxSent() - r.base[conn], HasOffset: true})
	case 4:
		err = r.m.ConnectionFailed(at, conn, core.CodeUnavailable, nil)
	case 5:
		err = r.m.Tick(at)
	case 6:
		err = r.m.Close(at)
	case 7:
		err = r.m.Open(at)
	}
	if !errors.Is(err, core.ErrTimeBackwards) {
		r.fail("input %d at %d, before now %d: %v, want ErrTimeBackwards", which%8, at, r.now, err)
		return
	}
	r.misuse("backwards input", err, before)
}

// check asserts the invariants that hold after every input.
func (r *fzRun) check() {
	if r.broken || r.m == nil {
		return
	}
	r.issued()
	m := r.m
	st := m.State()
	floor, last, maxSent, att := m.AckFloor(), m.LastAssigned(), m.MaxSent(), m.MaxAttempted()
	calls, b := m.Pending()
	switch {
	case r.terminal != "" && (st != r.terminal || m.Err() != r.terminalErr):
		r.fail("terminal state %s (%v) became %s (%v)", r.terminal, r.terminalErr, st, m.Err())
	case (st == fsm.Failed) != (m.Err() != nil):
		r.fail("state %s with Err %v", st, m.Err())
	case floor < core.NoOffset || floor > last:
		r.fail("ack floor %d, last assigned %d", floor, last)
	case maxSent < floor || maxSent > last:
		r.fail("max sent %d outside [floor %d, last %d]", maxSent, floor, last)
	case att < floor || att > last:
		r.fail("max attempted %d outside [floor %d, last %d]", att, floor, last)
	case att != r.maxEmit:
		r.fail("max attempted %d, highest offset emitted %d", att, r.maxEmit)
	case int64(calls) != last-floor:
		r.fail("%d calls pending, floor %d last %d", calls, floor, last)
	case calls > r.cfg.MaxInflightCalls || b > r.cfg.MaxInflightBytes || b < 0:
		r.fail("window %d calls / %d bytes over the limits %d / %d", calls, b, r.cfg.MaxInflightCalls, r.cfg.MaxInflightBytes)
	case st.Terminal() && m.Conn() != 0:
		r.fail("terminal state %s with conn %d", st, m.Conn())
	}
	if r.broken {
		return
	}
	if st.Terminal() && r.terminal == "" {
		r.terminal, r.terminalErr = st, m.Err()
	}
	if c := m.Conn(); c != 0 && (st == fsm.Open || st == fsm.Paused || st == fsm.Closing) {
		if maxSent != r.sentMax[c] {
			r.fail("MaxSent %d, highest reported sent on conn %d is %d", maxSent, c, r.sentMax[c])
		}
	}
}

// finish checks the end state once the last input was processed.
func (r *fzRun) finish() {
	if r.broken || r.m == nil {
		return
	}
	m := r.m
	u1, u2 := m.Unacked(nil), m.Unacked(nil)
	if len(u1) != int(m.LastAssigned()-m.AckFloor()) {
		r.fail("Unacked lists %d calls, %d pending", len(u1), m.LastAssigned()-m.AckFloor())
		return
	}
	for k, bt := range u1 {
		if bt.Offset != m.AckFloor()+1+int64(k) || bt.Offset != u2[k].Offset || !fzSameRecords(bt.Records, u2[k].Records) {
			r.fail("Unacked[%d] = %d %q, then %d %q", k, bt.Offset, bt.Records, u2[k].Offset, u2[k].Records)
			return
		}
		if want, ok := r.payloads[bt.Offset]; !ok || !fzSameRecords(bt.Records, want) {
			r.fail("Unacked offset %d holds %q, ingested %q", bt.Offset, bt.Records, want)
			return
		}
	}
	if m.State().Terminal() {
		for c := core.ConnID(1); c <= r.lastConn; c++ {
			if !r.aborted[c] {
				r.fail("conn %d never got its ActAbort", c)
				return
			}
		}
		// Absorbing: nothing moves the machine any more.
		before := r.snap()
		r.now = r.now.Add(time.Hour)
		r.op = "after the end"
		_ = m.Tick(r.now)
		_ = m.Close(r.now)
		_ = m.ConnectionFailed(r.now, r.lastConn, core.CodeUnavailable, nil)
		_ = m.Receive(r.now, r.lastConn, core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true})
		if _, err := m.IngestRecord(r.now, r.cfg.RecordType, []byte("x")); err == nil {
			r.fail("ingest accepted after the end")
		}
		if acts := m.Poll(nil); len(acts) != 0 {
			r.fail("actions after the end: %+v", acts)
		}
		r.unchanged("inputs after the end", before)
	}
}

// ---------------------------------------------------------------------------
// Seeds

// fzPersistentSeeds are wire encodings of PersistentStreamResponse: every
// payload case with and without its fields, edge values and garbage.
func fzPersistentSeeds() [][]byte {
	type P = ingestpb.PersistentStreamResponse
	msgs := []*P{
		{},
		{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("s-1")}}},
		{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("")}}},
		{Payload: &ingestpb.PersistentStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(0)}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(1)}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(-2)}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(math.MaxInt64)}}},
		{Payload: &ingestpb.PersistentStreamResponse_ResumeStreamResponse{ResumeStreamResponse: &ingestpb.ResumeIngestStreamResponse{LastCommittedOffset: proto.Int64(math.MaxInt64 - 1)}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(0)}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(1)}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(2)}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(-1)}}},
		{Payload: &ingestpb.PersistentStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(math.MinInt64)}}},
	}
	for _, d := range fzSeedDurations() {
		msgs = append(msgs, &P{Payload: &ingestpb.PersistentStreamResponse_CloseStreamSignal{CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: d}}})
	}
	seeds := make([][]byte, 0, len(msgs)+len(fzGarbage))
	for _, m := range msgs {
		seeds = append(seeds, fzMarshal(m))
	}
	return append(seeds, fzGarbage...)
}

// fzEphemeralSeeds are wire encodings of EphemeralStreamResponse.
func fzEphemeralSeeds() [][]byte {
	type E = ingestpb.EphemeralStreamResponse
	msgs := []*E{
		{},
		{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("e-1")}}},
		{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{StreamId: proto.String("")}}},
		{Payload: &ingestpb.EphemeralStreamResponse_CreateStreamResponse{CreateStreamResponse: &ingestpb.CreateIngestStreamResponse{}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(0)}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(1)}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(2)}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(-1)}}},
		{Payload: &ingestpb.EphemeralStreamResponse_IngestRecordResponse{IngestRecordResponse: &ingestpb.IngestRecordResponse{DurabilityAckUpToOffset: proto.Int64(math.MaxInt64)}}},
	}
	for _, d := range fzSeedDurations() {
		msgs = append(msgs, &E{Payload: &ingestpb.EphemeralStreamResponse_CloseStreamSignal{CloseStreamSignal: &ingestpb.CloseStreamSignal{Duration: d}}})
	}
	seeds := make([][]byte, 0, len(msgs)+len(fzGarbage))
	for _, m := range msgs {
		seeds = append(seeds, fzMarshal(m))
	}
	return append(seeds, fzGarbage...)
}

func fzSeedDurations() []*durationpb.Duration {
	return []*durationpb.Duration{
		nil,
		{},
		durationpb.New(30 * time.Second),
		durationpb.New(time.Millisecond),
		{Seconds: -5},
		{Nanos: -1},
		{Seconds: 315576000000},
		{Seconds: 315576000001},
		{Seconds: math.MinInt64, Nanos: math.MinInt32},
		{Seconds: 5, Nanos: -1},
		{Nanos: 1e9},
	}
}

// fzGarbage is bytes that are not valid messages, or only barely.
var fzGarbage = [][]byte{
	{0x80},                   // truncated varint tag
	{0x0a, 0x05, 0x01},       // truncated length
	{0x00, 0x00},             // field number 0
	{0x08, 0x05},             // payload field with the wrong wire type
	{0x0a, 0x01, 0xff},       // bad inner message
	{0x2c},                   // end group without start
	{0x1a, 0x02, 0x0a, 0x00}, // field 3 holding an empty field 1
	{0x22, 0x04, 0x0a, 0x02, 0x08, 0x7f},
	{0x12, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // field 2, offset -1
}

func fzMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// fzSeq builds an event-sequence input: three configuration bytes, then
// steps of an opcode and its parameter bytes.
type fzSeq []byte

func fzNewSeq(b0, b1, b2 byte) fzSeq { return fzSeq{b0, b1, b2} }

func (s fzSeq) op(op byte, params ...byte) fzSeq { return append(append(s, op), params...) }

// Configuration byte 0: kind (0 ephemeral, 1 persistent create, 2 persistent
// fresh resume); bit 0x04 proto records; bits 0x18 both set: stay idle.
// Byte 1: bit 0x80 default limits, else small windows. Byte 2: grace
// selector (low 2 bits), retries (bits 2-3), 0x30 disables recovery, clock
// origin (top 2 bits).
const (
	fzEph        = 0
	fzPersCreate = 1
	fzPersResume = 2
	fzIdle       = 0x18
	fzDefaults   = 0x80
	fzGrace10s   = 2
	fzRetries3   = 3 << 2
	fzOriginNeg  = 1 << 6 // the clock starts at -2^62
)

// Selectors for pickAck (sel%16), pickWatermark (sel%16), pickOpenResponse
// (sel%8) and fzPickCloseSignal (sel%10), as used in the seeds.
const (
	fzAckMissing  = 0
	fzAckFloor    = 2
	fzAckMaxSent  = 3
	fzAckAbove    = 9
	fzAckMax      = 12
	fzAckBelow    = 14
	fzWMAbsent    = 0
	fzWMFloor     = 4
	fzWMAttempted = 7
	fzWMAbove     = 8
	fzWMMax       = 9
	fzWMMaxMinus  = 11
	fzWMArbitrary = 12
	fzWMBelow     = 3
	fzOpenOK      = 0
	fzOpenNoID    = 5
	fzOpenWrong   = 7
	fzSig30s      = 4
	fzSigAbsent   = 9
	fzSigZero     = 0
)

// fzEventSeeds are scenarios from protocol.md §8, as event sequences.
func fzEventSeeds() [][]byte {
	s := [][]byte{
		// Persistent: create, ingest 0..2, send, ack, close cleanly.
		fzNewSeq(fzPersCreate, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 4).op(fzOpIngest, 4).op(fzOpIngestBatch, 3, 5).
			op(fzOpSent, 3).op(fzOpAck, fzAckMaxSent).
			op(fzOpClose).op(fzOpPoll).op(fzOpConnFailed, 0, byte(core.CodeOK)).op(fzOpPoll),
		// Persistent: ack lost after commit, resume reconciles it.
		fzNewSeq(fzPersCreate, fzDefaults, fzRetries3).
			op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 2).op(fzOpIngest, 2).op(fzOpIngest, 2).
			op(fzOpSent, 3).op(fzOpAck, 6, 1).
			op(fzOpConnFailed, 0, byte(core.CodeUnavailable)).op(fzOpPoll).
			op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpOpenResponse, fzOpenOK, fzWMAttempted).op(fzOpPoll).
			op(fzOpIngest, 2).op(fzOpSent, 1).op(fzOpAck, fzAckMaxSent).op(fzOpPoll),
		// Persistent: watermark below the floor, then above anything sent.
		fzNewSeq(fzPersCreate, 3, fzRetries3).
			op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 2).op(fzOpIngest, 2).op(fzOpSent, 2).op(fzOpAck, fzAckMaxSent).
			op(fzOpConnFailed, 0, byte(core.CodeInternal)).op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpOpenResponse, fzOpenOK, fzWMBelow).op(fzOpPoll),
		fzNewSeq(fzPersCreate, 3, fzRetries3).
			op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 2).op(fzOpSent, 1).
			op(fzOpConnFailed, 0, byte(core.CodeAborted)).op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpOpenResponse, fzOpenOK, fzWMAbove).op(fzOpPoll),
		// Fresh process resume near the top of the offset space: exhaustion.
		fzNewSeq(fzPersResume, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK, fzWMMaxMinus, 1).
			op(fzOpIngest, 2).op(fzOpIngest, 2).op(fzOpPoll).op(fzOpSent, 2).op(fzOpPoll),
		fzNewSeq(fzPersResume, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK, fzWMMax).op(fzOpPoll),
		fzNewSeq(fzPersResume, 0, 0).
			op(fzOpOpenResponse, fzOpenOK, fzWMAbsent).
			op(fzOpIngest, 1).op(fzOpSent, 1).op(fzOpAck, fzAckMaxSent).op(fzOpPoll),
		// Create answered wrongly.
		fzNewSeq(fzPersCreate, fzDefaults, 0).op(fzOpOpenResponse, fzOpenNoID).op(fzOpPoll),
		fzNewSeq(fzPersCreate, fzDefaults, 0).op(fzOpOpenResponse, fzOpenWrong, fzWMFloor).op(fzOpPoll),
		// Ephemeral: rotation with a grace period, resend renumbered.
		fzNewSeq(fzEph, fzDefaults, fzGrace10s|fzRetries3).
			op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 2).op(fzOpIngest, 2).op(fzOpIngest, 2).op(fzOpSent, 3).
			op(fzOpAck, 6, 1).op(fzOpCloseSignal, fzSig30s).op(fzOpIngest, 2).
			op(fzOpAck, 6, 1).op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpSent, 3).op(fzOpAck, fzAckMaxSent).
			op(fzOpAck, fzAckAbove).op(fzOpPoll),
		// Ephemeral: over-ack, regressive ack, missing ack.
		fzNewSeq(fzEph, 5, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpSent, 1).op(fzOpAck, fzAckMax).op(fzOpPoll),
		fzNewSeq(fzEph, 5, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpIngest, 1).op(fzOpSent, 2).
			op(fzOpAck, fzAckMaxSent).op(fzOpAck, fzAckBelow, 1).op(fzOpPoll),
		fzNewSeq(fzEph, 5, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpSent, 1).op(fzOpAck, fzAckMissing).op(fzOpPoll),
		// Ephemeral: ack timeout, recovery, retries exhausted.
		fzNewSeq(fzEph, 1, 1<<2).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 3).op(fzOpIngest, 3).op(fzOpSent, 2).
			op(fzOpTickDeadline).op(fzOpPoll).op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpTickDeadline).op(fzOpTickDeadline).op(fzOpTickDeadline).op(fzOpPoll),
		// Backpressure and misuse: window full, too large, wrong type, time
		// going backwards, unknown connection, stray send outcome.
		fzNewSeq(fzEph, 0, fzOriginNeg).
			op(fzOpIngest, 1).op(fzOpOpenResponse, fzOpenOK).
			op(fzOpIngest, 1).op(fzOpIngest, 200).op(fzOpIngestWrongType).op(fzOpIngest, 1).
			op(fzOpBackwards, 0, 1).op(fzOpBackwards, 3, 9).op(fzOpBackwards, 5, 0).
			op(fzOpConnFailed, 7, 0).op(fzOpBogusSent, 0, 0, 0, 0, 0, 0, 0, 0, 9).
			op(fzOpOpen).op(fzOpPoll),
		// Idle: ingest refused, close, open refused.
		fzNewSeq(fzEph|fzIdle, 0, 0).op(fzOpIngest, 1).op(fzOpClose).op(fzOpOpen).op(fzOpPoll),
		// Non-retryable codes and auth retry on the first open.
		fzNewSeq(fzPersCreate, fzDefaults, fzRetries3).
			op(fzOpConnFailed, 0, byte(core.CodeUnauthenticated)).op(fzOpTickDeadline).op(fzOpPoll).
			op(fzOpConnFailed, 0, byte(core.CodeUnauthenticated)).op(fzOpPoll),
		fzNewSeq(fzPersCreate, fzDefaults, fzRetries3).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpPoll).
			op(fzOpConnFailed, 0, byte(core.CodeNotFound)).op(fzOpPoll),
		// Close with records in flight: close timeout.
		fzNewSeq(fzPersCreate, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpSent, 1).
			op(fzOpClose).op(fzOpTickForward, 3, 3).op(fzOpPoll),
		// Persistent close signal: resume at once.
		fzNewSeq(fzPersCreate, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpIngest, 1).op(fzOpSent, 1).
			op(fzOpCloseSignal, fzSigAbsent).op(fzOpPoll).op(fzOpOpenResponse, fzOpenOK, fzWMAttempted).
			op(fzOpPoll).op(fzOpCloseSignal, fzSigZero).op(fzOpPoll),
		// Arbitrary messages, undefined kinds included.
		fzNewSeq(fzEph, fzDefaults, 0).
			op(fzOpArbitrary, 0, 5, 7, 0, 0, 0, 0, 0, 0, 0, 1).op(fzOpPoll),
		fzNewSeq(fzPersCreate, fzDefaults, 0).
			op(fzOpOpenResponse, fzOpenOK).op(fzOpArbitrary, 0, 0, 0).op(fzOpPoll),
	}
	return s
}

// TestWriteSeedCorpus rewrites testdata/fuzz/<FuzzName>/ from the seeds
// above when run with -fuzz.writecorpus; otherwise it checks that every seed
// is on disk.
func TestWriteSeedCorpus(t *testing.T) {
	targets := map[string][][]byte{
		"FuzzDecodePersistent": fzPersistentSeeds(),
		"FuzzDecodeEphemeral":  fzEphemeralSeeds(),
		"FuzzEventSequence":    fzEventSeeds(),
	}
	for name, seeds := range targets {
		dir := filepath.Join("testdata", "fuzz", name)
		for _, s := range seeds {
			body := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s)
			sum := sha256.Sum256(body)
			path := filepath.Join(dir, fmt.Sprintf("seed-%x", sum[:8]))
			if *fzWriteCorpus {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, body, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("seed corpus file %s missing or stale (rerun with -fuzz.writecorpus): %v", path, err)
			}
		}
	}
}
