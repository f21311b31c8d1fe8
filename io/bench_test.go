package io_test

import (
	"context"
	"fmt"
	"sync"
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
						benchDriver(b, merge, noCopy, batch, producers)
					})
				}
			}
		}
	}
}

func benchDriver(b *testing.B, mergeAcks, noCopy bool, batch, producers int) {
	srv := memtransport.NewServer(memtransport.Options{AckOnly: true, MergeAcks: mergeAcks})
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "bench"
	ctx := context.Background()
	s, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{NoCopy: noCopy})
	if err != nil {
		b.Fatal(err)
	}
	rec := make([]byte, 1024)
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
