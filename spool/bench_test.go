package spool_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
)

// envBenchDir puts the benchmarks' spools (and the fsync probe) in a
// directory of the caller's choice, on the disk to be judged; the default
// is the test's temporary directory.
const envBenchDir = "ZBSTREAM_SPOOL_BENCH_DIR"

func benchDir(b *testing.B) string {
	if d := os.Getenv(envBenchDir); d != "" {
		dir, err := os.MkdirTemp(d, "spool-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// BenchmarkSpool compares spooled with plain ingest into a persistent
// stream on the ack-only engine: 1 KiB JSON records, 1 and 16 goroutines,
// one record per call and batches of 100. Each reports records/s (until
// every call is durable), the p50 and p99 latency of a call, and for the
// spool the fsyncs per call. The fsync case measures what this machine's
// disk gives for one 4 KiB write and fsync, in the same run.
//
//	go test ./spool -run '^$' -bench BenchmarkSpool -benchtime 2s
func BenchmarkSpool(b *testing.B) {
	b.Run("fsync", benchFsync)
	ts := servertest.Start(b, servertest.AckOnly())
	client, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	rec := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte{'x'}, 1024-11)...), '"', '}')
	for _, mode := range []string{"plain", "spool"} {
		for _, g := range []int{1, 16} {
			for _, batch := range []int{1, 100} {
				b.Run(fmt.Sprintf("%s/goroutines=%d/batch=%d", mode, g, batch), func(b *testing.B) {
					benchIngest(b, client, ts.Table, mode == "spool", g, batch, rec)
				})
			}
		}
	}
}

func benchFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(benchDir(b), "probe"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'x'}, 4096)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(us(el)/float64(b.N), "us/fsync")
	b.ReportMetric(us(lat[len(lat)/2]), "p50-us")
	b.ReportMetric(us(lat[len(lat)*99/100]), "p99-us")
}

// us returns d in microseconds.
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// ingester is a spool or a plain stream.
type ingester interface {
	IngestRecord(ctx context.Context, record []byte) (int64, error)
	IngestBatch(ctx context.Context, records [][]byte) (int64, error)
	Flush(ctx context.Context) error
}

func benchIngest(b *testing.B, client *zbstream.Client, table string, spooled bool, goroutines, batch int, rec []byte) {
	ctx := context.Background()
	var (
		in    ingester
		sp    *spool.Spool
		plain *zbstream.Stream
		err   error
	)
	if spooled {
		sp, err = spool.Open(ctx, client, spool.Options{Dir: benchDir(b), Table: table})
		in = sp
	} else {
		plain, err = client.CreatePersistentStream(ctx, table)
		in = plain
	}
	if err != nil {
		b.Fatal(err)
	}
	recs := make([][]byte, batch)
	for i := range recs {
		recs[i] = rec
	}
	var next atomic.Int64
	lat := make([][]time.Duration, goroutines)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				var err error
				if batch == 1 {
					_, err = in.IngestRecord(ctx, rec)
				} else {
					_, err = in.IngestBatch(ctx, recs)
				}
				lat[g] = append(lat[g], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := in.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N*batch)/el.Seconds(), "records/s")
	b.ReportMetric(us(all[len(all)/2]), "p50-us")
	b.ReportMetric(us(all[len(all)*99/100]), "p99-us")
	if spooled {
		st := sp.Stats()
		b.ReportMetric(float64(st.Syncs)/float64(st.Calls), "syncs/call")
		err = sp.Close(ctx)
	} else {
		err = plain.Close(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
}
