package memtransport_test

import (
	"context"
	"errors"
	stdio "io"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// machineRun drives a core.Machine over a memtransport transport with a
// minimal driver (one loop, one reader goroutine per connection), in
// virtual time: a check that the server speaks the protocol the core
// expects, until the real driver exists.
type machineRun struct {
	t         *testing.T
	m         *core.Machine
	tr        streamio.Transport
	start     time.Time
	conns     map[core.ConnID]streamio.Conn
	events    chan machineEvent
	done      chan struct{}
	wg        sync.WaitGroup
	completed map[int64]int
	finished  bool
	lockstep  bool // wait for each record's ack before the next
}

type machineEvent struct {
	conn core.ConnID
	resp core.Response
	err  error
}

func newMachineRun(t *testing.T, tr streamio.Transport, kind core.Kind) *machineRun {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	if kind == core.Persistent {
		cfg.ClientRequestID = "req-" + t.Name()
	}
	m, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &machineRun{t: t, m: m, tr: tr, start: time.Now(), conns: map[core.ConnID]streamio.Conn{},
		events: make(chan machineEvent), done: make(chan struct{}), completed: map[int64]int{}}
	if err := m.Open(r.now()); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *machineRun) now() core.Instant { return core.Instant(time.Since(r.start)) }

func codeOf(err error) core.Code {
	var ce *core.ConnectionError
	if errors.As(err, &ce) {
		return ce.Code
	}
	if errors.Is(err, stdio.EOF) {
		return core.CodeOK
	}
	return core.CodeUnknown
}

func (r *machineRun) pump() {
	for acts := r.m.Poll(nil); len(acts) > 0; acts = r.m.Poll(nil) {
		for _, a := range acts {
			r.act(a)
		}
	}
}

func (r *machineRun) act(a core.Action) {
	m, now := r.m, r.now()
	switch a.Kind {
	case core.ActOpen:
		c, err := r.tr.Open(context.Background(), streamio.OpenRequest{Kind: m.Kind(), RecordType: core.RecordJSON,
			Resume: a.Resume, StreamID: a.StreamID, RequestID: a.RequestID})
		if err != nil {
			_ = m.ConnectionFailed(now, a.Conn, codeOf(err), err)
			return
		}
		r.conns[a.Conn] = c
		r.wg.Go(func() {
			for {
				resp, err := c.Recv()
				select {
				case r.events <- machineEvent{a.Conn, resp, err}:
				case <-r.done:
					return
				}
				if err != nil {
					return
				}
			}
		})
	case core.ActSend:
		if err := r.conns[a.Conn].Send(streamio.Call{Wire: a.Wire, Record: a.Record, Records: a.Records}); err != nil {
			_ = m.ConnectionFailed(now, a.Conn, codeOf(err), err)
		} else if err := m.Sent(now, a.Conn, a.Offset); err != nil {
			r.t.Fatalf("Sent: %v", err)
		}
	case core.ActCloseSend:
		_ = r.conns[a.Conn].CloseSend()
	case core.ActAbort:
		if c := r.conns[a.Conn]; c != nil {
			c.Abort()
			delete(r.conns, a.Conn)
		}
	case core.ActComplete:
		for o := a.Offset; o <= a.Last; o++ {
			r.completed[o]++
		}
	case core.ActInvalidateCredentials:
		r.tr.InvalidateCredentials()
	case core.ActFinished:
		r.finished = true
	}
}

// run steps the machine until done() holds or it finished.
func (r *machineRun) run(done func() bool) {
	for {
		r.pump()
		if r.finished || done() {
			return
		}
		var timer <-chan time.Time
		if at, ok := r.m.NextDeadline(); ok {
			timer = time.After(max(at.Sub(r.now()), 0))
		}
		select {
		case e := <-r.events:
			if r.conns[e.conn] == nil {
				continue // late news from a connection already left
			}
			if e.err != nil {
				_ = r.m.ConnectionFailed(r.now(), e.conn, codeOf(e.err), e.err)
			} else {
				_ = r.m.Receive(r.now(), e.conn, e.resp)
			}
		case <-timer:
			_ = r.m.Tick(r.now())
		}
	}
}

// ingestAndClose ingests n records and closes the stream (as far as the
// stream lets it), then releases every connection.
func (r *machineRun) ingestAndClose(n int) {
	defer func() {
		close(r.done)
		for _, c := range r.conns {
			c.Abort()
		}
		r.wg.Wait()
	}()
	r.run(func() bool { return r.m.State() == fsm.Open })
	for i := 0; i < n && !r.finished; i++ {
		if _, err := r.m.IngestRecord(r.now(), core.RecordJSON, []byte(strconv.Itoa(i))); err != nil {
			r.t.Errorf("ingest %d: %v", i, err)
			return
		}
		if r.lockstep {
			r.run(func() bool { return r.m.AckFloor() >= int64(i) })
		} else {
			r.run(func() bool { return true }) // send it
		}
	}
	_ = r.m.Close(r.now())
	r.run(func() bool { return false })
}

func TestCorePersistentExactlyOnceThroughFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 3})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 2, Times: 2})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultRepeatAcks, Times: 5})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Second, Times: 5})
		srv.Inject(memtransport.Match{Kind: core.Persistent}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 4})
		r := newMachineRun(t, srv.Transport(), core.Persistent)
		r.ingestAndClose(20)
		if err := r.m.Err(); err != nil || r.m.State() != fsm.Closed {
			t.Fatalf("state %s err %v", r.m.State(), err)
		}
		for o := range int64(20) {
			if r.completed[o] != 1 {
				t.Fatalf("offset %d completed %d times", o, r.completed[o])
			}
		}
		recs := srv.Records(r.m.StreamID())
		if len(recs) != 20 {
			t.Fatalf("%d records stored", len(recs))
		}
		for i, rec := range recs {
			if string(rec) != strconv.Itoa(i) {
				t.Fatalf("record %d is %q", i, rec)
			}
		}
		if st := srv.Stats(); st.Resumes < 2 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestCoreEphemeralAtLeastOnceThroughFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 3})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 2, Delay: time.Second})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultFailOpen, Code: core.CodeUnavailable})
		r := newMachineRun(t, srv.Transport(), core.Ephemeral)
		r.ingestAndClose(10)
		if err := r.m.Err(); err != nil || r.m.State() != fsm.Closed {
			t.Fatalf("state %s err %v", r.m.State(), err)
		}
		seen := map[string]bool{}
		for _, s := range srv.Streams() {
			for _, rec := range srv.Records(s.ID) {
				seen[string(rec)] = true
			}
		}
		for i := range 10 {
			if !seen[strconv.Itoa(i)] || r.completed[int64(i)] != 1 {
				t.Fatalf("record %d: stored %v, completed %d times", i, seen[strconv.Itoa(i)], r.completed[int64(i)])
			}
		}
	})
}

func TestCoreRejectsHostileServer(t *testing.T) {
	for _, tc := range []struct {
		f    memtransport.Fault
		rule core.Violation
	}{
		{memtransport.Fault{Kind: memtransport.FaultAckAboveSent, After: 2, Above: 10}, core.AckAboveSent},
		{memtransport.Fault{Kind: memtransport.FaultAckBelowFloor, After: 2}, core.AckBelowFloor},
		{memtransport.Fault{Kind: memtransport.FaultAckMissing}, core.AckMissing},
		{memtransport.Fault{Kind: memtransport.FaultStreamIDMissing}, core.StreamIDMissing},
		{memtransport.Fault{Kind: memtransport.FaultOpenResponseKind}, core.OpenResponseKind},
	} {
		t.Run(tc.f.Kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := memtransport.NewServer(memtransport.Options{})
				srv.Inject(memtransport.Match{}, tc.f)
				r := newMachineRun(t, srv.Transport(), core.Persistent)
				r.ingestAndClose(3)
				var pe *core.ProtocolError
				if !errors.As(r.m.Err(), &pe) || pe.Rule != tc.rule {
					t.Fatalf("err %v, want a %s violation", r.m.Err(), tc.rule)
				}
			})
		})
	}
}

func TestCoreRejectsHostileResumeWatermark(t *testing.T) {
	for _, tc := range []struct {
		name      string
		watermark int64
		rule      core.Violation
	}{
		{"above attempted", 50, core.WatermarkAboveAttempted},
		{"below floor", -1, core.WatermarkBelowFloor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := memtransport.NewServer(memtransport.Options{})
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDrop, After: 3})
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: tc.watermark})
				r := newMachineRun(t, srv.Transport(), core.Persistent)
				r.lockstep = true
				r.ingestAndClose(5)
				var pe *core.ProtocolError
				if !errors.As(r.m.Err(), &pe) || pe.Rule != tc.rule {
					t.Fatalf("err %v, want a %s violation", r.m.Err(), tc.rule)
				}
			})
		})
	}
}
