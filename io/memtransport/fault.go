package memtransport

import (
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/internal/faults"
)

// FaultKind says what an injected Fault does. It is the one vocabulary of
// faults the reference server (package server) shares: the same kind has
// the same name and meaning in both, and a kind that provokes one protocol
// violation of the client is named after that core.Violation.
//
// Faults act at points of one connection. The open is the point where no
// ingest call has been received yet; after that, every ingest call the
// server receives is a point, numbered 1, 2, ... on that connection (the
// count restarts on every connection). A fault acts at the first point
// whose number is at least Fault.After; faults checked at the open
// (FailOpen, HangOpen and the open-response faults) ignore After.
type FaultKind = faults.Kind

// The kinds of faults the in-memory transport implements.
const (
	// FaultFailOpen rejects an open (create or resume) with Code (default
	// UNAVAILABLE) before anything is created or fenced. The status
	// arrives through Conn.Recv, as gRPC reports it; with AtOpen, Open
	// itself returns the error instead (as a failed dial would).
	FaultFailOpen = faults.FailOpen
	// FaultHangOpen never answers an open: nothing is created or fenced,
	// Recv blocks until the connection is aborted or its context ends, and
	// calls sent meanwhile are discarded.
	FaultHangOpen = faults.HangOpen
	// FaultLoseOpenResponse performs the open (a create creates, a resume
	// or repeated create fences the older connection) and then ends the
	// call with Code (default UNAVAILABLE) instead of answering: the lost
	// create response that an idempotent create recovers from.
	FaultLoseOpenResponse = faults.LoseOpenResponse
	// FaultOpenResponseKind answers an open with the wrong kind of
	// message: a persistent create with a resume response, a resume with a
	// create response, an ephemeral create with an ack of -1
	// (core.OpenResponseKind).
	FaultOpenResponseKind = faults.OpenResponseKind
	// FaultStreamIDMissing answers a create with a create response that
	// has no stream id (core.StreamIDMissing).
	FaultStreamIDMissing = faults.StreamIDMissing
	// FaultResumeWatermark answers a resume with Watermark as
	// last_committed_offset instead of the true one (above anything sent,
	// below the acknowledged floor, math.MaxInt64...). The stream itself
	// continues from its true watermark.
	FaultResumeWatermark = faults.ResumeWatermark
	// FaultResumeWithoutWatermark answers a resume without
	// last_committed_offset ("nothing committed"), whatever was committed.
	FaultResumeWithoutWatermark = faults.ResumeWithoutWatermark
	// FaultDrop stores and acknowledges call After, then ends the
	// connection with Code (default UNAVAILABLE). After = 0 drops the
	// connection right after the open response.
	FaultDrop = faults.Drop
	// FaultDiscardThenDrop ends the connection with Code (default
	// UNAVAILABLE) at call After, which is discarded (the calls before it
	// were stored and acknowledged). After = 0 drops the connection right
	// after the open response.
	FaultDiscardThenDrop = faults.DiscardThenDrop
	// FaultCommitThenDrop stores call After and then ends the connection
	// with Code (default UNAVAILABLE) without acknowledging it: the
	// lost-ack race a persistent resume reconciles. After = 0 drops the
	// connection right after the open response.
	FaultCommitThenDrop = faults.CommitThenDrop
	// FaultCloseSignal sends RespCloseSignal after call After (after the
	// open response when After = 0), with Duration Delay, or without a
	// duration when NoDuration is set. On an ephemeral stream the server
	// goes on storing and acknowledging until the grace (Delay) ends and
	// then ends the call cleanly (io.EOF); without a duration, or on a
	// persistent stream, it ends the call right after the signal.
	FaultCloseSignal = faults.CloseSignal
	// FaultLoseAcks does not send the acks of calls from After on, one ack
	// per act (Times acks in all). The calls are stored; the next ack that
	// is sent covers them, acks being cumulative.
	FaultLoseAcks = faults.LoseAcks
	// FaultDelayAcks sends each ack Delay after the call it answers (one ack
	// per act), through timers; later messages wait behind it, so the
	// order of the server's messages is kept.
	FaultDelayAcks = faults.DelayAcks
	// FaultRepeatAcks sends each ack 1 + Repeat times (Repeat 0 means 1;
	// one ack per act).
	FaultRepeatAcks = faults.RepeatAcks
	// FaultAckMissing sends one ack without an offset (core.AckMissing).
	FaultAckMissing = faults.AckMissing
	// FaultAckBelowFloor replaces one ack by one below the previous ack
	// sent on the connection (or below the open's watermark)
	// (core.AckBelowFloor).
	FaultAckBelowFloor = faults.AckBelowFloor
	// FaultAckAboveSent replaces one ack by one Above (default 1) above the
	// highest offset received on the connection (core.AckAboveSent). A
	// client that pipelines may have sent more by the time it reads the
	// ack: choose Above past what it can have sent to be sure it sees a
	// violation.
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
