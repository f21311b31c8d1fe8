package zerobus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// TestHeadersProviderAndFree: a custom provider written for the official
// SDK works as it is; a stream open at Free keeps working until it is
// closed, and then the connections are closed (goleak checks at the end).
func TestHeadersProviderAndFree(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	tok := (&tokenProvider{t: t, workspace: l.Workspace}).mint(testTable)
	p := &staticProvider{token: tok, table: testTable}
	st, err := sdk.CreateStreamWithHeadersProvider(zerobus.TableProperties{TableName: testTable}, p, jsonOptions())
	if err != nil {
		t.Fatal(err)
	}
	sdk.Free()
	for i := range 3 {
		if _, err := st.IngestRecordOffset(fmt.Sprintf(`{"n": %d}`, i)); err != nil {
			t.Fatalf("ingest after Free: %v", err)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(storedRecords(t, l.Server, testTable)); got != 3 {
		t.Fatalf("stored %d records, want 3", got)
	}
}

// TestClientPersistent: from the SDK to the zbstream client of the same
// credentials, for a persistent stream (what the official API lacks).
func TestClientPersistent(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	c, err := sdk.Client(testClientID, testClientSecret)
	if err != nil {
		t.Fatal(err)
	}
	if c2, _ := sdk.Client(testClientID, testClientSecret); c2 != c {
		t.Fatal("a second client for the same credentials")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ps, err := c.CreatePersistentStream(ctx, testTable)
	if err != nil {
		t.Fatal(err)
	}
	off, err := ps.IngestRecord(ctx, []byte(`{"persistent": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Wait(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := ps.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The SDK's own streams work beside it (with a connection each, by
	// default).
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	hc, err := sdk.ClientWithHeadersProvider(&staticProvider{token: "x", table: testTable})
	if err != nil || hc == nil || hc == c {
		t.Fatalf("ClientWithHeadersProvider: %v", err)
	}
}

// TestConcurrentIngest: goroutines share a stream, as the official
// examples do; every record lands once, at its own offset.
func TestConcurrentIngest(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, &zerobus.StreamConfigurationOptions{RecordType: zerobus.RecordTypeJson, MaxInflightRequests: 16})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 50
	var wg sync.WaitGroup
	offsets := make(chan int64, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				off, err := st.IngestRecordOffset(fmt.Sprintf(`{"w": %d, "i": %d}`, w, i))
				if err != nil {
					t.Error(err)
					return
				}
				offsets <- off
			}
		})
	}
	wg.Wait()
	close(offsets)
	seen := map[int64]bool{}
	for off := range offsets {
		if seen[off] {
			t.Fatalf("offset %d given twice", off)
		}
		seen[off] = true
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(storedRecords(t, l.Server, testTable)); got != workers*each {
		t.Fatalf("stored %d records, want %d", got, workers*each)
	}
}
