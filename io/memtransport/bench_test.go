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

// BenchmarkAckOnlyPipelined sends from one goroutine and reads acks in
// another, as a driver does (its figure includes goroutine wake-ups).
func BenchmarkAckOnlyPipelined(b *testing.B) {
	srv := memtransport.NewServer(memtransport.Options{AckOnly: true})
	c, err := srv.Transport().Open(context.Background(), streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Abort()
	if _, err := c.Recv(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for last := int64(-1); last < int64(b.N)-1; {
			r, err := c.Recv()
			if err != nil {
				return
			}
			last = r.Offset
		}
	}()
	call := streamio.Call{Record: []byte(`{"a":1}`)}
	for i := range b.N {
		call.Wire = int64(i)
		if err := c.Send(call); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}
