package io_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// BenchmarkDriverIngest measures the driver's cost per ingest call over the
// in-memory transport against an ack-only server (nothing stored): one
// record per call or batches of 100 (1 KiB records), from 1 and from 8
// goroutines, until the last call is acknowledged. ns/op is per call;
// ns/record is reported beside it. acks=merged is a server that merges the
// acks a client has not read yet (acks are cumulative; the reference server
// does so), acks=every one that sends and delivers one ack per call.
// copy=arena is the default, where the stream copies every record;
// copy=none is Options.NoCopy.
func BenchmarkDriverIngest(b *testing.B) {
	for _, merge := range []bool{true, false} {
		for _, noCopy := range []bool{false, true} {
			for _, batch := range []int{1, 100} {
				for _, producers := range []int{1, 8} {
					acks, cp := "every", "arena"
					if merge {
						acks = "merged"
					}
					if noCopy {
						cp = "none"
					}
					b.Run(fmt.Sprintf("acks=%s/copy=%s/batch=%d/goroutines=%d", acks, cp, batch, producers), func(b *testing.B) {
						benchDriver(b, merge, noCopy, 1024, batch, producers, nil)
					})
				}
			}
		}
	}
}

// BenchmarkDriverIngestObserved is BenchmarkDriverIngest's default case
// (merged acks, arena copies, one goroutine) with an observer attached:
// observer=none is the same run without one, observer=plain an Observer, observer=events an EventObserver, told of
// every call with its details; both count what they are told.
func BenchmarkDriverIngestObserved(b *testing.B) {
	for _, batch := range []int{1, 100} {
		for _, obs := range []struct {
			name string
			o    streamio.Observer
		}{{"none", nil}, {"plain", &plainCounter{}}, {"events", &eventCounter{}}} {
			b.Run(fmt.Sprintf("observer=%s/batch=%d", obs.name, batch), func(b *testing.B) {
				benchDriver(b, true, false, 1024, batch, 1, obs.o)
			})
		}
	}
}

// BenchmarkDriverIngestSmallRecords is BenchmarkDriverIngest's default
// case (merged acks, arena copies, one goroutine) with 20-byte records,
// where what the driver does for each record of a batch beside copying it
// (sizing, framing) weighs as much as the copy.
func BenchmarkDriverIngestSmallRecords(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			benchDriver(b, true, false, 20, batch, 1, nil)
		})
	}
}

// plainCounter is an Observer that counts calls and records.
type plainCounter struct {
	streamio.NopObserver
	calls, records, durable atomic.Int64
}

func (c *plainCounter) Accepted(n int, _ int64) { c.calls.Add(1); c.records.Add(int64(n)) }

func (c *plainCounter) Completed(n int64, _ bool) { c.durable.Add(n) }

// eventCounter is an EventObserver that counts calls, records and
// latency, as a metrics adapter would.
type eventCounter struct {
	streamio.NopObserver
	calls, records, durable, latency atomic.Int64
}

func (c *eventCounter) Observe(e streamio.Event) {
	switch e.Kind {
	case streamio.EventAccepted:
		c.calls.Add(1)
		c.records.Add(int64(e.Records))
	case streamio.EventDurable:
		c.durable.Add(1)
		c.latency.Add(int64(e.Latency))
	}
}

func benchDriver(b *testing.B, mergeAcks, noCopy bool, size, batch, producers int, obs streamio.Observer) {
	srv := memtransport.NewServer(memtransport.Options{AckOnly: true, MergeAcks: mergeAcks})
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "bench"
	ctx := context.Background()
	s, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{NoCopy: noCopy, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, size)
	recs := make([][]byte, batch)
	for i := range recs {
		recs[i] = rec
	}
	ingest := func() error {
		var err error
		if batch == 1 {
			_, err = s.IngestRecord(ctx, rec)
		} else {
			_, err = s.IngestBatch(ctx, recs)
		}
		return err
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if producers == 1 {
		for range b.N {
			if err := ingest(); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var wg sync.WaitGroup
		per := b.N / producers
		for p := range producers {
			n := per
			if p == 0 {
				n += b.N % producers
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n {
					if err := ingest(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	if err := s.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
	// CPU time of the whole process (every goroutine: producers, senders,
	// readers, the in-memory server) per call: what the work costs, less
	// sensitive than wall time to other load on the machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
