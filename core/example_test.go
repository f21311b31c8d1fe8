package core_test

import (
	"fmt"
	"time"

	"github.com/zbstream/zbstream/core"
)

// show prints what a driver would do with each pending action.
func show(m *core.Machine) []core.Action {
	acts := m.Poll(nil)
	for _, a := range acts {
		switch a.Kind {
		case core.ActOpen:
			fmt.Printf("open conn %d resume=%v id=%q\n", a.Conn, a.Resume, a.StreamID)
		case core.ActSend:
			fmt.Printf("send offset %d on conn %d\n", a.Offset, a.Conn)
		case core.ActComplete:
			fmt.Printf("durable %d..%d reconciled=%v\n", a.Offset, a.Last, a.Reconciled)
		default:
			fmt.Printf("%s conn %d\n", a.Kind, a.Conn)
		}
	}
	return acts
}

// Example drives a persistent stream by hand, as a driver would: create,
// ingest three records, lose the ack of the last two to a dropped connection,
// resume, and close.
func Example() {
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "6f1c2a9e4b7d4e0f" // unique per stream: crypto/rand in real use
	m, _ := core.New(cfg)
	now := core.Instant(0)

	m.Open(now)
	show(m)
	m.Receive(now, 1, core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true})

	for _, rec := range []string{`{"a":1}`, `{"a":2}`, `{"a":3}`} {
		m.IngestRecord(now, core.RecordJSON, []byte(rec))
	}
	for _, a := range show(m) {
		m.Sent(now, a.Conn, a.Offset)
	}
	m.Receive(now, 1, core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true})
	show(m)

	// The server commits 1 and 2, but the connection drops before the ack.
	m.ConnectionFailed(now, 1, core.CodeUnavailable, nil)
	show(m)
	at, _ := m.NextDeadline()
	now = at
	m.Tick(now) // the backoff is over: resume
	show(m)
	m.Receive(now, 2, core.Response{Kind: core.RespResume, Offset: 2, HasOffset: true})
	show(m) // 1 and 2 complete locally; nothing is sent again

	m.Close(now.Add(time.Millisecond))
	show(m)
	m.ConnectionFailed(now.Add(time.Millisecond), 2, core.CodeOK, nil) // the server ends the stream
	show(m)
	fmt.Println(m.State(), m.Err())
	// Output:
	// open conn 1 resume=false id=""
	// send offset 0 on conn 1
	// send offset 1 on conn 1
	// send offset 2 on conn 1
	// durable 0..0 reconciled=false
	// abort conn 1
	// open conn 2 resume=true id="s-1"
	// durable 1..2 reconciled=true
	// close-send conn 2
	// abort conn 2
	// finished conn 0
	// closed <nil>
}
