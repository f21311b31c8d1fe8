// Command storebench measures the two candidate durable engines for the
// reference server's Store (issue 3) on the Append pattern: N concurrent
// writers (one stream each) append batches of 100 x 1 KiB records; each
// Append stores the batch and the stream's new watermark in one atomic,
// synced write, after checking that the batch's offset is watermark+1.
//
// Engines:
//
//   - bbolt-batch: go.etcd.io/bbolt, group commit through db.Batch (its
//     default MaxBatchDelay of 10 ms and MaxBatchSize of 1000).
//   - bbolt-committer: go.etcd.io/bbolt, group commit through one committer
//     goroutine that takes every queued request, applies them in one
//     db.Update (one commit, one sync) and answers each.
//   - pebble: github.com/cockroachdb/pebble/v2, one pebble.Batch per Append
//     committed with pebble.Sync; pebble's commit pipeline shares one WAL
//     fsync among concurrent Sync commits. Pebble has no read-modify-write
//     transactions, so the watermark check runs under a per-stream mutex
//     against an in-memory copy of the watermark.
//
// It lives in its own module so that the engine not chosen stays out of the
// main module's go.mod. Run: go run . -dir /tmp -dur 3s
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
	bolt "go.etcd.io/bbolt"
)

type engine interface {
	// appendBatch stores value under (stream, off) and sets the stream's
	// watermark to off, atomically and durably, if the watermark is off-1.
	appendBatch(stream int, off int64, value []byte) error
	// syncs returns how many commits (bbolt) or WAL fsyncs (pebble) ran.
	syncs() int64
	close() error
}

func main() {
	dir := flag.String("dir", os.TempDir(), "parent directory for the data directories (use a real disk)")
	dur := flag.Duration("dur", 3*time.Second, "duration of each run")
	writersFlag := flag.String("writers", "1,4,16", "comma-separated counts of concurrent writers")
	enginesFlag := flag.String("engines", "bbolt-batch,bbolt-committer,pebble", "comma-separated engines")
	recSize := flag.Int("recsize", 1024, "record size in bytes")
	batchLen := flag.Int("batch", 100, "records per batch")
	flag.Parse()

	var writers []int
	for _, w := range strings.Split(*writersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			log.Fatalf("bad -writers %q", *writersFlag)
		}
		writers = append(writers, n)
	}
	value := encodeBatch(*recSize, *batchLen)

	fmt.Printf("%-16s %7s %12s %9s %10s %13s %12s\n", "engine", "writers", "records/s", "MB/s", "appends", "syncs/append", "mean lat")
	for _, name := range strings.Split(*enginesFlag, ",") {
		for _, w := range writers {
			d, err := os.MkdirTemp(*dir, "storebench-")
			if err != nil {
				log.Fatal(err)
			}
			e, err := open(name, filepath.Join(d, "db"), w)
			if err != nil {
				log.Fatal(err)
			}
			appends, syncs, elapsed, lat := run(e, w, *dur, value)
			if err := e.close(); err != nil {
				log.Fatal(err)
			}
			os.RemoveAll(d)
			recs := float64(appends * int64(*batchLen))
			secs := elapsed.Seconds()
			fmt.Printf("%-16s %7d %12.0f %9.1f %10d %13.3f %12s\n", name, w, recs/secs,
				recs*float64(*recSize)/secs/1e6, appends, float64(syncs)/float64(appends), lat.Round(10*time.Microsecond))
		}
	}
}

// encodeBatch builds the stored value of one batch: uvarint count, then per
// record uvarint length and bytes (the layout the server engine uses).
func encodeBatch(recSize, n int) []byte {
	rec := make([]byte, recSize)
	for i := range rec {
		rec[i] = byte(i * 7)
	}
	var v []byte
	v = binary.AppendUvarint(v, uint64(n))
	for range n {
		v = binary.AppendUvarint(v, uint64(recSize))
		v = append(v, rec...)
	}
	return v
}

func run(e engine, writers int, dur time.Duration, value []byte) (appends, syncs int64, elapsed, meanLat time.Duration) {
	var total, latSum atomic.Int64
	s0 := e.syncs()
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for off := int64(0); time.Now().Before(deadline); off++ {
				t := time.Now()
				if err := e.appendBatch(w, off, value); err != nil {
					log.Fatal(err)
				}
				latSum.Add(int64(time.Since(t)))
				total.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	n := total.Load()
	return n, e.syncs() - s0, elapsed, time.Duration(latSum.Load() / max(n, 1))
}

func open(name, path string, writers int) (engine, error) {
	switch name {
	case "bbolt-batch":
		return openBolt(path, false)
	case "bbolt-committer":
		return openBolt(path, true)
	case "pebble":
		return openPebble(path, writers)
	}
	return nil, fmt.Errorf("unknown engine %q", name)
}

// --- bbolt ---

var (
	bucketRecs = []byte("recs")
	bucketWM   = []byte("wm")
)

type boltEngine struct {
	db        *bolt.DB
	committer bool
	reqs      chan *boltReq
	done      chan struct{}
}

type boltReq struct {
	stream int
	off    int64
	value  []byte
	err    chan error
}

func openBolt(path string, committer bool) (*boltEngine, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketRecs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketWM)
		return err
	}); err != nil {
		return nil, err
	}
	e := &boltEngine{db: db, committer: committer}
	if committer {
		e.reqs = make(chan *boltReq, 1024)
		e.done = make(chan struct{})
		go e.commitLoop()
	}
	return e, nil
}

func streamKey(stream int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(stream)) }

func recKey(stream int, off int64) []byte {
	return binary.BigEndian.AppendUint64(streamKey(stream), uint64(off))
}

var errGap = errors.New("offset is not watermark+1")

func boltApply(tx *bolt.Tx, stream int, off int64, value []byte) error {
	wmB, recB := tx.Bucket(bucketWM), tx.Bucket(bucketRecs)
	wm := int64(-1)
	if v := wmB.Get(streamKey(stream)); v != nil {
		wm = int64(binary.BigEndian.Uint64(v))
	}
	if off != wm+1 {
		return errGap
	}
	if err := recB.Put(recKey(stream, off), value); err != nil {
		return err
	}
	return wmB.Put(streamKey(stream), binary.BigEndian.AppendUint64(nil, uint64(off)))
}

func (e *boltEngine) appendBatch(stream int, off int64, value []byte) error {
	if !e.committer {
		return e.db.Batch(func(tx *bolt.Tx) error { return boltApply(tx, stream, off, value) })
	}
	r := &boltReq{stream: stream, off: off, value: value, err: make(chan error, 1)}
	e.reqs <- r
	return <-r.err
}

func (e *boltEngine) commitLoop() {
	defer close(e.done)
	for r := range e.reqs {
		group := []*boltReq{r}
	drain:
		for len(group) < 1000 {
			select {
			case r2, ok := <-e.reqs:
				if !ok {
					break drain
				}
				group = append(group, r2)
			default:
				break drain
			}
		}
		errs := make([]error, len(group))
		err := e.db.Update(func(tx *bolt.Tx) error {
			for i, r := range group {
				errs[i] = boltApply(tx, r.stream, r.off, r.value)
			}
			return nil
		})
		for i, r := range group {
			r.err <- cmpErr(err, errs[i])
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// syncs counts commits: each bbolt commit is two fdatasyncs (data pages,
// then the meta page), counted here as one group commit.
func (e *boltEngine) syncs() int64 {
	var id int
	_ = e.db.View(func(tx *bolt.Tx) error { id = int(tx.ID()); return nil })
	return int64(id)
}

func (e *boltEngine) close() error {
	if e.committer {
		close(e.reqs)
		<-e.done
	}
	return e.db.Close()
}

// --- pebble ---

type pebbleEngine struct {
	db *pebble.DB
	mu []sync.Mutex
	wm []int64
}

func openPebble(path string, writers int) (*pebbleEngine, error) {
	db, err := pebble.Open(path, &pebble.Options{})
	if err != nil {
		return nil, err
	}
	e := &pebbleEngine{db: db, mu: make([]sync.Mutex, writers), wm: make([]int64, writers)}
	for i := range e.wm {
		e.wm[i] = -1
	}
	return e, nil
}

func (e *pebbleEngine) appendBatch(stream int, off int64, value []byte) error {
	e.mu[stream].Lock()
	defer e.mu[stream].Unlock()
	if off != e.wm[stream]+1 {
		return errGap
	}
	b := e.db.NewBatch()
	defer b.Close()
	wmKey := append([]byte("w"), streamKey(stream)...)
	rk := append([]byte("r"), recKey(stream, off)...)
	if err := b.Set(rk, value, nil); err != nil {
		return err
	}
	if err := b.Set(wmKey, binary.BigEndian.AppendUint64(nil, uint64(off)), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	e.wm[stream] = off
	return nil
}

// syncs counts WAL fsyncs from pebble's fsync latency histogram.
func (e *pebbleEngine) syncs() int64 {
	h := e.db.Metrics().LogWriter.FsyncLatency
	if h == nil {
		return 0
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0
	}
	return int64(m.GetHistogram().GetSampleCount())
}

func (e *pebbleEngine) close() error { return e.db.Close() }
