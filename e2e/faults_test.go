package e2e_test

// Section 8 scenarios that need a misbehaving server, through the
// reference server's fault injection, and exactly-once under repeated
// faults.

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestPersistentLostAckReconciled: the server commits offset 0 and drops
// the connection before acknowledging it; the client resumes, learns
// watermark 0 and completes offset 0 from it (reconciled) without sending
// it again: the server wrote it exactly once.
func TestPersistentLostAckReconciled(t *testing.T) {
	e := start(t)
	var acks ackLog
	s := e.createPersistent(t, acks.option())
	id := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 1})
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	waitFired(t, h)
	st := s.Stats()
	if st.Reconciled != 1 || st.Acknowledged != 0 || st.Reconnects != 1 || st.Resent != 0 {
		t.Fatalf("after the lost ack: %+v; want 1 reconciled, 0 acknowledged, 1 reconnect, 0 resent", st)
	}
	ingest(t, s, rec(0, 1))
	mustClose(t, s)
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)))
	if st := s.Stats(); st.Acknowledged != 1 || st.Reconciled != 1 {
		t.Fatalf("stats %+v", st)
	}
	acks.want(t, 2)
}

// TestPersistentLostAckWithoutRecovery: the same lost ack with recovery
// off fails the stream with the connection's error; Close still returns,
// and the committed-but-unacknowledged record stays in Unacked.
func TestPersistentLostAckWithoutRecovery(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t, zbstream.WithoutRecovery())
	id := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 1})
	ingest(t, s, rec(0, 0))
	waitFired(t, h)
	err := s.Close(ctx(t))
	wantCode(t, err, codes.Unavailable)
	if got := unackedOffsets(s); !slices.Equal(got, []int64{0}) {
		t.Fatalf("Unacked offsets %v, want [0]", got)
	}
	if st := s.Stats(); st.Reconnects != 0 || st.Failed != 1 {
		t.Fatalf("stats %+v", st)
	}
	e.wantStored(t, id, one(rec(0, 0)))
	// A new process learns that it landed.
	r := e.resume(t, id)
	if r.LastDurable() != 0 {
		t.Fatalf("resume: watermark %d, want 0", r.LastDurable())
	}
	mustClose(t, r)
}

// TestLostCreateResponseIdempotent: the server creates the stream and
// drops the call before answering; the retried create carries the same
// client_request_id and gets the same stream: one stream on the server.
func TestLostCreateResponseIdempotent(t *testing.T) {
	e := start(t)
	h := e.ts.Inject(server.Match{Table: e.table, Kind: server.KindPersistent}, server.Fault{Kind: server.FaultLoseOpenResponse})
	s := e.createPersistent(t)
	waitFired(t, h)
	ingest(t, s, rec(0, 0))
	mustClose(t, s)
	streams, err := e.ts.Streams(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 1 || streams[0].ID != s.StreamID() {
		t.Fatalf("server streams %+v, want only %s", streams, s.StreamID())
	}
	e.wantStored(t, s.StreamID(), one(rec(0, 0)))
}

// TestEphemeralResendAfterDrop: the server drops the connection after two
// requests (retryable); the client reconnects with a fresh create and
// resends everything unacknowledged, in order, under wire offsets from 0.
func TestEphemeralResendAfterDrop(t *testing.T) {
	e := start(t)
	var acks ackLog
	s := e.create(t, acks.option())
	first := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: first}, server.Fault{Kind: server.FaultDrop, After: 2})
	var all [][]byte
	for n := range 10 {
		all = append(all, rec(0, n))
	}
	ingest(t, s, all...)
	mustFlush(t, s)
	waitFired(t, h)
	second := s.StreamID()
	if second == first {
		t.Fatal("an ephemeral reconnect kept the stream id")
	}
	mustClose(t, s)
	a, b := e.stored(t, first), e.stored(t, second)
	if len(a) != 2 {
		t.Fatalf("first connection stored %s, want offsets 0 and 1", dump(a))
	}
	var got [][]byte
	for i, bt := range append(a, b...) {
		if i >= len(a) && bt.Offset != int64(i-len(a)) {
			t.Fatalf("second connection: wire offsets do not restart at 0: %s", dump(b))
		}
		got = append(got, bt.Records...)
	}
	if !equalRecords(got, all) {
		t.Fatalf("stored across connections %q, want %q", got, all)
	}
	if st := s.Stats(); st.Reconnects != 1 || st.Acknowledged != 10 {
		t.Fatalf("stats %+v", st)
	}
	acks.want(t, 10)
}

// TestAckTimeoutTriggersRecovery: the server holds an ack back longer than
// the lack-of-ack timeout; the client gives up on the connection,
// reconnects and delivers (ephemeral: possibly twice; persistent: once).
func TestAckTimeoutTriggersRecovery(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		name := map[bool]string{false: "ephemeral", true: "persistent"}[persistent]
		t.Run(name, func(t *testing.T) {
			e := start(t)
			opts := []zbstream.StreamOption{zbstream.WithOpenTimeout(5 * time.Second), zbstream.WithAckTimeout(200 * time.Millisecond), zbstream.WithCloseTimeout(20 * time.Second)}
			var s *zbstream.Stream
			if persistent {
				s = e.createPersistent(t, opts...)
			} else {
				s = e.create(t, opts...)
			}
			id := s.StreamID()
			h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDelayAcks, Delay: 5 * time.Second})
			ingest(t, s, rec(0, 0))
			mustFlush(t, s)
			waitFired(t, h)
			if st := s.Stats(); st.Reconnects < 1 {
				t.Fatalf("no reconnect after the ack timeout: %+v", st)
			}
			ingest(t, s, rec(0, 1))
			mustClose(t, s)
			if persistent {
				e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)))
			} else if got := e.stored(t, s.StreamID()); len(got) == 0 || !equalRecords(got[len(got)-1].Records, one(rec(0, 1))) {
				t.Fatalf("last connection stored %s", dump(got))
			}
		})
	}
}

// TestHostileAcks: an ack above anything sent, a regressive ack and an ack
// without its value fail the stream with a *ProtocolError, not retried;
// the unacknowledged records stay retrievable and Close returns.
func TestHostileAcks(t *testing.T) {
	for _, kind := range []server.FaultKind{server.FaultAckAboveSent, server.FaultAckBelowFloor, server.FaultAckMissing} {
		for _, persistent := range []bool{false, true} {
			name := kind.String() + map[bool]string{false: "/ephemeral", true: "/persistent"}[persistent]
			t.Run(name, func(t *testing.T) {
				e := start(t)
				var s *zbstream.Stream
				if persistent {
					s = e.createPersistent(t)
				} else {
					s = e.create(t)
				}
				id := s.StreamID()
				// A first ack, so that a regressive one is below the floor.
				ingest(t, s, rec(0, 0))
				mustFlush(t, s)
				h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: kind})
				ingest(t, s, rec(0, 1))
				waitFired(t, h)
				waitDone(t, s)
				err := s.Close(ctx(t))
				wantProtocol(t, err)
				if !errors.Is(s.Flush(ctx(t)), zbstream.ErrProtocol) {
					t.Fatalf("Flush after the violation: %v", s.Flush(ctx(t)))
				}
				if got := unackedOffsets(s); !slices.Equal(got, []int64{1}) {
					t.Fatalf("Unacked offsets %v, want [1]", got)
				}
				if st := s.Stats(); st.Reconnects != 0 || st.Acknowledged != 1 || st.Failed != 1 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

// TestDuplicateAcks: every ack sent three times changes nothing: each
// offset completes once, in order.
func TestDuplicateAcks(t *testing.T) {
	e := start(t)
	var acks ackLog
	s := e.createPersistent(t, acks.option())
	id := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultRepeatAcks, Repeat: 2, Times: server.Unlimited})
	defer h.Remove()
	var want [][][]byte
	for n := range 20 {
		ingest(t, s, rec(0, n))
		want = append(want, one(rec(0, n)))
	}
	mustClose(t, s)
	if h.Hits() == 0 {
		t.Fatal("no ack was repeated")
	}
	e.wantStored(t, id, want...)
	if st := s.Stats(); st.Acknowledged != 20 || st.Reconnects != 0 {
		t.Fatalf("stats %+v", st)
	}
	acks.want(t, 20)
}

// TestBadOpenResponses: a create answered without a stream id, or with a
// resume response, and a resume answered with a create response, are
// protocol errors: the open fails, without a retry.
func TestBadOpenResponses(t *testing.T) {
	e := start(t)
	for _, kind := range []server.FaultKind{server.FaultStreamIDMissing, server.FaultOpenResponseKind} {
		h := e.ts.Inject(server.Match{Table: e.table, Kind: server.KindPersistent}, server.Fault{Kind: kind, Times: server.Unlimited})
		_, err := e.client.CreatePersistentStream(ctx(t), e.table, fast()...)
		h.Remove()
		wantProtocol(t, err)
		if h.Hits() != 1 {
			t.Fatalf("%s: %d opens, want 1", kind, h.Hits())
		}
	}
	h := e.ts.Inject(server.Match{Table: e.table, Kind: server.KindEphemeral}, server.Fault{Kind: server.FaultOpenResponseKind, Times: server.Unlimited})
	_, err := e.client.CreateStream(ctx(t), e.table, fast()...)
	h.Remove()
	wantProtocol(t, err)

	s := e.createPersistent(t)
	id := s.StreamID()
	mustClose(t, s)
	h = e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultOpenResponseKind, Times: server.Unlimited})
	_, err = e.client.ResumeStream(ctx(t), e.table, id, fast()...)
	h.Remove()
	wantProtocol(t, err)
}

// TestHostileResumeWatermarks: after a reconnect, a resume watermark below
// what was acknowledged, above what was ever sent, or missing although
// offsets were acknowledged fails the stream closed: nothing reconciled,
// nothing resent. On a fresh-process resume a watermark of MaxInt64 fails
// with offset-space exhaustion.
func TestHostileResumeWatermarks(t *testing.T) {
	cases := []struct {
		name  string
		fault server.Fault
	}{
		{"below ack floor", server.Fault{Kind: server.FaultResumeWatermark, Watermark: 0}},
		{"above sent", server.Fault{Kind: server.FaultResumeWatermark, Watermark: 100}},
		{"max", server.Fault{Kind: server.FaultResumeWatermark, Watermark: math.MaxInt64}},
		{"missing", server.Fault{Kind: server.FaultResumeWithoutWatermark}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			s := e.createPersistent(t)
			id := s.StreamID()
			ingest(t, s, rec(0, 0), rec(0, 1), rec(0, 2))
			mustFlush(t, s) // ack floor 2
			hw := e.ts.Inject(server.Match{StreamID: id}, tc.fault)
			// Offset 3 is committed and acknowledged, then the call drops.
			hd := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDrop, After: 1})
			ingest(t, s, rec(0, 3))
			waitFired(t, hd)
			ingest(t, s, rec(0, 4))
			waitFired(t, hw)
			waitDone(t, s)
			err := s.Close(ctx(t))
			if tc.name == "max" {
				// The overflow check comes first: W+1 does not exist.
				if !errors.Is(err, zbstream.ErrOffsetSpaceExhausted) {
					t.Fatalf("Close: %v, want ErrOffsetSpaceExhausted", err)
				}
			} else {
				wantProtocol(t, err)
			}
			st := s.Stats()
			if st.Reconciled != 0 || st.Resent != 0 {
				t.Fatalf("a rejected watermark reconciled or resent: %+v", st)
			}
			if got := unackedOffsets(s); len(got) == 0 || got[len(got)-1] != 4 {
				t.Fatalf("Unacked offsets %v, want ... 4", got)
			}
			e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)), one(rec(0, 2)), one(rec(0, 3)))
		})
	}
	t.Run("fresh process MaxInt64", func(t *testing.T) {
		e := start(t)
		s := e.createPersistent(t)
		id := s.StreamID()
		mustClose(t, s)
		e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultResumeWatermark, Watermark: math.MaxInt64})
		_, err := e.client.ResumeStream(ctx(t), e.table, id, fast()...)
		if !errors.Is(err, zbstream.ErrOffsetSpaceExhausted) {
			t.Fatalf("resume at watermark MaxInt64: %v, want ErrOffsetSpaceExhausted", err)
		}
	})
	t.Run("fresh process watermark -5", func(t *testing.T) {
		e := start(t)
		s := e.createPersistent(t)
		id := s.StreamID()
		mustClose(t, s)
		e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultResumeWatermark, Watermark: -5})
		_, err := e.client.ResumeStream(ctx(t), e.table, id, fast()...)
		wantProtocol(t, err)
	})
}

// TestEphemeralCloseSignal: the server asks the client to leave while two
// calls are in flight with their acks held back 500 ms. The client stops
// sending and drains acks for min(signal duration, MaxGrace), or until
// nothing is in flight, then reconnects with a fresh create. When the
// grace ends before the held acks arrive (duration 0 or short, MaxGrace 0
// or short) the two calls are resent on the new connection; when it is
// long, the client takes the acks on the old connection, leaves early and
// resends nothing. Records ingested during the pause land too. Ephemeral is at-least-once: every record is stored at least
// once, each connection's in order.
func TestEphemeralCloseSignal(t *testing.T) {
	cases := []struct {
		name       string
		duration   time.Duration // announced by the signal
		maxGrace   time.Duration
		wantResend bool
	}{
		{"duration shorter than max grace", 20 * time.Millisecond, time.Minute, true},
		{"duration 0", 0, time.Minute, true},
		{"max grace 0", 10 * time.Second, 0, true},
		{"max grace shorter", 10 * time.Second, 20 * time.Millisecond, true},
		{"early exit when all acked", 10 * time.Second, time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := start(t)
			s := e.create(t, zbstream.WithMaxGrace(tc.maxGrace))
			first := s.StreamID()
			hd := e.ts.Inject(server.Match{StreamID: first}, server.Fault{Kind: server.FaultDelayAcks, Delay: time.Second, Times: server.Unlimited})
			h := e.ts.Inject(server.Match{StreamID: first}, server.Fault{Kind: server.FaultCloseSignal, After: 1, Delay: tc.duration})
			var all [][]byte
			for n := range 6 {
				all = append(all, rec(0, n))
			}
			// 0 triggers the signal, sent behind 0's held-back ack, a second
			// after 0. 1 and 2, ingested 400 ms after 0, are in flight when
			// it comes, and their acks are due 400 ms after it: past a short
			// grace, within a long one, with room for a slow machine.
			ingest(t, s, all[0])
			waitFired(t, h)
			time.Sleep(400 * time.Millisecond)
			ingest(t, s, all[1:3]...)
			// The server holds back the next ack once the signal is out:
			// the client is (about to be) in its pause. Where these three
			// go is not checked: only that they land.
			eventually(t, func() bool { return hd.Hits() >= 2 || s.Stats().Reconnects > 0 })
			ingest(t, s, all[3:]...)
			mustFlush(t, s)
			mustClose(t, s)
			last := s.StreamID()
			st := s.Stats()
			if st.Reconnects < 1 {
				t.Fatalf("no reconnect after the close signal: %+v", st)
			}
			if tc.wantResend && st.Resent < 2 {
				t.Fatalf("the calls in flight at the end of the grace were not resent: %+v", st)
			}
			if !tc.wantResend && st.Resent != 0 {
				t.Fatalf("calls acknowledged during the grace were resent: %+v", st)
			}
			if got := e.stored(t, first); !tc.wantResend && (len(got) < 3 || !equalRecords(got[2].Records, one(all[2]))) {
				t.Fatalf("old connection stored %s, want 0, 1 and 2 (acknowledged during the grace)", dump(got))
			}
			checkAtLeastOnce(t, e, all, first, last)
		})
	}
}

// checkAtLeastOnce checks that the streams of the table hold every record
// of want at least once, and that each stream holds a contiguous,
// in-order run of want (what one connection sent).
func checkAtLeastOnce(t *testing.T, e *env, want [][]byte, ids ...string) {
	t.Helper()
	seen := make([]int, len(want))
	index := map[string]int{}
	for i, r := range want {
		index[string(r)] = i
	}
	streams, err := e.ts.Streams(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range streams {
		prev := -1
		for _, b := range e.stored(t, m.ID) {
			for _, r := range b.Records {
				i, ok := index[string(r)]
				if !ok {
					t.Fatalf("stream %s holds an unknown record %q", m.ID, r)
				}
				if prev >= 0 && i != prev+1 {
					t.Fatalf("stream %s: record %q after %q: out of order", m.ID, r, want[prev])
				}
				prev = i
				seen[i]++
			}
		}
	}
	for i, n := range seen {
		if n == 0 {
			t.Fatalf("record %q was never stored (streams %v)", want[i], ids)
		}
	}
}

// TestPersistentCloseSignal: on a persistent stream a close signal means
// resume at once; it does not use up the retry budget (Retries 0 here),
// and every record is stored exactly once.
func TestPersistentCloseSignal(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t, zbstream.WithRetries(0), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	id := s.StreamID()
	var want [][][]byte
	for round := range 3 {
		h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCloseSignal, After: 2, Delay: time.Minute})
		for n := range 4 {
			r := rec(round, n)
			ingest(t, s, r)
			want = append(want, one(r))
		}
		waitFired(t, h)
		mustFlush(t, s)
	}
	mustClose(t, s)
	if st := s.Stats(); st.Reconnects < 3 {
		t.Fatalf("stats %+v: want a resume per signal", st)
	}
	e.wantStored(t, id, want...)
}

// TestSessionRotation: the server rotates every session after 30 ms with
// a 10 ms grace while two streams ingest; the ephemeral one delivers every
// record at least once, the persistent one exactly once.
func TestSessionRotation(t *testing.T) {
	e := start(t, servertest.WithOptions(func(o *server.Options) {
		o.SessionAge, o.CloseGrace = 30*time.Millisecond, 10*time.Millisecond
	}))
	es := e.create(t, zbstream.WithMaxGrace(time.Second))
	ps := e.createPersistent(t, zbstream.WithRetries(0), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: time.Millisecond}))
	var all [][]byte
	var want [][][]byte
	for n := 0; n < 300 || es.Stats().Reconnects < 3 || ps.Stats().Reconnects < 3; n++ {
		r := rec(0, n)
		ingest(t, es, r)
		ingest(t, ps, r)
		all = append(all, r)
		want = append(want, one(r))
		if n%50 == 49 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	pid := ps.StreamID()
	mustClose(t, es)
	mustClose(t, ps)
	e.wantStored(t, pid, want...)
	// The ephemeral streams: every record at least once, each in order.
	// (The persistent stream is checked above and holds each record once.)
	seen := map[string]bool{}
	streams, err := e.ts.Streams(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range streams {
		if m.Kind != server.KindEphemeral {
			continue
		}
		prev := -1
		for _, b := range e.stored(t, m.ID) {
			_, n := parse(t, b.Records[0])
			if prev >= 0 && n != prev+1 {
				t.Fatalf("ephemeral stream %s: record %d after %d", m.ID, n, prev)
			}
			prev = n
			seen[string(b.Records[0])] = true
		}
	}
	for _, r := range all {
		if !seen[string(r)] {
			t.Fatalf("ephemeral record %s never stored", r)
		}
	}
}

// TestExactlyOnceUnderFaults: 5,000 records from four producers, in random
// batches, through one persistent stream while the server keeps dropping
// connections, losing acks after commits, failing with retryable codes
// and rotating sessions. The server's stored data holds every record
// exactly once, each producer's in order, under dense offsets; every
// offset completes once, in order.
//
// Each producer reuses one slice and one set of buffers for all its calls
// and scribbles over them as soon as a call returns: the stream's copies
// must be what reaches the server, first time and resent.
func TestExactlyOnceUnderFaults(t *testing.T) {
	// minFaults must act for the run to mean anything; the producers keep
	// pace with a few more (paceFaults over the run).
	const producers, perProducer, minFaults, paceFaults = 4, 1250, 10, 12
	e := start(t)
	var acks ackLog
	s := e.createPersistent(t,
		zbstream.WithRetries(50), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond}),
		acks.option())
	id := s.StreamID()

	stop := make(chan struct{})
	var injected atomic.Int64
	var fg sync.WaitGroup
	fg.Add(1)
	go func() { // the fault injector
		defer fg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		kinds := []server.Fault{
			{Kind: server.FaultDrop},
			{Kind: server.FaultCommitThenDrop},
			{Kind: server.FaultDrop, Code: codes.Internal},
			{Kind: server.FaultDrop, Code: codes.Aborted},
			{Kind: server.FaultCloseSignal, Delay: 5 * time.Millisecond},
			{Kind: server.FaultLoseOpenResponse},
		}
		for {
			f := kinds[rng.IntN(len(kinds))]
			f.After = rng.IntN(20)
			if f.Kind == server.FaultLoseOpenResponse {
				// Acts on the next resume: make one happen.
				e.ts.Inject(server.Match{StreamID: id}, f)
				f = server.Fault{Kind: server.FaultDrop, After: f.After}
			}
			h := e.ts.Inject(server.Match{StreamID: id}, f)
			select {
			case <-h.Fired():
				injected.Add(1)
			case <-stop:
				h.Remove()
				return
			}
			select {
			case <-time.After(time.Duration(rng.IntN(5)) * time.Millisecond):
			case <-stop:
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			var buf [][]byte // one slice and set of buffers for every call: the stream copies
			for n := 0; n < perProducer; {
				k := min(1+rng.IntN(20), perProducer-n)
				buf = refill(buf, recs(p, n, k))
				var err error
				if k == 1 {
					_, err = s.IngestRecord(ctx(t), buf[0])
				} else {
					_, err = s.IngestBatch(ctx(t), buf)
				}
				if err != nil {
					t.Errorf("producer %d: ingest %d: %v", p, n, err)
					return
				}
				scribble(buf) // what the stream kept must not be these buffers
				n += k
				// Let the faults keep up: now and then, and on every call
				// while fewer have acted than this producer's progress
				// calls for. A fault acts only on traffic, so the calls go
				// on, slower, rather than wait for it: however fast the
				// machine, the run lasts until they have acted.
				if rng.IntN(4) == 0 || injected.Load()*perProducer < int64(paceFaults*n) {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	err := s.Flush(ctx(t))
	close(stop)
	fg.Wait()
	if err != nil {
		t.Fatalf("Flush: %v (stats %+v)", err, s.Stats())
	}
	mustClose(t, s)
	st := s.Stats()
	t.Logf("%d faults acted; stats %+v", injected.Load(), st)
	checkStats(t, s)
	if injected.Load() < minFaults {
		t.Errorf("only %d faults acted", injected.Load())
	}

	stored := e.stored(t, id)
	next := make([]int, producers)
	for i, b := range stored {
		if b.Offset != int64(i) {
			t.Fatalf("stored batch %d has offset %d: offsets not dense", i, b.Offset)
		}
		for _, r := range b.Records {
			p, n := parse(t, r)
			if n != next[p] {
				t.Fatalf("offset %d: producer %d record %d, want %d (duplicate or gap)", b.Offset, p, n, next[p])
			}
			next[p]++
		}
	}
	for p, n := range next {
		if n != perProducer {
			t.Fatalf("producer %d: %d records stored, want %d", p, n, perProducer)
		}
	}
	if int64(len(stored)) != st.Accepted || st.Acknowledged+st.Reconciled != st.Accepted || st.Failed != 0 {
		t.Fatalf("%d batches stored; stats %+v", len(stored), st)
	}
	acks.want(t, st.Accepted)
}

// refill copies src into dst's buffers, reusing them, and returns dst
// resliced to len(src).
func refill(dst, src [][]byte) [][]byte {
	for len(dst) < len(src) {
		dst = append(dst, nil)
	}
	dst = dst[:len(src)]
	for i, r := range src {
		dst[i] = append(dst[i][:0], r...)
	}
	return dst
}

// scribble overwrites every byte of records.
func scribble(records [][]byte) {
	for _, r := range records {
		for i := range r {
			r[i] = 'X'
		}
	}
}

// TestEphemeralAtLeastOnceUnderFaults: 1,000 records through an ephemeral
// stream while the server keeps dropping its connections (each reconnect
// is a new server stream); every record is stored at least once, each
// connection's records in order, and every offset completes once.
func TestEphemeralAtLeastOnceUnderFaults(t *testing.T) {
	const total = 1000
	e := start(t)
	var acks ackLog
	s := e.create(t,
		zbstream.WithRetries(50), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond}),
		zbstream.WithMaxGrace(5*time.Millisecond),
		acks.option())
	stop := make(chan struct{})
	var fg sync.WaitGroup
	var injected atomic.Int64
	fg.Add(1)
	go func() {
		defer fg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		kinds := []server.FaultKind{server.FaultDrop, server.FaultCommitThenDrop, server.FaultCloseSignal}
		for {
			// Ephemeral ids change on every connection: match by table.
			h := e.ts.Inject(server.Match{Table: e.table, Kind: server.KindEphemeral},
				server.Fault{Kind: kinds[rng.IntN(len(kinds))], After: 1 + rng.IntN(30), Delay: 2 * time.Millisecond})
			select {
			case <-h.Fired():
				injected.Add(1)
			case <-stop:
				h.Remove()
				return
			}
		}
	}()
	var all [][]byte
	for n := range total {
		r := rec(0, n)
		all = append(all, r)
		if _, err := s.IngestRecord(ctx(t), r); err != nil {
			t.Fatalf("ingest %d: %v", n, err)
		}
		if n%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	err := s.Flush(ctx(t))
	close(stop)
	fg.Wait()
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	mustClose(t, s)
	t.Logf("%d faults acted; stats %+v", injected.Load(), s.Stats())
	checkStats(t, s)
	if injected.Load() < 5 {
		t.Errorf("only %d faults acted", injected.Load())
	}
	checkAtLeastOnce(t, e, all)
	acks.want(t, total)
}

// TestStatsResentNotAboveSent: Stats documents Sent as the calls written
// to a connection, resends included, and Resent as how many of them were
// sent again after a reconnect, so Resent <= Sent, and Sent - Resent (the
// offsets written at least once) is at most Accepted. Under repeated drops
// of an ephemeral stream the driver used to count far more resends than
// sends: Resent was counted when a call was handed to a connection, Sent
// when its write was reported (fixed in io/conn.go, countSent).
func TestStatsResentNotAboveSent(t *testing.T) {
	e := start(t)
	s := e.create(t, zbstream.WithRetries(50), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}))
	stop := make(chan struct{})
	var fg sync.WaitGroup
	fg.Add(1)
	go func() {
		defer fg.Done()
		for n := 0; ; n++ {
			h := e.ts.Inject(server.Match{Table: e.table, Kind: server.KindEphemeral}, server.Fault{Kind: server.FaultDrop, After: 5 + n%10})
			select {
			case <-h.Fired():
			case <-stop:
				h.Remove()
				return
			}
		}
	}()
	for n := range 300 {
		ingest(t, s, rec(0, n))
		if n%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	err := s.Flush(ctx(t))
	close(stop)
	fg.Wait()
	if err != nil {
		t.Fatalf("Flush: %v", err)
	}
	mustClose(t, s)
	st := s.Stats()
	if st.Reconnects == 0 {
		t.Fatalf("no fault acted: %+v", st)
	}
	if st.Resent > st.Sent || st.Sent-st.Resent > st.Accepted {
		t.Errorf("Stats.Resent %d, Stats.Sent %d, %d accepted: %+v", st.Resent, st.Sent, st.Accepted, st)
	}
}
