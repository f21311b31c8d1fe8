package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
)

// Environment of the child process of TestWriterProcessRestart.
const (
	envWriterChild    = "ZBSTREAM_WRITER_CHILD"
	envWriterEndpoint = "ZBSTREAM_WRITER_ENDPOINT"
	envWriterToken    = "ZBSTREAM_WRITER_TOKEN"
	envWriterStore    = "ZBSTREAM_WRITER_STORE"
	envWriterTables   = "ZBSTREAM_WRITER_CHILD_TABLES"
	envWriterRecords  = "ZBSTREAM_WRITER_CHILD_RECORDS"
)

// Sizes of TestWriterProcessRestart: tables, records per table (one per
// call, so offset n is record n), and records written to a table before
// the writer moves to the next.
const (
	restartTables = 30
	restartPer    = 400
	restartChunk  = 50
)

// TestWriterProcessRestart: a child process writes many tables' sources
// through a Writer with a FileStreamStore and is killed with SIGKILL
// mid-way, three times; each new child opens the store, reads every
// table's watermark (resuming its stream by the stored id) and replays
// that table's source from the record after it. The server ends with
// every record of every table once, in order, in one stream per table.
func TestWriterProcessRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	e := startAllTables(t)
	store := filepath.Join(t.TempDir(), "streams.json")
	for round := range 4 {
		var stderr bytes.Buffer
		cmd, lines, err := startChild([]string{"-test.run=^TestWriterProcessRestartChild$", "-test.v"}, []string{envWriterChild + "=1",
			envWriterEndpoint + "=http://" + e.ts.Addr, envWriterToken + "=" + e.ts.Token, envWriterStore + "=" + store,
			envWriterTables + "=" + strconv.Itoa(restartTables), envWriterRecords + "=" + strconv.Itoa(restartPer)}, &stderr)
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
			// Kill the first three children once they have made progress
			// of their own, with calls in flight.
			if round < 3 && progress == 4+6*round {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		err = cmd.Wait()
		t.Logf("round %d: the child resumed with %s records on the server; exit: %v", round, resumed, err)
		switch {
		case resumed == "":
			t.Fatalf("round %d: the child never started writing: %v\n%s", round, err, stderr.String())
		case round < 3 && err == nil:
			t.Fatalf("round %d: the child finished before it was killed", round)
		case round == 3 && err != nil:
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
	client, err := zbstream.NewClient(os.Getenv(envWriterEndpoint), zbstream.WithToken(os.Getenv(envWriterToken)))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	store, err := zbstream.OpenFileStreamStore(os.Getenv(envWriterStore))
	if err != nil {
		t.Fatal(err)
	}
	w, err := zbstream.NewWriter(client, zbstream.WriterConfig{MaxOpenStreams: 4, Store: store, Options: fast(),
		OnAck: func(table string, off int64) {
			if off%100 == 99 {
				fmt.Println("durable", table, off)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Every table's source replays from the record after its watermark.
	next := make([]int, tables)
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
			for n := max(c, next[i]); n < c+restartChunk && n < per; n++ {
				off, err := w.IngestRecord(ctx, wTable(i), wRec(i, n))
				if err != nil {
					t.Fatal(err)
				}
				if off != int64(n) {
					t.Fatalf("table %s: record %d got offset %d", wTable(i), n, off)
				}
			}
			time.Sleep(time.Millisecond) // let the parent's kill land mid-stream
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
