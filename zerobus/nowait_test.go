package zerobus_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbstream/zbstream/server"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// newJSONStream returns a JSON stream of a new SDK on l, with options
// changed by tweak.
func newJSONStream(t *testing.T, l *local, tweak func(*zerobus.StreamConfigurationOptions)) *zerobus.ZerobusStream {
	t.Helper()
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sdk.Free)
	o := jsonOptions()
	if tweak != nil {
		tweak(o)
	}
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// storedStrings returns the records stored for testTable as strings.
func storedStrings(t *testing.T, l *local) []string {
	t.Helper()
	var out []string
	for _, r := range storedRecords(t, l.Server, testTable) {
		out = append(out, string(r))
	}
	return out
}

// TestNowait: the Nowait calls ingest, single records and batches, once
// each, in call order, and take offsets of the stream (a batch one): the
// next blocking call gets the offset after theirs. Flush makes them
// durable.
func TestNowait(t *testing.T) {
	l := startLocalT(t)
	st := newJSONStream(t, l, nil)
	var want []string
	for i := range 5 {
		r := fmt.Sprintf(`{"nowait": %d}`, i)
		if err := st.IngestRecordNowait(r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	batch := []interface{}{`{"batch": 0}`, `{"batch": 1}`}
	if err := st.IngestRecordsNowait(batch); err != nil {
		t.Fatal(err)
	}
	want = append(want, `{"batch": 0}`, `{"batch": 1}`)
	off, err := st.IngestRecordOffset(`{"offset": true}`)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, `{"offset": true}`)
	if off != 6 {
		t.Fatalf("the call after 5 Nowait records and a Nowait batch got offset %d, want 6", off)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := storedStrings(t, l); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored %q\nwant %q", got, want)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNowaitDoesNotWait: with the window full (acks held back by the
// server), the Nowait calls return at once while their records wait; they
// land in call order once there is room, and Flush waits for them.
func TestNowaitDoesNotWait(t *testing.T) {
	l := startLocalT(t)
	h := l.Server.Inject(server.Match{Table: testTable}, server.Fault{Kind: server.FaultDelayAcks, Delay: 50 * time.Millisecond, Times: server.Unlimited})
	defer h.Remove()
	st := newJSONStream(t, l, func(o *zerobus.StreamConfigurationOptions) { o.MaxInflightRequests = 2 })
	const calls = 20
	var want []string
	for i := range calls {
		if i == calls/2 {
			batch := []interface{}{`{"batch": 0}`, `{"batch": 1}`}
			if err := st.IngestRecordsNowait(batch); err != nil {
				t.Fatal(err)
			}
			want = append(want, `{"batch": 0}`, `{"batch": 1}`)
		}
		r := fmt.Sprintf(`{"n": %d}`, i)
		if err := st.IngestRecordNowait(r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	// Had the calls waited for room, every one would be accepted by now:
	// with two calls in flight and every ack 50 ms late, that takes half a
	// second.
	if last := st.Stream().LastAssigned(); last >= calls {
		t.Fatalf("all %d calls accepted (last offset %d) when the Nowait calls returned: they waited", calls+1, last)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := storedStrings(t, l); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored %q\nwant %q", got, want)
	}
}

// TestNowaitProtoCopies: a proto stream's Nowait calls copy the caller's
// bytes, whether accepted at once or queued behind a full window, and Close
// (with no Flush) hands every queued call over before it ends the stream.
func TestNowaitProtoCopies(t *testing.T) {
	l := startLocalT(t)
	h := l.Server.Inject(server.Match{Table: testTable}, server.Fault{Kind: server.FaultDelayAcks, Delay: 20 * time.Millisecond, Times: server.Unlimited})
	defer h.Remove()
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable, DescriptorProto: orderDescriptor()}, testClientID, testClientSecret, &zerobus.StreamConfigurationOptions{MaxInflightRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	buf := []byte{0x12, 0x03, 'c', '-', '0'} // field 2 (customer), "c-<i>"
	for i := range 10 {
		buf[4] = byte('0' + i)
		want = append(want, bytes.Clone(buf))
		if i%3 == 2 {
			err = st.IngestRecordsNowait([]interface{}{buf})
		} else {
			err = st.IngestRecordNowait(buf)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	buf[4] = 'x'
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got := storedRecords(t, l.Server, testTable)
	if len(got) != len(want) {
		t.Fatalf("stored %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d is %q, want %q", i, got[i], want[i])
		}
	}
}

// TestNowaitErrors: what can be checked at once is a non-retryable
// *ZerobusError, and nothing is ingested; an empty batch does nothing.
func TestNowaitErrors(t *testing.T) {
	l := startLocalT(t)
	st := newJSONStream(t, l, nil)
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"int payload":           {st.IngestRecordNowait(42), "Invalid payload type"},
		"proto bytes into JSON": {st.IngestRecordNowait([]byte{8, 1}), "Record type does not match"},
		"empty bytes":           {st.IngestRecordNowait([]byte{}), "empty data"},
		"mixed batch":           {st.IngestRecordsNowait([]interface{}{`{}`, []byte{1}}), "same type (string)"},
		"mixed batch, bytes":    {st.IngestRecordsNowait([]interface{}{[]byte{1}, `{}`}), "same type ([]byte)"},
		"bytes batch into JSON": {st.IngestRecordsNowait([]interface{}{[]byte{1}}), "Record type does not match"},
		"batch of ints":         {st.IngestRecordsNowait([]interface{}{1}), "Invalid payload type"},
	} {
		if ze := asZerobus(t, c.err); ze.Retryable() || !strings.Contains(ze.Message, c.want) {
			t.Errorf("%s: %v; want a non-retryable %q", name, c.err, c.want)
		}
	}
	if err := st.IngestRecordsNowait(nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := st.IngestRecordsNowait([]interface{}{}); err != nil {
		t.Errorf("empty batch: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"record": st.IngestRecordNowait(`{}`),
		"batch":  st.IngestRecordsNowait([]interface{}{`{}`}),
	} {
		if ze := asZerobus(t, err); ze.Retryable() || ze.Message != "Stream has been closed" {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if got := storedRecords(t, l.Server, testTable); len(got) != 0 {
		t.Fatalf("stored %q", got)
	}
	// A proto stream refuses JSON.
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	ps, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable, DescriptorProto: orderDescriptor()}, testClientID, testClientSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	for _, err := range []error{ps.IngestRecordNowait(`{}`), ps.IngestRecordsNowait([]interface{}{`{}`})} {
		if ze := asZerobus(t, err); ze.Retryable() || !strings.Contains(ze.Message, "Record type does not match") {
			t.Errorf("JSON into a proto stream: %v", err)
		}
	}
}

// TestNowaitTooLarge: a record the stream refuses for its size is dropped
// without an error, as the official SDK drops what it fails to ingest; the
// stream goes on.
func TestNowaitTooLarge(t *testing.T) {
	l := startLocalT(t)
	st := newJSONStream(t, l, nil)
	huge := `{"pad": "` + strings.Repeat("x", 11<<20) + `"}`
	if err := st.IngestRecordNowait(huge); err != nil {
		t.Fatalf("a record over the size limit: %v", err)
	}
	if err := st.IngestRecordNowait(`{"after": 1}`); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedStrings(t, l); len(got) != 1 || got[0] != `{"after": 1}` {
		t.Fatalf("stored %q", got)
	}
}

// TestNowaitAfterFailure: records of Nowait calls that the stream never
// accepted, because it failed, are not lost: GetUnackedRecords returns
// them after the stream's unacknowledged ones, in call order, and nothing
// was stored.
func TestNowaitAfterFailure(t *testing.T) {
	l := startLocalT(t)
	st := newJSONStream(t, l, func(o *zerobus.StreamConfigurationOptions) { o.MaxInflightRequests = 1 })
	// Not a JSON object: the server ends the stream (INVALID_ARGUMENT).
	if _, err := st.IngestRecordOffset(`not json`); err != nil {
		t.Fatal(err)
	}
	want := []interface{}{`not json`}
	for i := range 5 {
		r := fmt.Sprintf(`{"n": %d}`, i)
		if err := st.IngestRecordNowait(r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	if err := st.Flush(); err == nil || asZerobus(t, err).Retryable() {
		t.Fatalf("Flush of the failed stream: %v", err)
	}
	<-st.Stream().Done()
	// Calls after the failure are kept as well.
	if err := st.IngestRecordsNowait([]interface{}{`{"late": 0}`, `{"late": 1}`}); err != nil {
		t.Fatal(err)
	}
	want = append(want, `{"late": 0}`, `{"late": 1}`)
	recs, err := st.GetUnackedRecords()
	if err != nil || fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("unacked %q %v\nwant %q", recs, err, want)
	}
	if err := st.Close(); err == nil {
		t.Fatal("Close of the failed stream: nil")
	}
	if recs, err := st.GetUnackedRecords(); err != nil || fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("unacked after Close %q %v", recs, err)
	}
	if got := storedRecords(t, l.Server, testTable); len(got) != 0 {
		t.Fatalf("stored %q", got)
	}
}

// TestNowaitConcurrent: goroutines mix Nowait and blocking calls on one
// stream, behind a small window; every record lands exactly once.
func TestNowaitConcurrent(t *testing.T) {
	l := startLocalT(t)
	st := newJSONStream(t, l, func(o *zerobus.StreamConfigurationOptions) { o.MaxInflightRequests = 4 })
	const workers, each = 6, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r := fmt.Sprintf(`{"w": %d, "i": %d}`, w, i)
				var err error
				switch i % 3 {
				case 0:
					err = st.IngestRecordNowait(r)
				case 1:
					err = st.IngestRecordsNowait([]interface{}{r})
				default:
					_, err = st.IngestRecordOffset(r)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range storedStrings(t, l) {
		seen[r]++
	}
	for w := range workers {
		for i := range each {
			if r := fmt.Sprintf(`{"w": %d, "i": %d}`, w, i); seen[r] != 1 {
				t.Errorf("%s stored %d times", r, seen[r])
			}
		}
	}
	if len(seen) != workers*each {
		t.Errorf("%d distinct records stored, want %d", len(seen), workers*each)
	}
}
