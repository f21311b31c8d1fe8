package io

import "github.com/zbstream/zbstream/core"

// slab hands out slices of Ts from a queue of blocks, in order, and takes
// them back in the same order as the offsets they were handed out for
// become durable: the allocation pattern of a stream's window, where calls
// are accepted at the back and completed at the front. Taking is a bump of
// an index; giving back recycles whole blocks.
//
// A slab is not safe for concurrent use: the stream's mutex guards it.
type slab[T any] struct {
	size     int // the length of a standard block
	maxSpare int // emptied standard blocks kept for reuse
	limit    int // the most blocks in use at once (fits); 0: no limit
	// scrub, if set, clears Ts given back before they are taken again
	// (see clearHeaders: a header slot must not keep a stale pointer).
	scrub  func([]T)
	alloc  func(n int) []T // a new block of at least n Ts
	free   func([]T)       // gives a block back for good
	blocks []*block[T]     // blocks holding live data, oldest first; the last one is being filled
	spare  []*block[T]     // emptied standard blocks
}

// block is one piece of a slab's memory.
type block[T any] struct {
	buf  []T
	used int
	last int64 // the highest offset with data in buf; core.NoOffset while none
	// loan is what transports borrowed of buf (a slab of lent memory
	// only: arena.lent): a block is reused only once all is returned.
	loan Loan
}

// reusable reports whether nothing borrowed from b is still out.
func (b *block[T]) reusable() bool { return !b.loan.outstanding() }

// slabMark is where a slab stood before an ingest call took from it: undo
// returns to it when the machine refuses the call.
type slabMark struct{ blocks, used int }

func newSlab[T any](size, maxSpare int, alloc func(int) []T, free func([]T)) slab[T] {
	return slab[T]{size: size, maxSpare: maxSpare, alloc: alloc, free: free}
}

// mark returns where the slab stands now.
func (s *slab[T]) mark() slabMark {
	m := slabMark{blocks: len(s.blocks)}
	if m.blocks > 0 {
		m.used = s.blocks[m.blocks-1].used
	}
	return m
}

// fits reports whether take(n) can be served within the slab's limit: by
// the block being filled, or by one more standard block.
func (s *slab[T]) fits(n int) bool {
	if k := len(s.blocks); k > 0 && len(s.blocks[k-1].buf)-s.blocks[k-1].used >= n {
		return true
	}
	return n <= s.size && (s.limit == 0 || len(s.blocks) < s.limit)
}

// take returns n Ts that nobody else uses until they are given back. A
// request larger than a standard block gets a block of its own.
func (s *slab[T]) take(n int) []T {
	if k := len(s.blocks); k > 0 {
		if b := s.blocks[k-1]; len(b.buf)-b.used >= n {
			p := b.buf[b.used : b.used+n : b.used+n]
			b.used += n
			return p
		}
	}
	b := s.newBlock(n)
	b.used = n
	s.blocks = append(s.blocks, b)
	return b.buf[:n:n]
}

func (s *slab[T]) newBlock(n int) *block[T] {
	if n <= s.size {
		if k := len(s.spare); k > 0 {
			b := s.spare[k-1]
			s.spare[k-1] = nil
			s.spare = s.spare[:k-1]
			return b
		}
		n = s.size
	}
	return &block[T]{buf: s.alloc(n), last: core.NoOffset}
}

// commit records that everything taken since m belongs to offset off.
func (s *slab[T]) commit(m slabMark, off int64) {
	i := m.blocks - 1
	if i < 0 || s.blocks[i].used == m.used {
		i++ // the block current at m got nothing from this call
	}
	for ; i < len(s.blocks); i++ {
		s.blocks[i].last = off
	}
}

// undo gives back everything taken since m: the machine refused the call.
func (s *slab[T]) undo(m slabMark) {
	for len(s.blocks) > m.blocks {
		k := len(s.blocks) - 1
		s.recycle(s.blocks[k])
		s.blocks[k] = nil
		s.blocks = s.blocks[:k]
	}
	if m.blocks > 0 {
		b := s.blocks[m.blocks-1]
		s.scrubbed(b.buf[m.used:b.used])
		b.used = m.used
	}
}

// scrubbed clears p, Ts given back, when the slab scrubs.
func (s *slab[T]) scrubbed(p []T) {
	if s.scrub != nil {
		s.scrub(p)
	}
}

// giveBack recycles every block whose data all lies at or below floor, the
// highest durable offset. The caller makes sure nothing still reads them.
func (s *slab[T]) giveBack(floor int64) {
	// A block with data has its last offset set (between ingest calls); an
	// empty one (last NoOffset, below any floor) holds nothing and goes too:
	// the block kept after a full drain, when the next call needed a block
	// of its own.
	n := 0
	for n < len(s.blocks) && s.blocks[n].last <= floor {
		n++
	}
	if n == 0 {
		return
	}
	if cur := s.blocks[n-1]; n == len(s.blocks) && len(cur.buf) == s.size && cur.reusable() {
		// Everything is durable: keep the block being filled and fill it
		// again from its start, so that a stream whose window keeps
		// draining stays within one block.
		s.scrubbed(cur.buf[:cur.used])
		cur.used, cur.last = 0, core.NoOffset
		n--
	}
	for i := range n {
		s.recycle(s.blocks[i])
	}
	k := copy(s.blocks, s.blocks[n:])
	clear(s.blocks[k:])
	s.blocks = s.blocks[:k]
}

// recycle keeps an emptied standard block for reuse, or frees it. A block
// of lent memory that a transport still holds is dropped instead: it is
// heap memory (only the lent slab's blocks are ever lent, so nothing needs
// freeing), which the collector frees once the transport lets go, and it
// is never written again.
func (s *slab[T]) recycle(b *block[T]) {
	if !b.reusable() {
		b.buf = nil
		return
	}
	if len(b.buf) == s.size && len(s.spare) < s.maxSpare {
		s.scrubbed(b.buf[:b.used]) // kept to be taken again
		b.used, b.last = 0, core.NoOffset
		s.spare = append(s.spare, b)
		return
	}
	s.free(b.buf)
	b.buf = nil
}

// freeAll frees every block. The slab must not be used afterwards.
func (s *slab[T]) freeAll() {
	for _, b := range s.blocks {
		s.free(b.buf)
	}
	for _, b := range s.spare {
		s.free(b.buf)
	}
	s.blocks, s.spare = nil, nil
}
