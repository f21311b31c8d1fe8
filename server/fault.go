package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/internal/faults"
)

// FaultKind says what an injected fault does. It is the one vocabulary of
// faults the in-memory transport (io/memtransport) shares: the same kind
// has the same name and meaning in both, and a kind that provokes one
// protocol violation of the client is named after that core.Violation.
//
// "Request" below means an ingest request (single record or batch)
// received on one connection; the open message is not counted. A fault
// with After = N acts at the first point where at least N ingest requests
// of the connection have been processed (N = 0: right after the open
// response, or at the next request of a connection already open). The
// faults checked at the open (FailOpen and the open-response kinds) ignore
// After.
//
// Arrow Flight DoPut calls take faults too (docs/server.md, "Faults on
// Arrow streams"): there the open is the schema frame and a request is a
// data frame, so After = N is the call's Nth data frame, and an ack is a
// PutResult. A DoPut call is matched as an ephemeral stream of its table
// (its id, as-..., exists once its schema frame is accepted). The kinds
// they take are FailOpen, Drop, DiscardThenDrop, CommitThenDrop,
// PartialAck, CloseSignal, LoseAcks, DelayAcks, RepeatAcks and
// AckAboveSent; a kind acts only on the calls that implement it, so
// DiscardThenDrop, PartialAck and LoseAcks act on DoPut calls only, and
// the open-response kinds on the stream RPCs only.
type FaultKind = faults.Kind

// The kinds of faults the server implements. (HangOpen is the in-memory
// transport's only; Inject panics on it.)
const (
	// FaultFailOpen rejects the open (create or resume) with Code and
	// Message before anything is created or changed. For a create,
	// Match.StreamID cannot match (the id does not exist yet): match by
	// table.
	FaultFailOpen = faults.FailOpen
	// FaultLoseOpenResponse performs the create or resume (a resume fences
	// older connections) and then ends the call with Code (default
	// UNAVAILABLE) instead of sending the open response: the lost create
	// response that an idempotent create (client_request_id) recovers from.
	FaultLoseOpenResponse = faults.LoseOpenResponse
	// FaultOpenResponseKind answers a persistent create with a resume
	// response and a resume with a create response; on an ephemeral stream
	// the create is answered with an ingest_record_response{-1}
	// (core.OpenResponseKind).
	FaultOpenResponseKind = faults.OpenResponseKind
	// FaultStreamIDMissing answers a create with a create response that
	// has no stream_id (core.StreamIDMissing).
	FaultStreamIDMissing = faults.StreamIDMissing
	// FaultResumeWatermark answers a resume with last_committed_offset =
	// Watermark instead of the true watermark (below what was acknowledged,
	// above what was sent, math.MaxInt64...). The stream itself continues at
	// its true watermark.
	FaultResumeWatermark = faults.ResumeWatermark
	// FaultResumeWithoutWatermark answers a resume without
	// last_committed_offset.
	FaultResumeWithoutWatermark = faults.ResumeWithoutWatermark
	// FaultDrop ends the call with Code and Message (defaults: UNAVAILABLE,
	// "injected fault: connection dropped") once After requests have been
	// committed and acknowledged; later requests are never processed.
	FaultDrop = faults.Drop
	// FaultCommitThenDrop commits everything through request After but sends
	// no ack for it, then ends the call with Code (default UNAVAILABLE): the
	// lost-ack race.
	FaultCommitThenDrop = faults.CommitThenDrop
	// FaultDiscardThenDrop (DoPut calls only) commits and acknowledges the
	// data frames before frame After, discards frame After, then ends the
	// call with Code (default UNAVAILABLE).
	FaultDiscardThenDrop = faults.DiscardThenDrop
	// FaultPartialAck (DoPut calls only) commits and acknowledges the data
	// frames before frame After, commits frame After without acknowledging
	// it, then ends the call with Code (default UNAVAILABLE): with After
	// inside a batch split into frames, the batch is acknowledged in part
	// and the client resends its unacknowledged rows, frame After's
	// included (stored twice: at least once).
	FaultPartialAck = faults.PartialAck
	// FaultCloseSignal sends close_stream_signal{Delay} after request After
	// and ends the call (status OK) Delay later, as a session rotation does.
	// On a DoPut call the notice is the close-only PutResult
	// {"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":D}.
	FaultCloseSignal = faults.CloseSignal
	// FaultLoseAcks (DoPut calls only) does not send one ack (per act).
	FaultLoseAcks = faults.LoseAcks
	// FaultDelayAcks holds one ack (per act) back for Delay before sending
	// it. On a stream call the ack waits in the call's outbox, the acks
	// after it behind it, while the server goes on reading and storing, as
	// a distant server does; on a DoPut call the call's loop waits it out.
	// A close signal (FaultCloseSignal) posted behind a held-back ack waits
	// with it, while its grace counts from when it was posted: the client
	// sees less of the grace, none if Delay is longer.
	FaultDelayAcks = faults.DelayAcks
	// FaultRepeatAcks sends one ack (per act) 1 + Repeat times (Repeat 0
	// means 1).
	FaultRepeatAcks = faults.RepeatAcks
	// FaultAckMissing sends one ack without durability_ack_up_to_offset
	// (core.AckMissing).
	FaultAckMissing = faults.AckMissing
	// FaultAckBelowFloor replaces one ack by one below the previous ack (or
	// below the true value when no ack was sent yet) (core.AckBelowFloor).
	FaultAckBelowFloor = faults.AckBelowFloor
	// FaultAckAboveSent replaces one ack by the highest offset received on
	// the connection + Above (default 1): above anything the client sent
	// (core.AckAboveSent).
	FaultAckAboveSent = faults.AckAboveSent
)

// Unlimited as Fault.Times makes a fault act until it is removed.
const Unlimited = faults.Unlimited

// Fault is one injected misbehaviour; see FaultKind for what each field
// means for each kind. The zero value of every field but Kind is a usable
// default.
type Fault struct {
	Kind FaultKind
	// After is the number of ingest requests of the connection after which
	// the fault acts (see FaultKind).
	After int
	// Times is how many times the fault acts before it is spent: on that
	// many connections for the open and connection-ending kinds, on that
	// many acks for the ack kinds. 0 means once; Unlimited, until removed.
	Times int
	// Code and Message of the status for FaultFailOpen, FaultDrop,
	// FaultDiscardThenDrop, FaultCommitThenDrop, FaultPartialAck and
	// FaultLoseOpenResponse (default code UNAVAILABLE, default message
	// saying what the fault did).
	Code    codes.Code
	Message string
	// Delay: ack delay (FaultDelayAcks) or close-signal duration
	// (FaultCloseSignal).
	Delay time.Duration
	// Repeat: extra copies of the ack (FaultRepeatAcks; 0 means 1).
	Repeat int
	// Above is how far above the highest offset received
	// FaultAckAboveSent acks (default 1).
	Above int64
	// Watermark sent by FaultResumeWatermark.
	Watermark int64
	// Hold, when not nil, makes a fault that acts at a request (Drop,
	// DiscardThenDrop, CommitThenDrop, PartialAck, CloseSignal) wait until
	// Hold is closed before it acts; the connection processes nothing
	// meanwhile (its receiver goes on reading into its queue), and the
	// call's end or the server's stop ends the wait. A test arms the fault,
	// makes the calls that must be in flight when it acts, then closes
	// Hold, so that what the client has sent by then does not depend on
	// scheduling.
	Hold <-chan struct{}
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

// FaultHandle is an injected fault. Remove disarms it (idempotent), Hits
// reports how many times it acted, Fired is closed when it acts for the
// first time, and Spent reports whether it acted its Times times or was
// removed.
type FaultHandle = faults.Handle

type faultRegistry = faults.Registry[Match, Fault]

func newFaultRegistry() *faultRegistry {
	return faults.NewRegistry[Match, Fault](faults.Server | faults.Flight)
}

// takeFault finds the first fault of one of kinds that applies to the
// connection (of stream id of table) at point at, claims one act of it and
// returns it.
func (s *Server) takeFault(at faults.At, table, id string, kind StreamKind, kinds ...FaultKind) (Fault, bool) {
	if !s.faults.Armed() {
		return Fault{}, false
	}
	return s.faults.Take(at, func(m Match) bool { return m.matches(table, id, kind) }, kinds...)
}

func (s *Server) addFault(m Match, f Fault) *FaultHandle {
	return s.faults.Add(m, f, faults.Spec{Kind: f.Kind, After: f.After, Times: f.Times})
}

// hold waits until f.Hold is closed (see Fault.Hold). If the call (ctx)
// or the server ends first, it returns the status the call ends with
// instead: ended's, or UNAVAILABLE for a stop.
func (s *Server) hold(ctx context.Context, f Fault, ended func() error) error {
	if f.Hold == nil {
		return nil
	}
	select {
	case <-f.Hold:
		return nil
	case <-ctx.Done():
		return ended()
	case <-s.draining:
		return status.Error(codes.Unavailable, "server shutting down")
	}
}
