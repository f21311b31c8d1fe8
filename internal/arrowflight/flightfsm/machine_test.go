package flightfsm

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// ready returns a machine with batches of the given row counts and a
// ready connection.
func ready(t *testing.T, rows ...int64) (*Machine, uint64) {
	t.Helper()
	m := New()
	for i, n := range rows {
		off, err := m.Add(n)
		if err != nil || off != int64(i) {
			t.Fatalf("Add(%d) = %d, %v", n, off, err)
		}
	}
	c := m.Connect()
	if res, err := m.Receive(c, Ack{Offset: -1}); err != nil || !res.Ready {
		t.Fatalf("ready signal: %+v, %v", res, err)
	}
	return m, c
}

func mustSend(t *testing.T, m *Machine, c uint64, b, from, to, want int64) {
	t.Helper()
	if got, err := m.Sent(c, b, from, to); err != nil || got != want {
		t.Fatalf("Sent(%d,[%d,%d)) = %d, %v; want frame %d", b, from, to, got, err, want)
	}
}

func wantRule(t *testing.T, err error, rule Rule) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Rule != rule {
		t.Fatalf("error %v; want rule %q", err, rule)
	}
}

func TestPendingWaitsForReady(t *testing.T) {
	m := New()
	m.Add(5)
	c := m.Connect()
	if p := m.Pending(nil); len(p) != 0 {
		t.Fatalf("pending before ready: %v", p)
	}
	if _, err := m.Sent(c, 0, 0, 5); !errors.Is(err, ErrMisuse) {
		t.Fatalf("send before ready: %v", err)
	}
	m.Receive(c, Ack{Offset: -1})
	if p := m.Pending(nil); !slices.Equal(p, []Span{{0, 0, 5}}) {
		t.Fatalf("pending = %v", p)
	}
}

func TestPartialAckReplaysSuffix(t *testing.T) {
	m, c := ready(t, 10, 4)
	mustSend(t, m, c, 0, 0, 3, 0)
	mustSend(t, m, c, 0, 3, 7, 1)
	mustSend(t, m, c, 0, 7, 10, 2)
	mustSend(t, m, c, 1, 0, 4, 3)
	res, err := m.Receive(c, Ack{Offset: 1, Rows: 7})
	if err != nil || res.Rows != 7 || res.Completed != 0 {
		t.Fatalf("ack 1: %+v, %v", res, err)
	}
	if u := m.Unacked(nil); !slices.Equal(u, []Span{{0, 7, 10}, {1, 0, 4}}) {
		t.Fatalf("unacked = %v", u)
	}
	c2 := m.Connect()
	if _, err := m.Receive(c, Ack{Offset: 3, Rows: 14}); err != nil {
		t.Fatalf("stale ack: %v", err) // the old connection's: ignored
	}
	m.Receive(c2, Ack{Offset: -1})
	if p := m.Pending(nil); !slices.Equal(p, []Span{{0, 7, 10}, {1, 0, 4}}) {
		t.Fatalf("replay = %v", p)
	}
	mustSend(t, m, c2, 0, 7, 10, 0)
	mustSend(t, m, c2, 1, 0, 4, 1)
	res, err = m.Receive(c2, Ack{Offset: 0, Rows: 3})
	if err != nil || res.From != 0 || res.Completed != 1 || !m.Durable(0) || m.Durable(1) {
		t.Fatalf("ack on replay: %+v, %v", res, err)
	}
	res, err = m.Receive(c2, Ack{Offset: 1, Rows: 7})
	if err != nil || res.From != 1 || res.Completed != 1 || !m.Idle() {
		t.Fatalf("last ack: %+v, %v", res, err)
	}
}

// An ack may repeat the last one, which changes nothing, but not go
// below it.
func TestRepeatedAndBackwardAcks(t *testing.T) {
	m, c := ready(t, 3)
	mustSend(t, m, c, 0, 0, 1, 0)
	mustSend(t, m, c, 0, 1, 3, 1)
	m.Receive(c, Ack{Offset: 0, Rows: 1})
	res, err := m.Receive(c, Ack{Offset: 0, Rows: 1})
	if err != nil || res.Rows != 0 || res.Completed != 0 {
		t.Fatalf("duplicate: %+v, %v", res, err)
	}
	m.Receive(c, Ack{Offset: 1, Rows: 3})
	_, err = m.Receive(c, Ack{Offset: 0, Rows: 1})
	wantRule(t, err, AckBackwards)
}

// The row count is the durable boundary, and may end inside a frame: the
// frame's batch is durable up to that row, the same frame may be named
// again with more rows, a reconnect sends the batch from the first row
// not durable, and a count below an earlier one breaks the rules.
func TestAckInsideAFrame(t *testing.T) {
	m, c := ready(t, 5, 4)
	mustSend(t, m, c, 0, 0, 3, 0)
	mustSend(t, m, c, 0, 3, 5, 1)
	mustSend(t, m, c, 1, 0, 4, 2)
	res, err := m.Receive(c, Ack{Offset: 0, Rows: 2})
	if err != nil || res.Rows != 2 || res.Completed != 0 || m.InFlight() != 3 {
		t.Fatalf("2 of frame 0's 3 rows: %+v, %v, %d in flight", res, err, m.InFlight())
	}
	if u := m.Unacked(nil); !slices.Equal(u, []Span{{0, 2, 5}, {1, 0, 4}}) {
		t.Fatalf("unacked = %v", u)
	}
	res, err = m.Receive(c, Ack{Offset: 0, Rows: 3})
	if err != nil || res.Rows != 1 || m.InFlight() != 2 {
		t.Fatalf("the rest of frame 0: %+v, %v, %d in flight", res, err, m.InFlight())
	}
	res, err = m.Receive(c, Ack{Offset: 2, Rows: 7})
	if err != nil || res.Rows != 4 || res.Completed != 1 || res.From != 0 || m.InFlight() != 1 {
		t.Fatalf("through row 2 of batch 1 at frame 2: %+v, %v, %d in flight", res, err, m.InFlight())
	}
	if u := m.Unacked(nil); !slices.Equal(u, []Span{{1, 2, 4}}) {
		t.Fatalf("unacked = %v", u)
	}
	c2 := m.Connect()
	if _, err := m.Receive(c2, Ack{Offset: -1}); err != nil {
		t.Fatal(err)
	}
	if p := m.Pending(nil); !slices.Equal(p, []Span{{1, 2, 4}}) {
		t.Fatalf("pending after reconnect = %v", p)
	}
	mustSend(t, m, c2, 1, 2, 4, 0)
	if _, err := m.Receive(c2, Ack{Offset: 0, Rows: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Receive(c2, Ack{Offset: 0, Rows: 0})
	wantRule(t, err, RowsBackwards)
}

func TestRotation(t *testing.T) {
	m, c := ready(t, 2)
	res, err := m.Receive(c, Ack{Offset: -1, HasClose: true, Close: time.Second})
	if err != nil || !res.Rotate || res.Grace != time.Second || res.Rows != 0 {
		t.Fatalf("close-only notice: %+v, %v", res, err)
	}
	mustSend(t, m, c, 0, 0, 2, 0)
	res, err = m.Receive(c, Ack{Offset: 0, Rows: 2, HasClose: true})
	if err != nil || !res.Rotate || res.Grace != 0 || res.Completed != 1 {
		t.Fatalf("ack with a notice: %+v, %v", res, err)
	}
}

func TestProtocolViolations(t *testing.T) {
	cases := []struct {
		name string
		ack  Ack
		rule Rule
		pre  bool // sent before the connection is ready
	}{
		{"ack before ready", Ack{Offset: 0, Rows: 1}, AckBeforeReady, true},
		{"close before ready", Ack{Offset: -1, HasClose: true}, AckBeforeReady, true},
		{"rows before ready", Ack{Offset: -1, Rows: 1}, AckBeforeReady, true},
		{"second ready", Ack{Offset: -1}, SecondReady, false},
		{"sentinel with rows", Ack{Offset: -1, Rows: 3, HasClose: true}, SentinelWithRows, false},
		{"beyond sent", Ack{Offset: 2, Rows: 5}, AckAboveSent, false},
		{"rows beyond the frame", Ack{Offset: 0, Rows: 4}, RowsMismatch, false},
		{"rows beyond those sent", Ack{Offset: 1, Rows: 6}, RowsMismatch, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			m.Add(5)
			conn := m.Connect()
			if !c.pre {
				m.Receive(conn, Ack{Offset: -1})
				mustSend(t, m, conn, 0, 0, 3, 0)
				mustSend(t, m, conn, 0, 3, 5, 1)
			}
			_, err := m.Receive(conn, c.ack)
			wantRule(t, err, c.rule)
			if _, err2 := m.Add(1); err2 != err {
				t.Fatalf("failure not sticky: %v", err2)
			}
			if p := m.Pending(nil); len(p) != 0 {
				t.Fatalf("pending after failure: %v", p)
			}
			if u := m.Unacked(nil); !slices.Equal(u, []Span{{0, 0, 5}}) {
				t.Fatalf("unacked after failure = %v", u)
			}
		})
	}
}

func TestMisuseChangesNothing(t *testing.T) {
	m, c := ready(t, 4, 2)
	for _, s := range []Span{{1, 0, 2}, {0, 1, 4}, {0, 0, 5}, {0, 0, 0}} {
		if _, err := m.Sent(c, s.Batch, s.From, s.To); !errors.Is(err, ErrMisuse) {
			t.Errorf("Sent(%v) = %v; want misuse", s, err)
		}
	}
	if _, err := m.Sent(c+1, 0, 0, 4); !errors.Is(err, ErrMisuse) {
		t.Errorf("send on another connection: %v", err)
	}
	if _, err := m.Add(0); !errors.Is(err, ErrMisuse) {
		t.Errorf("empty batch: %v", err)
	}
	if p := m.Pending(nil); !slices.Equal(p, []Span{{0, 0, 4}, {1, 0, 2}}) || m.Next() != 2 {
		t.Fatalf("state changed: %v, next %d", p, m.Next())
	}
	if m.Err() != nil {
		t.Fatalf("misuse failed the stream: %v", m.Err())
	}
}
