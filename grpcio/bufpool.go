package grpcio

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// encodeBuffers is the pool a transport's encodings come from when gRPC
// alone sees them (encodingPool): buffers in power-of-two sizes, given
// back by gRPC once its transport has written them, and handed out again
// as they are, not cleared.
//
// Why not gRPC's default pool: it clears every buffer it hands out, all of
// its capacity, in case the taker reads bytes it did not write. An
// encoding writes every byte it sends before gRPC reads it (chunks append
// from length 0, and nothing reads past a buffer's length), so the
// clearing is a second pass over every byte sent: measured in
// BenchmarkEndToEnd's batches of 1 KiB records, some 10% of the client's
// CPU went to it.
//
// Each transport has its own (no state shared between clients); the
// buffers live in sync.Pools, which the garbage collector empties when
// they sit unused.
type encodeBuffers struct {
	classes [encodeClasses]sync.Pool // class k: buffers of capacity 1 << (k + encodeMinShift)
}

// The smallest class is above gRPC's pooling threshold (mem's
// BufferPoolingThreshold, 1 KiB): gRPC gives a buffer back to its pool
// only if its capacity is larger, and treats a smaller one as a plain
// slice that the collector frees. Classes of 256 B to 1 KiB were handed
// out and never came back: every call of a small record allocated one,
// and boxed it as a mem.SliceBuffer too. An encoding of a few bytes now
// takes a 2 KiB buffer, and gets it back.
const (
	encodeMinShift = 11 // the smallest class: 2 KiB
	encodeMaxShift = 24 // the largest: 16 MiB, above the per-call limit
	encodeClasses  = encodeMaxShift - encodeMinShift + 1
)

var _ mem.BufferPool = (*encodeBuffers)(nil)

// encodeClass returns the class whose buffers hold n bytes, and false when n is
// larger than the largest class.
func encodeClass(n int) (int, bool) {
	if n <= 1<<encodeMinShift {
		return 0, true
	}
	shift := bits.Len(uint(n - 1)) // 1 << shift >= n
	if shift > encodeMaxShift {
		return 0, false
	}
	return shift - encodeMinShift, true
}

// Get returns a buffer of length n, its contents whatever they were.
func (p *encodeBuffers) Get(n int) *[]byte {
	k, ok := encodeClass(n)
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if b, _ := p.classes[k].Get().(*[]byte); b != nil {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(k+encodeMinShift))
	return &b
}

// Put takes back a buffer of Get; one of another capacity (larger than the
// largest class) is left to the garbage collector.
func (p *encodeBuffers) Put(b *[]byte) {
	c := cap(*b)
	k, ok := encodeClass(c)
	if !ok || c != 1<<(k+encodeMinShift) {
		return
	}
	*b = (*b)[:0]
	p.classes[k].Put(b)
}
