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

// TestByteBoundCountsWhatCallsKeep: the byte bound counts, beside the
// payload, CallCost for each call in flight and RecordCost for each of its
// records, for single records and batches alike. The window holds the
// calls whose payload and costs fit, and not one more, while acks are
// held back; once they arrive, the held call goes in. Counting the payload
// alone, the bound here would take over a hundred calls.
func TestByteBoundCountsWhatCallsKeep(t *testing.T) {
	const fit = 4 // calls that fit in the bound
	for _, tc := range []struct {
		name string
		recs [][]byte // one call's records; one record: IngestRecord
	}{
		{"records", [][]byte{[]byte("{}")}},
		{"batches", [][]byte{[]byte("{}"), []byte("{}"), []byte("{}")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: memtransport.Unlimited})
				call := func(ctx context.Context, s *streamio.Stream) (int64, error) {
					if len(tc.recs) == 1 {
						return s.IngestRecord(ctx, tc.recs[0])
					}
					return s.IngestBatch(ctx, tc.recs)
				}
				keeps := int64(streamio.CallCost + len(tc.recs)*(2+streamio.RecordCost))
				cfg := config(core.Ephemeral)
				cfg.MaxCallBytes = 16
				cfg.MaxInflightBytes = fit * keeps
				s := open(t, srv, cfg, streamio.Options{})
				for i := range fit {
					if off, err := call(context.Background(), s); err != nil || off != int64(i) {
						t.Fatalf("call %d = %d, %v", i, off, err)
					}
				}
				res := async(func() ingestResult {
					off, err := call(context.Background(), s)
					return ingestResult{off, err}
				})
				if r, ok := poll(res); ok {
					t.Fatalf("call %d = %d, %v with %d bytes of payload in flight and a bound of %d", fit, r.off, r.err, s.Stats().InFlightBytes, fit*keeps)
				}
				if r := <-res; r.err != nil || r.off != fit {
					t.Fatalf("held call = %d, %v; want %d once acks came", r.off, r.err, fit)
				}
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
			})
		})
	}
}

// TestByteBoundTakesACallIntoAnEmptyWindow: a call the per-call limit lets
// through is accepted into an empty window even when its costs take it
// past the byte bound, so that it is never held back for good.
func TestByteBoundTakesACallIntoAnEmptyWindow(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		cfg := config(core.Ephemeral)
		cfg.MaxCallBytes, cfg.MaxInflightBytes = 16, 16
		s := open(t, srv, cfg, streamio.Options{})
		for i := range 3 {
			off, err := s.IngestBatch(context.Background(), [][]byte{[]byte("{}"), []byte("{}")})
			if err != nil || off != int64(i) {
				t.Fatalf("batch %d = %d, %v", i, off, err)
			}
			if err := s.Wait(context.Background(), off); err != nil {
				t.Fatalf("Wait(%d): %v", off, err)
			}
		}
	})
}

// TestByteBoundLeavesRefusalsToTheMachine: with the bound reached, a call
// the machine refuses at once (over the per-call limit) is refused at
// once, and an empty batch, which takes no slot, returns at once, rather
// than waiting for room.
func TestByteBoundLeavesRefusalsToTheMachine(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: 10 * time.Second, Times: memtransport.Unlimited})
		cfg := config(core.Ephemeral)
		cfg.MaxCallBytes = 16
		cfg.MaxInflightBytes = 2 + streamio.CallCost + streamio.RecordCost
		s := open(t, srv, cfg, streamio.Options{})
		if _, err := s.IngestRecord(context.Background(), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		res := async(func() ingestResult {
			off, err := s.IngestRecord(context.Background(), make([]byte, 40))
			return ingestResult{off, err}
		})
		var limit *core.LimitError
		if r, ok := poll(res); !ok || !errors.As(r.err, &limit) {
			t.Fatalf("a record over the per-call limit with the bound reached: %v, returned %v; want a *core.LimitError at once", r.err, ok)
		}
		empty := async(func() ingestResult {
			off, err := s.IngestBatch(context.Background(), nil)
			return ingestResult{off, err}
		})
		if r, ok := poll(empty); !ok || r.err != nil || r.off != core.NoOffset {
			t.Fatalf("an empty batch with the bound reached = %d, %v, returned %v; want NoOffset, nil at once", r.off, r.err, ok)
		}
	})
}
