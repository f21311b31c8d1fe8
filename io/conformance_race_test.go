package io_test

import (
	"context"
	"testing"
	"testing/synctest"
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
// close signal. A rotation costs no retry, so with Retries = 0 only a
// close signal taken for a failure could end the close-signal streams.
func TestEndAfterHeldAcks(t *testing.T) {
	tests := []struct {
		name       string
		kind       core.Kind
		fault      memtransport.Fault
		reconciled int64 // offsets learned from the watermark instead of their ack
		second     []string
	}{
		{"persistent close signal is a rotation", core.Persistent,
			memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 2}, 0, nil},
		{"persistent last ack before a drop", core.Persistent,
			memtransport.Fault{Kind: memtransport.FaultDrop, After: 2}, 0, nil},
		{"ephemeral close signal is a rotation", core.Ephemeral,
			memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 2, NoDuration: true}, 0, recs(2, 4)},
		{"ephemeral last ack before a drop", core.Ephemeral,
			memtransport.Fault{Kind: memtransport.FaultDrop, After: 2}, 0, recs(2, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				srv.Inject(memtransport.Match{}, tt.fault)
				cfg := config(tt.kind)
				if tt.fault.Kind == memtransport.FaultCloseSignal {
					cfg.Retries = 0
				}
				s, err := streamio.Open(context.Background(), slowSends{srv.Transport()}, cfg, streamio.Options{})
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer s.Close(context.Background())
				ingestN(t, s, 2, 0)
				synctest.Wait() // the fault has acted
				ingestN(t, s, 2, 2)
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v (the end was taken before the messages it followed)", err)
				}
				if st := s.Stats(); st.Reconnects != 1 || st.Reconciled != tt.reconciled || st.Acknowledged != 4-tt.reconciled {
					t.Fatalf("Stats = %+v, want 1 reconnect, %d reconciled, the rest acknowledged", st, tt.reconciled)
				}
				all := storedAll(srv)
				if tt.kind == core.Persistent {
					wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 4))
					return
				}
				if len(all) != 2 {
					t.Fatalf("server streams %q, want 2", all)
				}
				wantStrings(t, "first connection", all[0], recs(0, 2))
				wantStrings(t, "second connection", all[1], tt.second) // nothing acknowledged sent again
			})
		})
	}
}
