package io_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// §8, both kinds: create ok / timeout / non-retryable error / retries then ok
// / retries exhausted.
func TestOpen(t *testing.T) {
	tests := []struct {
		name      string
		faults    []memtransport.Fault
		wantErr   func(t *testing.T, err error)
		wantOpens int64 // connection attempts seen by the server
	}{
		{name: "ok", wantOpens: 1},
		{
			name:      "hung once then ok",
			faults:    []memtransport.Fault{{Kind: memtransport.FaultHangOpen}},
			wantOpens: 2,
		},
		{
			name:   "open timeout exhausts retries",
			faults: []memtransport.Fault{{Kind: memtransport.FaultHangOpen, Times: memtransport.Unlimited}},
			wantErr: func(t *testing.T, err error) {
				wantIs(t, "Open", err, core.ErrRetriesExhausted)
				wantIs(t, "Open", err, core.ErrOpenTimeout)
				wantCode(t, "Open", err, core.CodeDeadlineExceeded)
			},
			wantOpens: 4, // the first attempt and 3 retries
		},
		{
			name:   "not found is not retried",
			faults: []memtransport.Fault{{Kind: memtransport.FaultFailOpen, Code: core.CodeNotFound, Times: memtransport.Unlimited}},
			wantErr: func(t *testing.T, err error) {
				wantCode(t, "Open", err, core.CodeNotFound)
				var re *core.RetryError
				if errors.As(err, &re) {
					t.Fatalf("Open = %v, want no retry", err)
				}
			},
			wantOpens: 1,
		},
		{
			name:      "permission denied at dial is not retried",
			faults:    []memtransport.Fault{{Kind: memtransport.FaultFailOpen, Code: core.CodePermissionDenied, AtOpen: true, Times: memtransport.Unlimited}},
			wantErr:   func(t *testing.T, err error) { wantCode(t, "Open", err, core.CodePermissionDenied) },
			wantOpens: 1,
		},
		{
			name:      "retries then ok",
			faults:    []memtransport.Fault{{Kind: memtransport.FaultFailOpen, Times: 2}},
			wantOpens: 3,
		},
		{
			name:   "retries exhausted",
			faults: []memtransport.Fault{{Kind: memtransport.FaultFailOpen, Times: memtransport.Unlimited}},
			wantErr: func(t *testing.T, err error) {
				var re *core.RetryError
				if !errors.As(err, &re) || re.Attempts != 3 {
					t.Fatalf("Open = %v, want a *core.RetryError after 3 attempts", err)
				}
				wantIs(t, "Open", err, core.ErrRetriesExhausted)
				wantCode(t, "Open", err, core.CodeUnavailable)
			},
			wantOpens: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
				for _, f := range tt.faults {
					srv.Inject(memtransport.Match{}, f)
				}
				s, err := streamio.Open(context.Background(), srv.Transport(), config(kind), streamio.Options{})
				if got := srv.Stats().Opens; got != tt.wantOpens {
					t.Errorf("server saw %d opens, want %d", got, tt.wantOpens)
				}
				if tt.wantErr != nil {
					if s != nil || err == nil {
						t.Fatalf("Open = %v, %v; want an error", s, err)
					}
					tt.wantErr(t, err)
					return
				}
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer s.Close(context.Background())
				if s.StreamID() == "" {
					t.Error("StreamID is empty after a create")
				}
				st := s.Stats()
				if st.Opens != tt.wantOpens || st.Reconnects != tt.wantOpens-1 {
					t.Errorf("Stats opens/reconnects = %d/%d, want %d/%d", st.Opens, st.Reconnects, tt.wantOpens, tt.wantOpens-1)
				}
				ingest(t, s, 0, 0)
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 1))
			})
		})
	}
}

// §8, both kinds: single, batch, mixed, empty batch.
func TestIngestShapes(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		s := open(t, srv, config(kind), streamio.Options{})
		ctx := context.Background()
		ingest(t, s, 0, 0)
		off, err := s.IngestBatch(ctx, [][]byte{rec(1), rec(2), rec(3)})
		if err != nil || off != 1 {
			t.Fatalf("IngestBatch = %d, %v; want 1, nil", off, err)
		}
		off, err = s.IngestBatch(ctx, nil)
		if err != nil || off != core.NoOffset {
			t.Fatalf("IngestBatch(nil) = %d, %v; want NoOffset, nil", off, err)
		}
		off, err = s.IngestBatch(ctx, [][]byte{})
		if err != nil || off != core.NoOffset {
			t.Fatalf("IngestBatch(empty) = %d, %v; want NoOffset, nil", off, err)
		}
		ingest(t, s, 4, 2)
		off, err = s.IngestBatch(ctx, [][]byte{rec(5)})
		if err != nil || off != 3 {
			t.Fatalf("IngestBatch(one) = %d, %v; want 3, nil", off, err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		id := s.StreamID()
		got := srv.Batches(id)
		want := []memtransport.Batch{
			{Offset: 0, Records: [][]byte{rec(0)}},
			{Offset: 1, Records: [][]byte{rec(1), rec(2), rec(3)}},
			{Offset: 2, Records: [][]byte{rec(4)}},
			{Offset: 3, Records: [][]byte{rec(5)}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("server batches = %v, want %v", got, want)
		}
		st := s.Stats()
		if st.Accepted != 4 || st.Records != 6 || st.Acknowledged != 4 || st.InFlightCalls != 0 {
			t.Fatalf("Stats = %+v, want 4 calls, 6 records, 4 acknowledged, none in flight", st)
		}
		if n := srv.Stats().Calls; n != 4 {
			t.Fatalf("server received %d calls, want 4 (empty batches send nothing)", n)
		}
	})
}

// §8, both kinds: oversize rejected, nothing queued.
func TestOversize(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		cfg := config(kind)
		cfg.MaxCallBytes = 16
		s := open(t, srv, cfg, streamio.Options{})
		ctx := context.Background()
		// The limit counts records as sent: each with a tag byte and a
		// length byte here (core.FramedSize).
		big := make([]byte, 15)
		for name, call := range map[string]func() (int64, error){
			"record": func() (int64, error) { return s.IngestRecord(ctx, big) },
			"batch":  func() (int64, error) { return s.IngestBatch(ctx, [][]byte{big[:7], big[:6]}) },
		} {
			off, err := call()
			var le *core.LimitError
			if off != core.NoOffset || !errors.As(err, &le) || le.Got != 17 || le.Max != 16 {
				t.Fatalf("%s: ingest = %d, %v; want NoOffset and a *core.LimitError 17 > 16", name, off, err)
			}
			wantIs(t, name, err, core.ErrCallTooLarge)
		}
		if st := s.Stats(); st.Accepted != 0 || st.InFlightCalls != 0 || st.InFlightBytes != 0 {
			t.Fatalf("Stats = %+v after refused calls, want nothing accepted", st)
		}
		if s.LastAssigned() != core.NoOffset || len(s.Unacked()) != 0 || s.Err() != nil {
			t.Fatalf("refused calls changed the stream: last %d, unacked %v, err %v", s.LastAssigned(), s.Unacked(), s.Err())
		}
		ingest(t, s, 0, 0) // the stream goes on, offsets stay dense
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if n := srv.Stats().Calls; n != 1 {
			t.Fatalf("server received %d calls, want 1", n)
		}
	})
}

// §8, both kinds: ingest after close rejected.
func TestIngestAfterClose(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		s := open(t, srv, config(kind), streamio.Options{})
		ctx := context.Background()
		ingest(t, s, 0, 0)
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if off, err := s.IngestRecord(ctx, rec(1)); off != core.NoOffset || !errors.Is(err, core.ErrClosed) {
			t.Fatalf("IngestRecord after Close = %d, %v; want ErrClosed", off, err)
		}
		if off, err := s.IngestBatch(ctx, [][]byte{rec(1)}); off != core.NoOffset || !errors.Is(err, core.ErrClosed) {
			t.Fatalf("IngestBatch after Close = %d, %v; want ErrClosed", off, err)
		}
		if st := s.Stats(); st.Accepted != 1 {
			t.Fatalf("Stats.Accepted = %d, want 1", st.Accepted)
		}
	})
}

// §8, both kinds: close flushes, is idempotent, works after an error and
// concurrently.
func TestClose(t *testing.T) {
	t.Run("flushes", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: memtransport.Unlimited})
			var r recorder
			s := open(t, srv, config(kind), r.options())
			ingestN(t, s, 5, 0)
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case <-s.Done():
			default:
				t.Fatal("Done is open after Close")
			}
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 5))
			if len(s.Unacked()) != 0 || s.Err() != nil {
				t.Fatalf("after Close: unacked %v, err %v", s.Unacked(), s.Err())
			}
			acked, failed, _ := r.snapshot()
			wantOffsets(t, "acked", acked, span(0, 5))
			wantOffsets(t, "failed", failed, nil)
			if st := s.Stats(); st.Acknowledged != 5 || st.InFlightCalls != 0 {
				t.Fatalf("Stats = %+v", st)
			}
		})
	})
	t.Run("idempotent and concurrent", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Second, Times: memtransport.Unlimited})
			s := open(t, srv, config(kind), streamio.Options{})
			ingestN(t, s, 3, 0)
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = s.Close(context.Background()) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("Close #%d: %v", i, err)
				}
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close again: %v", err)
			}
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 3))
		})
	})
	t.Run("after an error", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultAckAboveSent, After: 2})
			s := open(t, srv, config(kind), streamio.Options{})
			ingestN(t, s, 2, 0)
			<-s.Done()
			for i := range 3 {
				err := s.Close(context.Background())
				wantViolation(t, "Close", err, core.AckAboveSent)
				if i == 0 && !errors.Is(s.Err(), err) {
					t.Fatalf("Close = %v, Err = %v; want the same", err, s.Err())
				}
			}
			off, err := s.IngestRecord(context.Background(), rec(9))
			if off != core.NoOffset || !errors.Is(err, core.ErrStreamFailed) {
				t.Fatalf("IngestRecord after failure = %d, %v; want ErrStreamFailed", off, err)
			}
			wantViolation(t, "IngestRecord", err, core.AckAboveSent)
		})
	})
}

// §8 ephemeral: ingest blocks at the window (of calls, or of bytes) and
// unblocks when acks arrive (delayed acks) or after recovery resends what
// lost its acks.
func TestEphemeralWindowBlocks(t *testing.T) {
	tests := []struct {
		name          string
		fault         memtransport.Fault
		bytes         bool // bound the window by bytes, not calls
		wantReconnect int64
	}{
		{"acks delayed", memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: 2}, false, 0},
		{"acks delayed, bytes", memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: 2}, true, 0},
		{"acks lost", memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: 2}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				srv.Inject(memtransport.Match{}, tt.fault)
				cfg := config(core.Ephemeral)
				if tt.bytes {
					// Records are 7 bytes, and the bound counts what each
					// call keeps too: two fit, a third does not.
					cfg.MaxCallBytes = 16
					cfg.MaxInflightBytes = 2 * (7 + streamio.CallCost + streamio.RecordCost)
				} else {
					cfg.MaxInflightCalls = 2
				}
				s := open(t, srv, cfg, streamio.Options{})
				ingestN(t, s, 2, 0)
				res := asyncIngest(context.Background(), s, 2)
				if r, ok := poll(res); ok {
					t.Fatalf("IngestRecord returned %d, %v with a full window", r.off, r.err)
				}
				if st := s.Stats(); st.Accepted != 2 || st.InFlightCalls != 2 || st.InFlightBytes != 14 {
					t.Fatalf("Stats = %+v while blocked", st)
				}
				r := <-res
				if r.err != nil || r.off != 2 {
					t.Fatalf("IngestRecord = %d, %v; want 2, nil", r.off, r.err)
				}
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if got := s.Stats().Reconnects; got != tt.wantReconnect {
					t.Fatalf("Reconnects = %d, want %d", got, tt.wantReconnect)
				}
				all := storedAll(srv)
				if len(all) != 1+int(tt.wantReconnect) {
					t.Fatalf("server streams = %q, want %d", all, 1+tt.wantReconnect)
				}
				// Lost acks: the first connection stored 0 and 1, the second
				// got them again (at-least-once) and then 2.
				wantStrings(t, "last server stream", all[len(all)-1], recs(0, 3))
			})
		})
	}
}

// §8, both kinds: flush waits, times out (the stream goes on), returns at
// once when empty, covers only earlier offsets.
func TestFlush(t *testing.T) {
	t.Run("waits", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: memtransport.Unlimited})
			s := open(t, srv, config(kind), streamio.Options{})
			ingestN(t, s, 3, 0)
			if err := s.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if s.LastDurable() != 2 || s.Stats().Acknowledged != 3 {
				t.Fatalf("after Flush: last durable %d, stats %+v", s.LastDurable(), s.Stats())
			}
		})
	})
	t.Run("times out", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: 1})
			s := open(t, srv, config(kind), streamio.Options{FlushTimeout: time.Second})
			ingest(t, s, 0, 0)
			err := s.Flush(context.Background())
			wantIs(t, "Flush", err, streamio.ErrFlushTimeout)
			if s.Err() != nil || s.LastDurable() != core.NoOffset {
				t.Fatalf("after a flush timeout: err %v, last durable %d", s.Err(), s.LastDurable())
			}
			select {
			case <-s.Done():
				t.Fatal("a flush timeout ended the stream")
			default:
			}
			ingest(t, s, 1, 1) // still usable
			if err := s.Wait(context.Background(), 1); err != nil {
				t.Fatalf("Wait(1): %v", err)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 2))
		})
	})
	t.Run("empty returns at once", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			s := open(t, srv, config(kind), streamio.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a flush with nothing to wait for never looks at ctx
			if err := s.Flush(ctx); err != nil {
				t.Fatalf("Flush of an empty stream: %v", err)
			}
			wantIs(t, "Wait(0) before any ingest", s.Wait(context.Background(), 0), streamio.ErrNeverAssigned)
			ingest(t, s, 0, 0)
			if err := s.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatalf("Flush with everything durable: %v", err)
			}
		})
	})
	t.Run("covers only earlier offsets", func(t *testing.T) {
		bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
			// Offset 0's ack comes after 5 s, offset 1's after 30 s more.
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, After: 1, Delay: 5 * time.Second})
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, After: 2, Delay: 35 * time.Second})
			s := open(t, srv, config(kind), streamio.Options{})
			ingest(t, s, 0, 0)
			flushed := async(func() error { return s.Flush(context.Background()) })
			if err, ok := poll(flushed); ok {
				t.Fatalf("Flush returned %v before offset 0 was acknowledged", err)
			}
			ingest(t, s, 1, 1) // after Flush began: not its business
			if err := <-flushed; err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if d := s.LastDurable(); d != 0 {
				t.Fatalf("Flush returned with last durable %d, want 0 (offset 1 still in flight)", d)
			}
			if st := s.Stats(); st.InFlightCalls != 1 {
				t.Fatalf("Stats = %+v, want offset 1 in flight", st)
			}
			if err := s.Flush(context.Background()); err != nil {
				t.Fatalf("second Flush: %v", err)
			}
			if d := s.LastDurable(); d != 1 {
				t.Fatalf("last durable %d, want 1", d)
			}
		})
	})
}

// §8 ephemeral: ack timeout triggers recovery and a resend.
func TestEphemeralAckTimeoutRecovers(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: 3})
		var r recorder
		s := open(t, srv, config(core.Ephemeral), r.options())
		ingestN(t, s, 3, 0)
		settle(ackTimeout - time.Second)
		if st := s.Stats(); st.Reconnects != 0 || st.Acknowledged != 0 {
			t.Fatalf("Stats = %+v before the ack timeout", st)
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		st := s.Stats()
		if st.Reconnects != 1 || st.Resent != 3 || st.Acknowledged != 3 || st.Sent != 6 {
			t.Fatalf("Stats = %+v, want 1 reconnect, 3 resent, 6 sent, 3 acknowledged", st)
		}
		all := storedAll(srv)
		if len(all) != 2 {
			t.Fatalf("server streams %q, want 2", all)
		}
		wantStrings(t, "first connection", all[0], recs(0, 3))
		wantStrings(t, "second connection", all[1], recs(0, 3))
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		acked, _, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 3))
	})
}

// §8, both kinds: pending records fail on a terminal error, once each, and
// stay retrievable with Unacked, grouped as ingested, identically on every
// call.
func TestTerminalFailure(t *testing.T) {
	tests := []struct {
		name  string
		fault memtransport.Fault
		check func(t *testing.T, err error)
	}{
		{
			"non-retryable status",
			memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 3, Code: core.CodePermissionDenied},
			func(t *testing.T, err error) { wantCode(t, "Err", err, core.CodePermissionDenied) },
		},
		{
			"protocol violation",
			memtransport.Fault{Kind: memtransport.FaultAckAboveSent, After: 3},
			func(t *testing.T, err error) { wantViolation(t, "Err", err, core.AckAboveSent) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: 2})
				srv.Inject(memtransport.Match{}, tt.fault)
				var r recorder
				s := open(t, srv, config(kind), r.options())
				ctx := context.Background()
				ingest(t, s, 0, 0)
				if off, err := s.IngestBatch(ctx, [][]byte{rec(1), rec(2)}); off != 1 || err != nil {
					t.Fatalf("IngestBatch = %d, %v", off, err)
				}
				ingest(t, s, 3, 2)
				<-s.Done()
				tt.check(t, s.Err())
				want := []core.Batch{
					{Offset: 0, Records: [][]byte{rec(0)}},
					{Offset: 1, Records: [][]byte{rec(1), rec(2)}},
					{Offset: 2, Records: [][]byte{rec(3)}},
				}
				for i := range 3 {
					if got := s.Unacked(); !reflect.DeepEqual(got, want) {
						t.Fatalf("Unacked call %d = %v, want %v", i, got, want)
					}
				}
				for o := range int64(3) {
					err := s.Wait(ctx, o)
					wantIs(t, "Wait", err, core.ErrStreamFailed)
					tt.check(t, err)
				}
				err := s.Close(ctx)
				tt.check(t, err)
				if got := s.Unacked(); !reflect.DeepEqual(got, want) {
					t.Fatalf("Unacked after Close = %v, want %v", got, want)
				}
				if st := s.Stats(); st.Failed != 3 || st.Acknowledged != 0 {
					t.Fatalf("Stats = %+v, want 3 failed", st)
				}
				acked, failed, errs := r.snapshot()
				wantOffsets(t, "acked", acked, nil)
				wantOffsets(t, "failed", failed, span(0, 3))
				for _, e := range errs {
					tt.check(t, e)
				}
			})
		})
	}
}

// §8 ephemeral: after a retryable error everything unacknowledged is sent
// again, in order, on a new connection.
func TestEphemeralResendInOrder(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		// Call 3 is lost with the connection; 0 and 1 were acknowledged.
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 3})
		var r recorder
		s := open(t, srv, config(core.Ephemeral), r.options())
		ctx := context.Background()
		ingest(t, s, 0, 0)
		ingest(t, s, 1, 1)
		if off, err := s.IngestBatch(ctx, [][]byte{rec(2), rec(3)}); off != 2 || err != nil {
			t.Fatalf("IngestBatch = %d, %v", off, err)
		}
		for i := 4; i < 8; i++ {
			ingest(t, s, i, int64(i-1))
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		all := storedAll(srv)
		if len(all) != 2 {
			t.Fatalf("server streams %q, want 2", all)
		}
		wantStrings(t, "first connection", all[0], recs(0, 2))
		wantStrings(t, "second connection", all[1], recs(2, 8))
		second := srv.Streams()[1].ID
		if b := srv.Batches(second); len(b) != 5 || len(b[0].Records) != 2 || b[0].Offset != 0 {
			t.Fatalf("second connection's batches = %v, want the batch first under wire offset 0", b)
		}
		st := s.Stats()
		if st.Reconnects != 1 || st.Resent < 1 || st.Acknowledged != 7 {
			t.Fatalf("Stats = %+v", st)
		}
		acked, _, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 7))
	})
}

// §8 ephemeral: close-signal grace variants. Offset 0's ack is lost, so it
// is in flight when the signal comes after call 1; records 1 and 2 are
// ingested during the pause and go out only on the next connection, after
// 0 is sent again (at-least-once).
func TestEphemeralCloseSignalGrace(t *testing.T) {
	tests := []struct {
		name       string
		lose       bool          // lose offset 0's ack: something stays in flight
		signal     time.Duration // the server's duration (0 with noDuration: none)
		noDuration bool
		maxGrace   time.Duration
		paused     time.Duration // still on the first connection this long after the signal
	}{
		{name: "server duration shorter than MaxGrace", lose: true, signal: 10 * time.Second, maxGrace: maxGrace, paused: 10 * time.Second},
		{name: "MaxGrace shorter than the server duration", lose: true, signal: 10 * time.Minute, maxGrace: maxGrace, paused: maxGrace},
		{name: "grace longer than the ack timeout", lose: true, signal: 2 * ackTimeout, maxGrace: 3 * ackTimeout, paused: 2 * ackTimeout},
		{name: "server duration 0", lose: true, signal: 0, maxGrace: maxGrace},
		{name: "no duration", lose: true, noDuration: true, maxGrace: maxGrace},
		{name: "MaxGrace 0", lose: true, signal: 10 * time.Second, maxGrace: 0},
		{name: "early exit when all acked", signal: 10 * time.Minute, maxGrace: 15 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				if tt.lose {
					srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 1})
				}
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 1, Delay: tt.signal, NoDuration: tt.noDuration})
				cfg := config(core.Ephemeral)
				cfg.MaxGrace = tt.maxGrace
				var r recorder
				s := open(t, srv, cfg, r.options())
				ingest(t, s, 0, 0)
				synctest.Wait() // the signal is in
				ingest(t, s, 1, 1)
				ingest(t, s, 2, 2)
				if tt.paused > 0 {
					settle(tt.paused - time.Millisecond)
					if n := len(srv.Streams()); n != 1 {
						t.Fatalf("%d server streams %v into the pause, want 1", n, tt.paused-time.Millisecond)
					}
					if st := s.Stats(); st.Sent != 1 || st.Reconnects != 0 {
						t.Fatalf("Stats = %+v during the pause, want 1 sent and no reconnect", st)
					}
				}
				// A rotation reconnects at once when the grace ends; a
				// connection the server ended cleanly is retried after
				// at most one backoff.
				settle(time.Millisecond + backoffMax)
				if n := len(srv.Streams()); n != 2 {
					t.Fatalf("%d server streams after the grace, want 2", n)
				}
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				all := storedAll(srv)
				wantStrings(t, "first connection", all[0], recs(0, 1))
				if tt.lose {
					wantStrings(t, "second connection", all[1], recs(0, 3))
				} else {
					wantStrings(t, "second connection", all[1], recs(1, 3))
				}
				acked, _, _ := r.snapshot()
				wantOffsets(t, "acked", acked, span(0, 3))
				if st := s.Stats(); st.Reconnects != 1 {
					t.Fatalf("Reconnects = %d, want 1", st.Reconnects)
				}
			})
		})
	}
}

// §8, both kinds: callbacks once per offset, in order, across a reconnect
// that resends (and, persistent, reconciles), with every ack repeated.
func TestCallbacksOncePerOffset(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 3, Times: 2})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 5})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultRepeatAcks, Times: memtransport.Unlimited})
		var r recorder
		s := open(t, srv, config(kind), r.options())
		ingestN(t, s, 20, 0)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		acked, failed, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 20))
		wantOffsets(t, "failed", failed, nil)
		// Offsets 0..3 were stored on the first connection, the acks of 2
		// and 3 lost, 4 dropped: a resume learns 2 and 3 from the
		// watermark, an ephemeral stream sends them again.
		var reconciled int64
		if kind == core.Persistent {
			reconciled = 2
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 20))
		}
		if st := s.Stats(); st.Acknowledged != 20-reconciled || st.Reconciled != reconciled || st.Reconnects != 1 {
			t.Fatalf("Stats = %+v, want %d reconciled, the rest acknowledged, 1 reconnect", st, reconciled)
		}
	})
}

// §8 ephemeral: duplicate acks change nothing, the ack timer included.
// Every ack comes twice; offset 1's ack is lost, so the ack timer fires
// AckTimeout after the last ack that advanced, and each offset completes
// once. The copies arrive with the ack they repeat here;
// TestPersistentLateDuplicateAcks has duplicates that come later.
func TestEphemeralDuplicateAcks(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultRepeatAcks, Times: memtransport.Unlimited})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 2})
		var r recorder
		s := open(t, srv, config(core.Ephemeral), r.options())
		ingest(t, s, 0, 0)
		ingest(t, s, 1, 1)
		settle(ackTimeout - time.Millisecond)
		if st := s.Stats(); st.Acknowledged != 1 || st.Reconnects != 0 || s.Err() != nil {
			t.Fatalf("Stats = %+v, err %v before the ack timeout; want offset 0 acknowledged once", st, s.Err())
		}
		settle(time.Millisecond + backoffMax)
		if st := s.Stats(); st.Reconnects != 1 || st.Acknowledged != 2 {
			t.Fatalf("Stats = %+v after the ack timeout, want a reconnect and both acknowledged", st)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		acked, _, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 2))
	})
}

// §8, both kinds: over-acks, regressive acks and acks without an offset fail
// the stream with a *core.ProtocolError; the pending records fail with it.
func TestHostileAcks(t *testing.T) {
	tests := []struct {
		kind memtransport.FaultKind
		rule core.Violation
	}{
		{memtransport.FaultAckAboveSent, core.AckAboveSent},
		{memtransport.FaultAckBelowFloor, core.AckBelowFloor},
		{memtransport.FaultAckMissing, core.AckMissing},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: tt.kind, After: 2})
				var r recorder
				s := open(t, srv, config(kind), r.options())
				ingest(t, s, 0, 0)
				if err := s.Wait(context.Background(), 0); err != nil {
					t.Fatalf("Wait(0): %v", err)
				}
				ingest(t, s, 1, 1)
				<-s.Done()
				wantViolation(t, "Err", s.Err(), tt.rule)
				err := s.Close(context.Background())
				wantViolation(t, "Close", err, tt.rule)
				wantOffsets(t, "Unacked", unackedOffsets(s), []int64{1})
				if st := s.Stats(); st.Acknowledged != 1 || st.Failed != 1 || st.Reconnects != 0 {
					t.Fatalf("Stats = %+v, want 1 acknowledged, 1 failed, no reconnect", st)
				}
				acked, failed, _ := r.snapshot()
				wantOffsets(t, "acked", acked, []int64{0})
				wantOffsets(t, "failed", failed, []int64{1})
			})
		})
	}
}

// Both kinds: close concurrently with ingest. Every ingest either gets an
// offset, and then its record is stored before Close returns, or is refused
// with ErrClosed; the offsets accepted are dense.
func TestCloseDuringIngest(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Second, Times: memtransport.Unlimited})
		var r recorder
		s := open(t, srv, config(kind), r.options())
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted = map[int64]string{}
		)
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					payload := rec(1000*g + i)
					off, err := s.IngestRecord(context.Background(), payload)
					if errors.Is(err, core.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("IngestRecord: %v", err)
						return
					}
					mu.Lock()
					accepted[off] = string(payload)
					mu.Unlock()
					if i%3 == 0 {
						time.Sleep(100 * time.Millisecond)
					}
				}
			})
		}
		time.Sleep(time.Second)
		closed := make([]error, 3)
		for i := range closed {
			wg.Go(func() { closed[i] = s.Close(context.Background()) })
		}
		wg.Wait()
		for i, err := range closed {
			if err != nil {
				t.Fatalf("Close #%d: %v", i, err)
			}
		}
		want := make([]string, len(accepted))
		for off, p := range accepted {
			if off < 0 || off >= int64(len(want)) {
				t.Fatalf("offset %d out of 0..%d: offsets are not dense", off, len(want)-1)
			}
			want[off] = p
		}
		wantStrings(t, "stored", stored(srv, s.StreamID()), want)
		acked, failed, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, int64(len(want))))
		wantOffsets(t, "failed", failed, nil)
		if len(want) == 0 {
			t.Fatal("nothing was accepted before Close")
		}
	})
}

// The close timeout: Close gives up after CloseTimeout when the server never
// acknowledges, fails the rest with ErrCloseTimeout and keeps them in
// Unacked.
func TestCloseTimeout(t *testing.T) {
	bothKinds(t, func(t *testing.T, srv *memtransport.Server, kind core.Kind) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: memtransport.Unlimited})
		cfg := config(kind)
		cfg.AckTimeout = time.Hour
		cfg.CloseTimeout = time.Minute
		var r recorder
		s := open(t, srv, cfg, r.options())
		ingestN(t, s, 3, 0)
		err := s.Close(context.Background())
		wantIs(t, "Close", err, core.ErrCloseTimeout)
		wantOffsets(t, "Unacked", unackedOffsets(s), span(0, 3))
		acked, failed, errs := r.snapshot()
		wantOffsets(t, "acked", acked, nil)
		wantOffsets(t, "failed", failed, span(0, 3))
		for _, e := range errs {
			wantIs(t, "OnFail", e, core.ErrCloseTimeout)
		}
	})
}

// Backoff and the retry budget: durable progress resets the budget, so a
// stream with Retries = 1 survives any number of drops that each let
// something land (TestEphemeralOpen shows it giving up without progress).
func TestEphemeralRetryBudgetResets(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		// Every connection stores and acknowledges its first call and
		// drops at its second: 4 drops in all.
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 2, Times: 4})
		cfg := config(core.Ephemeral)
		cfg.Retries = 1
		s := open(t, srv, cfg, streamio.Options{})
		ingestN(t, s, 10, 0)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if st := s.Stats(); st.Reconnects != 4 || st.Acknowledged != 10 {
			t.Fatalf("Stats = %+v, want 4 reconnects, 10 acknowledged", st)
		}
		var all []string
		for _, recs := range storedAll(srv) {
			all = append(all, recs...)
		}
		wantStrings(t, "stored, connection by connection", all, recs(0, 10))
	})
}
