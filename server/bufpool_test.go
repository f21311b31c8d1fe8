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
// stay mapped), small ones are never pooled, and no more than poolIdleMax
// bytes wait idle.
func TestBufPoolReuse(t *testing.T) {
	var bp bufPool
	p := bp.get(100 << 10)
	if len(p.b) != 100<<10 || cap(p.b) != classSize(sizeClass(100<<10)) {
		t.Fatalf("len %d cap %d", len(p.b), cap(p.b))
	}
	p.free()
	q := bp.get(100<<10 - 7) // same class
	if &q.b[0] != &p.b[0] || len(q.b) != 100<<10-7 {
		t.Fatal("a buffer given back was not reused")
	}
	if small := bp.get(pooledMin - 1); small.class != -1 {
		t.Fatalf("a %d-byte buffer is pooled", pooledMin-1)
	}

	// Give back more than poolIdleMax: the excess is left to the collector.
	n := 2 * poolIdleMax / (1 << 20)
	bufs := make([]*pooledBuf, n)
	for i := range bufs {
		bufs[i] = bp.get(1 << 20)
	}
	for _, b := range bufs {
		b.free()
	}
	bp.mu.Lock()
	idle, kept := bp.size, len(bp.idle[sizeClass(1<<20)])
	bp.mu.Unlock()
	if idle > poolIdleMax || kept != poolIdleMax/(1<<20) {
		t.Fatalf("%d bytes idle, %d buffers of 1 MiB kept; want at most %d, %d", idle, kept, poolIdleMax, poolIdleMax/(1<<20))
	}
}
