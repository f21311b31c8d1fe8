package memtransport_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestCloseSendEndsAfterQueuedAcks(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, _ := openStream(t, srv, persistent)
	send(t, c, 0, "a")
	send(t, c, 1, "b")
	if err := c.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseSend(); err != nil {
		t.Fatalf("second CloseSend: %v", err)
	}
	wantAcks(t, c, 0, 1)
	wantEnd(t, c, core.CodeOK)
	wantEnd(t, c, core.CodeOK) // and again
	if err := c.Send(streamCall(2)); err == nil {
		t.Fatal("Send after CloseSend succeeded")
	}
}

func TestAbortUnblocksRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		c, _ := openStream(t, srv, ephemeral)
		done := make(chan error)
		go func() {
			_, err := c.Recv()
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Recv returned %v with nothing to read", err)
		default:
		}
		c.Abort()
		c.Abort() // idempotent
		wantCode(t, <-done, core.CodeCanceled)
		wantCode(t, c.Send(streamCall(0)), core.CodeCanceled)
	})
}

func TestAbortUnblocksSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{QueueSize: 2})
		c, _ := openStream(t, srv, ephemeral)
		send(t, c, 0, "a")
		send(t, c, 1, "b") // the queue is full now
		done := make(chan error)
		go func() { done <- c.Send(streamCall(2)) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Send returned %v with a full queue", err)
		default:
		}
		c.Abort()
		wantCode(t, <-done, core.CodeCanceled)
		wantEnd(t, c, core.CodeCanceled)
	})
}

func TestSendBlocksUntilRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{QueueSize: 1})
		c, _ := openStream(t, srv, ephemeral)
		send(t, c, 0, "a")
		done := make(chan error)
		go func() { done <- c.Send(streamCall(1)) }()
		synctest.Wait()
		wantAck(t, c, 0)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		wantAck(t, c, 1)
	})
}

func TestContextEndsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		c, err := srv.Transport().Open(ctx, ephemeral)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, c)
		done := make(chan error)
		go func() {
			_, err := c.Recv()
			done <- err
		}()
		synctest.Wait()
		cancel()
		wantCode(t, <-done, core.CodeCanceled)
		wantCode(t, c.Send(streamCall(0)), core.CodeCanceled)
		c.Abort()

		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err = srv.Transport().Open(ctx, ephemeral)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, c)
		start := time.Now()
		wantEnd(t, c, core.CodeDeadlineExceeded)
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("ended after %v", d)
		}

		_, err = srv.Transport().Open(ctx, ephemeral)
		wantCode(t, err, core.CodeDeadlineExceeded)
	})
}

func TestCompletedConnectionLeavesNothing(t *testing.T) {
	// The context of a connection that ended is released: no callback or
	// goroutine stays behind when the context ends later.
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		c, err := srv.Transport().Open(ctx, ephemeral)
		if err != nil {
			t.Fatal(err)
		}
		recv(t, c)
		if err := c.CloseSend(); err != nil {
			t.Fatal(err)
		}
		wantEnd(t, c, core.CodeOK)
		cancel()
		synctest.Wait()
		wantEnd(t, c, core.CodeOK) // the end does not change
	})
}

// With delayed acks and a client that does not read, a blocked Send is
// durably blocked: virtual time goes on, so a timeout of the client (here
// an Abort after a minute) can fire and unblock it.
func TestBlockedSendLetsVirtualTimeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{QueueSize: 1})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, Delay: time.Second, Times: memtransport.Unlimited})
		c, _ := openStream(t, srv, ephemeral)
		time.AfterFunc(time.Minute, c.Abort)
		start := time.Now()
		for i := int64(0); c.Send(streamCall(i)) == nil; i++ {
		}
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("Send unblocked after %v", d)
		}
	})
}

func TestFenceUnblocksSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{QueueSize: 2})
		c, r := openStream(t, srv, persistent)
		send(t, c, 0, "a")
		send(t, c, 1, "b")
		done := make(chan error)
		go func() { done <- c.Send(streamCall(2)) }()
		synctest.Wait()
		openStream(t, srv, resumeOf(r.StreamID))
		wantCode(t, <-done, core.CodeAborted)
		wantAcks(t, c, 0, 1)
		wantEnd(t, c, core.CodeAborted)
	})
}
