package e2e_test

// The metrics hook and the logger, end to end, and the configuration
// errors of the public API.

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// countingObserver totals what an Observer is told.
type countingObserver struct {
	mu                        sync.Mutex
	calls, records            int64
	bytes                     int64
	acked, reconciled, failed int64
	connected, resumed        int
	disconnected              []core.Code
}

func (o *countingObserver) Accepted(n int, b int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	o.records += int64(n)
	o.bytes += b
}

func (o *countingObserver) Completed(n int64, reconciled bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if reconciled {
		o.reconciled += n
	} else {
		o.acked += n
	}
}

func (o *countingObserver) Failed(n int64) { o.mu.Lock(); o.failed += n; o.mu.Unlock() }

func (o *countingObserver) Connected(resumed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.connected++
	if resumed {
		o.resumed++
	}
}

func (o *countingObserver) Disconnected(c core.Code) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.disconnected = append(o.disconnected, c)
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestObserverAndLogger: through a lost ack reconciled on resume, the
// Observer's totals match Stats, and the log (at debug level) tells the
// open, the reconnect cause and the reconciliation, and never holds the
// token; nor does the log of a client whose token is refused.
func TestObserverAndLogger(t *testing.T) {
	const token = "secret-token-4f1c9a"
	ts := servertest.Start(t, servertest.WithToken(token))
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	obs := &countingObserver{}
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(token), zbstream.WithLogger(logger), zbstream.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := &env{ts: ts, client: c, table: ts.Table}
	s := e.createPersistent(t)
	id := s.StreamID()
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultCommitThenDrop, After: 2})
	ingest(t, s, rec(0, 0))
	if _, err := s.IngestBatch(ctx(t), recs(0, 1, 3)); err != nil {
		t.Fatal(err)
	}
	waitFired(t, h)
	mustFlush(t, s)
	ingest(t, s, rec(0, 4))
	mustClose(t, s)

	st := s.Stats()
	obs.mu.Lock()
	if obs.calls != st.Accepted || obs.records != st.Records || obs.bytes != int64(5*len(rec(0, 0))) ||
		obs.acked != st.Acknowledged || obs.reconciled != st.Reconciled || obs.failed != st.Failed ||
		int64(obs.connected) != st.Opens || obs.resumed != obs.connected-1 {
		t.Errorf("observer %+v does not match stats %+v", obs, st)
	}
	if st.Reconciled == 0 {
		t.Errorf("nothing reconciled: %+v", st)
	}
	var sawUnavailable bool
	for _, code := range obs.disconnected {
		sawUnavailable = sawUnavailable || code == core.CodeUnavailable
	}
	if !sawUnavailable {
		t.Errorf("Disconnected codes %v, want UNAVAILABLE among them", obs.disconnected)
	}
	obs.mu.Unlock()

	wrong := "wrong-token-77d2e0"
	wc, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(wrong), zbstream.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	_, err = wc.CreatePersistentStream(ctx(t), ts.Table, fast()...)
	wantCode(t, err, codes.Unauthenticated)

	out := logs.String()
	for _, want := range []string{id, "reconciled", "UNAVAILABLE"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not mention %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{token, wrong} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds a token:\n%s", out)
		}
	}
}

// TestConfigErrors: invalid arguments are *ConfigError (ErrInvalidConfig)
// from the call that takes them, before anything is sent; a value that
// cannot be marshalled is refused without touching the stream.
func TestConfigErrors(t *testing.T) {
	e := start(t)
	isConfig := func(what string, err error) {
		t.Helper()
		var ce *zbstream.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, zbstream.ErrInvalidConfig) {
			t.Errorf("%s: %v (%T), want a *ConfigError", what, err, err)
		}
	}
	_, err := zbstream.NewClient("http://"+e.ts.Addr, zbstream.WithToken(""))
	isConfig("WithToken(\"\")", err)
	_, err = zbstream.NewClient("http://"+e.ts.Addr, zbstream.WithHeadersProvider(nil))
	isConfig("WithHeadersProvider(nil)", err)
	for _, table := range []string{"", "a.b", "a..c", "a.b.c.d"} {
		_, err = e.client.CreateStream(ctx(t), table)
		isConfig("CreateStream("+table+")", err)
		_, err = e.client.ResumeStream(ctx(t), table, "ps-x")
		isConfig("ResumeStream("+table+")", err)
		err = e.client.RetireStream(ctx(t), table, "ps-x")
		isConfig("RetireStream("+table+")", err)
	}
	_, err = e.client.ResumeStream(ctx(t), e.table, "")
	isConfig("ResumeStream with no id", err)
	for name, opt := range map[string]zbstream.StreamOption{
		"WithRetries(-1)":            zbstream.WithRetries(-1),
		"WithBackoff(max<initial)":   zbstream.WithBackoff(zbstream.Backoff{Initial: time.Second, Max: time.Millisecond}),
		"WithMaxInflight(0)":         zbstream.WithMaxInflight(0, 1<<30),
		"WithMaxInflight(bytes<max)": zbstream.WithMaxInflight(10, 10),
		"WithMaxCallBytes(0)":        zbstream.WithMaxCallBytes(0),
		"WithOpenTimeout(-1)":        zbstream.WithOpenTimeout(-time.Second),
		"WithMaxGrace(-1)":           zbstream.WithMaxGrace(-time.Second),
		"WithProtoMessage(nil)":      zbstream.WithProtoMessage(nil),
		"WithProtoMessage(outside)":  zbstream.WithProtoMessage(&ingestpb.EphemeralStreamRequest{}),
	} {
		_, err = e.client.CreatePersistentStream(ctx(t), e.table, opt)
		isConfig(name, err)
	}
	if streams, _ := e.ts.Streams(ctx(t)); len(streams) != 0 {
		t.Fatalf("refused configurations created streams: %+v", streams)
	}

	s := e.create(t)
	if _, err := s.IngestJSON(ctx(t), map[string]any{"c": make(chan int)}); err == nil || errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestJSON of an unmarshallable value: %v", err)
	}
	if off := ingest(t, s, rec(0, 0)); off[0] != 0 {
		t.Fatalf("offset %d after a refused value, want 0", off[0])
	}
	id := s.StreamID()
	mustClose(t, s)
	e.wantStored(t, id, one(rec(0, 0)))
}
