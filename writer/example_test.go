package writer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/writer"
)

// ExampleWriter routes records to three tables through at most two open
// streams, as a change-data-capture sink does: a table's stream is closed
// when its slot is needed and resumed when the table is written again.
// The stream ids are kept in a file, so that a new process resumes every
// table's stream and replays each table's source after its watermark;
// Flush makes every table durable before the source position would be
// committed.
func ExampleWriter() {
	srv, endpoint := startServer(server.AllTables) // a local reference server, plaintext
	defer srv.Stop()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "zbstream-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	store, err := writer.OpenFileStore(filepath.Join(dir, "streams.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := writer.New(client, writer.Config{MaxOpenStreams: 2, Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}

	tables := []string{"main.shop.orders", "main.shop.refunds", "main.shop.users"}
	// Each table's source: one record per call, so offset i is record i.
	// A new process starts after the watermark (none yet: NoOffset+1 is 0).
	next := map[string]int64{}
	for _, table := range tables {
		wm, err := w.Watermark(ctx, table)
		if err != nil {
			fmt.Println(err)
			return
		}
		next[table] = wm + 1
	}
	for round := range 2 {
		for _, table := range tables {
			if int64(round) < next[table] {
				continue // already on the server
			}
			off, err := w.IngestJSON(ctx, table, map[string]int{"seq": round})
			if err != nil {
				fmt.Println(err) // a *writer.TableError naming the table
				return
			}
			fmt.Println(table, "offset", off)
		}
	}
	if err := w.Flush(ctx); err != nil {
		fmt.Println(err) // one *writer.TableError per table not durable
		return
	}
	// Here the source position would be committed.
	if err := w.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	st := w.Stats()
	fmt.Println("tables:", st.Tables, "created:", st.Creates, "resumed:", st.Resumes, "evicted:", st.Evictions)
	// Output:
	// main.shop.orders offset 0
	// main.shop.refunds offset 0
	// main.shop.users offset 0
	// main.shop.orders offset 1
	// main.shop.refunds offset 1
	// main.shop.users offset 1
	// tables: 3 created: 3 resumed: 3 evicted: 4
}
