package propertytests

// Differential test: the real machine's window and reconciliation against a
// naive reference (a []record slice with a floor index, reconciling by
// linear scan), over random sequences of valid operations: ingest, send and
// Sent, ack, drop and resume (persistent: a legal watermark; ephemeral: a
// fresh create that resends everything unacknowledged).

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zbstream/zbstream/core"
)

func TestDifferentialPersistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkDifferential(t, core.Persistent, nil) })
}

func TestDifferentialEphemeral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkDifferential(t, core.Ephemeral, nil) })
}

// diffRecord is one accepted call in the reference.
type diffRecord struct {
	offset  int64
	records [][]byte
	sent    bool // handed to a transport at least once
	done    bool // completed
}

// diffRef is the naive reference: every call ever accepted, in order, and
// the index of the first one that is not durable.
type diffRef struct {
	recs     []diffRecord
	floorIdx int   // recs[:floorIdx] are durable
	start    int64 // offset of recs[0]
	sentIdx  int   // next index to send on this connection
	maxSent  int   // index of the highest call reported sent on it, -1 if none
	base     int   // ephemeral: index of wire offset 0 on this connection

	completed []int64 // every offset completed, in order
	resent    []int64 // every offset sent again after its first send
}

func (r *diffRef) next() int64 { return r.start + int64(len(r.recs)) }

func (r *diffRef) floor() int64 { return r.start + int64(r.floorIdx) - 1 }

// completeThrough completes every call with offset <= o by linear scan.
func (r *diffRef) completeThrough(o int64) {
	for i := range r.recs {
		if r.recs[i].offset <= o && !r.recs[i].done {
			r.recs[i].done = true
			r.completed = append(r.completed, r.recs[i].offset)
			r.floorIdx = i + 1
		}
	}
}

func (r *diffRef) unacked() []core.Batch {
	var out []core.Batch
	for _, rec := range r.recs {
		if !rec.done {
			out = append(out, core.Batch{Offset: rec.offset, Records: rec.records})
		}
	}
	return out
}

func (r *diffRef) pending() (int, int64) {
	var n int
	var b int64
	for _, rec := range r.recs {
		if !rec.done {
			n++
			for _, x := range rec.records {
				b += int64(len(x))
			}
		}
	}
	return n, b
}

// diffHarness runs the machine and the reference side by side.
type diffHarness struct {
	kind core.Kind
	m    *core.Machine
	ref  diffRef
	cfg  core.Config
	now  core.Instant
	conn core.ConnID

	// What the machine did, flattened to offsets, in order.
	completed []int64
	resent    []int64
	everSent  map[int64]bool
	emitted   []int64 // sends emitted on this connection, not yet reported
	seq       int
}

// checkDifferential runs one random sequence. plant, when not nil, is called
// right after core.New.
func checkDifferential(t *rapid.T, kind core.Kind, plant func(*core.Machine)) {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	if kind == core.Persistent {
		cfg.ClientRequestID = "req-1"
	}
	cfg.MaxInflightCalls = rapid.IntRange(1, 8).Draw(t, "maxCalls")
	cfg.MaxCallBytes = 21 // three records of 5 bytes, 7 each as sent
	cfg.MaxInflightBytes = int64(rapid.IntRange(21, 80).Draw(t, "maxBytes"))
	cfg.Retries = 1 << 20 // every drop here is recovered
	cfg.Backoff = core.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Multiplier: 2}
	cfg.Seed = rapid.Uint64().Draw(t, "seed")
	m, err := core.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if plant != nil {
		plant(m)
	}
	h := &diffHarness{kind: kind, m: m, cfg: cfg, ref: diffRef{maxSent: -1}, everSent: map[int64]bool{}}
	if err := m.Open(0); err != nil {
		t.Fatalf("Open: %v", err)
	}
	h.poll(t)
	h.openResponse(t)
	t.Repeat(map[string]func(*rapid.T){
		"":          h.compare,
		"a_ingest":  h.ingest,
		"b_send":    h.send,
		"c_ack":     h.ack,
		"d_ingestN": h.ingestBatch,
		"e_drop":    h.dropAndResume,
	})
}

// poll drains the machine's actions into the flattened logs.
func (h *diffHarness) poll(t *rapid.T) {
	for acts := h.m.Poll(nil); len(acts) > 0; acts = h.m.Poll(nil) {
		for _, a := range acts {
			switch a.Kind {
			case core.ActOpen:
				h.conn = a.Conn
				h.emitted = nil
			case core.ActAbort:
				h.conn = 0
				h.emitted = nil
			case core.ActSend:
				if h.everSent[a.Offset] {
					h.resent = append(h.resent, a.Offset)
				}
				h.everSent[a.Offset] = true
				h.emitted = append(h.emitted, a.Offset)
			case core.ActComplete:
				if a.Last-a.Offset > int64(len(h.ref.recs)) {
					t.Fatalf("ActComplete %d..%d larger than everything ever accepted", a.Offset, a.Last)
				}
				for o := a.Offset; o <= a.Last; o++ {
					h.completed = append(h.completed, o)
				}
			case core.ActFail, core.ActFinished:
				t.Fatalf("valid operations failed the stream: %+v (err %v)", a, h.m.Err())
			}
		}
	}
}

// refSend advances the reference's sends to everything accepted, as Poll
// does on an open connection.
func (h *diffHarness) refSend() {
	r := &h.ref
	for ; r.sentIdx < len(r.recs); r.sentIdx++ {
		if r.recs[r.sentIdx].sent {
			r.resent = append(r.resent, r.recs[r.sentIdx].offset)
		}
		r.recs[r.sentIdx].sent = true
	}
}

// compare checks the machine against the reference after every operation.
func (h *diffHarness) compare(t *rapid.T) {
	r := &h.ref
	if err := modelSameBatches(h.m.Unacked(nil), r.unacked()); err != nil {
		t.Fatalf("Unacked: %v", err)
	}
	if h.m.AckFloor() != r.floor() {
		t.Fatalf("AckFloor %d, reference %d", h.m.AckFloor(), r.floor())
	}
	if h.m.LastAssigned() != r.next()-1 {
		t.Fatalf("LastAssigned %d, reference %d", h.m.LastAssigned(), r.next()-1)
	}
	gc, gb := h.m.Pending()
	wc, wb := r.pending()
	if gc != wc || gb != wb {
		t.Fatalf("Pending %d/%dB, reference %d/%dB", gc, gb, wc, wb)
	}
	if !reflect.DeepEqual(h.completed, r.completed) {
		t.Fatalf("completed offsets\n got %v\nwant %v", h.completed, r.completed)
	}
	if !reflect.DeepEqual(h.resent, r.resent) {
		t.Fatalf("resent offsets\n got %v\nwant %v", h.resent, r.resent)
	}
	if h.m.Err() != nil {
		t.Fatalf("failed: %v", h.m.Err())
	}
}

func (h *diffHarness) record(t *rapid.T) []byte {
	h.seq++
	n := rapid.IntRange(0, 5).Draw(t, "len") // a batch of 3 stays within MaxCallBytes
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(h.seq + i)
	}
	return b
}

func (h *diffHarness) accept(t *rapid.T, recs [][]byte, single bool) {
	r := &h.ref
	n, b := r.pending()
	var size int64
	for _, x := range recs {
		size += int64(len(x))
	}
	full := n >= h.cfg.MaxInflightCalls || b+size > h.cfg.MaxInflightBytes
	var off int64
	var err error
	if single {
		off, err = h.m.IngestRecord(h.now, core.RecordJSON, recs[0])
	} else {
		off, err = h.m.IngestBatch(h.now, core.RecordJSON, recs)
	}
	if full {
		if !errors.Is(err, core.ErrWindowFull) {
			t.Fatalf("ingest into a full window: (%d, %v)", off, err)
		}
		return
	}
	if err != nil || off != r.next() {
		t.Fatalf("ingest: (%d, %v), want offset %d", off, err, r.next())
	}
	r.recs = append(r.recs, diffRecord{offset: off, records: modelCopy(recs)})
	if h.conn != 0 {
		h.refSend()
	}
	h.poll(t)
}

func (h *diffHarness) ingest(t *rapid.T) { h.accept(t, [][]byte{h.record(t)}, true) }

func (h *diffHarness) ingestBatch(t *rapid.T) {
	recs := make([][]byte, rapid.IntRange(1, 3).Draw(t, "n"))
	for i := range recs {
		recs[i] = h.record(t)
	}
	h.accept(t, recs, false)
}

// send reports some emitted sends as successful.
func (h *diffHarness) send(t *rapid.T) {
	if len(h.emitted) == 0 {
		t.Skip("nothing emitted")
	}
	n := rapid.IntRange(1, len(h.emitted)).Draw(t, "sent")
	for _, o := range h.emitted[:n] {
		if err := h.m.Sent(h.now, h.conn, o); err != nil {
			t.Fatalf("Sent(%d): %v", o, err)
		}
	}
	h.ref.maxSent += n
	h.emitted = h.emitted[n:]
	h.poll(t)
}

// ack acknowledges a valid cumulative offset (in wire offsets).
func (h *diffHarness) ack(t *rapid.T) {
	r := &h.ref
	if r.maxSent < r.floorIdx {
		t.Skip("nothing sent above the floor")
	}
	i := rapid.IntRange(r.floorIdx, r.maxSent).Draw(t, "ackIdx")
	wire := r.recs[i].offset
	if h.kind == core.Ephemeral {
		wire = int64(i - r.base)
	}
	if err := h.m.Receive(h.now, h.conn, core.Response{Kind: core.RespAck, Offset: wire, HasOffset: true}); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	r.completeThrough(r.recs[i].offset)
	h.poll(t)
}

// openResponse answers the open on h.conn and resets the reference's
// connection.
func (h *diffHarness) openResponse(t *rapid.T) {
	r := &h.ref
	resp := core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true}
	if h.kind == core.Persistent && h.conn > 1 {
		// A legal watermark: between the ack floor and the highest offset
		// ever handed to a transport, or absent when nothing is acked.
		hi := r.floorIdx - 1
		for i, rec := range r.recs {
			if rec.sent {
				hi = i
			}
		}
		idx := rapid.IntRange(r.floorIdx-1, hi).Draw(t, "wmIdx")
		w := r.start + int64(idx)
		resp = core.Response{Kind: core.RespResume, Offset: w, HasOffset: true}
		if w == -1 && rapid.Bool().Draw(t, "absent") {
			resp.HasOffset = false
		}
		r.completeThrough(w)
	}
	if err := h.m.Receive(h.now, h.conn, resp); err != nil {
		t.Fatalf("Receive open response: %v", err)
	}
	r.sentIdx, r.maxSent, r.base = r.floorIdx, r.floorIdx-1, r.floorIdx
	h.refSend()
	h.poll(t)
}

// dropAndResume loses the connection, waits out the backoff and reopens.
func (h *diffHarness) dropAndResume(t *rapid.T) {
	if err := h.m.ConnectionFailed(h.now, h.conn, core.CodeUnavailable, nil); err != nil {
		t.Fatalf("ConnectionFailed: %v", err)
	}
	h.poll(t)
	at, ok := h.m.NextDeadline()
	if !ok {
		t.Fatalf("no backoff deadline after a drop")
	}
	h.now = at
	if err := h.m.Tick(at); err != nil {
		t.Fatalf("Tick: %v", err)
	}
	h.poll(t)
	if h.conn == 0 {
		t.Fatalf("no new connection after the backoff")
	}
	h.openResponse(t)
}
