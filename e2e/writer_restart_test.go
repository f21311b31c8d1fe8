package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/testseed"
	"github.com/zbstream/zbstream/writer"
)

// Environment of the child process of TestWriterProcessRestart.
const (
	envWriterChild    = "ZBSTREAM_WRITER_CHILD"
	envWriterEndpoint = "ZBSTREAM_WRITER_ENDPOINT"
	envWriterToken    = "ZBSTREAM_WRITER_TOKEN"
	envWriterStore    = "ZBSTREAM_WRITER_STORE"
	envWriterTables   = "ZBSTREAM_WRITER_CHILD_TABLES"
	envWriterRecords  = "ZBSTREAM_WRITER_CHILD_RECORDS"
	envWriterBatch    = "ZBSTREAM_WRITER_CHILD_BATCH"
)

// Sizes of TestWriterProcessRestart: tables, records per table (call k
// holds records k*batch up to the next call's), and records written to a
// table before the writer moves to the next.
const (
	restartTables = 30
	restartPer    = 400
	restartChunk  = 50
)

// TestWriterProcessRestart: a child process writes many tables' sources
// through a Writer with a FileStore, with fewer open streams than
// tables, and is killed with SIGKILL at a random point (once it has made
// progress of its own, with calls in flight), five times; each new child
// opens the store, reads every table's watermark (resuming its stream by
// the stored id) and replays that table's source from the call after it.
// The server ends with every record of every table once, in order, in one
// stream per table. It runs with one record per call and with batches of
// seven (issue 25: the Writer's contract under kills with batches for many
// tables in flight); ZBSTREAM_WRITER_SEED replays a run's kill points.
func TestWriterProcessRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	seed := testseed.Seed(t, "ZBSTREAM_WRITER_SEED")
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, batch := range []int{1, 7} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) { writerProcessRestart(t, rng, batch) })
	}
}

// writerProcessRestart is TestWriterProcessRestart with batch records per
// call.
func writerProcessRestart(t *testing.T, rng *rand.Rand, batch int) {
	const kills = 5
	e := startAllTables(t)
	store := filepath.Join(t.TempDir(), "streams.json")
	for round := range kills + 1 {
		killAt := 1 + rng.IntN(12) // progress lines seen in this round
		var stderr bytes.Buffer
		cmd, lines, err := startChild([]string{"-test.run=^TestWriterProcessRestartChild$", "-test.v"}, []string{envWriterChild + "=1",
			envWriterEndpoint + "=http://" + e.ts.Addr, envWriterToken + "=" + e.ts.Token, envWriterStore + "=" + store,
			envWriterTables + "=" + strconv.Itoa(restartTables), envWriterRecords + "=" + strconv.Itoa(restartPer),
			envWriterBatch + "=" + strconv.Itoa(batch)}, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		resumed, progress := "", 0
		for lines.Scan() {
			line := lines.Text()
			if s, ok := strings.CutPrefix(line, "resumed "); ok {
				resumed = s
			}
			if strings.HasPrefix(line, "durable ") {
				progress++
			}
			if round < kills && progress == killAt {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		err = cmd.Wait()
		t.Logf("round %d: the child resumed with %s calls on the server, to be killed after %d progress lines (none in the last round); exit: %v", round, resumed, killAt, err)
		switch {
		case resumed == "":
			t.Fatalf("round %d: the child never started writing: %v\n%s", round, err, stderr.String())
		case round < kills && err == nil:
			t.Fatalf("round %d: the child finished before it was killed", round)
		case round == kills && err != nil:
			t.Fatalf("the last child failed: %v\n%s", err, stderr.String())
		}
	}
	want := map[string][][]byte{}
	for i := range restartTables {
		for n := range restartPer {
			want[wTable(i)] = append(want[wTable(i)], wRec(i, n))
		}
	}
	wantTables(t, e.ts, want)
}

// TestWriterProcessRestartChild is the child process of
// TestWriterProcessRestart; it is skipped unless run as that child.
func TestWriterProcessRestartChild(t *testing.T) {
	if os.Getenv(envWriterChild) != "1" {
		t.Skip("the child of TestWriterProcessRestart")
	}
	ctx := context.Background()
	tables, _ := strconv.Atoi(os.Getenv(envWriterTables))
	per, _ := strconv.Atoi(os.Getenv(envWriterRecords))
	batch, _ := strconv.Atoi(os.Getenv(envWriterBatch))
	client, err := zbstream.NewClient(os.Getenv(envWriterEndpoint), zbstream.WithToken(os.Getenv(envWriterToken)))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store, err := writer.OpenFileStore(os.Getenv(envWriterStore))
	if err != nil {
		t.Fatal(err)
	}
	w, err := writer.New(client, writer.Config{MaxOpenStreams: 4, Store: store, Options: fast(),
		OnAck: func(table string, off int64) {
			if off%10 == 9 {
				fmt.Println("durable", table, off)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Every table's source replays from the call after its watermark:
	// call k is records k*batch up to (k+1)*batch.
	next := make([]int, tables) // per table, the next call
	onServer := 0
	for i := range tables {
		wm, err := w.Watermark(ctx, wTable(i))
		if err != nil {
			t.Fatal(err)
		}
		next[i] = int(wm + 1)
		onServer += next[i]
	}
	fmt.Println("resumed", onServer)
	for c := 0; c < per; c += restartChunk {
		for i := range tables {
			for ; next[i]*batch < min(c+restartChunk, per); next[i]++ {
				var recs [][]byte
				for n := next[i] * batch; n < min((next[i]+1)*batch, per); n++ {
					recs = append(recs, wRec(i, n))
				}
				off, err := w.IngestBatch(ctx, wTable(i), recs)
				if err != nil {
					t.Fatal(err)
				}
				if off != int64(next[i]) {
					t.Fatalf("table %s: call %d got offset %d", wTable(i), next[i], off)
				}
			}
			time.Sleep(time.Millisecond) // let the parent's kill land mid-stream
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
