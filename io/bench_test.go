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
// ns/record is reported beside it.
func BenchmarkDriverIngest(b *testing.B) {
	for _, batch := range []int{1, 100} {
		for _, producers := range []int{1, 8} {
			b.Run(fmt.Sprintf("batch=%d/goroutines=%d", batch, producers), func(b *testing.B) {
				benchDriver(b, batch, producers)
			})
		}
	}
}

func benchDriver(b *testing.B, batch, producers int) {
	srv := memtransport.NewServer(memtransport.Options{AckOnly: true})
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "bench"
	ctx := context.Background()
	s, err := streamio.Open(ctx, srv.Transport(), cfg, streamio.Options{})
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
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
