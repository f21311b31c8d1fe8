package io_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// Short but realistic timers: inside a synctest bubble they cost nothing.
const (
	openTimeout  = 15 * time.Second
	ackTimeout   = 60 * time.Second
	closeTimeout = 5 * time.Minute
	maxGrace     = 30 * time.Second
	backoffMax   = 2 * time.Second
)

// config returns a config of kind with the test timers: a persistent one
// creates with request id "rid".
func config(kind core.Kind) core.Config {
	cfg := core.DefaultConfig(kind, core.RecordJSON)
	cfg.OpenTimeout = openTimeout
	cfg.AckTimeout = ackTimeout
	cfg.CloseTimeout = closeTimeout
	cfg.MaxGrace = maxGrace
	cfg.Retries = 3
	cfg.Backoff = core.Backoff{Initial: 100 * time.Millisecond, Max: backoffMax, Multiplier: 2}
	if kind == core.Persistent {
		cfg.ClientRequestID = "rid"
	}
	return cfg
}

// bubble runs f in a synctest bubble with a fresh server created inside it.
func bubble(t *testing.T, f func(t *testing.T, srv *memtransport.Server)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f(t, memtransport.NewServer(memtransport.Options{}))
	})
}

// open opens a stream that must open; it is closed when the test ends.
func open(t *testing.T, srv *memtransport.Server, cfg core.Config, opts streamio.Options) *streamio.Stream {
	t.Helper()
	s, err := streamio.Open(context.Background(), srv.Transport(), cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// rec is the payload of record i.
func rec(i int) []byte { return fmt.Appendf(nil, `{"n":%d}`, i) }

// ingest ingests one record and checks the offset it gets.
func ingest(t *testing.T, s *streamio.Stream, i int, want int64) {
	t.Helper()
	off, err := s.IngestRecord(context.Background(), rec(i))
	if err != nil || off != want {
		t.Fatalf("IngestRecord(%d) = %d, %v; want %d, nil", i, off, err, want)
	}
}

// ingestN ingests records 0..n-1, expecting offsets first..first+n-1.
func ingestN(t *testing.T, s *streamio.Stream, n int, first int64) {
	t.Helper()
	for i := range n {
		ingest(t, s, int(first)+i, first+int64(i))
	}
}

// recs returns the payloads of records lo..hi-1.
func recs(lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, string(rec(i)))
	}
	return out
}

// stored returns the records the server stored in stream id.
func stored(srv *memtransport.Server, id string) []string {
	var out []string
	for _, r := range srv.Records(id) {
		out = append(out, string(r))
	}
	return out
}

// storedAll returns the records of every server stream, stream by stream
// in creation order.
func storedAll(srv *memtransport.Server) [][]string {
	var out [][]string
	for _, st := range srv.Streams() {
		out = append(out, stored(srv, st.ID))
	}
	return out
}

func wantStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func wantIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s = %v, want an error wrapping %v", what, err, target)
	}
}

// wantCode checks that err carries a *core.ConnectionError with code.
func wantCode(t *testing.T, what string, err error, code core.Code) {
	t.Helper()
	var ce *core.ConnectionError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("%s = %v, want a *core.ConnectionError with code %s", what, err, code)
	}
}

// wantViolation checks that err carries a *core.ProtocolError for rule.
func wantViolation(t *testing.T, what string, err error, rule core.Violation) {
	t.Helper()
	var pe *core.ProtocolError
	if !errors.As(err, &pe) || pe.Rule != rule {
		t.Fatalf("%s = %v, want a *core.ProtocolError %q", what, err, rule)
	}
	wantIs(t, what, err, core.ErrProtocol)
}

// unackedOffsets returns the offsets in s.Unacked().
func unackedOffsets(s *streamio.Stream) []int64 {
	var out []int64
	for _, b := range s.Unacked() {
		out = append(out, b.Offset)
	}
	return out
}

func wantOffsets(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// span returns lo..hi-1.
func span(lo, hi int64) []int64 {
	var out []int64
	for o := lo; o < hi; o++ {
		out = append(out, o)
	}
	return out
}

// async runs f on a goroutine; the result arrives on the channel.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// poll waits until every goroutine of the bubble is blocked, then returns
// what ch holds, if anything.
func poll[T any](ch <-chan T) (T, bool) {
	synctest.Wait()
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

type ingestResult struct {
	off int64
	err error
}

func asyncIngest(ctx context.Context, s *streamio.Stream, i int) <-chan ingestResult {
	return async(func() ingestResult {
		off, err := s.IngestRecord(ctx, rec(i))
		return ingestResult{off, err}
	})
}

// recorder records callbacks.
type recorder struct {
	mu     sync.Mutex
	acked  []int64
	failed []int64
	errs   []error
}

func (r *recorder) options() streamio.Options {
	return streamio.Options{
		OnAck: func(o int64) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.acked = append(r.acked, o)
		},
		OnFail: func(o int64, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.failed = append(r.failed, o)
			r.errs = append(r.errs, err)
		},
	}
}

func (r *recorder) snapshot() (acked, failed []int64, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.acked...), append([]int64(nil), r.failed...), append([]error(nil), r.errs...)
}

// settle lets virtual time pass by d, then waits for the bubble to block.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// bothKinds runs f as a subtest for each stream kind, in a bubble.
func bothKinds(t *testing.T, f func(t *testing.T, srv *memtransport.Server, kind core.Kind)) {
	t.Helper()
	for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
		t.Run(kind.String(), func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) { f(t, srv, kind) })
		})
	}
}
