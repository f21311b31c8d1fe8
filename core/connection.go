package core

import (
	"fmt"
	"math"

	"github.com/zbstream/zbstream/fsm"
)

// Open starts the first connection attempt. It is an error on a machine that
// is not idle.
func (m *Machine) Open(now Instant) error {
	if err := m.checkTime(now); err != nil {
		return err
	}
	if m.State() != fsm.Idle {
		return ErrAlreadyOpened
	}
	m.now = now
	m.fire(fsm.StartOpen)
	m.startAttempt()
	return nil
}

// startAttempt issues a new connection and asks the driver to open it: a
// resume when a persistent stream's id is known, else a create.
func (m *Machine) startAttempt() {
	m.lastConn++
	m.conn = m.lastConn
	// Nothing may be reported sent on a connection before its open response.
	m.sendNext, m.maxSent = m.win.head, m.win.floor()
	resume := m.resumes()
	a := Action{Kind: ActOpen, Conn: m.conn, Resume: resume}
	if resume {
		a.StreamID = m.streamID
	} else if m.cfg.Kind == Persistent {
		a.RequestID = m.requestID
	}
	m.emit(a)
	m.openBy.arm(m.now.Add(m.cfg.OpenTimeout))
}

// resumes reports whether the next open is a resume: a persistent stream
// whose id is known. Every other open is a create.
func (m *Machine) resumes() bool { return m.cfg.Kind == Persistent && m.streamID != "" }

// eventFrom applies the checks every connection event shares: the time rule,
// then which connection the event names. It reports true for the current
// connection; false with a nil error for one already left (late news,
// ignored); false with an error for misuse.
func (m *Machine) eventFrom(now Instant, conn ConnID) (bool, error) {
	if err := m.checkTime(now); err != nil {
		return false, err
	}
	if conn == 0 || conn > m.lastConn {
		return false, fmt.Errorf("%w: %d", ErrUnknownConn, conn)
	}
	return conn == m.conn, nil
}

// Sent reports that the send of offset on conn succeeded. Sends are reported
// in the order they were emitted; anything else is an ErrUnknownSend and
// changes nothing. Reports for a connection already left are ignored.
func (m *Machine) Sent(now Instant, conn ConnID, offset int64) error {
	if current, err := m.eventFrom(now, conn); !current {
		return err
	}
	if offset != m.maxSent+1 || offset >= m.sendNext {
		return fmt.Errorf("%w: offset %d on connection %d (next expected %d, emitted below %d)",
			ErrUnknownSend, offset, conn, m.maxSent+1, m.sendNext)
	}
	m.now = now
	m.maxSent = offset
	return nil
}

// Receive feeds one server message read from conn. A message that breaks
// the protocol fails the stream (see Err); Receive itself returns an error
// only for misuse. Messages from a connection already left are ignored.
func (m *Machine) Receive(now Instant, conn ConnID, r Response) error {
	if current, err := m.eventFrom(now, conn); !current {
		return err
	}
	m.now = now
	switch st := m.State(); {
	case st == fsm.Opening && (r.Kind == RespCreate || r.Kind == RespResume):
		m.onOpenResponse(r)
	case r.Kind == RespAck && (st == fsm.Open || st == fsm.Paused || st == fsm.Closing):
		m.onAck(r)
	case r.Kind == RespCloseSignal && st == fsm.Open:
		m.onCloseSignal(r)
	case r.Kind == RespCloseSignal && (st == fsm.Paused || st == fsm.Closing):
		// Already pausing, or closing: the connection is being left anyway.
	default:
		m.fail(&ProtocolError{Rule: UnexpectedMessage, Detail: fmt.Sprintf("%s response in state %s", r.Kind, st)})
	}
	return nil
}

// onOpenResponse checks that the answer matches the request, then opens.
func (m *Machine) onOpenResponse(r Response) {
	resumed := m.resumes()
	want := RespCreate
	if resumed {
		want = RespResume
	}
	if r.Kind != want {
		m.fail(&ProtocolError{Rule: OpenResponseKind, Detail: fmt.Sprintf("sent a %s request, got a %s response", want, r.Kind)})
		return
	}
	if want == RespCreate && (!r.HasStreamID || r.StreamID == "") {
		m.fail(&ProtocolError{Rule: StreamIDMissing})
		return
	}
	switch {
	case resumed:
		if !m.applyResume(r) {
			return
		}
	case m.cfg.Kind == Persistent:
		m.streamID = r.StreamID
	default:
		m.streamID = r.StreamID
		// Ephemeral: everything unacknowledged is sent again, renumbered
		// from wire offset 0.
		m.base = m.win.head
	}
	m.openBy.disarm()
	m.opened = true
	m.sendNext, m.maxSent = m.win.head, m.win.floor()
	if m.win.len() == 0 {
		// An open that finds nothing pending ends the recovery episode
		// (protocol.md §5.5) as durable progress would: nothing is at
		// stake, so nothing is left to make progress on. An idle stream
		// whose connection flaps now and then never exhausts its retries.
		m.attempts = 0
	}
	m.fire(fsm.Opened)
	m.maybeFinishClose()
}

// applyResume validates the watermark and reconciles the window against it,
// or fails the stream without touching anything.
func (m *Machine) applyResume(r Response) bool {
	plan, err := reconcile(m.resumeBounds(), r)
	if m.bugs.has(bugWatermarkCheck) || (m.bugs.has(bugWrapNext) && r.Offset == math.MaxInt64) {
		plan, err = reconciliation{complete: offsetRange{m.win.head, r.Offset}, resendFrom: r.Offset + 1, watermark: r.Offset}, nil
	}
	if err != nil {
		m.fail(err)
		return false
	}
	if !m.history() {
		m.win.rebase(plan.resendFrom)
		m.maxAttempted = plan.watermark
		return true
	}
	m.complete(plan.complete, true)
	return true
}

// resumeBounds are the bounds a resume watermark is validated against: the
// machine's own once it has opened, else what Config.History says this
// process knew of the stream, else none (a fresh process).
func (m *Machine) resumeBounds() resumeBounds {
	if h := m.cfg.History; h != nil && !m.opened {
		return resumeBounds{history: true, floor: h.Durable, maxAttempted: h.Attempted}
	}
	return resumeBounds{history: m.history(), floor: m.win.floor(), maxAttempted: m.maxAttempted}
}

// complete makes a range durable: reports it, releases it, and counts it as
// the progress that ends a recovery episode.
func (m *Machine) complete(r offsetRange, reconciled bool) {
	if r.empty() {
		return
	}
	if reconciled && m.bugs.has(bugDoubleComplete) && r.first > 0 {
		r.first--
	}
	m.emit(Action{Kind: ActComplete, Offset: r.first, Last: r.last, Reconciled: reconciled})
	m.win.advance(r.last + 1)
	m.attempts = 0
}

// onAck validates a cumulative ack against this connection's bounds, in wire
// offsets, before anything changes.
func (m *Machine) onAck(r Response) {
	bounds := ackBounds{floor: m.win.floor() - m.base, maxSent: m.maxSent - m.base}
	if m.bugs.has(bugAckUpperBound) {
		bounds.maxSent = math.MaxInt64
	}
	advance, err := checkAck(bounds, r)
	if err != nil {
		m.fail(err)
		return
	}
	if !advance {
		return // a duplicate changes nothing, the ack timer included
	}
	m.complete(offsetRange{m.win.head, r.Offset + m.base}, false)
	inFlight := m.win.floor() < m.sendNext-1
	closing := m.closeRequested && m.win.len() == 0
	switch {
	case m.State() == fsm.Paused:
		// The ack timer stays suspended for the grace period, and once
		// nothing is in flight there is no reason to wait the grace out,
		// unless a close ends on this connection.
		if !inFlight && !closing {
			m.rotate()
			return
		}
	case inFlight:
		m.ackBy.arm(m.now.Add(m.cfg.AckTimeout))
	default:
		m.ackBy.disarm()
	}
	m.maybeFinishClose()
}

// onCloseSignal: a persistent stream resumes at once; an ephemeral one stops
// sending and drains acks for the grace period, then reconnects.
func (m *Machine) onCloseSignal(r Response) {
	grace := m.cfg.MaxGrace
	if r.HasDuration && r.Duration < grace {
		grace = r.Duration
	}
	if m.cfg.Kind == Persistent || grace <= 0 || m.win.floor() == m.sendNext-1 {
		m.rotate()
		return
	}
	m.fire(fsm.Pause)
	m.ackBy.disarm() // suspended: the server said it is going away
	m.graceBy.arm(m.now.Add(grace))
}

// rotate leaves the connection for a new one at once. A server rotation is
// not a failure, so it costs no retry.
func (m *Machine) rotate() {
	m.dropConn()
	m.fire(fsm.Reconnect)
	m.startAttempt()
}

// dropConn aborts the current connection and disarms its timers.
func (m *Machine) dropConn() {
	if m.conn != 0 {
		m.emit(Action{Kind: ActAbort, Conn: m.conn})
		m.conn = 0
	}
	m.openBy.disarm()
	m.ackBy.disarm()
	m.graceBy.disarm()
}

// ConnectionFailed reports that conn ended: a failed send or receive, an
// error status, or a clean end of stream (CodeOK). err is the transport's
// error, kept as the cause. Reports for a connection already left are
// ignored.
func (m *Machine) ConnectionFailed(now Instant, conn ConnID, code Code, err error) error {
	if current, err := m.eventFrom(now, conn); !current {
		return err
	}
	m.now = now
	m.onConnLost(&ConnectionError{Code: code, Err: err})
	return nil
}

// onConnLost decides what a lost connection means in the current state.
func (m *Machine) onConnLost(cause *ConnectionError) {
	switch m.State() {
	case fsm.Closing:
		// Everything was durable before the half-close: the end of the
		// connection is the end of the stream, whatever its status. An
		// auth rejection still invalidates the cached credentials
		// (protocol.md §5.5): the token is bad whatever state the stream
		// is in, and the next stream that uses it would fail too.
		m.dropConn()
		if cause.Code == CodeUnauthenticated {
			m.emit(Action{Kind: ActInvalidateCredentials})
		}
		m.finish()
	case fsm.Paused:
		if cause.Retryable() {
			m.rotate() // the server ended the rotated session
			return
		}
		m.recover(cause)
	default:
		m.recover(cause)
	}
}

// recover applies the recovery policy to a failed connection: a backoff and
// a new attempt, or the end of the stream. An UNAUTHENTICATED end always
// invalidates the credentials; at the first open, before anything was
// accepted, it is retried once at once with fresh ones, DisableRecovery or
// not, and without using the retry budget (protocol.md §5.5).
func (m *Machine) recover(cause *ConnectionError) {
	m.dropConn()
	if cause.Code == CodeUnauthenticated {
		m.emit(Action{Kind: ActInvalidateCredentials})
		if !m.opened && !m.authRetried {
			// The first open may be retried once, at once, with fresh
			// credentials: a token that expired in a cache is not an error.
			m.authRetried = true
			m.fire(fsm.Lose)
			m.backoffBy.arm(m.now)
			return
		}
	}
	switch {
	case !cause.Retryable():
		m.fail(cause)
	case m.cfg.DisableRecovery:
		m.fail(cause)
	case m.attempts >= m.cfg.Retries:
		m.fail(&RetryError{Attempts: m.attempts, Last: cause})
	default:
		m.attempts++
		m.fire(fsm.Lose)
		m.backoffBy.arm(m.now.Add(m.cfg.Backoff.delay(m.attempts, m.rng)))
	}
}

// fail ends the stream: every accepted record that is not durable fails once,
// in order, and stays retrievable through Unacked. Failure is sticky.
func (m *Machine) fail(err error) {
	if m.State().Terminal() {
		return
	}
	m.dropConn()
	m.backoffBy.disarm()
	m.closeBy.disarm()
	m.err = err
	if m.win.len() > 0 {
		m.emit(Action{Kind: ActFail, Offset: m.win.head, Last: m.win.next - 1, Err: err})
	}
	m.fire(fsm.Fail)
	m.emit(Action{Kind: ActFinished, Err: err})
}
