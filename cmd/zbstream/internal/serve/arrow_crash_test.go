package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// crashSchema is the schema of the crash test's rows: an id, unique over
// the run, and a name derived from it.
var crashSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
}, nil)

func crashName(id int64) string { return fmt.Sprintf("row %010d of the crash test", id) }

// crashBatch is batch i of the crash test: rows ids i*n .. i*n+n-1.
func crashBatch(i, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, crashSchema)
	defer b.Release()
	for id := i * n; id < (i+1)*n; id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(crashName(id))
	}
	return b.NewRecordBatch()
}

// TestServeArrowCrash: an Arrow stream ingests batches, each split into
// several frames, into a real "zbstream serve -engine bolt" process,
// which is killed with SIGKILL twice while frames are in flight and
// started again on the same address and data. The stream recovers by
// itself and every batch becomes durable; read back through the restarted
// server's admin API, every row is there, the rows acknowledged before
// each kill survived it, and those acknowledged before the first kill are
// there once: they were never sent again.
func TestServeArrowCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	const (
		perPhase = 60  // batches ingested between kills
		rows     = 300 // rows a batch: about 3 frames of 4 KiB
		tok      = "tok-crash"
	)
	bin := clitest.Binary(t)
	adminAddr := clitest.FreeAddr(t)
	srv := clitest.StartBoltServe(t, bin, filepath.Join(t.TempDir(), "data"), clitest.FreeAddr(t),
		"-admin", adminAddr, "-token", "crash:"+tok+":"+clitest.TableA)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cl, err := zbstream.NewClient("http://"+srv.Addr, zbstream.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := arrowflight.New(ctx, cl, clitest.TableA, crashSchema,
		arrowflight.WithMaxFrameBytes(4096),
		arrowflight.WithRetries(100), // an episode lasts until the server is back
		arrowflight.WithBackoff(zbstream.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	// The batches of phase p+1 are ingested once the server was killed p+1
	// times: the stream has work left after each kill, and must reconnect
	// to the restarted server to do it.
	killed := []chan struct{}{make(chan struct{}), make(chan struct{})}
	// reached[p] is closed once batch p*perPhase + perPhase/3 is ingested.
	reached := []chan struct{}{make(chan struct{}), make(chan struct{})}
	ingested := make(chan error, 1)
	go func() {
		for i := range int64(3 * perPhase) {
			if i%perPhase == 0 && i > 0 {
				select {
				case <-killed[i/perPhase-1]:
				case <-ctx.Done():
					ingested <- ctx.Err()
					return
				}
			}
			rec := crashBatch(i, rows)
			_, err := s.IngestBatch(ctx, rec)
			rec.Release()
			if err != nil {
				ingested <- fmt.Errorf("IngestBatch %d: %w", i, err)
				return
			}
			if p := i / perPhase; p < 2 && i%perPhase == perPhase/3 {
				close(reached[p])
			}
		}
		ingested <- nil
	}()

	// Kill once the first third of a phase is durable (the rest is being
	// sent), and start again at once.
	var ackedBefore []int64 // batches durable before each kill: 0 .. n-1
	for p := range 2 {
		last := int64(p*perPhase + perPhase/3)
		select {
		case <-reached[p]:
		case err := <-ingested:
			t.Fatalf("phase %d: ingestion ended: %v", p, err)
		}
		if err := s.Wait(ctx, last); err != nil {
			t.Fatalf("phase %d: Wait(%d): %v", p, last, err)
		}
		srv.Kill(t)
		t.Logf("kill %d: batches 0-%d durable, %d not yet", p+1, last, len(s.Unacked()))
		ackedBefore = append(ackedBefore, last+1)
		srv.Start(t)
		close(killed[p])
	}
	if err := <-ingested; err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush after the kills: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Read back through the restarted server.
	seen := map[int64]int{}
	url := "http://" + adminAddr
	var list []admin.StreamInfo
	if err := json.Unmarshal([]byte(cmds.WantCode(t, 0, "streams", "list", "-json", "-admin", url, "-token", tok)), &list); err != nil {
		t.Fatal(err)
	}
	streams := 0
	for _, info := range list {
		if info.RecordType != "arrow" {
			continue
		}
		streams++
		out := cmds.WantCode(t, 0, "streams", "records", info.ID, "-admin", url, "-token", tok)
		lines := bufio.NewScanner(strings.NewReader(out))
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			var row struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			}
			if err := json.Unmarshal(lines.Bytes(), &row); err != nil {
				t.Fatalf("stream %s: %q: %v", info.ID, lines.Text(), err)
			}
			if row.Name != crashName(row.ID) {
				t.Fatalf("stream %s: row %d holds %q", info.ID, row.ID, row.Name)
			}
			seen[row.ID]++
		}
	}
	total := int64(3 * perPhase * rows)
	twice := 0
	for id := range total {
		switch n := seen[id]; {
		case n == 0:
			t.Fatalf("row %d (batch %d) never landed; acknowledged before the kills: batches 0-%d, 0-%d", id, id/rows, ackedBefore[0]-1, ackedBefore[1]-1)
		case n > 1 && id < ackedBefore[0]*rows:
			t.Fatalf("row %d, acknowledged before the first kill, is stored %d times: it was sent again", id, n)
		case n > 1:
			twice++
		}
	}
	if len(seen) != int(total) {
		t.Fatalf("%d distinct rows stored, want %d", len(seen), total)
	}
	t.Logf("%d rows in %d Arrow streams (calls); %d stored more than once (sent, not acknowledged before a kill)", total, streams, twice)
	if streams < 3 {
		t.Fatalf("%d Arrow streams: the two kills did not each end a call", streams)
	}
}
