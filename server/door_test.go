package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestTableNameNotUTF8 (issue 21): a table name in invalid UTF-8 is refused
// at open with INVALID_ARGUMENT by both engines, and nothing is stored.
// Before, the bolt engine stored "\xff\xfe" as U+FFFD and the same
// client's resume then failed as a table mismatch.
func TestTableNameNotUTF8(t *testing.T) {
	bolt, err := server.OpenBoltStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	for name, st := range map[string]server.Store{"memory": server.NewMemoryStore(), "bolt": bolt} {
		t.Run(name, func(t *testing.T) {
			const table = "main.\xff\xfe.t"
			ts := servertest.Start(t, servertest.WithStore(st), servertest.Open())
			c := ts.Client(t)
			ps := openPersistent(t, c, withReqID(ctxWith(t, "", ""), "r"))
			psend(t, ps, pcreateReq(jsonCreate(table)))
			_, err := pend(t, ps)
			wantCode(t, err, codes.InvalidArgument)
			if !strings.Contains(status.Convert(err).Message(), "UTF-8") {
				t.Fatalf("message does not say why: %v", err)
			}
			es, err := c.EphemeralStream(ctxWith(t, "", ""))
			if err != nil {
				t.Fatal(err)
			}
			esend(t, es, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(table)}})
			wantCode(t, eend(es), codes.InvalidArgument)
			if got, err := st.Streams(context.Background()); err != nil || len(got) != 0 {
				t.Fatalf("stored %v (%v)", got, err)
			}
		})
	}
}

// TestEchoesAreBounded (issue 21): what a client sent is repeated in
// status messages and logs only in part. Before, a 2 MiB header made an
// 8 MiB status message and a 10 MiB log line.
func TestEchoesAreBounded(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := startServer(t, servertest.WithOptions(func(o *server.Options) { o.Logger = logger }))
	c := ts.Client(t)
	long := strings.Repeat("\"", 16<<10) // %q doubles every byte of it
	big := strings.Repeat("x", 1<<20)
	check := func(what string, err error, code codes.Code) {
		t.Helper()
		wantCode(t, err, code)
		if msg := status.Convert(err).Message(); len(msg) > 1100 {
			t.Fatalf("%s: status message of %d bytes", what, len(msg))
		} else if !strings.Contains(msg, "bytes)") {
			t.Fatalf("%s: the message does not say the echo was cut: %.300q", what, msg)
		}
	}

	// The table header (up to the header limit) against another table.
	ps := openPersistent(t, c, withReqID(ctxWith(t, ts.Token, "main.s."+long), ""))
	psend(t, ps, pcreateReq(jsonCreate(ts.Table)))
	_, err := pend(t, ps)
	check("table header", err, codes.InvalidArgument)

	// A table name, a stream id and a request id in messages (10 MiB each
	// at most).
	ps = openPersistent(t, c, ctxWith(t, ts.Token, ""))
	psend(t, ps, pcreateReq(jsonCreate("main."+big)))
	_, err = pend(t, ps)
	check("table name", err, codes.InvalidArgument)

	ps = openPersistent(t, c, callCtx(t, ts))
	psend(t, ps, presumeReq(big, ingestpb.RecordType_JSON, nil))
	_, err = pend(t, ps)
	check("stream id", err, codes.NotFound)

	_, err = c.RetireStream(callCtx(t, ts), retireReq(ts.Table, big))
	check("retired stream id", err, codes.NotFound)

	logMu.Lock()
	defer logMu.Unlock()
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) > 4096 {
			t.Fatalf("log line of %d bytes: %.200s", len(line), line)
		}
	}
}
