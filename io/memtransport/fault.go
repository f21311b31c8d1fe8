package memtransport

import (
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/internal/faults"
)

// FaultKind says what an injected Fault does, in the vocabulary of the
// reference server (package server, whose FaultKind is this type): a kind
// means the same misbehaviour on both, and one that breaks a protocol rule
// bears the name of the core.Violation the client reports. What the
// in-memory transport adds is said below.
//
// A call's number counts the ingest calls received on its connection (1,
// 2, ...; it restarts on every connection). A fault acts at the first call
// whose number is at least Fault.After, or right after the open response
// when After is 0; FailOpen, HangOpen and the open-response kinds act at
// the open and ignore After.
type FaultKind = faults.Kind

// The kinds the in-memory transport implements: all of them but
// PartialAck, which only the reference server's Arrow Flight calls take.
// The ones the reference server's stream RPCs lack are HangOpen,
// DiscardThenDrop and LoseAcks (its Flight calls take the last two).
const (
	// FaultFailOpen: the status arrives through Conn.Recv, as gRPC
	// reports it; with AtOpen, Open itself returns it (a failed dial).
	FaultFailOpen = faults.FailOpen
	// FaultHangOpen never answers an open: nothing is created or fenced,
	// Recv blocks until the connection is aborted or its context ends, and
	// calls sent meanwhile are discarded.
	FaultHangOpen = faults.HangOpen
	// FaultLoseOpenResponse: a create creates, a resume or repeated create
	// fences the older connection, and no answer follows.
	FaultLoseOpenResponse = faults.LoseOpenResponse
	// FaultOpenResponseKind: a persistent create gets a resume response
	// (watermark -1), a resume a create response, an ephemeral create an
	// ack of -1.
	FaultOpenResponseKind = faults.OpenResponseKind
	// FaultStreamIDMissing: a create response without an id.
	FaultStreamIDMissing = faults.StreamIDMissing
	// FaultResumeWatermark: the answer carries Watermark; the stream goes
	// on from its true one. Creates are not affected.
	FaultResumeWatermark = faults.ResumeWatermark
	// FaultResumeWithoutWatermark: "nothing committed", whatever was.
	FaultResumeWithoutWatermark = faults.ResumeWithoutWatermark
	// FaultDrop: call After is stored and acknowledged, then the
	// connection ends.
	FaultDrop = faults.Drop
	// FaultDiscardThenDrop: call After is discarded (the calls before it
	// were stored and acknowledged), then the connection ends.
	FaultDiscardThenDrop = faults.DiscardThenDrop
	// FaultCommitThenDrop: call After is stored, not acknowledged, then
	// the connection ends; a persistent resume reconciles it.
	FaultCommitThenDrop = faults.CommitThenDrop
	// FaultCloseSignal: RespCloseSignal with Duration Delay (none with
	// NoDuration). An ephemeral stream goes on storing and acknowledging
	// through the grace and then ends cleanly (io.EOF); without a
	// duration, or on a persistent stream, the call ends at once.
	FaultCloseSignal = faults.CloseSignal
	// FaultLoseAcks: the calls are stored but their acks not sent (one per
	// act); the next ack sent covers them, acks being cumulative.
	FaultLoseAcks = faults.LoseAcks
	// FaultDelayAcks: through timers; later messages wait behind the
	// delayed one, so the order of the server's messages is kept.
	FaultDelayAcks = faults.DelayAcks
	// FaultRepeatAcks: the copies are sent at once.
	FaultRepeatAcks = faults.RepeatAcks
	// FaultAckMissing: an ack without an offset.
	FaultAckMissing = faults.AckMissing
	// FaultAckBelowFloor: below the previous ack of the connection, or the
	// open's watermark.
	FaultAckBelowFloor = faults.AckBelowFloor
	// FaultAckAboveSent: a client that pipelines may have sent more by the
	// time it reads the ack: choose Above past what it can have sent to be
	// sure it sees a violation.
	FaultAckAboveSent = faults.AckAboveSent
)

// Unlimited as Fault.Times makes a fault act until it is removed.
const Unlimited = faults.Unlimited

// Fault is one injected misbehaviour of the server. Kind says what it does
// (see FaultKind); the other fields say when it acts and parametrize it.
// The zero value of every field but Kind is a usable default.
type Fault struct {
	Kind FaultKind

	// After is the number of the call (on the connection) from which the
	// fault acts; 0 for the open or from the first call on.
	After int
	// Times is how many times the fault acts before it is spent: on that
	// many connections for the open and connection-ending kinds, on that
	// many acks for the ack kinds. 0 means once; Unlimited, until removed.
	Times int

	// Code is the status of FailOpen, LoseOpenResponse, Drop,
	// DiscardThenDrop and CommitThenDrop (default CodeUnavailable), and
	// Message its message (default: what the fault did).
	Code    core.Code
	Message string
	// AtOpen makes FailOpen fail Open itself rather than the first Recv.
	AtOpen bool
	// Delay is the ack delay of DelayAcks and the close signal's duration
	// (the grace) of CloseSignal.
	Delay time.Duration
	// NoDuration sends CloseSignal without a duration.
	NoDuration bool
	// Repeat is the number of extra copies of an ack RepeatAcks sends (0
	// means 1).
	Repeat int
	// Above is how far above the highest offset received AckAboveSent
	// acks (default 1).
	Above int64
	// Watermark is the last_committed_offset ResumeWatermark answers.
	Watermark int64
}

// status is the status of a fault that ends a call: Code (default
// CodeUnavailable) and Message (default def).
func (f Fault) status(def string) error {
	code, msg := f.Code, f.Message
	if code == core.CodeOK {
		code = core.CodeUnavailable
	}
	if msg == "" {
		msg = def
	}
	return connError(code, msg)
}

// Match selects the connections a fault applies to. Empty fields match
// anything. A create has no stream id before it is performed, so FailOpen
// and HangOpen with a StreamID only match resumes. (The reference server's
// Match also selects by table; the in-memory transport has one.)
type Match struct {
	StreamID string
	Kind     core.Kind
}

// FaultHandle is an injected fault. Remove disarms it (idempotent), Hits
// reports how many times it acted, Fired is closed when it acts for the
// first time, and Spent reports whether it acted its Times times or was
// removed.
type FaultHandle = faults.Handle

// faultRegistry holds the armed faults of a Server.
type faultRegistry = faults.Registry[Match, Fault]

// point is where a connection asks for faults.
type point struct {
	kind   core.Kind
	stream string
	call   int  // calls received on the connection
	open   bool // at the open: After is ignored
}

// takeFault claims one act of the first armed fault of one of kinds that
// applies at p.
func (s *Server) takeFault(p point, kinds ...FaultKind) (Fault, bool) {
	if !s.faults.Armed() {
		return Fault{}, false
	}
	return s.faults.Take(faults.At{Call: p.call, Open: p.open}, func(m Match) bool {
		return (m.Kind == 0 || m.Kind == p.kind) && (m.StreamID == "" || m.StreamID == p.stream)
	}, kinds...)
}
