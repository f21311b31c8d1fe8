package io_test

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// bigSize is the size of bigRecord.
const bigSize = 1 << 20

// jsonRecord is a JSON record of size bytes (at least 8).
func jsonRecord(size int) []byte {
	r := bytes.Repeat([]byte("x"), size)
	copy(r, `{"x":"`)
	copy(r[len(r)-2:], `"}`)
	return r
}

// bigRecord is a JSON record of 1 MiB.
func bigRecord() []byte { return jsonRecord(bigSize) }

// fillBacklog ingests 1 MiB records until the sender is more than
// SendBacklog bytes behind, and returns how many it ingested.
func fillBacklog(t *testing.T, s *streamio.Stream) int {
	t.Helper()
	rec := bigRecord() // one buffer for all: the stream copies
	n := streamio.SendBacklog/bigSize + 1
	ingestCopies(t, s, rec, n)
	return n
}

// ingestCopies ingests rec n times, one record per call.
func ingestCopies(t *testing.T, s *streamio.Stream, rec []byte, n int) {
	t.Helper()
	for i := range n {
		if _, err := s.IngestRecord(context.Background(), rec); err != nil {
			t.Fatalf("ingest %d: %v", i, err)
		}
	}
}

// waitsForSender checks, on a stream whose sender is held at gate and
// further behind than a bound (named by bound), that an ingest of rec
// waits until gate opens and the sender catches up, and then goes in; it
// acknowledges everything through last, that ingest's offset, and closes
// the stream.
func waitsForSender(t *testing.T, s *streamio.Stream, c *scriptedConn, gate chan struct{}, rec []byte, last int64, bound string) {
	t.Helper()
	next := async(func() error {
		_, err := s.IngestRecord(context.Background(), rec)
		return err
	})
	settle(time.Second)
	if _, done := poll(next); done {
		t.Fatalf("an ingest went in with the sender more than %s behind", bound)
	}
	close(gate) // the sender writes everything
	settle(time.Second)
	if err, done := poll(next); !done || err != nil {
		t.Fatalf("the sender caught up and the waiting ingest got %v (done %v)", err, done)
	}
	c.resp <- ackOf(last)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSendBacklogHoldsIngest: with a live connection whose sender is more
// than SendBacklog bytes behind, ingest waits, although the window has room,
// until the sender has caught up.
func TestSendBacklogHoldsIngest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		s, c := openScripted(t, newScripted(gate), config(core.Persistent), streamio.Options{})
		n := fillBacklog(t, s)
		waitsForSender(t, s, c, gate, bigRecord(), int64(n), "SendBacklog bytes")
	})
}

// TestSendBacklogBoundsCalls: tiny records fill SendBacklogCalls before
// any byte bound (SendBacklogTarget: records under 4 bytes); ingest waits
// there too, although the window has room, until the sender has caught up.
func TestSendBacklogBoundsCalls(t *testing.T) {
	rec := []byte(`{}`)
	if int64(len(rec))*(streamio.SendBacklogCalls+1) > streamio.SendBacklogTarget {
		t.Fatalf("%d calls of %d bytes pass SendBacklogTarget first", streamio.SendBacklogCalls+1, len(rec))
	}
	heldAfter(t, rec, streamio.SendBacklogCalls+1, "SendBacklogCalls calls")
}

// heldAfter checks that, with a sender held back after n calls of rec,
// the next ingest of rec waits for it (waitsForSender).
func heldAfter(t *testing.T, rec []byte, n int, bound string) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		s, c := openScripted(t, newScripted(gate), config(core.Persistent), streamio.Options{})
		ingestCopies(t, s, rec, n)
		waitsForSender(t, s, c, gate, rec, int64(n), bound)
	})
}

// TestSendBacklogTargetHoldsManyCalls: once the sender has more than
// SendBacklogMinCalls calls to write, SendBacklogTarget bytes hold ingest
// back, far short of SendBacklog.
func TestSendBacklogTargetHoldsManyCalls(t *testing.T) {
	const size = 16 << 10
	n := streamio.SendBacklogTarget/size + 1
	if n <= streamio.SendBacklogMinCalls {
		t.Fatalf("%d calls of %d bytes do not pass the minimum of calls", n, size)
	}
	heldAfter(t, jsonRecord(size), n, "SendBacklogTarget bytes in many calls")
}

// TestSendBacklogTargetKeepsFewCalls: a sender with SendBacklogMinCalls
// calls or fewer to write is not held to SendBacklogTarget, so that a few
// large calls (1 MiB batches) still queue up to SendBacklog.
func TestSendBacklogTargetKeepsFewCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		s, c := openScripted(t, newScripted(gate), config(core.Persistent), streamio.Options{})
		n := streamio.SendBacklogMinCalls
		if n*bigSize <= streamio.SendBacklogTarget {
			t.Fatalf("%d calls of 1 MiB do not pass SendBacklogTarget", n)
		}
		for i := range n {
			in := async(func() error {
				_, err := s.IngestRecord(context.Background(), bigRecord())
				return err
			})
			settle(time.Second)
			if err, done := poll(in); !done || err != nil {
				t.Fatalf("call %d of 1 MiB, with %d queued: got %v (done %v)", i, i, err, done)
			}
		}
		close(gate)
		settle(time.Second)
		c.resp <- ackOf(int64(n - 1))
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSendBacklogQueuesOneLargeCall: a call larger than SendBacklog does
// not hold back the next one, which is copied while it is written; the one
// after that waits.
func TestSendBacklogQueuesOneLargeCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		s, c := openScripted(t, newScripted(gate), config(core.Persistent), streamio.Options{})
		large := jsonRecord(streamio.SendBacklog + bigSize)
		for i := range 2 {
			in := async(func() error {
				_, err := s.IngestRecord(context.Background(), large)
				return err
			})
			settle(time.Second)
			if err, done := poll(in); !done || err != nil {
				t.Fatalf("large call %d, with the sender behind by %d call(s): got %v (done %v)", i, i, err, done)
			}
		}
		waitsForSender(t, s, c, gate, large, 2, "two calls and SendBacklog bytes")
	})
}

// TestSendBacklogOnlyWhileConnected: when the connection whose sender is
// behind ends, the callers waiting for it go on, and without a live
// connection only the window bounds ingest.
func TestSendBacklogOnlyWhileConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		tr := newScripted(gate)
		cfg := config(core.Persistent)
		cfg.MaxInflightCalls = 1000
		s, c := openScripted(t, tr, cfg, streamio.Options{})
		fillBacklog(t, s)
		next := async(func() error {
			_, err := s.IngestRecord(context.Background(), bigRecord())
			return err
		})
		synctest.Wait()
		c.cancel() // the server ends the call; the stream backs off before it resumes
		if err, done := poll(next); !done || err != nil {
			t.Fatalf("the connection ended and the waiting ingest got %v (done %v)", err, done)
		}
		for i := range 100 { // still no connection: nothing holds these back
			if _, err := s.IngestRecord(context.Background(), bigRecord()); err != nil {
				t.Fatalf("ingest %d while disconnected: %v", i, err)
			}
		}
		_ = s.Close(context.Background()) // records never acknowledged: a failure
	})
}

// TestCloseWakesIngestWaitingForSender: Close refuses new records at once,
// also to a caller waiting for a sender that is behind.
func TestCloseWakesIngestWaitingForSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		s, c := openScripted(t, newScripted(gate), config(core.Persistent), streamio.Options{})
		n := fillBacklog(t, s)
		next := async(func() error {
			_, err := s.IngestRecord(context.Background(), bigRecord())
			return err
		})
		synctest.Wait()
		closed := async(func() error { return s.Close(context.Background()) })
		err, done := poll(next)
		if !done {
			t.Fatal("Close was called and the ingest waiting for the sender still waits")
		}
		wantIs(t, "ingest waiting for the sender, after Close", err, core.ErrClosed)
		close(gate)
		settle(time.Second)
		c.resp <- ackOf(int64(n - 1))
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	})
}
