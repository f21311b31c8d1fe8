package server

import (
	"math/bits"
	"sync"
)

// Large buffers are reused: the receive buffers (serverCodec copies each
// request out of gRPC's buffers into one) and the bolt engine's encoded
// batches. A fresh large allocation often means fresh pages from the
// kernel (the runtime gives memory back when the heap shrinks), and on
// the 2-core VM the benchmarks run on a page fault costs about 13 µs per
// 4 KiB: that one copy per request was most of the server's CPU (issue 21:
// "70% of the CPU in copying" was page faults in memmove, not the copy).
// A buffer given back once its bytes are no longer used stays mapped and
// is taken again without a fault.
//
// Buffers under pooledMin come from the allocator, whose small size
// classes are reused without faults. Larger ones are kept by size class,
// four classes per power of two, so that a buffer is at most a quarter
// larger than asked for (the receive budget counts a buffer's capacity).
// At most poolIdleMax bytes wait idle in a pool, the most recently given
// back first (their pages are the likeliest to be resident); more are left
// to the collector. They are memory beyond the receive budget, within the
// server's headroom (cmd/zbstream: serveMemoryHeadroom). A Server has one
// pool (its receive buffers), a BoltStore another (its encodings): no
// pool is shared between instances.

const (
	pooledMin   = 32 << 10
	poolIdleMax = 32 << 20
	poolClasses = 4 * 40 // up to 2^42 bytes, beyond any message
)

// pooledBuf is a buffer of a pool: b has the length asked for.
type pooledBuf struct {
	b     []byte
	class int      // -1: not pooled
	pool  *bufPool // where free gives it back
}

// bufPool is the idle buffers, by class. The zero value is an empty pool.
type bufPool struct {
	mu   sync.Mutex
	idle [poolClasses][]*pooledBuf
	size int // bytes idle
}

// sizeClass returns the class of the smallest pooled size that holds n
// (n >= pooledMin): the sizes are (m+1) << k for m in 4..7.
func sizeClass(n int) int {
	k := bits.Len(uint(n-1)) - 3 // 4 << k <= n-1 < 8 << k
	m := (n - 1) >> k            // 4..7
	return 4*k + (m - 4)
}

// classSize is the size of the buffers of class c.
func classSize(c int) int {
	k, m := c/4, c%4+4
	return (m + 1) << k
}

// get returns a buffer of length n (its contents undefined), reused if
// one is idle.
func (bp *bufPool) get(n int) *pooledBuf {
	c := -1
	if n >= pooledMin {
		c = sizeClass(n)
	}
	if c < 0 || c >= poolClasses {
		return &pooledBuf{b: make([]byte, n), class: -1}
	}
	bp.mu.Lock()
	if l := len(bp.idle[c]); l > 0 {
		p := bp.idle[c][l-1]
		bp.idle[c][l-1] = nil
		bp.idle[c] = bp.idle[c][:l-1]
		bp.size -= cap(p.b)
		bp.mu.Unlock()
		p.b = p.b[:n]
		return p
	}
	bp.mu.Unlock()
	return &pooledBuf{b: make([]byte, n, classSize(c)), class: c, pool: bp}
}

// free gives p back: nothing may use its bytes afterwards. It accepts nil.
func (p *pooledBuf) free() {
	if p == nil || p.class < 0 {
		return
	}
	bp := p.pool
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.size+cap(p.b) > poolIdleMax {
		return // left to the collector
	}
	bp.idle[p.class] = append(bp.idle[p.class], p)
	bp.size += cap(p.b)
}
