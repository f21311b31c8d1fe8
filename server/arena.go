package server

// arena holds the record bytes a MemoryStore keeps, copied into large
// chunks instead of one heap allocation per batch. The memory engine keeps
// everything it is sent, so each stored byte lands on a page the process
// never touched: on Linux the chunks are mapped with transparent huge
// pages (arena_linux.go), one fault per 2 MiB instead of one per 4 KiB,
// which is most of the cost of storing a byte on the VMs the benchmarks
// run on (issue 21, bufpool.go). The chunks are also invisible to the
// garbage collector, which no longer walks a growing heap of records.
//
// An arena is not safe for concurrent use (MemoryStore.mu guards it). Its
// bytes are valid until free.
type arena struct {
	mapped [][]byte // the chunks mapChunk mapped, for free
	tail   []byte   // the unused end of the last chunk
}

const (
	// arenaChunk is the size of a chunk: a multiple of the 2 MiB huge page.
	arenaChunk = 4 << 20
	// arenaLarge is the size from which a record gets memory of its own
	// (from the allocator), so that a chunk's unused end stays small.
	arenaLarge = arenaChunk / 8
)

// copy returns a copy of b in the arena, with its capacity ending with it.
func (a *arena) copy(b []byte) []byte {
	if len(b) >= arenaLarge {
		return append(make([]byte, 0, len(b)), b...)
	}
	if len(b) > len(a.tail) {
		a.tail = mapChunk(arenaChunk)
		if a.tail == nil {
			a.tail = make([]byte, arenaChunk) // mapping failed, or not Linux
		} else {
			a.mapped = append(a.mapped, a.tail)
		}
	}
	n := copy(a.tail, b)
	out := a.tail[:n:n]
	a.tail = a.tail[n:]
	return out
}

// free unmaps the mapped chunks (the collector frees the others); nothing
// may use the arena's bytes afterwards.
func (a *arena) free() {
	for _, c := range a.mapped {
		unmapChunk(c)
	}
	a.mapped, a.tail = nil, nil
}
