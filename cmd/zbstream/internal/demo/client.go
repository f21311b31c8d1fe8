package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// record is source record i: a JSON object of about size bytes whose
// seq field is i, the same on every run.
func record(i, size int) []byte {
	head := fmt.Sprintf(`{"seq":%d,"pad":"`, i)
	pad := max(size-len(head)-2, 0)
	return []byte(head + strings.Repeat(string(rune('a'+i%26)), pad) + `"}`)
}

// status is what a client process reports, as "status {json}" lines.
type status struct {
	// Durable is the number of source records known durable (a prefix).
	Durable int `json:"durable"`
	// ResumedAt is the stream's watermark when this process resumed it.
	ResumedAt int64          `json:"resumed_at"`
	Stats     zbstream.Stats `json:"stats"`
	// Latency counts acks by latency bucket: bucket b holds latencies in
	// [2^(b-1), 2^b) microseconds.
	Latency [40]int64 `json:"latency"`
}

// client is the demo's client process: it resumes the persistent
// stream (or, with -ephemeral, creates a new stream) and ingests the
// source from where the stream's watermark says, reporting its progress,
// until the source is done or it is killed.
func client(ctx context.Context, cfg config, stdout io.Writer) error {
	client, err := zbstream.NewClient("http://"+cfg.Addr, zbstream.WithToken(cfg.Token))
	if err != nil {
		return err
	}
	defer client.Close()

	calls := (cfg.Records + cfg.Batch - 1) / cfg.Batch
	sentAt := make([]atomic.Int64, calls+1) // by offset - first; the ingest time, Unix ns
	var first atomic.Int64
	var mu sync.Mutex
	var st status
	onAck := func(off int64) {
		if i := off - first.Load(); i >= 0 && i < int64(len(sentAt)) {
			if t := sentAt[i].Load(); t != 0 {
				us := max(time.Since(time.Unix(0, t)).Microseconds(), 1)
				mu.Lock()
				st.Latency[min(bits.Len64(uint64(us)), len(st.Latency)-1)]++
				mu.Unlock()
			}
		}
	}
	opts := []zbstream.StreamOption{
		zbstream.WithOnAck(onAck),
		// A window of a few hundred calls keeps ack latency (and what a
		// reconnect resends) small; the default million suits bulk loads.
		zbstream.WithMaxInflight(500, 64<<20),
		zbstream.WithRetries(1000), zbstream.WithBackoff(zbstream.Backoff{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond}),
		zbstream.WithOpenTimeout(3 * time.Second), zbstream.WithAckTimeout(10 * time.Second),
	}
	var s *zbstream.Stream
	next := cfg.StartAt // source position of the next call
	if cfg.Ephemeral {
		s, err = client.CreateStream(ctx, demoTable, opts...)
		st.ResumedAt = -1
	} else {
		s, err = client.ResumeStream(ctx, demoTable, cfg.StreamID, opts...)
		if err == nil {
			// One call per batch of the source: offset k is source
			// records [k*batch, (k+1)*batch). Replay after the watermark.
			st.ResumedAt = s.LastDurable()
			next = int(st.ResumedAt+1) * cfg.Batch
		}
	}
	if err != nil {
		return err
	}
	base := next // source position of offset first
	first.Store(s.LastAssigned() + 1)

	report := func() {
		mu.Lock()
		defer mu.Unlock()
		st.Stats = s.Stats()
		st.Durable = min(base+int(s.LastDurable()+1-first.Load())*cfg.Batch, cfg.Records)
		b, _ := json.Marshal(st)
		fmt.Fprintf(stdout, "status %s\n", b)
	}
	stop := cli.Every(100*time.Millisecond, report)
	defer stop()

	for next < cfg.Records {
		n := min(cfg.Batch, cfg.Records-next)
		recs := make([][]byte, n)
		for j := range recs {
			recs[j] = record(next+j, cfg.RecordSize)
		}
		sentAt[s.LastAssigned()+1-first.Load()].Store(time.Now().UnixNano())
		if _, err := s.IngestBatch(ctx, recs); err != nil {
			return err
		}
		next += n
	}
	err = s.Close(ctx)
	stop()
	report()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "done")
	return nil
}
