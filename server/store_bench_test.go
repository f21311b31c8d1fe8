package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkStoreAppend measures Append throughput of each engine: every
// writer appends batches of 100 records of 1 KiB to its own stream, 1, 4
// and 16 writers at once. One op is one Append of one batch; records/s and
// MB/s are over the whole run. For the durable engine, commits/op is the
// number of group commits (each one sync of the database file) per Append.
// The memory engine keeps every record, so a run holds b.N x 100 KiB in
// memory: the default -benchtime of 1s peaks at about 4 GB; do not raise it
// much on a 24 GiB machine.
//
//	go test ./server -run '^$' -bench StoreAppend
func BenchmarkStoreAppend(b *testing.B) {
	const recordSize, batchLen = 1024, 100
	record := make([]byte, recordSize)
	for i := range record {
		record[i] = byte(i)
	}
	records := make([][]byte, batchLen)
	for i := range records {
		records[i] = record
	}
	engines := []struct {
		name string
		open func(b *testing.B) Store
	}{
		{"memory", func(b *testing.B) Store { return NewMemoryStore() }},
		{"bolt", func(b *testing.B) Store {
			s, err := OpenBoltStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, e := range engines {
		for _, writers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("engine=%s/writers=%d", e.name, writers), func(b *testing.B) {
				ctx := context.Background()
				s := e.open(b)
				defer s.Close()
				ids := make([]string, writers)
				for w := range ids {
					m, _, err := s.CreateStream(ctx, StreamMeta{ID: fmt.Sprintf("bench-%02d", w), Kind: KindEphemeral})
					if err != nil {
						b.Fatal(err)
					}
					ids[w] = m.ID
				}
				var commits0 int64
				bs, durable := s.(*BoltStore)
				if durable {
					commits0 = bs.commits.Load()
				}
				b.SetBytes(recordSize * batchLen)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := range writers {
					// Writer w does appends w, w+writers, ... of b.N.
					n := b.N / writers
					if w < b.N%writers {
						n++
					}
					wg.Go(func() {
						for off := range int64(n) {
							if err := s.Append(ctx, ids[w], []Batch{{Offset: off, Records: records}}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start).Seconds()
				b.StopTimer()
				recs := float64(b.N) * batchLen
				b.ReportMetric(recs/elapsed, "records/s")
				b.ReportMetric(recs*recordSize/elapsed/1e6, "MB/s")
				if durable {
					b.ReportMetric(float64(bs.commits.Load()-commits0)/float64(b.N), "commits/op")
				}
			})
		}
	}
}
