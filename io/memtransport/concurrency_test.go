package memtransport_test

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// One sender, one receiver and an Abort from a third goroutine, with
// delayed and repeated acks in flight: nothing races, everything returns,
// and acks arrive in order.
func TestConcurrentSendRecvAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{QueueSize: 8})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, After: 10, Delay: time.Millisecond, Times: memtransport.Unlimited})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultRepeatAcks, Times: memtransport.Unlimited})
		c, _ := openStream(t, srv, persistent)
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := int64(0); ; i++ {
				if c.Send(streamio.Call{Wire: i, Record: []byte("x")}) != nil {
					return
				}
				if i%7 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
		wg.Go(func() {
			last := int64(-1)
			for {
				r, err := c.Recv()
				if err != nil {
					wantCode(t, err, core.CodeCanceled)
					return
				}
				if r.Offset < last {
					t.Errorf("ack %d after %d", r.Offset, last)
				}
				last = r.Offset
			}
		})
		time.Sleep(time.Second)
		c.Abort()
		wg.Wait()
	})
}

// A resume racing with the older connection's sends: every call stored is
// stored once, in order, and the older connection ends ABORTED.
func TestConcurrentFence(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	old, r := openStream(t, srv, persistent)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := int64(0); old.Send(streamio.Call{Wire: i, Record: []byte("x")}) == nil; i++ {
		}
	})
	wg.Go(func() {
		for {
			if _, err := old.Recv(); err != nil {
				wantCode(t, err, core.CodeAborted)
				return
			}
		}
	})
	for srv.Stats().Calls < 100 {
		runtime.Gosched()
	}
	cur, rr := openStream(t, srv, resumeOf(r.StreamID))
	wg.Wait()
	send(t, cur, rr.Offset+1, "y")
	wantAck(t, cur, rr.Offset+1)
	for i, b := range srv.Batches(r.StreamID) {
		if b.Offset != int64(i) {
			t.Fatalf("batch %d at offset %d", i, b.Offset)
		}
	}
}
