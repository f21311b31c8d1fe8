package boundarytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// The workload: streams of both kinds that send records smaller and larger
// than one arena block, while the server drops connections (the calls are
// resent) and commits without acknowledging (the calls are reconciled).
const (
	windowBytes = 4 << 20  // arena blocks of 64 KiB (1/64 of the window, at least 64 KiB)
	largeRecord = 96 << 10 // larger than a block: a block of its own, unmapped once durable
	callsPer    = 120      // calls per stream
)

// workload describes one run.
type workload struct {
	client []zbstream.Option
	noCopy bool
	// during runs while the streams are open, until they are closed.
	during func(stop <-chan struct{})
}

// record is the JSON record j of call c of stream s: large every seventh
// call, so that large and small records share calls and blocks.
func record(s, c, j int) []byte {
	pad := 200 + 37*j
	if c%7 == 3 {
		pad = largeRecord
	}
	b, _ := json.Marshal(map[string]any{"s": s, "c": c, "j": j, "pad": string(bytes.Repeat([]byte{'a' + byte(c%26)}, pad))})
	return b
}

// callRecords are the records of call c of stream s: every fifth call is a
// batch of three, the others one record.
func callRecords(s, c int) [][]byte {
	n := 1
	if c%5 == 0 {
		n = 3
	}
	recs := make([][]byte, n)
	for j := range recs {
		recs[j] = record(s, c, j)
	}
	return recs
}

// run ingests the workload into ts through a client made with w.client and
// checks that each persistent stream stored every record once, in order.
// It returns after the client is closed and every stream's memory is given
// back.
func (w workload) run(t *testing.T, ts *servertest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := append([]zbstream.Option{zbstream.WithToken(ts.Token)}, w.client...)
	client, err := zbstream.NewClient("http://"+ts.Addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	stop := make(chan struct{})
	var during sync.WaitGroup
	if w.during != nil {
		during.Go(func() { w.during(stop) })
	}
	kinds := []bool{true, true, false} // persistent, persistent, ephemeral
	ids := make([]string, len(kinds))
	var streams sync.WaitGroup
	errs := make(chan error, len(kinds))
	for i, persistent := range kinds {
		streams.Go(func() {
			id, err := w.stream(ctx, ts, client, i, persistent)
			ids[i] = id
			if err != nil {
				errs <- fmt.Errorf("stream %d: %w", i, err)
			}
		})
	}
	streams.Wait()
	close(stop)
	during.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for i, persistent := range kinds {
		if persistent {
			checkStored(t, ts, ids[i], i)
		}
	}
}

// stream runs one stream of the workload: it injects a dropped connection
// or a lost ack every few calls, and reuses (scribbles over) its buffers as
// soon as a call returns, or, with noCopy, once the stream is closed.
func (w workload) stream(ctx context.Context, ts *servertest.Server, client *zbstream.Client, n int, persistent bool) (string, error) {
	sopts := []zbstream.StreamOption{
		zbstream.WithMaxInflight(1024, windowBytes),
		zbstream.WithMaxCallBytes(1 << 20),
		zbstream.WithRetries(20), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond}),
	}
	if w.noCopy {
		sopts = append(sopts, zbstream.WithNoCopy())
	}
	create := client.CreateStream
	if persistent {
		create = client.CreatePersistentStream
	}
	s, err := create(ctx, ts.Table, sopts...)
	if err != nil {
		return "", err
	}
	var kept [][]byte // the caller's buffers, scribbled over after Close (noCopy)
	buf := make([]byte, 0, largeRecord+1024)
	for c := range callsPer {
		if c%20 == 10 {
			kind := server.FaultDrop
			if c%40 == 30 {
				kind = server.FaultCommitThenDrop
			}
			ts.Inject(server.Match{StreamID: s.StreamID()}, server.Fault{Kind: kind, After: 2})
		}
		recs := callRecords(n, c)
		if !w.noCopy {
			// One buffer for every call, overwritten as soon as it returns:
			// what the stream sends must be its own copy.
			buf = append(buf[:0], recs[0]...)
			recs[0] = buf
		}
		if len(recs) == 1 {
			_, err = s.IngestRecord(ctx, recs[0])
		} else {
			_, err = s.IngestBatch(ctx, recs)
		}
		if err != nil {
			return s.StreamID(), err
		}
		if w.noCopy {
			kept = append(kept, recs...)
		} else {
			clear(buf)
		}
	}
	err = s.Close(ctx)
	for _, b := range kept {
		clear(b) // durable now: the caller may reuse what it lent
	}
	return s.StreamID(), err
}

// checkStored checks that stream id of workload stream n holds every call's
// records once, in offset order.
func checkStored(t *testing.T, ts *servertest.Server, id string, n int) {
	t.Helper()
	batches, err := ts.Records(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != callsPer {
		t.Fatalf("stream %d: %d calls stored, want %d", n, len(batches), callsPer)
	}
	for c, b := range batches {
		want := callRecords(n, c)
		if b.Offset != int64(c) || len(b.Records) != len(want) {
			t.Fatalf("stream %d: call %d stored at offset %d with %d records, want %d", n, c, b.Offset, len(b.Records), len(want))
		}
		for j := range want {
			if !bytes.Equal(b.Records[j], want[j]) {
				t.Fatalf("stream %d: call %d record %d stored as %.60q..., want %.60q...", n, c, j, b.Records[j], want[j])
			}
		}
	}
}
