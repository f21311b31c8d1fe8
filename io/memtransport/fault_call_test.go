package memtransport_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestFaultDrop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      memtransport.Fault
		acks   []int64
		code   core.Code
		stored int64 // watermark after
	}{
		{"at open", memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop}, nil, core.CodeUnavailable, -1},
		{"third lost", memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 3}, []int64{0, 1}, core.CodeUnavailable, 1},
		{"third stored", memtransport.Fault{Kind: memtransport.FaultDrop, After: 3}, []int64{0, 1, 2}, core.CodeUnavailable, 2},
		{"with a code", memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, After: 1, Code: core.CodeInternal}, nil, core.CodeInternal, -1},
		{"commit then drop", memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 3}, []int64{0, 1}, core.CodeUnavailable, 2},
	} {
		for _, req := range []streamioOpenRequest{ephemeral, persistent} {
			t.Run(tc.name+"/"+req.Kind.String(), func(t *testing.T) {
				srv := memtransport.NewServer(memtransport.Options{})
				h := srv.Inject(memtransport.Match{}, tc.f)
				c, r := openStream(t, srv, req)
				for i := range int64(4) {
					if err := c.Send(streamCall(i)); err != nil && h.Hits() == 0 {
						t.Fatalf("Send(%d): %v", i, err)
					}
				}
				wantAcks(t, c, tc.acks...)
				wantEnd(t, c, tc.code)
				if w, _ := srv.Watermark(r.StreamID); w != tc.stored {
					t.Fatalf("watermark %d, want %d", w, tc.stored)
				}
				wantCode(t, c.Send(streamCall(9)), tc.code)
			})
		}
	}
}

func TestFaultCommitThenDropIsReconciledOnResume(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 1})
	c, r := openStream(t, srv, persistent)
	send(t, c, 0, "a")
	wantEnd(t, c, core.CodeUnavailable)
	c2, rr := openStream(t, srv, resumeOf(r.StreamID))
	if !rr.HasOffset || rr.Offset != 0 {
		t.Fatalf("resume answered %+v", rr)
	}
	send(t, c2, 1, "b")
	wantAck(t, c2, 1)
	if got := batchesString(srv.Batches(r.StreamID)); got != "|0:a|1:b" {
		t.Fatalf("batches %q", got)
	}
}

func TestFaultLoseAcks(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	h := srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 2, Times: 2})
	c, r := openStream(t, srv, persistent)
	for i := range int64(4) {
		send(t, c, i, "x")
	}
	wantAcks(t, c, 0, 3) // the acks of calls 2 and 3 are lost
	if h.Hits() != 2 {
		t.Fatalf("hits %d", h.Hits())
	}
	if w, _ := srv.Watermark(r.StreamID); w != 3 {
		t.Fatalf("watermark %d", w)
	}
}

func TestFaultRepeatAcks(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultRepeatAcks, Times: 2})
	c, _ := openStream(t, srv, ephemeral)
	for i := range int64(3) {
		send(t, c, i, "x")
	}
	wantAcks(t, c, 0, 0, 1, 1, 2)
}

func TestFaultHostileAcks(t *testing.T) {
	for _, tc := range []struct {
		kind memtransport.FaultKind
		want core.Response
	}{
		{memtransport.FaultAckAboveSent, core.Response{Kind: core.RespAck, Offset: 3, HasOffset: true}},
		{memtransport.FaultAckBelowFloor, core.Response{Kind: core.RespAck, Offset: 0, HasOffset: true}},
		{memtransport.FaultAckMissing, core.Response{Kind: core.RespAck}},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			srv := memtransport.NewServer(memtransport.Options{})
			c, _ := openStream(t, srv, persistent)
			send(t, c, 0, "a")
			send(t, c, 1, "b")
			wantAcks(t, c, 0, 1)
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: tc.kind})
			send(t, c, 2, "c")
			if got := recv(t, c); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			send(t, c, 3, "d")
			wantAck(t, c, 3) // one ack only
		})
	}
}

func TestFaultAckBelowFloorOnFreshConnection(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultAckBelowFloor})
	c, _ := openStream(t, srv, ephemeral)
	send(t, c, 0, "a")
	if r := recv(t, c); r.Offset >= -1 {
		t.Fatalf("got %+v, want an ack below -1", r)
	}
}

func TestFaultDelayAcks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, After: 2, Delay: time.Second, Times: 2})
		c, _ := openStream(t, srv, persistent)
		start := time.Now()
		for i := range int64(4) {
			send(t, c, i, "x")
			time.Sleep(100 * time.Millisecond)
		}
		if err := c.CloseSend(); err != nil {
			t.Fatal(err)
		}
		// The ack of call 1 at once; those of 2 and 3 a second after their
		// calls; the ack of call 4 and the end wait behind them.
		wantAck(t, c, 0)
		for _, w := range []struct {
			off int64
			at  time.Duration
		}{{1, 1100 * time.Millisecond}, {2, 1200 * time.Millisecond}, {3, 1200 * time.Millisecond}} {
			wantAck(t, c, w.off)
			if d := time.Since(start); d != w.at {
				t.Fatalf("ack %d after %v, want %v", w.off, d, w.at)
			}
		}
		wantEnd(t, c, core.CodeOK)
	})
}

func TestFaultDelayAcksStoppedByAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Hour, Times: memtransport.Unlimited})
		c, _ := openStream(t, srv, ephemeral)
		send(t, c, 0, "x")
		send(t, c, 1, "x")
		c.Abort()
		synctest.Wait() // no timer or goroutine is left: the bubble would not end otherwise
	})
}

func TestFaultCloseSignalEphemeralGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, After: 1, Delay: 10 * time.Second})
		c, _ := openStream(t, srv, ephemeral)
		start := time.Now()
		send(t, c, 0, "a")
		wantAck(t, c, 0)
		if r := recv(t, c); r.Kind != core.RespCloseSignal || !r.HasDuration || r.Duration != 10*time.Second {
			t.Fatalf("got %+v, want a close signal of 10s", r)
		}
		time.Sleep(5 * time.Second)
		send(t, c, 1, "b") // still acknowledged during the grace
		wantAck(t, c, 1)
		wantEnd(t, c, core.CodeOK)
		if d := time.Since(start); d != 10*time.Second {
			t.Fatalf("ended after %v", d)
		}
	})
}

func TestFaultCloseSignalEndsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  streamioOpenRequest
		f    memtransport.Fault
		want core.Response
	}{
		{"persistent", persistent, memtransport.Fault{Kind: memtransport.FaultCloseSignal, Delay: time.Minute},
			core.Response{Kind: core.RespCloseSignal, Duration: time.Minute, HasDuration: true}},
		{"no duration", ephemeral, memtransport.Fault{Kind: memtransport.FaultCloseSignal, NoDuration: true},
			core.Response{Kind: core.RespCloseSignal}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := memtransport.NewServer(memtransport.Options{})
			srv.Inject(memtransport.Match{}, tc.f)
			c, _ := openStream(t, srv, tc.req) // After 0: right after the open
			if got := recv(t, c); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			wantEnd(t, c, core.CodeOK)
		})
	}
}

func TestFaultCloseSignalGraceEndsEarlyOnCloseSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, Delay: time.Hour})
		c, _ := openStream(t, srv, ephemeral)
		recv(t, c)
		if err := c.CloseSend(); err != nil {
			t.Fatal(err)
		}
		wantEnd(t, c, core.CodeOK)
	})
}

func TestFaultAckAboveSentDistance(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultAckAboveSent, Above: 100})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultAckAboveSent, Above: math.MaxInt64})
	c, _ := openStream(t, srv, ephemeral)
	send(t, c, 0, "a")
	send(t, c, 1, "b")
	wantAcks(t, c, 100, math.MaxInt64)
}
