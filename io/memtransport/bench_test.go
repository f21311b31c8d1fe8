package memtransport_test

import (
	"context"
	"testing"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// BenchmarkAckOnlySendRecv measures one ingest call and its ack against
// the ack-only server: the transport's own cost per call.
func BenchmarkAckOnlySendRecv(b *testing.B) {
	for _, kind := range []core.Kind{core.Ephemeral, core.Persistent} {
		b.Run(kind.String(), func(b *testing.B) {
			srv := memtransport.NewServer(memtransport.Options{AckOnly: true})
			c, err := srv.Transport().Open(context.Background(), streamio.OpenRequest{Kind: kind, RecordType: core.RecordJSON})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Abort()
			if _, err := c.Recv(); err != nil {
				b.Fatal(err)
			}
			call := streamio.Call{Record: []byte(`{"a":1}`)}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Send(call); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Recv(); err != nil {
					b.Fatal(err)
				}
				call.Wire++
			}
		})
	}
}
