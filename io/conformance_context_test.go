package io_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

var errGiveUp = errors.New("test gave up")

// cancelled returns a context cancelled with errGiveUp after d.
func cancelled(d time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(d, func() { cancel(errGiveUp) })
	return ctx
}

// Context cancellation during a hung Open: Open returns the context's cause
// and leaves nothing running (the bubble would not end otherwise).
func TestContextOpen(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			return cancelled(5 * time.Second), func() {}
		}, errGiveUp},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 5*time.Second)
		}, context.DeadlineExceeded},
		{"already done", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errGiveUp)
			return ctx, func() {}
		}, errGiveUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultHangOpen, Times: memtransport.Unlimited})
				ctx, cancel := tt.ctx()
				defer cancel()
				s, err := streamio.Open(ctx, srv.Transport(), config(kind), streamio.Options{})
				if s != nil || !errors.Is(err, tt.want) {
					t.Fatalf("Open = %v, %v; want %v", s, err, tt.want)
				}
				if n := srv.Stats().Opens; n > 1 {
					t.Fatalf("%d open attempts, want at most 1 (ended before the open timeout)", n)
				}
			})
		})
	}
}

// Context cancellation of an IngestRecord blocked at the window: it returns
// the cause, accepts nothing, and the stream goes on.
func TestContextIngestBlocked(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: ackTimeout / 2, Times: memtransport.Unlimited})
		cfg := config(kind)
		cfg.MaxInflightCalls = 1
		s := open(t, srv, cfg, streamio.Options{})
		ingest(t, s, 0, 0)
		off, err := s.IngestRecord(cancelled(5*time.Second), rec(1))
		if off != core.NoOffset || !errors.Is(err, errGiveUp) {
			t.Fatalf("IngestRecord = %d, %v; want NoOffset and the context's cause", off, err)
		}
		if st := s.Stats(); st.Accepted != 1 || s.Err() != nil || s.LastAssigned() != 0 {
			t.Fatalf("after a cancelled ingest: stats %+v, err %v, last assigned %d", st, s.Err(), s.LastAssigned())
		}
		ingest(t, s, 1, 1) // waits for offset 0's ack, then goes in
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 2))
	})
}

// Context cancellation of Wait and Flush: they return the cause (not
// ErrFlushTimeout), and the stream goes on.
func TestContextWaitAndFlush(t *testing.T) {
	for name, call := range map[string]func(ctx context.Context, s *streamio.Stream) error{
		"Wait":  func(ctx context.Context, s *streamio.Stream) error { return s.Wait(ctx, 0) },
		"Flush": func(ctx context.Context, s *streamio.Stream) error { return s.Flush(ctx) },
	} {
		t.Run(name, func(t *testing.T) {
			bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Minute})
				s := open(t, srv, config(kind), streamio.Options{})
				ingest(t, s, 0, 0)
				err := call(cancelled(5*time.Second), s)
				if !errors.Is(err, errGiveUp) || errors.Is(err, streamio.ErrFlushTimeout) {
					t.Fatalf("%s = %v, want the context's cause", name, err)
				}
				if s.Err() != nil || s.LastDurable() != core.NoOffset {
					t.Fatalf("after a cancelled %s: err %v, last durable %d", name, s.Err(), s.LastDurable())
				}
				if err := call(context.Background(), s); err != nil {
					t.Fatalf("%s again: %v", name, err)
				}
			})
		})
	}
}

// Context cancellation of Close before the server acknowledges: the stream
// fails with the context's cause, Close returns it, and Unacked holds the
// records.
func TestContextClose(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: memtransport.Unlimited})
		var r recorder
		s := open(t, srv, config(kind), r.options())
		ctx := context.Background()
		ingest(t, s, 0, 0)
		if off, err := s.IngestBatch(ctx, [][]byte{rec(1), rec(2)}); off != 1 || err != nil {
			t.Fatalf("IngestBatch = %d, %v", off, err)
		}
		err := s.Close(cancelled(5 * time.Second))
		wantIs(t, "Close", err, errGiveUp)
		wantIs(t, "Err", s.Err(), errGiveUp)
		select {
		case <-s.Done():
		default:
			t.Fatal("Done is open after Close returned")
		}
		wantOffsets(t, "Unacked", unackedOffsets(s), []int64{0, 1})
		if b := s.Unacked(); len(b[1].Records) != 2 {
			t.Fatalf("Unacked = %v, want the batch kept whole", b)
		}
		wantIs(t, "Close again", s.Close(ctx), errGiveUp)
		if st := s.Stats(); st.Failed != 2 || st.Acknowledged != 0 {
			t.Fatalf("Stats = %+v, want 2 failed", st)
		}
		// Close's context also bounds the callback drain, which it ended
		// already: the failure callbacks may be skipped, never run twice.
		acked, failed, _ := r.snapshot()
		wantOffsets(t, "acked", acked, nil)
		if len(failed) > 2 {
			t.Fatalf("failed callbacks %v, want each offset at most once", failed)
		}
		// The server did store them: only the acks were lost.
		wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 3))
	})
}
