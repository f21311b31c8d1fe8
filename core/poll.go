package core

import "github.com/zbstream/zbstream/fsm"

// maxSendsPerPoll bounds how many sends one Poll emits, so that a window of a
// million buffered calls after a reconnect does not become a million-action
// slice; the driver polls until Poll adds nothing.
const maxSendsPerPoll = 256

// Poll appends the actions the machine has for the driver to dst and returns
// it. Call it after every input, and again until it adds nothing.
func (m *Machine) Poll(dst []Action) []Action {
	dst = append(dst, m.queue...)
	clear(m.queue) // release payload and error references
	m.queue = m.queue[:0]
	if m.conn == 0 || m.State() != fsm.Open {
		return dst
	}
	end := m.win.next
	if end-m.sendNext > maxSendsPerPoll {
		end = m.sendNext + maxSendsPerPoll
	}
	for o := m.sendNext; o < end; o++ {
		e := m.win.at(o)
		dst = append(dst, Action{Kind: ActSend, Conn: m.conn, Offset: o, Wire: o - m.base, Record: e.one(), Records: e.many(), Size: e.size})
	}
	if end > m.sendNext {
		m.sendNext = end
		m.maxAttempted = max(m.maxAttempted, end-1)
		if !m.ackBy.armed {
			m.ackBy.arm(m.now.Add(m.cfg.AckTimeout))
		}
	}
	return dst
}
