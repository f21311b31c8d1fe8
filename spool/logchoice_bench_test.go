package spool

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkLogChoice measures the two candidate logs on the same disk, in
// the same run: the segment log of this package (append, CRC-32C, one
// fsync per group, segments removed whole) and bbolt, the embedded store
// the module already has (one Update transaction per group: B+tree pages
// copied on write, data and meta page synced). An op is one group commit
// of 1 KiB entries; every 64 commits the entries written so far are
// dropped (segments removed, keys deleted), as the spool does once they
// are durable. It reports the commit latency and the bytes on disk at the
// end.
//
//	go test ./spool -run '^$' -bench BenchmarkLogChoice -benchtime 200x
func BenchmarkLogChoice(b *testing.B) {
	rec := bytes.Repeat([]byte{'x'}, 1024)
	for _, group := range []int{1, 16} {
		b.Run(fmt.Sprintf("segment/group=%d", group), func(b *testing.B) {
			dir := benchLogDir(b)
			w, _, err := openWAL(dir, 256<<10, -1)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.start(0); err != nil {
				b.Fatal(err)
			}
			defer w.close()
			var buf []byte
			next := int64(0)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if a := w.active(); a.size >= w.segmentBytes {
					if err := w.roll(a.next); err != nil {
						b.Fatal(err)
					}
				}
				buf = buf[:0]
				first := next
				for range group {
					buf = appendEntry(buf, &entry{offset: next, group: first, records: [][]byte{rec}})
					next++
				}
				if err := w.append(buf, next-1); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					if _, err := w.trim(next - 1); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportLog(b, start, group, dirBytes(b, dir))
		})
		b.Run(fmt.Sprintf("bbolt/group=%d", group), func(b *testing.B) {
			dir := benchLogDir(b)
			db, err := bolt.Open(filepath.Join(dir, "spool.db"), 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			name := []byte("log")
			if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(name); return err }); err != nil {
				b.Fatal(err)
			}
			next, trimmed := uint64(0), uint64(0)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				err := db.Update(func(tx *bolt.Tx) error {
					bk := tx.Bucket(name)
					for range group {
						if err := bk.Put(binary.BigEndian.AppendUint64(nil, next), rec); err != nil {
							return err
						}
						next++
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					err := db.Update(func(tx *bolt.Tx) error {
						bk := tx.Bucket(name)
						for ; trimmed < next; trimmed++ {
							if err := bk.Delete(binary.BigEndian.AppendUint64(nil, trimmed)); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			reportLog(b, start, group, dirBytes(b, dir))
		})
	}
}

func benchLogDir(b *testing.B) string {
	if d := os.Getenv("ZBSTREAM_SPOOL_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "logchoice-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func reportLog(b *testing.B, start time.Time, group int, onDisk int64) {
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(el.Microseconds())/float64(b.N), "us/commit")
	b.ReportMetric(float64(b.N*group)/el.Seconds(), "records/s")
	b.ReportMetric(float64(onDisk)/1024, "KiB-on-disk")
}

func dirBytes(b *testing.B, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}
