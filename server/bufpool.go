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
// larger than asked for (the receive budget counts a buffer's capacity),
// and the one given back last is taken first (its pages are the likeliest
// to be resident). An idle buffer is memory the process keeps, so every
// pool has a cap (setMax) and counts its idle bytes: a buffer given back
// beyond the cap is left to the collector, and lowering the cap drops idle
// buffers until they fit. The server's pool (its receive buffers) is
// capped by its receive budget (budget.go): idle buffers only fill bytes
// of the budget that nobody holds, up to an eighth of it, so that the
// buffers in use and the idle ones together stay within the budget. A
// BoltStore's pool (its encodings) is capped at one group's bytes. No pool
// is shared between instances.

const (
	pooledMin   = 32 << 10
	poolClasses = 4 * 40 // up to 2^42 bytes, beyond any message
)

// pooledBuf is a buffer of a pool: b has the length asked for.
type pooledBuf struct {
	b     []byte
	class int      // -1: not pooled
	pool  *bufPool // where free gives it back
}

// bufPool is the idle buffers, by class. The zero value is an empty pool
// that keeps nothing idle until setMax raises its cap.
type bufPool struct {
	mu   sync.Mutex
	idle [poolClasses][]*pooledBuf
	size int // bytes idle
	max  int // the most bytes kept idle
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
// Beyond the pool's cap, p is left to the collector.
func (p *pooledBuf) free() {
	if p == nil || p.class < 0 {
		return
	}
	bp := p.pool
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.size+cap(p.b) > bp.max {
		return
	}
	bp.idle[p.class] = append(bp.idle[p.class], p)
	bp.size += cap(p.b)
}

// setMax caps the bytes kept idle at n (negative: 0), dropping idle
// buffers, the largest first, until they fit.
func (bp *bufPool) setMax(n int) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.max = max(n, 0)
	for c := poolClasses - 1; c >= 0 && bp.size > bp.max; c-- {
		for l := len(bp.idle[c]); l > 0 && bp.size > bp.max; l-- {
			bp.size -= cap(bp.idle[c][l-1].b)
			bp.idle[c][l-1] = nil
			bp.idle[c] = bp.idle[c][:l-1]
		}
	}
}

// idleBytes reports the bytes kept idle.
func (bp *bufPool) idleBytes() int {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return bp.size
}
