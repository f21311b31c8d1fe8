package memtransport

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream/core"
)

// FaultKind says what an injected Fault does.
//
// Faults act at points of one connection. The open is the point where no
// ingest call has been received yet; after that, every ingest call the
// server receives is a point, numbered 1, 2, ... on that connection (the
// count restarts on every connection). A fault acts at the first point
// whose number is at least Fault.After; faults checked at the open
// (FailOpen, HangOpen and the open-response faults) ignore After.
type FaultKind uint8

const (
	// FaultFailOpen rejects an open (create or resume) with Code (default
	// UNAVAILABLE) before anything is created or fenced. The status
	// arrives through Conn.Recv, as gRPC reports it; with AtOpen, Open
	// itself returns the error instead (as a failed dial would).
	FaultFailOpen FaultKind = iota + 1
	// FaultHangOpen never answers an open: nothing is created or fenced,
	// Recv blocks until the connection is aborted or its context ends, and
	// calls sent meanwhile are discarded.
	FaultHangOpen
	// FaultLoseOpenResponse performs the open (a create creates, a resume
	// or repeated create fences the older connection) and then ends the
	// call with Code (default UNAVAILABLE) instead of answering: the lost
	// create response that an idempotent create recovers from.
	FaultLoseOpenResponse
	// FaultDrop ends the connection with Code (default UNAVAILABLE) at
	// call After. With Store the call is stored and acknowledged first;
	// without, it is discarded (the call numbered After is lost, the ones
	// before it were stored and acknowledged). After = 0 drops the
	// connection right after the open response.
	FaultDrop
	// FaultCommitThenDrop stores call After and then ends the connection
	// with Code (default UNAVAILABLE) without acknowledging it: the
	// lost-ack race a persistent resume reconciles. After = 0 drops the
	// connection right after the open response.
	FaultCommitThenDrop
	// FaultLoseAcks does not send the acks of calls from After on, one ack
	// per act (Count acks in all). The calls are stored; the next ack that
	// is sent covers them, acks being cumulative.
	FaultLoseAcks
	// FaultDelayAcks sends each ack Delay after the call it answers (one ack
	// per act), through timers; later messages wait behind it, so the
	// order of the server's messages is kept.
	FaultDelayAcks
	// FaultRepeatAcks sends each ack twice (one ack per act).
	FaultRepeatAcks
	// FaultCloseSignal sends RespCloseSignal after call After (after the
	// open response when After = 0), with Duration Delay, or without a
	// duration when NoDuration is set. On an ephemeral stream the server
	// goes on storing and acknowledging until the grace (Delay) ends and
	// then ends the call cleanly (io.EOF); without a duration, or on a
	// persistent stream, it ends the call right after the signal.
	FaultCloseSignal
	// FaultAckAbove replaces one ack by one Above (default 1) above the
	// highest offset received on the connection. A client that pipelines
	// may have sent more by the time it reads the ack: choose Above past
	// what it can have sent to be sure it sees a violation.
	FaultAckAbove
	// FaultAckBelowFloor replaces one ack by one below the previous ack
	// sent on the connection (or below the open's watermark).
	FaultAckBelowFloor
	// FaultAckWithoutOffset sends one ack without an offset.
	FaultAckWithoutOffset
	// FaultResumeWatermark answers a resume with Watermark as
	// last_committed_offset instead of the true one (above anything sent,
	// below the acknowledged floor, math.MaxInt64...). The stream itself
	// continues from its true watermark.
	FaultResumeWatermark
	// FaultResumeWithoutWatermark answers a resume without
	// last_committed_offset ("nothing committed"), whatever was committed.
	FaultResumeWithoutWatermark
	// FaultCreateWithoutID answers a create with a create response that
	// has no stream id.
	FaultCreateWithoutID
	// FaultWrongOpenResponse answers an open with the wrong kind of
	// message: a persistent create with a resume response, a resume with a
	// create response, an ephemeral create with an ack of -1.
	FaultWrongOpenResponse
)

var faultNames = [...]string{
	FaultFailOpen: "FailOpen", FaultHangOpen: "HangOpen", FaultLoseOpenResponse: "LoseOpenResponse",
	FaultDrop: "Drop", FaultCommitThenDrop: "CommitThenDrop", FaultLoseAcks: "LoseAcks",
	FaultDelayAcks: "DelayAcks", FaultRepeatAcks: "RepeatAcks", FaultCloseSignal: "CloseSignal",
	FaultAckAbove: "AckAbove", FaultAckBelowFloor: "AckBelowFloor", FaultAckWithoutOffset: "AckWithoutOffset",
	FaultResumeWatermark: "ResumeWatermark", FaultResumeWithoutWatermark: "ResumeWithoutWatermark",
	FaultCreateWithoutID: "CreateWithoutID", FaultWrongOpenResponse: "WrongOpenResponse",
}

// String returns the kind's name without the Fault prefix ("Drop").
func (k FaultKind) String() string {
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return "FaultKind(?)"
}

// Unlimited as Fault.Count makes a fault act until it is removed.
const Unlimited = -1

// Fault is one injected misbehaviour of the server. Kind says what it does
// (see FaultKind); the other fields select where it acts and parametrize
// it. The zero value of every field but Kind is a usable default.
type Fault struct {
	Kind FaultKind

	// StreamKind restricts the fault to connections of one stream kind
	// (0: any).
	StreamKind core.Kind
	// StreamID restricts the fault to connections of one stream ("": any).
	// A create has no stream id before it is performed, so FailOpen and
	// HangOpen with a StreamID only match resumes.
	StreamID string
	// After is the number of the call (on the connection) from which the
	// fault acts; 0 for the open or from the first call on.
	After int
	// Count is how many times the fault acts before it is spent: on that
	// many connections for the open and connection-ending kinds, on that
	// many acks for the ack kinds. 0 means once; Unlimited, until removed.
	Count int

	// Code is the status of FailOpen, LoseOpenResponse, Drop and
	// CommitThenDrop (default CodeUnavailable).
	Code core.Code
	// AtOpen makes FailOpen fail Open itself rather than the first Recv.
	AtOpen bool
	// Store makes Drop store and acknowledge call After before it ends
	// the connection.
	Store bool
	// Delay is the ack delay of DelayAcks and the close signal's duration
	// (the grace) of CloseSignal.
	Delay time.Duration
	// NoDuration sends CloseSignal without a duration.
	NoDuration bool
	// Watermark is the last_committed_offset ResumeWatermark answers.
	Watermark int64
	// Above is how far above the highest offset received AckAbove acks
	// (default 1).
	Above int64
}

func (f Fault) code() core.Code {
	if f.Code == core.CodeOK {
		return core.CodeUnavailable
	}
	return f.Code
}

// FaultHandle is an injected fault: it says whether the fault acted and
// removes it.
type FaultHandle struct {
	reg     *faultRegistry
	fault   Fault
	hits    int // guarded by reg.mu
	removed bool
	fired   chan struct{}
}

// Remove disarms the fault; it acts no more. It is idempotent.
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

// Spent reports whether the fault acted its Count times or was removed.
func (h *FaultHandle) Spent() bool {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	return h.removed
}

// faultRegistry holds the armed faults of a Server.
type faultRegistry struct {
	mu     sync.Mutex
	faults []*FaultHandle
	n      atomic.Int32 // len(faults), read without the lock on the hot path
}

func (r *faultRegistry) add(f Fault) *FaultHandle {
	h := &FaultHandle{reg: r, fault: f, fired: make(chan struct{})}
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

// point is where a connection asks for faults.
type point struct {
	kind   core.Kind
	stream string
	call   int  // calls received on the connection
	open   bool // at the open: After is ignored
}

// take claims one act of the first armed fault of one of kinds that
// applies at p: it counts a hit, and removes the fault once spent.
func (r *faultRegistry) take(p point, kinds ...FaultKind) (Fault, bool) {
	if r.n.Load() == 0 {
		return Fault{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.faults {
		f := h.fault
		if !slices.Contains(kinds, f.Kind) ||
			(!p.open && p.call < f.After) ||
			(f.StreamKind != 0 && f.StreamKind != p.kind) ||
			(f.StreamID != "" && f.StreamID != p.stream) {
			continue
		}
		h.hits++
		if h.hits == 1 {
			close(h.fired)
		}
		if f.Count != Unlimited && h.hits >= max(f.Count, 1) {
			r.removeLocked(h)
		}
		return f, true
	}
	return Fault{}, false
}
