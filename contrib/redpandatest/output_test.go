package redpandatest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	zbredpanda "github.com/zbstream/zbstream/contrib/redpanda"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// pipeline runs an in-process stream whose input is a producer function
// and whose output is the YAML given, with the zerobus output registered.
// It returns the producer; the stream stops when the test ends.
func pipeline(t *testing.T, output string) service.MessageBatchHandlerFunc {
	t.Helper()
	env := service.NewEnvironment()
	if err := zbredpanda.Register(env); err != nil {
		t.Fatal(err)
	}
	sb := env.NewStreamBuilder()
	produce, err := sb.AddBatchProducerFunc()
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.SetLoggerYAML("level: none"); err != nil {
		t.Fatal(err)
	}
	if err := sb.AddOutputYAML(output); err != nil {
		t.Fatal(err)
	}
	s, err := sb.Build()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stopping the stream: %v", err)
		}
		<-ran
	})
	return produce
}

// zerobusYAML is the zerobus output for ts, with extra fields.
func zerobusYAML(ts *servertest.Server, extra string) string {
	return fmt.Sprintf(`
zerobus:
  endpoint: http://%s
  table: %s
  token: %s
  max_in_flight: 4
%s`, ts.Addr, ts.Table, ts.Token, extra)
}

// batch makes a message batch of the given records.
func batch(recs ...string) service.MessageBatch {
	b := make(service.MessageBatch, len(recs))
	for i, r := range recs {
		b[i] = service.NewMessage([]byte(r))
	}
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// storedRecords returns every record the server holds for its table, as
// strings, sorted.
func storedRecords(t *testing.T, ts *servertest.Server) []string {
	t.Helper()
	streams, err := ts.Streams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, st := range streams {
		batches, err := ts.Records(context.Background(), st.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches {
			for _, r := range b.Records {
				out = append(out, string(r))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestDeadLetterThroughFaults: through a lost ack and a dropped
// connection, every valid record lands exactly once (persistent streams),
// and each record the server would refuse goes alone to the dead-letter
// output of a fallback, its batch's other records written.
func TestDeadLetterThroughFaults(t *testing.T) {
	ts := servertest.Start(t)
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDrop, After: 5})
	dead := filepath.Join(t.TempDir(), "dead.jsonl")
	produce := pipeline(t, fmt.Sprintf(`
fallback:
  - %s
  - file:
      path: %s
      codec: lines
`, strings.ReplaceAll(zerobusYAML(ts, "  persistent: true"), "\n", "\n    "), dead))

	var want, refused []string
	for n := range 10 {
		var recs []string
		for k := range 5 {
			recs = append(recs, fmt.Sprintf(`{"n":%d}`, 5*n+k))
		}
		if n%3 == 0 {
			bad := fmt.Sprintf(`not json %d`, n)
			recs = append(recs[:2], append([]string{bad}, recs[2:]...)...)
			refused = append(refused, bad)
		}
		for _, r := range recs {
			if !strings.HasPrefix(r, "not") {
				want = append(want, r)
			}
		}
		if err := produce(testCtx(t), batch(recs...)); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
	}
	sort.Strings(want)
	if got := storedRecords(t, ts); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored %d records %q\nwant %d %q", len(got), got, len(want), want)
	}
	b, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(string(bytes.TrimSpace(b)), "\n"); strings.Join(got, "|") != strings.Join(refused, "|") {
		t.Errorf("dead letters %q, want %q", got, refused)
	}
}

// TestAckedOnlyWhenDurable: a batch is acknowledged only after the
// server's (delayed) ack; when its stream fails for good the batch is not
// acknowledged, each message carrying the error, and the next batch opens
// a new stream and lands.
func TestAckedOnlyWhenDurable(t *testing.T) {
	ts := servertest.Start(t)
	const delay = 300 * time.Millisecond
	h := ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultDelayAcks, Delay: delay})
	produce := pipeline(t, zerobusYAML(ts, ""))
	start := time.Now()
	if err := produce(testCtx(t), batch(`{"a":1}`, `{"a":2}`)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < delay || h.Hits() == 0 {
		t.Fatalf("acknowledged after %v (fault hits %d), before the server's ack (%v)", d, h.Hits(), delay)
	}
	h.Remove()

	// An ack above anything sent is a protocol violation: the stream
	// fails for good, with the call in flight.
	ts.Inject(server.Match{Table: ts.Table}, server.Fault{Kind: server.FaultAckAboveSent})
	err := produce(testCtx(t), batch(`{"a":3}`, `{"a":4}`))
	if err == nil || !strings.Contains(err.Error(), "protocol violation") {
		t.Fatalf("batch on a failing stream: %v, want the stream's error", err)
	}
	if err := produce(testCtx(t), batch(`{"a":5}`)); err != nil {
		t.Fatalf("batch after the failure: %v", err)
	}
	got := storedRecords(t, ts)
	for _, r := range []string{`{"a":1}`, `{"a":2}`, `{"a":5}`} {
		if !contains(got, r) {
			t.Errorf("%s not stored: %q", r, got)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestBatchAtTheCallLimit: a batch whose records add up to a call's
// bytes, but over them with each record's framing (as the stream
// counts a call), is split into calls the stream accepts and lands,
// rather than failing whole, on every retry, as too large a call.
func TestBatchAtTheCallLimit(t *testing.T) {
	ts := servertest.Start(t)
	produce := pipeline(t, zerobusYAML(ts, ""))
	const size = 64 << 10
	n := int(core.DefaultMaxCallBytes / size) // 159, exactly the limit raw
	recs := make([]string, n)
	pad := strings.Repeat("x", size-len(`{"p":"000","x":""}`))
	for i := range recs {
		recs[i] = fmt.Sprintf(`{"p":"%03d","x":"%s"}`, i, pad)
	}
	if framed := int64(n * (size + 4)); framed <= core.DefaultMaxCallBytes {
		t.Fatalf("the batch, %d bytes framed, would fit one call: not the case tested", framed)
	}
	if err := produce(testCtx(t), batch(recs...)); err != nil {
		t.Fatalf("a batch of %d records of %d bytes: %v", n, size, err)
	}
	if got := storedRecords(t, ts); len(got) != n || got[0] != recs[0] || got[n-1] != recs[n-1] {
		t.Errorf("stored %d records, want %d", len(got), n)
	}
}
