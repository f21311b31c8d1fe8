package server

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
)

// FaultKind says what an injected fault does. "Request" below means an
// ingest request (single record or batch) received on one connection; the
// open message is not counted. A fault with After = N acts at the first
// point where at least N ingest requests of the connection have been
// processed (N = 0: right after the open response).
type FaultKind int

const (
	// FaultFailOpen rejects the open (create or resume) with Code and
	// Message before anything is created or changed. For a create,
	// Match.StreamID cannot match (the id does not exist yet): match by
	// table.
	FaultFailOpen FaultKind = iota + 1
	// FaultLoseOpenResponse performs the create or resume (a resume fences
	// older connections) and then ends the call with Code (default
	// UNAVAILABLE) instead of sending the open response: the lost create
	// response that an idempotent create (client_request_id) recovers from.
	FaultLoseOpenResponse
	// FaultDrop ends the call with UNAVAILABLE once After requests have been
	// committed and acknowledged; later requests are never processed.
	FaultDrop
	// FaultFail is FaultDrop with the given Code and Message.
	FaultFail
	// FaultCommitThenDrop commits everything through request After but sends
	// no ack for it, then ends the call with UNAVAILABLE: the lost-ack race.
	FaultCommitThenDrop
	// FaultDelayAcks holds every ack back for Delay before sending it.
	FaultDelayAcks
	// FaultRepeatAcks sends every ack 1 + Repeat times (Repeat 0 means 1).
	FaultRepeatAcks
	// FaultCloseSignal sends close_stream_signal{Delay} after request After
	// and ends the call (status OK) Delay later, as a session rotation does.
	FaultCloseSignal
	// FaultAckAbove replaces one ack by the highest offset received on the
	// connection + 1: above anything the client sent.
	FaultAckAbove
	// FaultAckRegress replaces one ack by one below the previous ack (or
	// below the true value when no ack was sent yet).
	FaultAckRegress
	// FaultAckMissing sends one ack without durability_ack_up_to_offset.
	FaultAckMissing
	// FaultResumeWatermark answers a resume with last_committed_offset =
	// Watermark instead of the true watermark (below what was acknowledged,
	// above what was sent, math.MaxInt64...). The stream itself continues at
	// its true watermark.
	FaultResumeWatermark
	// FaultResumeNoWatermark answers a resume without last_committed_offset.
	FaultResumeNoWatermark
	// FaultWrongOpenResponse answers a persistent create with a resume
	// response and a resume with a create response; on an ephemeral stream
	// the create is answered with an ingest_record_response{-1}.
	FaultWrongOpenResponse
	// FaultCreateWithoutID answers a create with a create response that has
	// no stream_id.
	FaultCreateWithoutID
)

var faultNames = map[FaultKind]string{
	FaultFailOpen: "FailOpen", FaultLoseOpenResponse: "LoseOpenResponse", FaultDrop: "Drop",
	FaultFail: "Fail", FaultCommitThenDrop: "CommitThenDrop", FaultDelayAcks: "DelayAcks",
	FaultRepeatAcks: "RepeatAcks", FaultCloseSignal: "CloseSignal", FaultAckAbove: "AckAbove",
	FaultAckRegress: "AckRegress", FaultAckMissing: "AckMissing",
	FaultResumeWatermark: "ResumeWatermark", FaultResumeNoWatermark: "ResumeNoWatermark",
	FaultWrongOpenResponse: "WrongOpenResponse", FaultCreateWithoutID: "CreateWithoutID",
}

func (k FaultKind) String() string {
	if n, ok := faultNames[k]; ok {
		return n
	}
	return "FaultKind(?)"
}

// Fault is one injected misbehaviour; see FaultKind for what each field
// means for each kind.
type Fault struct {
	Kind FaultKind
	// After is the number of ingest requests of the connection after which
	// the fault acts (see FaultKind).
	After int
	// Code and Message of the status for FaultFailOpen, FaultFail and
	// FaultLoseOpenResponse (defaults: UNAVAILABLE, "injected fault").
	Code    codes.Code
	Message string
	// Delay: ack delay (FaultDelayAcks) or close-signal duration
	// (FaultCloseSignal).
	Delay time.Duration
	// Repeat: extra copies of each ack (FaultRepeatAcks).
	Repeat int
	// Watermark sent by FaultResumeWatermark.
	Watermark int64
	// Sticky faults act every time they apply until removed; others act
	// once (on the first connection and point where they apply) and are
	// then removed.
	Sticky bool
}

// Match selects the connections a fault applies to. Empty fields match
// anything. A fault is matched each time it could act, so it also applies
// to connections that were already open when it was injected, and a
// Table-only match programs a stream before its id exists.
type Match struct {
	Table    string
	StreamID string
	Kind     StreamKind
}

func (m Match) matches(table, id string, kind StreamKind) bool {
	return (m.Table == "" || m.Table == table) &&
		(m.StreamID == "" || m.StreamID == id) &&
		(m.Kind == 0 || m.Kind == kind)
}

// FaultHandle is an injected fault.
type FaultHandle struct {
	reg     *faultRegistry
	match   Match
	fault   Fault
	hits    int // guarded by reg.mu
	removed bool
	fired   chan struct{}
}

// Remove stops the fault from acting again. It is idempotent.
func (h *FaultHandle) Remove() {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	h.reg.removeLocked(h)
}

// Hits reports how many times the fault has acted.
func (h *FaultHandle) Hits() int {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	return h.hits
}

// Fired is closed when the fault acts for the first time.
func (h *FaultHandle) Fired() <-chan struct{} { return h.fired }

type faultRegistry struct {
	mu     sync.Mutex
	faults []*FaultHandle
	n      atomic.Int32 // len(faults), read without the lock on hot paths
}

func (r *faultRegistry) add(m Match, f Fault) *FaultHandle {
	h := &FaultHandle{reg: r, match: m, fault: f, fired: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, h)
	r.n.Store(int32(len(r.faults)))
	return h
}

func (r *faultRegistry) removeLocked(h *FaultHandle) {
	if h.removed {
		return
	}
	h.removed = true
	r.faults = slices.DeleteFunc(r.faults, func(x *FaultHandle) bool { return x == h })
	r.n.Store(int32(len(r.faults)))
}

// take finds the first fault of one of kinds that applies to the
// connection at a point where seq requests were processed, claims it (one
// hit; a one-shot fault is removed) and returns it.
func (r *faultRegistry) take(table, id string, kind StreamKind, seq int, kinds ...FaultKind) (Fault, bool) {
	if r.n.Load() == 0 {
		return Fault{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.faults {
		if !slices.Contains(kinds, h.fault.Kind) || seq < h.fault.After || !h.match.matches(table, id, kind) {
			continue
		}
		h.hits++
		if h.hits == 1 {
			close(h.fired)
		}
		if !h.fault.Sticky {
			r.removeLocked(h)
		}
		return h.fault, true
	}
	return Fault{}, false
}
