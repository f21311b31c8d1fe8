package core

import "github.com/zbstream/zbstream/fsm"

// Close asks the stream to end cleanly: no new records are accepted, what was
// accepted is flushed, then the connection is half-closed and drained. The
// stream reaches Closed when the driver reports that connection's end, or
// fails with ErrCloseTimeout if records are still not durable after
// CloseTimeout. Close is idempotent and succeeds on a stream that has already
// failed or closed.
func (m *Machine) Close(now Instant) error {
	if err := m.checkTime(now); err != nil {
		return err
	}
	m.now = now
	switch {
	case m.State().Terminal() || m.State() == fsm.Closing || m.closeRequested:
		return nil
	case m.State() == fsm.Idle:
		m.fire(fsm.Close)
		m.finish()
		return nil
	}
	m.closeRequested = true
	m.closeBy.arm(now.Add(m.cfg.CloseTimeout))
	m.maybeFinishClose()
	return nil
}

// maybeFinishClose moves a closing stream on once nothing is pending: on a
// live connection it half-closes; without one it is done at once.
func (m *Machine) maybeFinishClose() {
	if !m.closeRequested || m.win.len() != 0 {
		return
	}
	switch m.State() {
	case fsm.Open, fsm.Paused:
		m.ackBy.disarm()
		m.graceBy.disarm()
		m.fire(fsm.Close)
		m.emit(Action{Kind: ActCloseSend, Conn: m.conn})
	case fsm.Opening, fsm.Recovering:
		m.dropConn()
		m.backoffBy.disarm()
		m.fire(fsm.Close)
		m.finish()
	}
}

// finish ends a clean close.
func (m *Machine) finish() {
	m.closeBy.disarm()
	m.fire(fsm.Finish)
	m.emit(Action{Kind: ActFinished})
}
