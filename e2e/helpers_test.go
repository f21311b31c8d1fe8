package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// testTimeout bounds every blocking call of a test, so that a hang fails
// the test instead of the whole run.
const testTimeout = 30 * time.Second

// fast are stream options with short timers: quick reconnects, an ack
// timeout short enough to exercise but long enough for -race on a busy
// machine.
func fast(more ...zbstream.StreamOption) []zbstream.StreamOption {
	return append([]zbstream.StreamOption{
		zbstream.WithRetries(8), zbstream.WithBackoff(zbstream.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}),
		zbstream.WithOpenTimeout(5 * time.Second), zbstream.WithAckTimeout(10 * time.Second), zbstream.WithCloseTimeout(20 * time.Second),
		zbstream.WithFlushTimeout(20 * time.Second),
	}, more...)
}

// env is a reference server on loopback and a client with its token.
type env struct {
	ts     *servertest.Server
	client *zbstream.Client
	table  string
}

// start starts a reference server (token mode unless opts say otherwise)
// and a client authenticated with its default token.
func start(t *testing.T, opts ...servertest.Option) *env {
	t.Helper()
	ts := servertest.Start(t, opts...)
	return &env{ts: ts, client: newClient(t, ts, ts.Token), table: ts.Table}
}

// newClient returns a client of ts with token, closed when the test ends
// (before the server stops).
func newClient(t *testing.T, ts *servertest.Server, token string) *zbstream.Client {
	t.Helper()
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(token))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctx returns a context bounded by testTimeout.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return c
}

func (e *env) create(t *testing.T, opts ...zbstream.StreamOption) *zbstream.Stream {
	t.Helper()
	s, err := e.client.CreateStream(ctx(t), e.table, fast(opts...)...)
	if err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func (e *env) createPersistent(t *testing.T, opts ...zbstream.StreamOption) *zbstream.Stream {
	t.Helper()
	s, err := e.client.CreatePersistentStream(ctx(t), e.table, fast(opts...)...)
	if err != nil {
		t.Fatalf("CreatePersistentStream: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func (e *env) resume(t *testing.T, id string, opts ...zbstream.StreamOption) *zbstream.Stream {
	t.Helper()
	s, err := e.client.ResumeStream(ctx(t), e.table, id, fast(opts...)...)
	if err != nil {
		t.Fatalf("ResumeStream(%s): %v", id, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// rec is the JSON record number n of producer p.
func rec(p, n int) []byte { return []byte(fmt.Sprintf(`{"p":%d,"n":%d}`, p, n)) }

// recs returns records n0 .. n0+k-1 of producer p.
func recs(p, n0, k int) [][]byte {
	out := make([][]byte, k)
	for i := range out {
		out[i] = rec(p, n0+i)
	}
	return out
}

// parse decodes a record made by rec.
func parse(t *testing.T, b []byte) (p, n int) {
	t.Helper()
	var v struct{ P, N int }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("stored record %q: %v", b, err)
	}
	return v.P, v.N
}

// stored returns the batches the server stored for stream id.
func (e *env) stored(t *testing.T, id string) []server.Batch {
	t.Helper()
	b, err := e.ts.Records(context.Background(), id)
	if err != nil {
		t.Fatalf("Records(%s): %v", id, err)
	}
	return b
}

// meta returns the server's metadata of stream id.
func (e *env) meta(t *testing.T, id string) server.StreamMeta {
	t.Helper()
	m, err := e.ts.Stream(context.Background(), id)
	if err != nil {
		t.Fatalf("Stream(%s): %v", id, err)
	}
	return m
}

// wantStored checks that the server holds exactly want for stream id:
// want[i] under offset i, each batch with its records.
func (e *env) wantStored(t *testing.T, id string, want ...[][]byte) {
	t.Helper()
	got := e.stored(t, id)
	if len(got) != len(want) {
		t.Fatalf("stream %s: %d batches stored, want %d: %s", id, len(got), len(want), dump(got))
	}
	for i, b := range got {
		if b.Offset != int64(i) || !equalRecords(b.Records, want[i]) {
			t.Fatalf("stream %s: batch %d stored as offset %d %q, want offset %d %q", id, i, b.Offset, b.Records, i, want[i])
		}
	}
	if w := e.meta(t, id).Watermark; w != int64(len(want)-1) {
		t.Fatalf("stream %s: server watermark %d, want %d", id, w, len(want)-1)
	}
}

func equalRecords(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func dump(bs []server.Batch) string {
	var buf bytes.Buffer
	for _, b := range bs {
		fmt.Fprintf(&buf, "[%d: %q] ", b.Offset, b.Records)
	}
	return buf.String()
}

// one wraps a record as a one-record call.
func one(r []byte) [][]byte { return [][]byte{r} }

// ingest ingests records one call each and returns their offsets.
func ingest(t *testing.T, s *zbstream.Stream, rs ...[]byte) []int64 {
	t.Helper()
	offs := make([]int64, len(rs))
	for i, r := range rs {
		off, err := s.IngestRecord(ctx(t), r)
		if err != nil {
			t.Fatalf("IngestRecord(%s): %v", r, err)
		}
		offs[i] = off
	}
	return offs
}

func mustFlush(t *testing.T, s *zbstream.Stream) {
	t.Helper()
	if err := s.Flush(ctx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func mustClose(t *testing.T, s *zbstream.Stream) {
	t.Helper()
	if err := s.Close(ctx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkStats(t, s)
}

// wantCode checks that err is a *zbstream.ConnectionError with code and
// that its cause is a gRPC status with the same code.
func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *zbstream.ConnectionError", err, err)
	}
	if ce.Code != core.Code(code) {
		t.Fatalf("ConnectionError code %s, want %s: %v", ce.Code, code, err)
	}
	st, ok := status.FromError(ce.Err)
	if !ok || st.Code() != code {
		t.Fatalf("cause of the ConnectionError: status %v (ok %v), want %s: %v", st, ok, code, ce.Err)
	}
}

// wantProtocol checks that err is a *zbstream.ProtocolError.
func wantProtocol(t *testing.T, err error) *zbstream.ProtocolError {
	t.Helper()
	var pe *zbstream.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, zbstream.ErrProtocol) {
		t.Fatalf("error %v (%T) is not a *zbstream.ProtocolError", err, err)
	}
	return pe
}

// waitFired waits until fault h has acted.
func waitFired(t *testing.T, h *server.FaultHandle) {
	t.Helper()
	select {
	case <-h.Fired():
	case <-time.After(testTimeout):
		t.Fatal("the injected fault never acted")
	}
}

// waitDone waits until the stream has ended (closed or failed).
func waitDone(t *testing.T, s *zbstream.Stream) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(testTimeout):
		t.Fatal("the stream did not end")
	}
}

// unackedOffsets lists the offsets of s.Unacked().
func unackedOffsets(s *zbstream.Stream) []int64 {
	var out []int64
	for _, b := range s.Unacked() {
		out = append(out, b.Offset)
	}
	return out
}

// statusCode is the gRPC code of err (through a *ConnectionError too).
func statusCode(err error) codes.Code {
	var ce *zbstream.ConnectionError
	if errors.As(err, &ce) {
		return codes.Code(ce.Code)
	}
	return status.Code(err)
}

// pn is a JSON value that marshals as rec(p, n).
type pn struct {
	P int `json:"p"`
	N int `json:"n"`
}

// eventually polls cond until it holds, failing the test after
// testTimeout.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

// withMaxMessage sets the server's message limit.
func withMaxMessage(n int) servertest.Option {
	return servertest.WithOptions(func(o *server.Options) { o.MaxMessageBytes = n })
}

// checkStats checks the invariants between a stream's counters: resends
// are a part of sends and no offset is written for the first time twice,
// reconnects are the opens after the first, and no offset completes or
// fails beyond those accepted.
func checkStats(t *testing.T, s *zbstream.Stream) {
	t.Helper()
	st := s.Stats()
	if st.Resent > st.Sent || st.Sent-st.Resent > st.Accepted || st.Reconnects != st.Opens-1 ||
		st.Acknowledged+st.Reconciled+st.Failed > st.Accepted {
		t.Errorf("inconsistent stats: %+v (want Resent <= Sent, Sent-Resent <= Accepted, Reconnects = Opens-1, completed+failed <= Accepted)", st)
	}
}

// ackLog records the offsets a stream's OnAck reports.
type ackLog struct {
	mu      sync.Mutex
	offsets []int64
}

// option is the stream option that records into l.
func (l *ackLog) option() zbstream.StreamOption {
	return zbstream.WithOnAck(func(o int64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.offsets = append(l.offsets, o)
	})
}

// want checks that OnAck reported offsets 0..n-1, once each, in order.
func (l *ackLog) want(t *testing.T, n int64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := int64(len(l.offsets)) == n
	for i, o := range l.offsets {
		ok = ok && o == int64(i)
	}
	if !ok {
		t.Fatalf("OnAck offsets %v, want 0..%d once each, in order", l.offsets, n-1)
	}
}
