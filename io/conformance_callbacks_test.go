package io_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// A callback that panics fails the stream with a *CallbackPanicError; the
// process goes on.
func TestCallbackPanic(t *testing.T) {
	boom := errors.New("boom")
	for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
		t.Run(kind.String(), func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				var r recorder
				opts := r.options()
				record := opts.OnAck
				opts.OnAck = func(o int64) {
					record(o)
					if o == 1 {
						panic(boom)
					}
				}
				s := open(t, srv, config(kind), opts)
				ingestN(t, s, 2, 0)
				<-s.Done()
				err := s.Err()
				var pe *streamio.CallbackPanicError
				if !errors.As(err, &pe) || pe.Offset != 1 || pe.Value != boom {
					t.Fatalf("Err = %v, want a *CallbackPanicError for offset 1 with the panic value", err)
				}
				wantIs(t, "Err", err, streamio.ErrCallbackPanic)
				wantIs(t, "Err", err, boom)
				wantIs(t, "Close", s.Close(context.Background()), streamio.ErrCallbackPanic)
				off, err := s.IngestRecord(context.Background(), rec(2))
				if off != core.NoOffset || !errors.Is(err, core.ErrStreamFailed) || !errors.Is(err, streamio.ErrCallbackPanic) {
					t.Fatalf("IngestRecord after the panic = %d, %v", off, err)
				}
				acked, _, _ := r.snapshot()
				wantOffsets(t, "acked", acked, []int64{0, 1})
			})
		})
	}
}

// A slow callback applies backpressure: once Options.CallbackQueue offsets
// wait for their callback, ingest blocks until callbacks catch up.
func TestCallbackBackpressure(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		gate := make(chan struct{})
		var r recorder
		opts := r.options()
		record := opts.OnAck
		opts.OnAck = func(o int64) {
			<-gate
			record(o)
		}
		opts.CallbackQueue = 2
		s := open(t, srv, config(core.Ephemeral), opts)
		release := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(release) // before the Close that open registered
		ingestN(t, s, 2, 0)
		synctest.Wait() // both acks are in: 2 callbacks wait
		res := asyncIngest(context.Background(), s, 2)
		if r, ok := poll(res); ok {
			t.Fatalf("IngestRecord returned %d, %v with 2 callbacks queued", r.off, r.err)
		}
		if st := s.Stats(); st.Accepted != 2 || st.Acknowledged != 2 || st.InFlightCalls != 0 {
			t.Fatalf("Stats = %+v, want both acknowledged: the window is not what blocks", st)
		}
		release()
		if r := <-res; r.err != nil || r.off != 2 {
			t.Fatalf("IngestRecord = %d, %v; want 2", r.off, r.err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		acked, _, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 3))
	})
}
