package core

import (
	"math"

	"github.com/zbstream/zbstream/fsm"
)

// NextDeadline returns the earliest instant at which Tick has work to do, and
// false when no timer is armed.
func (m *Machine) NextDeadline() (Instant, bool) {
	next := Instant(math.MaxInt64)
	armed := false
	for _, d := range [...]deadline{m.openBy, m.ackBy, m.graceBy, m.backoffBy, m.closeBy} {
		if d.armed && (!armed || d.at < next) {
			next, armed = d.at, true
		}
	}
	return next, armed
}

// Tick fires every timer due at now: an open or ack timeout (a retryable
// failure), the end of a grace period (reconnect), the end of a backoff
// (next attempt) and the close timeout.
func (m *Machine) Tick(now Instant) error {
	if err := m.checkTime(now); err != nil {
		return err
	}
	m.now = now
	if m.closeBy.due(now) {
		m.closeBy.disarm()
		if m.State() == fsm.Closing {
			// Everything was durable; the server just never ended the
			// connection after the half-close.
			m.dropConn()
			m.finish()
		} else {
			m.fail(ErrCloseTimeout)
		}
	}
	switch {
	case m.openBy.due(now):
		m.recover(&ConnectionError{Code: CodeDeadlineExceeded, Err: ErrOpenTimeout})
	case m.ackBy.due(now):
		m.recover(&ConnectionError{Code: CodeDeadlineExceeded, Err: ErrAckTimeout})
	case m.graceBy.due(now):
		m.rotate()
	}
	if m.backoffBy.due(now) && m.State() == fsm.Recovering {
		m.backoffBy.disarm()
		m.fire(fsm.Reconnect)
		m.startAttempt()
	}
	return nil
}
