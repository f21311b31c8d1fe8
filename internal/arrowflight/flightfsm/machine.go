package flightfsm

import (
	"fmt"
	"time"
)

// Span is rows [From, To) of the logical batch at offset Batch.
type Span struct {
	Batch    int64
	From, To int64
}

// Rows returns the span's row count.
func (s Span) Rows() int64 { return s.To - s.From }

// batch is one logical batch that is not durable yet: rows in all,
// durable the acknowledged prefix, sent the prefix handed to the current
// connection (durable <= sent <= rows).
type batch struct {
	rows, durable, sent int64
}

// frame is one FlightData sent on the current connection and not yet
// wholly acknowledged: rows [start, end) of batch, and cum is the
// connection's row count through it.
type frame struct {
	batch, start, end, cum int64
}

// Machine is the state of one Arrow Flight stream: its logical batches
// and the frames of the current connection. The zero value is not
// usable; call New. It is not safe for concurrent use.
type Machine struct {
	first   int64   // logical offset of batches[0]
	batches []batch // the batches not yet durable, in offset order
	next    int64   // the next logical offset

	conn      uint64  // the current connection, 0 before the first
	ready     bool    // the connection's ready signal came
	frames    []frame // its frames not yet acknowledged
	base      int64   // the frame offset of frames[0]
	acked     int64   // its highest acknowledged frame, ReadyOffset for none
	ackedRows int64   // rows acknowledged on it
	sentRows  int64   // rows sent on it

	err error // the stream's failure, sticky
}

// New returns a machine with no batch and no connection.
func New() *Machine { return &Machine{acked: ReadyOffset} }

// Add accepts a logical batch of rows rows and returns its offset: 0 for
// the first, then one more each time.
func (m *Machine) Add(rows int64) (int64, error) {
	if m.err != nil {
		return 0, m.err
	}
	if rows <= 0 {
		return 0, misuse("a batch of %d rows", rows)
	}
	off := m.next
	m.next++
	m.batches = append(m.batches, batch{rows: rows, durable: 0, sent: 0})
	return off, nil
}

// Connect starts a new connection and returns its id; events naming an
// earlier one are ignored from now on. Frame offsets start at 0 again
// and every batch's unacknowledged suffix is pending once the new
// connection is ready.
func (m *Machine) Connect() uint64 {
	m.conn++
	m.ready = false
	m.frames = m.frames[:0]
	m.base, m.acked, m.ackedRows, m.sentRows = 0, ReadyOffset, 0, 0
	for i := range m.batches {
		m.batches[i].sent = m.batches[i].durable
	}
	return m.conn
}

// Ready reports whether the current connection has had its ready signal.
func (m *Machine) Ready() bool { return m.ready }

// Pending appends to dst what the current connection must still be sent,
// in order: each batch's rows not yet sent on it. It is empty until the
// connection is ready, and after the stream failed.
func (m *Machine) Pending(dst []Span) []Span {
	if !m.ready || m.err != nil {
		return dst
	}
	for i, b := range m.batches {
		if b.sent < b.rows {
			dst = append(dst, Span{Batch: m.first + int64(i), From: b.sent, To: b.rows})
		}
	}
	return dst
}

// Sent records that one frame holding rows [from, to) of batch is about
// to be written on connection conn, and returns its frame offset. Record
// it before the write: a server may ack it before the write returns. The
// frame must continue what Pending returned first: the first batch with
// rows unsent, from its first unsent row.
func (m *Machine) Sent(conn uint64, batchOff, from, to int64) (int64, error) {
	if m.err != nil {
		return 0, m.err
	}
	if conn != m.conn || !m.ready {
		return 0, misuse("send on connection %d, current %d (ready %t)", conn, m.conn, m.ready)
	}
	i := m.firstUnsent()
	if i < 0 || m.first+int64(i) != batchOff {
		return 0, misuse("send of batch %d out of order", batchOff)
	}
	b := &m.batches[i]
	if from != b.sent || to <= from || to > b.rows {
		return 0, misuse("send of rows [%d,%d) of batch %d, next unsent row %d of %d", from, to, batchOff, b.sent, b.rows)
	}
	b.sent = to
	m.sentRows += to - from
	off := m.base + int64(len(m.frames))
	m.frames = append(m.frames, frame{batch: batchOff, start: from, end: to, cum: m.sentRows})
	return off, nil
}

// firstUnsent returns the index of the first batch with rows not sent on
// the current connection, or -1.
func (m *Machine) firstUnsent() int {
	for i, b := range m.batches {
		if b.sent < b.rows {
			return i
		}
	}
	return -1
}

// Result is what one ack did.
type Result struct {
	// Stale: the ack named a connection the machine has left; nothing
	// changed.
	Stale bool
	// Ready: it was the connection's ready signal.
	Ready bool
	// Rows is the number of rows it made durable.
	Rows int64
	// Completed is the number of batches it made wholly durable: those at
	// offsets From .. From+Completed-1.
	From, Completed int64
	// Rotate: the server asks the client to leave the connection within
	// Grace (a close-only notice, or an ack that carries one).
	Rotate bool
	Grace  time.Duration
}

// Receive applies one ack received on connection conn. A broken rule
// fails the stream with a *ProtocolError, returned now and by every later
// call.
func (m *Machine) Receive(conn uint64, a Ack) (Result, error) {
	if conn != m.conn {
		return Result{Stale: true}, nil
	}
	if m.err != nil {
		return Result{}, m.err
	}
	if !m.ready {
		if a.Offset != ReadyOffset || a.Rows != 0 || a.HasClose {
			return Result{}, m.fail(&ProtocolError{Rule: AckBeforeReady, Got: a.Offset, Detail: describe(a)})
		}
		m.ready = true
		return Result{Ready: true}, nil
	}
	r := Result{Rotate: a.HasClose, Grace: a.Close}
	if a.Offset == ReadyOffset {
		switch {
		case a.Rows != 0:
			return Result{}, m.fail(&ProtocolError{Rule: SentinelWithRows, Got: a.Rows})
		case !a.HasClose:
			return Result{}, m.fail(&ProtocolError{Rule: SecondReady})
		}
		return r, nil
	}
	highest := m.base + int64(len(m.frames)) - 1
	switch {
	case a.Offset > highest:
		return Result{}, m.fail(&ProtocolError{Rule: AckAboveSent, Got: a.Offset, Bound: highest})
	case a.Offset < m.acked:
		return Result{}, m.fail(&ProtocolError{Rule: AckBackwards, Got: a.Offset, Bound: m.acked})
	}
	// The row count is the durable boundary: at least what earlier acks
	// made durable, at most the rows sent through frame a.Offset. It may
	// end inside a frame (a frame the server made durable in part), and
	// a later ack may name the same frame again with more of its rows.
	limit := m.ackedRows
	if a.Offset >= m.base {
		limit = m.frames[a.Offset-m.base].cum
	}
	switch {
	case a.Rows > limit:
		return Result{}, m.fail(&ProtocolError{Rule: RowsMismatch, Got: a.Rows, Bound: limit})
	case a.Rows < m.ackedRows:
		return Result{}, m.fail(&ProtocolError{Rule: RowsBackwards, Got: a.Rows, Bound: m.ackedRows})
	}
	r.From = m.first
	done := 0 // frames wholly durable now
	for _, f := range m.frames {
		if f.cum > a.Rows {
			if before := f.cum - (f.end - f.start); a.Rows > before {
				// durable in part: its batch up to the row a.Rows ends at
				m.batches[f.batch-m.first].durable = f.end - (f.cum - a.Rows)
			}
			break
		}
		m.batches[f.batch-m.first].durable = f.end
		done++
	}
	r.Rows = a.Rows - m.ackedRows
	m.frames = append(m.frames[:0], m.frames[done:]...)
	m.base += int64(done)
	m.acked, m.ackedRows = a.Offset, a.Rows
	for len(m.batches) > 0 && m.batches[0].durable == m.batches[0].rows {
		m.batches = m.batches[1:]
		m.first++
		r.Completed++
	}
	return r, nil
}

// describe renders an ack for an error's detail.
func describe(a Ack) string {
	if a.HasClose {
		return fmt.Sprintf("offset %d, rows %d, close %v", a.Offset, a.Rows, a.Close)
	}
	return fmt.Sprintf("offset %d, rows %d", a.Offset, a.Rows)
}

// Fail fails the stream with err (retries exhausted, a close timeout):
// nothing more is pending, and Err returns err. A stream that has failed
// already keeps its first error.
func (m *Machine) Fail(err error) error { return m.fail(err) }

func (m *Machine) fail(err error) error {
	if m.err == nil {
		m.err = err
	}
	return m.err
}

// Err returns the stream's failure, or nil.
func (m *Machine) Err() error { return m.err }

// Unacked appends to dst every batch's unacknowledged suffix, in offset
// order: what a new connection replays, and what the application gets
// back after a failure.
func (m *Machine) Unacked(dst []Span) []Span {
	for i, b := range m.batches {
		dst = append(dst, Span{Batch: m.first + int64(i), From: b.durable, To: b.rows})
	}
	return dst
}

// InFlight returns the number of frames sent on the current connection
// and not acknowledged.
func (m *Machine) InFlight() int { return len(m.frames) }

// Durable reports whether the batch at offset off is wholly durable.
// An offset never assigned is not.
func (m *Machine) Durable(off int64) bool { return off >= 0 && off < m.first }

// Next returns the offset the next batch will get.
func (m *Machine) Next() int64 { return m.next }

// Idle reports whether every batch accepted is durable.
func (m *Machine) Idle() bool { return len(m.batches) == 0 }
