package flightfsm

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// row names one row: its batch's offset and its index in the batch.
type row struct{ batch, i int64 }

// unackedRows returns the set of rows m lists as unacknowledged.
func unackedRows(m *Machine) map[row]bool {
	set := map[row]bool{}
	for _, s := range m.Unacked(nil) {
		for i := s.From; i < s.To; i++ {
			set[row{s.Batch, i}] = true
		}
	}
	return set
}

// TestPropertiesAnySplitAnyAcks drives a machine with random batches, a
// random split of every send into frames, and a server that acks any
// prefix of what it was sent (ending at a frame's end or inside a frame), loses acks, rotates and drops connections.
// It checks, against a model kept by the test: no row is durable without
// having been sent on the connection that acked it, no row is durable
// twice, and after every reconnect what is pending is exactly the rows
// not yet durable, each batch's unacknowledged suffix.
func TestPropertiesAnySplitAnyAcks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := New()
		all := map[row]bool{}      // every row accepted
		durable := map[row]bool{}  // rows made durable, by the model
		everSent := map[row]bool{} // rows sent on any connection
		var onConn []row           // rows sent on the current connection, in order
		var frameEnd []int         // frame k ends at onConn[frameEnd[k]-1]
		acked := -1                // the server's last ack on this connection
		ackedRows := 0             // and its row count
		conn := m.Connect()
		m.Receive(conn, Ack{Offset: -1})

		reconnect := func(t *rapid.T) {
			conn = m.Connect()
			onConn, frameEnd, acked, ackedRows = nil, nil, -1, 0
			if p := m.Pending(nil); len(p) != 0 {
				t.Fatalf("pending before ready: %v", p)
			}
			if _, err := m.Receive(conn, Ack{Offset: -1}); err != nil {
				t.Fatal(err)
			}
			// The replay is exactly the unacknowledged rows.
			want := map[row]bool{}
			for r := range all {
				if !durable[r] {
					want[r] = true
				}
			}
			got := map[row]bool{}
			for _, s := range m.Pending(nil) {
				for i := s.From; i < s.To; i++ {
					got[row{s.Batch, i}] = true
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("replay %v; unacknowledged %v", got, want)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				n := rapid.Int64Range(1, 9).Draw(t, "rows")
				off, err := m.Add(n)
				if err != nil {
					t.Fatal(err)
				}
				for i := range n {
					all[row{off, i}] = true
				}
			},
			"send": func(t *rapid.T) {
				p := m.Pending(nil)
				if len(p) == 0 {
					t.Skip("nothing pending")
				}
				s := p[0]
				to := rapid.Int64Range(s.From+1, s.To).Draw(t, "to")
				if _, err := m.Sent(conn, s.Batch, s.From, to); err != nil {
					t.Fatal(err)
				}
				for i := s.From; i < to; i++ {
					onConn = append(onConn, row{s.Batch, i})
					everSent[row{s.Batch, i}] = true
				}
				frameEnd = append(frameEnd, len(onConn))
			},
			"ack": func(t *rapid.T) {
				if len(frameEnd) == 0 {
					t.Skip("nothing sent")
				}
				k := rapid.IntRange(max(acked, 0), len(frameEnd)-1).Draw(t, "frame")
				// The row count is the boundary: the frame's end, or, as
				// a server that made a frame durable in part may send,
				// any count from the last one up to it.
				rows := frameEnd[k]
				if rapid.Bool().Draw(t, "inside a frame") {
					rows = rapid.IntRange(ackedRows, frameEnd[k]).Draw(t, "rows")
				}
				before := unackedRows(m)
				res, err := m.Receive(conn, Ack{Offset: int64(k), Rows: int64(rows)})
				if err != nil {
					t.Fatal(err)
				}
				after := unackedRows(m)
				var newly int64
				for r := range before {
					if after[r] {
						continue
					}
					newly++
					if durable[r] {
						t.Fatalf("row %v durable twice", r)
					}
					if !slices.Contains(onConn[:rows], r) {
						t.Fatalf("row %v durable, not sent on the connection through frame %d", r, k)
					}
					durable[r] = true
				}
				if newly != res.Rows {
					t.Fatalf("ack made %d rows durable, reported %d", newly, res.Rows)
				}
				for r := range after {
					if durable[r] {
						t.Fatalf("durable row %v still listed unacknowledged", r)
					}
				}
				acked, ackedRows = k, rows
			},
			"rotate": func(t *rapid.T) {
				res, err := m.Receive(conn, Ack{Offset: -1, HasClose: true})
				if err != nil || !res.Rotate {
					t.Fatalf("rotation: %+v, %v", res, err)
				}
				reconnect(t)
			},
			"drop": func(t *rapid.T) { reconnect(t) },
			"": func(t *rapid.T) {
				if len(durable) > len(everSent) {
					t.Fatalf("%d rows durable, %d sent", len(durable), len(everSent))
				}
				for r := range durable {
					if !everSent[r] || !all[r] {
						t.Fatalf("row %v durable, never sent or accepted", r)
					}
				}
				// Completed batches are exactly the wholly durable ones, a prefix.
				for b := range m.Next() {
					whole := true
					for r := range all {
						if r.batch == b && !durable[r] {
							whole = false
						}
					}
					if m.Durable(b) != whole {
						t.Fatalf("batch %d: Durable %t, all rows durable %t", b, m.Durable(b), whole)
					}
				}
			},
		})
	})
}
