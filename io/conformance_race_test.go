package io_test

import (
	"context"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// slowSends is a transport whose Send returns a little after the server
// has handled the call, so that the server's answer, and the end of the
// call that may follow it, reach the receiver before the sender can report
// the send: a race a network transport runs as well.
type slowSends struct{ streamio.Transport }

func (t slowSends) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	c, err := t.Transport.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return slowConn{c}, nil
}

type slowConn struct{ streamio.Conn }

func (c slowConn) Send(call streamio.Call) error {
	err := c.Conn.Send(call)
	time.Sleep(time.Millisecond)
	return err
}

// The end of a connection must not overtake the messages the server sent
// before it that wait behind a send still being reported: the last ack, a
// close signal.
func TestEndAfterHeldAcks(t *testing.T) {
	t.Run("persistent close signal is a rotation", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			srv.Inject(memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 2})
			cfg := config(core.Persistent)
			cfg.Retries = 0 // a rotation costs no retry: only a failure would end the stream
			s, err := streamio.Open(context.Background(), slowSends{srv.Transport()}, cfg, streamio.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(context.Background())
			ingestN(t, s, 3, 0)
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v (the close signal was taken for a failure)", err)
			}
			if st := s.Stats(); st.Reconnects != 1 || st.Acknowledged != 3 || st.Reconciled != 0 {
				t.Fatalf("Stats = %+v, want 1 reconnect and all 3 acknowledged (none reconciled)", st)
			}
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 3))
		})
	})
	t.Run("ephemeral last ack before a drop", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			// Call 2 is stored and acknowledged, then the call ends.
			srv.Inject(memtransport.Fault{Kind: memtransport.FaultDrop, After: 2, Store: true})
			s, err := streamio.Open(context.Background(), slowSends{srv.Transport()}, config(core.Ephemeral), streamio.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(context.Background())
			ingestN(t, s, 4, 0)
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			all := storedAll(srv)
			if len(all) != 2 {
				t.Fatalf("server streams %q, want 2", all)
			}
			wantStrings(t, "first connection", all[0], recs(0, 2))
			wantStrings(t, "second connection", all[1], recs(2, 4)) // nothing acknowledged sent again
			if st := s.Stats(); st.Resent != 0 && st.Resent != 1 && st.Resent != 2 {
				t.Fatalf("Stats = %+v", st)
			}
		})
	})
}
