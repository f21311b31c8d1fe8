package e2e_test

// Recovery that gives up, a record the server refuses, a client closed
// under its streams, and the application's replay from a resume watermark
// in a new stream object (the in-process analogue of a process restart).

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestPersistentRecoveryExhausted: the server commits offset 1 and drops
// the call without acknowledging it, then refuses every resume
// (UNAVAILABLE). Recovery gives up after its budget with a *RetryError;
// offset 1 stays in Unacked (nothing was reconciled), Close returns the
// error, and a later resume learns that offset 1 landed.
func TestPersistentRecoveryExhausted(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t, zbstream.WithRetries(2), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}))
	id := s.StreamID()
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	hf := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultFailOpen, Times: server.Unlimited})
	hd := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop})
	ingest(t, s, rec(0, 1))
	waitFired(t, hd)
	waitDone(t, s)
	hf.Remove()
	err := s.Close(ctx(t))
	var re *zbstream.RetryError
	if !errors.As(err, &re) || !errors.Is(err, zbstream.ErrRetriesExhausted) {
		t.Fatalf("Close: %v, want a *RetryError", err)
	}
	wantCode(t, err, codes.Unavailable)
	if hf.Hits() != 2 {
		t.Fatalf("%d resumes reached the server, want 2", hf.Hits())
	}
	if got := unackedOffsets(s); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Unacked offsets %v, want [1]", got)
	}
	if err := s.Wait(ctx(t), 1); !errors.Is(err, zbstream.ErrStreamFailed) {
		t.Fatalf("Wait(1): %v", err)
	}
	r := e.resume(t, id)
	if r.LastDurable() != 1 {
		t.Fatalf("resume: watermark %d, want 1", r.LastDurable())
	}
	mustClose(t, r)
	e.wantStored(t, id, one(rec(0, 0)), one(rec(0, 1)))
}

// TestServerRefusesRecord: a record the server cannot accept (not a JSON
// object, sent with the untyped IngestRecord) ends the call with
// INVALID_ARGUMENT, which is not retried: the stream fails, the records
// before it are stored, it and the ones accepted after it stay in Unacked.
func TestServerRefusesRecord(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t)
	id := s.StreamID()
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	ingest(t, s, []byte("not json"))
	// The refusal may reach the client before its next ingest (CI saw it
	// under load: nothing else is in flight, so the caller writes offset 1
	// itself): then the failed stream refuses the record, which is as
	// right. Either way, what it accepted stays in Unacked.
	want := []int64{1}
	switch off, err := s.IngestRecord(ctx(t), rec(0, 2)); {
	case err == nil && off == 2:
		want = append(want, 2)
	case err == nil || !errors.Is(err, zbstream.ErrStreamFailed):
		t.Fatalf("IngestRecord after the refused record: offset %d, %v; want 2, or ErrStreamFailed", off, err)
	}
	waitDone(t, s)
	err := s.Close(ctx(t))
	wantCode(t, err, codes.InvalidArgument)
	if got := unackedOffsets(s); !slices.Equal(got, want) {
		t.Fatalf("Unacked offsets %v, want %v", got, want)
	}
	if st := s.Stats(); st.Reconnects != 0 {
		t.Fatalf("INVALID_ARGUMENT was retried: %+v", st)
	}
	e.wantStored(t, id, one(rec(0, 0)))
}

// TestServerMessageLimit: a call within the client's per-call limit but
// over the server's message limit is refused by the server with
// INVALID_ARGUMENT and fails the stream, without a retry. (Over 9/8 of the
// server's limit gRPC refuses the message unread, with RESOURCE_EXHAUSTED:
// the server takes that much of its receive budget before reading one.)
func TestServerMessageLimit(t *testing.T) {
	e := start(t, withMaxMessage(4096))
	s := e.create(t)
	big := make([]byte, 4300)
	copy(big, `{"pad":"`)
	for i := 8; i < len(big)-2; i++ {
		big[i] = 'x'
	}
	copy(big[len(big)-2:], `"}`)
	ingest(t, s, big)
	wantCode(t, s.Close(ctx(t)), codes.InvalidArgument)
	if got := unackedOffsets(s); !slices.Equal(got, []int64{0}) {
		t.Fatalf("Unacked offsets %v, want [0]", got)
	}
}

// TestClientCloseEndsStreams: closing the client under an open stream
// ends the stream (it fails: its connection is gone) and leaves nothing
// running; the stream's Close returns.
func TestClientCloseEndsStreams(t *testing.T) {
	e := start(t)
	s, err := e.client.CreatePersistentStream(ctx(t), e.table, fast(zbstream.WithRetries(1), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}))...)
	if err != nil {
		t.Fatal(err)
	}
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	if err := e.client.Close(); err != nil {
		t.Fatalf("client Close: %v", err)
	}
	waitDone(t, s)
	if err := s.Close(ctx(t)); err == nil {
		t.Fatal("Close of a stream whose client was closed: nil error")
	}
	e.wantStored(t, s.StreamID(), one(rec(0, 0)))
}

// TestResumeReplayFromWatermark: a writer without recovery fails after
// the server committed part of what it sent (the ack of the last commit
// lost); a new stream object resumes by id, learns the watermark W,
// continues at W+1, and the application replays its source from W+1. The
// server ends with every record exactly once, in order.
func TestResumeReplayFromWatermark(t *testing.T) {
	e := start(t)
	var source [][]byte
	for n := range 40 {
		source = append(source, rec(0, n))
	}
	s := e.createPersistent(t, zbstream.WithoutRecovery())
	id := s.StreamID()
	h := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 15})
	for _, r := range source[:30] {
		if _, err := s.IngestRecord(ctx(t), r); err != nil {
			break // the stream failed under us
		}
	}
	waitFired(t, h)
	waitDone(t, s)
	wantCode(t, s.Close(ctx(t)), codes.Unavailable)
	left := unackedOffsets(s)

	r := e.resume(t, id)
	w := r.LastDurable()
	if w < 14 || w >= 30 {
		t.Fatalf("resume watermark %d, want 14 <= W < 30", w)
	}
	if len(left) == 0 || left[0] > w+1 {
		t.Fatalf("the failed writer's Unacked %v leaves a gap after W=%d", left, w)
	}
	for _, rc := range source[w+1:] {
		off, err := r.IngestRecord(ctx(t), rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, n := parse(t, rc); off != int64(n) {
			t.Fatalf("replayed record %d got offset %d", n, off)
		}
	}
	mustClose(t, r)
	want := make([][][]byte, len(source))
	for i, rc := range source {
		want[i] = one(rc)
	}
	e.wantStored(t, id, want...)
}

// TestIdleStreamKeepsConnection: the lack-of-ack timer runs only while
// something is in flight: a stream idle for many ack timeouts keeps its
// connection.
func TestIdleStreamKeepsConnection(t *testing.T) {
	e := start(t)
	for _, s := range []*zbstream.Stream{
		e.create(t, zbstream.WithAckTimeout(20*time.Millisecond)),
		e.createPersistent(t, zbstream.WithAckTimeout(20*time.Millisecond)),
	} {
		ingest(t, s, rec(0, 0))
		mustFlush(t, s)
		time.Sleep(200 * time.Millisecond)
		ingest(t, s, rec(0, 1))
		mustClose(t, s)
		if st := s.Stats(); st.Reconnects != 0 {
			t.Fatalf("%s stream reconnected while idle: %+v", s.Kind(), st)
		}
		e.wantStored(t, s.StreamID(), one(rec(0, 0)), one(rec(0, 1)))
	}
}

// TestResumeWrongTable: resuming a stream under a table header that is
// not the stream's is INVALID_ARGUMENT, even for a principal that may
// write both tables.
func TestResumeWrongTable(t *testing.T) {
	e := start(t, servertest.Open())
	s := e.createPersistent(t)
	mustClose(t, s)
	_, err := e.client.ResumeStream(ctx(t), "main.other.events", s.StreamID(), fast()...)
	wantCode(t, err, codes.InvalidArgument)
	err = e.client.RetireStream(ctx(t), "main.other.events", s.StreamID())
	if code := statusCode(err); code != codes.InvalidArgument {
		t.Fatalf("RetireStream under another table: %v, want INVALID_ARGUMENT", err)
	}
}

// TestCloseBounded: a Close that cannot make everything durable in time
// (acks held back by the server) returns: with ErrCloseTimeout after the
// close timeout, or with its context's error when the context ends first;
// the records stay in Unacked and nothing is left running (goleak).
func TestCloseBounded(t *testing.T) {
	e := start(t)
	t.Run("close timeout", func(t *testing.T) {
		s := e.createPersistent(t, zbstream.WithCloseTimeout(100*time.Millisecond))
		e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDelayAcks, Delay: 10 * time.Second})
		ingest(t, s, rec(0, 0))
		err := s.Close(ctx(t))
		if !errors.Is(err, zbstream.ErrCloseTimeout) {
			t.Fatalf("Close: %v, want ErrCloseTimeout", err)
		}
		if got := unackedOffsets(s); !slices.Equal(got, []int64{0}) {
			t.Fatalf("Unacked offsets %v, want [0]", got)
		}
	})
	t.Run("context", func(t *testing.T) {
		s := e.create(t)
		e.ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: server.FaultDelayAcks, Delay: 10 * time.Second})
		ingest(t, s, rec(0, 0))
		cc, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
		defer cancel()
		err := s.Close(cc)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v, want context.DeadlineExceeded", err)
		}
		if got := unackedOffsets(s); !slices.Equal(got, []int64{0}) {
			t.Fatalf("Unacked offsets %v, want [0]", got)
		}
		if err2 := s.Close(ctx(t)); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("second Close: %v, first %v", err2, err)
		}
	})
}

// TestIngestWhileRecovering: while every resume is refused (retryably),
// ingest is still accepted, with the next offsets; once the server takes
// resumes again, everything lands once.
func TestIngestWhileRecovering(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t, zbstream.WithRetries(1000), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}))
	id := s.StreamID()
	ingest(t, s, rec(0, 0))
	mustFlush(t, s)
	hf := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultFailOpen, Times: server.Unlimited})
	hd := e.ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDrop})
	ingest(t, s, rec(0, 1))
	waitFired(t, hd)
	waitFired(t, hf) // recovering now
	want := [][][]byte{one(rec(0, 0)), one(rec(0, 1))}
	for n := 2; n < 20; n++ {
		if off := ingest(t, s, rec(0, n)); off[0] != int64(n) {
			t.Fatalf("offset %d during recovery, want %d", off[0], n)
		}
		want = append(want, one(rec(0, n)))
	}
	hf.Remove()
	mustClose(t, s)
	if st := s.Stats(); st.Reconnects < 2 {
		t.Fatalf("stats %+v", st)
	}
	e.wantStored(t, id, want...)
}

// TestManyStreamsOneClient: twenty persistent streams on one client (one
// HTTP/2 connection), written concurrently while the server drops some of
// their calls; each ends with its own records, once, in order.
func TestManyStreamsOneClient(t *testing.T) {
	const streams, records = 20, 50
	e := start(t)
	ss := make([]*zbstream.Stream, streams)
	for i := range ss {
		ss[i] = e.createPersistent(t)
		if i%3 == 0 {
			e.ts.Inject(server.Match{StreamID: ss[i].StreamID()}, server.Fault{Kind: server.FaultCommitThenDrop, After: 1 + i})
		}
	}
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range records {
				if _, err := s.IngestRecord(ctx(t), rec(i, n)); err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
			}
			if err := s.Close(ctx(t)); err != nil {
				t.Errorf("stream %d: Close: %v", i, err)
			}
		}()
	}
	wg.Wait()
	for i, s := range ss {
		want := make([][][]byte, records)
		for n := range want {
			want[n] = one(rec(i, n))
		}
		e.wantStored(t, s.StreamID(), want...)
		checkStats(t, s)
		if i%3 == 0 && s.Stats().Reconnects == 0 {
			t.Errorf("stream %d: the fault did not act", i)
		}
	}
}
