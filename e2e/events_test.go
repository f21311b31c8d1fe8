package e2e_test

// The EventObserver end to end: every event names its table and stream and
// carries what a metrics adapter needs, through the reference server's
// faults.

import (
	"sync"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/server"
)

// eventLog keeps every event an EventObserver is given, and counts calls
// of the plain Observer methods, which it must not be given.
type eventLog struct {
	mu     sync.Mutex
	events []zbstream.Event
	legacy int
}

func (l *eventLog) Observe(e zbstream.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) Accepted(int, int64)    { l.legacyCall() }
func (l *eventLog) Completed(int64, bool)  { l.legacyCall() }
func (l *eventLog) Failed(int64)           { l.legacyCall() }
func (l *eventLog) Connected(bool)         { l.legacyCall() }
func (l *eventLog) Disconnected(core.Code) { l.legacyCall() }
func (l *eventLog) legacyCall()            { l.mu.Lock(); l.legacy++; l.mu.Unlock() }

// of returns the events of kind k.
func (l *eventLog) of(k zbstream.EventKind) []zbstream.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []zbstream.Event
	for _, e := range l.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// observed starts a reference server and a client reporting to a new
// eventLog.
func observed(t *testing.T) (*env, *eventLog) {
	t.Helper()
	e := start(t)
	log := &eventLog{}
	c, err := zbstream.NewClient("http://"+e.ts.Addr, zbstream.WithToken(e.ts.Token), zbstream.WithObserver(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.client = c
	return e, log
}

// sum totals f over events.
func sum(events []zbstream.Event, f func(zbstream.Event) int64) int64 {
	var n int64
	for _, e := range events {
		n += f(e)
	}
	return n
}

func records(e zbstream.Event) int64 { return int64(e.Records) }

// TestEventsPersistentReconnect: through a lost ack reconciled on resume,
// the events match Stats call for call, name the table, the stream and its
// kind, carry each call's records, bytes and latency, tell the reconnect
// with its cause, and leave the window empty at the end; the plain
// Observer methods are not called.
func TestEventsPersistentReconnect(t *testing.T) {
	e, log := observed(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	ingest(t, s, rec(0, 0))
	if _, err := s.IngestBatch(ctx(t), recs(0, 1, 3)); err != nil {
		t.Fatal(err)
	}
	waitFired(t, h)
	mustFlush(t, s)
	ingest(t, s, rec(0, 4))
	mustClose(t, s)
	st := s.Stats()

	log.mu.Lock()
	all, legacy := append([]zbstream.Event(nil), log.events...), log.legacy
	log.mu.Unlock()
	if legacy != 0 {
		t.Errorf("an EventObserver was given %d plain Observer calls", legacy)
	}
	for i, ev := range all {
		if i == 0 && ev.StreamID == "" {
			ev.StreamID = id // the first connection opens before the server names the stream
		}
		if ev.Table != e.table || ev.StreamID != id || ev.StreamKind != zbstream.Persistent || ev.RecordType != zbstream.RecordJSON {
			t.Fatalf("event %+v does not name table %s, stream %s, persistent JSON", ev, e.table, id)
		}
	}
	if all[0].Kind != zbstream.EventConnected || all[1].Kind != zbstream.EventOpened || all[len(all)-1].Kind != zbstream.EventClosed {
		t.Errorf("events start %s, %s and end %s; want connected, opened ... closed", all[0].Kind, all[1].Kind, all[len(all)-1].Kind)
	}
	if last := all[len(all)-1]; last.Err != nil || last.InFlightCalls != 0 || last.InFlightBytes != 0 {
		t.Errorf("closed event %+v: want no error and an empty window", last)
	}

	accepted, durable := log.of(zbstream.EventAccepted), log.of(zbstream.EventDurable)
	wantSizes := []int{1, 3, 1}
	if len(accepted) != len(wantSizes) || int64(len(accepted)) != st.Accepted || sum(accepted, records) != st.Records {
		t.Fatalf("accepted events %+v, stats %+v", accepted, st)
	}
	for i, ev := range accepted {
		if ev.Offset != int64(i) || ev.Records != wantSizes[i] || ev.Bytes != int64(wantSizes[i]*len(rec(0, 0))) || ev.InFlightCalls < 1 {
			t.Errorf("accepted event %d: %+v", i, ev)
		}
	}
	if int64(len(durable)) != st.Acknowledged+st.Reconciled || sum(durable, records) != st.Records {
		t.Fatalf("durable events %+v, stats %+v", durable, st)
	}
	var reconciled int64
	for i, ev := range durable {
		if ev.Offset != int64(i) || ev.Records != wantSizes[i] || ev.Latency <= 0 {
			t.Errorf("durable event %d: %+v (want its offset, records and a latency)", i, ev)
		}
		if ev.Reconciled {
			reconciled++
		}
	}
	if reconciled != st.Reconciled || reconciled == 0 {
		t.Errorf("%d reconciled durable events, stats %+v: want as many as reconciled, at least 1", reconciled, st)
	}

	reconnects := log.of(zbstream.EventReconnecting)
	if int64(len(reconnects)) != st.Reconnects || len(reconnects) == 0 || reconnects[0].Code != core.CodeUnavailable {
		t.Errorf("reconnecting events %+v, stats %+v: want one per reconnect, the first caused by UNAVAILABLE", reconnects, st)
	}
	connected := log.of(zbstream.EventConnected)
	if int64(len(connected)) != st.Opens || connected[0].Resumed || !connected[len(connected)-1].Resumed {
		t.Errorf("connected events %+v: want the first a create, the others resumes", connected)
	}
	disconnected := log.of(zbstream.EventDisconnected)
	if len(disconnected) != len(connected) || disconnected[0].Code != core.CodeUnavailable {
		t.Errorf("disconnected events %+v: want one per connection, the first UNAVAILABLE", disconnected)
	}
}

// TestEventsEphemeralResend: an ephemeral stream whose acks are lost
// resends the unacknowledged calls on a new server stream: a resent event
// for each, with the call's offset, records and bytes, and the events after
// the reconnect name the new stream id.
func TestEventsEphemeralResend(t *testing.T) {
	e, log := observed(t)
	s := e.create(t)
	first := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: first}, server.Fault{Kind: server.FaultCommitThenDrop, After: 3})
	ingest(t, s, rec(0, 0), rec(0, 1))
	if _, err := s.IngestBatch(ctx(t), recs(0, 2, 2)); err != nil {
		t.Fatal(err)
	}
	waitFired(t, h)
	mustFlush(t, s)
	second := s.StreamID()
	mustClose(t, s)
	st := s.Stats()

	// Which calls were acknowledged before the drop depends on timing; the
	// last one (the batch) was not, and is resent.
	resent := log.of(zbstream.EventResent)
	if len(resent) == 0 || int64(len(resent)) != st.Resent {
		t.Fatalf("resent events %+v, stats %+v: want one per resent call", resent, st)
	}
	sizes := []int{1, 1, 2}
	for i, ev := range resent {
		o := ev.Offset
		if o != int64(3-len(resent)+i) || ev.Records != sizes[o] || ev.Bytes != int64(sizes[o]*len(rec(0, 0))) || ev.StreamKind != zbstream.Ephemeral {
			t.Errorf("resent event %d: %+v: want the last calls in order, with their records and bytes", i, ev)
		}
	}
	durable := log.of(zbstream.EventDurable)
	if len(durable) != 3 {
		t.Fatalf("durable events %+v, want 3", durable)
	}
	for _, ev := range durable {
		want := first
		if ev.Offset >= resent[0].Offset {
			want = second // acknowledged on the new server stream
		}
		if ev.StreamID != want || first == second || ev.Reconciled {
			t.Errorf("durable event %+v: want stream %s, not reconciled", ev, want)
		}
	}
}

// TestEventsFailed: a stream that fails with calls in flight reports each
// as failed, with its records, latency and the stream's error, and ends
// with a closed event carrying the error.
func TestEventsFailed(t *testing.T) {
	e, log := observed(t)
	s := e.createPersistent(t, zbstream.WithoutRecovery())
	h := e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	ingest(t, s, rec(0, 0))
	if _, err := s.IngestBatch(ctx(t), recs(0, 1, 2)); err != nil {
		t.Fatal(err)
	}
	waitFired(t, h)
	waitDone(t, s)
	if err := s.Close(ctx(t)); err == nil {
		t.Fatal("Close of a failed stream: no error")
	}
	failed := log.of(zbstream.EventFailed)
	// The first call may have been acknowledged before the drop; the
	// batch was not.
	if n := len(failed); n == 0 || int64(n) != s.Stats().Failed || failed[n-1].Offset != 1 || failed[n-1].Records != 2 || n == 2 && failed[0].Records != 1 {
		t.Fatalf("failed events %+v, stats %+v", failed, s.Stats())
	}
	for _, ev := range failed {
		if ev.Err == nil || ev.Code != core.CodeUnavailable || ev.Latency <= 0 {
			t.Errorf("failed event %+v: want the stream's error and a latency", ev)
		}
	}
	closed := log.of(zbstream.EventClosed)
	if len(closed) != 1 || closed[0].Err == nil || closed[0].Code != core.CodeUnavailable {
		t.Errorf("closed events %+v, want one with the stream's error", closed)
	}
}

// TestEventsCallbackQueue: events carry the depth of the callback queue:
// with the first OnAck held, the durable event of the third call counts
// all three offsets waiting for their callback.
func TestEventsCallbackQueue(t *testing.T) {
	e, log := observed(t)
	release := make(chan struct{})
	s := e.create(t, zbstream.WithOnAck(func(int64) { <-release }))
	defer close(release)
	for n := range 3 {
		off := ingest(t, s, rec(0, n))[0]
		if err := s.Wait(ctx(t), off); err != nil {
			t.Fatal(err)
		}
	}
	durable := log.of(zbstream.EventDurable)
	if len(durable) != 3 || durable[2].CallbackQueue != 3 {
		t.Fatalf("durable events %+v: want 3, the last with 3 callbacks queued", durable)
	}
}
