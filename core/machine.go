package core

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/zbstream/zbstream/fsm"
)

// Machine is the protocol state of one stream. It is not safe for concurrent
// use: one owner feeds it inputs and drains its actions (see the package
// documentation for the call order).
type Machine struct {
	cfg  Config
	life *fsm.Lifecycle
	// state mirrors life.State(): the data path reads it on every call, and
	// looplab/fsm guards its state with a lock.
	state fsm.State
	rng   *rand.Rand
	now   Instant

	win       window
	streamID  string
	requestID string

	// opened: the first open succeeded, so offsets are known and ingest is
	// allowed.
	opened bool

	// maxAttempted is the highest offset ever handed to any transport.
	maxAttempted int64

	// The current connection; conn == 0 when there is none.
	conn     ConnID
	lastConn ConnID
	// base is the logical offset of wire offset 0 on this connection: the
	// head at open for ephemeral streams, 0 for persistent ones.
	base int64
	// sendNext is the next offset to emit on this connection; maxSent is the
	// highest offset whose send was reported successful on it.
	// Invariant while open: floor <= maxSent < sendNext <= next.
	sendNext int64
	maxSent  int64

	attempts    int  // reconnects in this recovery episode
	authRetried bool // the one first-open retry with fresh credentials is spent

	openBy, ackBy, graceBy, backoffBy, closeBy deadline

	closeRequested bool
	err            error

	queue []Action

	bugs plantedBugs // always empty outside the zbstream_plantbugs build
}

// New returns an idle machine, or a *ConfigError.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		cfg:          cfg,
		life:         fsm.New(),
		state:        fsm.Idle,
		now:          math.MinInt64, // the caller picks the clock's origin
		rng:          rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		streamID:     cfg.StreamID,
		requestID:    cfg.ClientRequestID,
		maxAttempted: NoOffset,
		maxSent:      NoOffset,
	}
	return m, nil
}

// State returns the lifecycle state.
func (m *Machine) State() fsm.State { return m.state }

// Kind returns the stream kind.
func (m *Machine) Kind() Kind { return m.cfg.Kind }

// StreamID returns the server's id for the stream ("" before the first open
// response). An ephemeral stream gets a new id on every connection.
func (m *Machine) StreamID() string { return m.streamID }

// Opened reports whether the first open succeeded: the stream's offsets are
// known and it accepts records. It stays true after a close or failure.
func (m *Machine) Opened() bool { return m.opened }

// ClientRequestID returns the idempotency key of persistent creates.
func (m *Machine) ClientRequestID() string { return m.requestID }

// Err returns the terminal error once the stream has failed, else nil.
func (m *Machine) Err() error { return m.err }

// Conn returns the current connection, 0 when there is none.
func (m *Machine) Conn() ConnID { return m.conn }

// AckFloor returns the highest offset known durable (acked or reconciled),
// or NoOffset.
func (m *Machine) AckFloor() int64 { return m.win.floor() }

// LastAssigned returns the offset of the most recent accepted call, or the
// resume watermark of a fresh process, or NoOffset: the target of a flush.
func (m *Machine) LastAssigned() int64 { return m.win.next - 1 }

// MaxSent returns the highest offset reported sent on the current connection.
func (m *Machine) MaxSent() int64 { return m.maxSent }

// MaxAttempted returns the highest offset ever handed to a transport.
func (m *Machine) MaxAttempted() int64 { return m.maxAttempted }

// Pending returns the number of accepted calls that are not yet durable, and
// their payload bytes.
func (m *Machine) Pending() (calls int, bytes int64) { return int(m.win.len()), m.win.bytes }

// PendingRecords returns the records of the calls Pending counts: each
// batch's, and one for each single-record call. A driver that bounds what
// it keeps per record (package io) counts them.
func (m *Machine) PendingRecords() int64 { return m.win.records }

// Durable reports whether offset o is durable: acknowledged, or at or below a
// resume watermark. Wait(o) is satisfied when Durable(o) or Failed(o).
func (m *Machine) Durable(o int64) bool { return o <= m.win.floor() }

// Failed reports whether offset o was accepted and then failed with the
// stream.
func (m *Machine) Failed(o int64) bool {
	return m.err != nil && o > m.win.floor() && o < m.win.next
}

// history reports whether the client knows bounds for a resume watermark:
// it created the stream, or already opened it once in this process. Only a
// fresh process resuming a stream by id has none.
func (m *Machine) history() bool { return m.opened || m.cfg.StreamID == "" }

// Batch is one accepted, not yet durable ingest call: its offset and its
// records as they were ingested.
type Batch struct {
	Offset  int64
	Records [][]byte
}

// Unacked appends every accepted call that is not durable, in offset order,
// grouped as ingested. After a failure or close these are the records the
// application still owns; every call returns the same list.
func (m *Machine) Unacked(dst []Batch) []Batch {
	for o := m.win.head; o < m.win.next; o++ {
		e := m.win.at(o)
		recs := e.many()
		if recs == nil {
			recs = [][]byte{e.one()}
		}
		dst = append(dst, Batch{Offset: o, Records: recs})
	}
	return dst
}

// checkTime is the time rule shared by every input: an Instant earlier than
// one already seen is misuse. It changes nothing; each input stores now once
// it knows it will act.
func (m *Machine) checkTime(now Instant) error {
	if now < m.now {
		return fmt.Errorf("%w: %d after %d", ErrTimeBackwards, now, m.now)
	}
	return nil
}

// fire moves the lifecycle. The machine only fires triggers its own state
// allows, so a refusal is a broken invariant.
func (m *Machine) fire(t fsm.Trigger) {
	if err := m.life.Fire(t); err != nil {
		panic(fmt.Sprintf("core: lifecycle: %v", err))
	}
	m.state = m.life.State()
}

func (m *Machine) emit(a Action) { m.queue = append(m.queue, a) }

func offsetExhausted(what string, o int64) error {
	return fmt.Errorf("%w: %s %d: the offset after it would overflow int64 (max %d)", ErrOffsetSpaceExhausted, what, o, int64(math.MaxInt64))
}
