package server

import (
	"context"
	"runtime"
	"testing"
)

func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := t.Context()
	if n, ok := b.acquire(ctx, 60); !ok || n != 60 {
		t.Fatalf("acquire 60: %d %v", n, ok)
	}
	// A request larger than the whole budget takes the whole budget, once
	// it is free; requests are served in order.
	big := make(chan int64)
	go func() { n, _ := b.acquire(ctx, 500); big <- n }()
	for {
		b.mu.Lock()
		waiting := len(b.waiters)
		b.mu.Unlock()
		if waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	small := make(chan bool)
	go func() { _, ok := b.acquire(ctx, 10); small <- ok }()
	for {
		b.mu.Lock()
		waiting := len(b.waiters)
		b.mu.Unlock()
		if waiting == 2 {
			break
		}
		runtime.Gosched()
	}
	// 40 are free, but the small request queues behind the big one.
	if b.inUse() != 60 {
		t.Fatalf("in use %d", b.inUse())
	}
	b.release(60)
	if n := <-big; n != 100 {
		t.Fatalf("big took %d, want the whole budget", n)
	}
	b.release(100)
	if !<-small {
		t.Fatal("small not served")
	}
	b.release(10)
	// A cancelled waiter takes nothing.
	b.acquire(ctx, 100)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if n, ok := b.acquire(cctx, 1); ok || n != 0 {
		t.Fatalf("cancelled acquire: %d %v", n, ok)
	}
	b.release(100)
	if b.inUse() != 0 || len(b.waiters) != 0 {
		t.Fatalf("in use %d, waiters %d", b.inUse(), len(b.waiters))
	}
}
