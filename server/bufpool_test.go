package server

import "testing"

// Every pooled size class holds what it is chosen for, and is at most a
// quarter larger than it.
func TestSizeClass(t *testing.T) {
	for n := pooledMin; n <= 12<<20; n += 1 + n/997 {
		c := sizeClass(n)
		size := classSize(c)
		if size < n || size > n+n/4+1 {
			t.Fatalf("n=%d: class %d of %d bytes", n, c, size)
		}
		if c > 0 && classSize(c-1) >= n {
			t.Fatalf("n=%d: class %d of %d bytes, the one below (%d) holds it", n, c, size, classSize(c-1))
		}
	}
}

// A buffer given back is taken again for a size of its class (its pages
// stay mapped), small ones are never pooled, an empty pool keeps nothing
// until it has a cap, and no more than the cap waits idle: buffers given
// back beyond it are left to the collector, and a lower cap drops idle
// buffers until they fit.
func TestBufPoolReuse(t *testing.T) {
	var bp bufPool
	p := bp.get(100 << 10)
	p.free()
	if bp.idleBytes() != 0 {
		t.Fatalf("a pool without a cap keeps %d bytes idle", bp.idleBytes())
	}
	const limit = 32 << 20
	bp.setMax(limit)
	p = bp.get(100 << 10)
	if len(p.b) != 100<<10 || cap(p.b) != classSize(sizeClass(100<<10)) {
		t.Fatalf("len %d cap %d", len(p.b), cap(p.b))
	}
	p.free()
	q := bp.get(100<<10 - 7) // same class
	if &q.b[0] != &p.b[0] || len(q.b) != 100<<10-7 {
		t.Fatal("a buffer given back was not reused")
	}
	q.free()
	if small := bp.get(pooledMin - 1); small.class != -1 {
		t.Fatalf("a %d-byte buffer is pooled", pooledMin-1)
	}

	// Give back twice the cap: the excess is left to the collector (the
	// 112 KiB buffer above is idle too, so one 1 MiB buffer fewer fits).
	n := 2 * limit / (1 << 20)
	bufs := make([]*pooledBuf, n)
	for i := range bufs {
		bufs[i] = bp.get(1 << 20)
	}
	for _, b := range bufs {
		b.free()
	}
	bp.mu.Lock()
	kept := len(bp.idle[sizeClass(1<<20)])
	bp.mu.Unlock()
	if idle := bp.idleBytes(); idle > limit || kept < limit/(1<<20)-1 {
		t.Fatalf("%d bytes idle, %d buffers of 1 MiB kept; want at most %d bytes, and at least %d buffers", idle, kept, limit, limit/(1<<20)-1)
	}

	// A lower cap drops what is over it; 0 drops everything.
	bp.setMax(5 << 20)
	if idle := bp.idleBytes(); idle > 5<<20 || idle < 4<<20 {
		t.Fatalf("%d bytes idle under a cap of 5 MiB", idle)
	}
	bp.setMax(0)
	if idle := bp.idleBytes(); idle != 0 {
		t.Fatalf("%d bytes idle under a cap of 0", idle)
	}
	r := bp.get(1 << 20)
	r.free()
	if bp.idleBytes() != 0 {
		t.Fatal("a buffer kept under a cap of 0")
	}
}

// The server's receive buffers: the buffers in use (each held in the
// receive budget, as a receiver holds it) and the idle ones never add up
// to more than the budget, and at most an eighth of it waits idle. A
// buffer given back while the budget is spent is not kept; once the
// budget is free again, buffers given back are, up to the share.
func TestBudgetCapsPool(t *testing.T) {
	const total, size = 64 << 20, 1 << 20
	b := newBudget(total)
	bp := new(bufPool)
	b.capPool(bp)
	check := func(when string) {
		t.Helper()
		if idle, held := int64(bp.idleBytes()), b.inUse(); idle+held > total || idle > total/poolShareDiv {
			t.Fatalf("%s: %d bytes idle, %d held: over the budget of %d or its share of %d", when, idle, held, total, total/poolShareDiv)
		}
	}
	// Fill the budget with buffers in use, giving each back once to the
	// pool first (as a committed request's buffer is): whatever is idle
	// must leave room for what is held.
	var inUse []*pooledBuf
	for b.inUse()+size <= total {
		if _, ok := b.acquire(t.Context(), "p", size); !ok {
			t.Fatal("acquire")
		}
		p := bp.get(size)
		inUse = append(inUse, p)
		check("filling")
		bp.get(size).free() // another buffer, given back
		check("filling, one given back")
	}
	// Spent: a buffer given back is left to the collector.
	bp.get(size).free()
	if idle := bp.idleBytes(); idle != 0 {
		t.Fatalf("budget spent: %d bytes idle", idle)
	}
	// Committed: the bytes go back to the budget, then the buffers to the
	// pool, which keeps its share.
	for _, p := range inUse {
		b.release("p", size)
		p.free()
		check("releasing")
	}
	if idle := bp.idleBytes(); idle != total/poolShareDiv {
		t.Fatalf("budget free: %d bytes idle, want the share, %d", idle, total/poolShareDiv)
	}
	// Taking the budget again drops idle buffers as it goes.
	for b.inUse()+size <= total {
		b.acquire(t.Context(), "p", size)
		check("taking")
	}
}
