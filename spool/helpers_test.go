package spool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
)

// newClient returns a client of ts, closed when the test ends.
func newClient(t testing.TB, ts *servertest.Server) *zbstream.Client {
	t.Helper()
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fastRecovery rides through injected faults quickly.
func fastRecovery() []zbstream.StreamOption {
	return []zbstream.StreamOption{
		zbstream.WithRetries(1000), zbstream.WithBackoff(zbstream.Backoff{Initial: 5 * time.Millisecond, Max: 100 * time.Millisecond}),
		zbstream.WithOpenTimeout(3 * time.Second), zbstream.WithAckTimeout(5 * time.Second), zbstream.WithCloseTimeout(30 * time.Second),
	}
}

func openSpool(t testing.TB, c *zbstream.Client, dir, table string, mod ...func(*spool.Options)) *spool.Spool {
	t.Helper()
	o := spool.Options{Dir: dir, Table: table, StreamOptions: fastRecovery()}
	for _, f := range mod {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sp, err := spool.Open(ctx, c, o)
	if err != nil {
		t.Fatalf("spool.Open: %v", err)
	}
	return sp
}

func closeSpool(t testing.TB, sp *spool.Spool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sp.Close(ctx); err != nil {
		t.Fatalf("spool.Close: %v", err)
	}
}

// rec is the JSON record of payload id.
func rec(id string) []byte { return fmt.Appendf(nil, `{"id":%q}`, id) }

// stored reads stream id back from the server: the records of each
// offset.
func stored(t testing.TB, srv *server.Server, id string) map[int64][][]byte {
	t.Helper()
	batches, err := srv.Records(context.Background(), id)
	if err != nil {
		t.Fatalf("read-back: %v", err)
	}
	out := make(map[int64][][]byte, len(batches))
	for _, b := range batches {
		if _, dup := out[b.Offset]; dup {
			t.Fatalf("offset %d stored twice", b.Offset)
		}
		out[b.Offset] = b.Records
	}
	return out
}
