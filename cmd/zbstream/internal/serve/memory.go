package serve

import (
	"math"
	"runtime/debug"
)

// memoryHeadroom is what the Go runtime may use beyond the receive
// budget (the receive buffers in use and those kept idle for reuse, which
// the budget caps): the principals' floors, the store's group commit
// (bbolt holds up to 16 MiB of records, their encodings and the leaves it
// rewrites), gRPC's fixed per-call windows and buffers, the admin
// endpoint's pages, goroutines, and the collector's own headroom. See
// docs/server.md, "Memory".
const memoryHeadroom = 128 << 20

// setMemoryLimit sets the Go runtime's soft memory limit to the
// receive budget plus memoryHeadroom, or keeps the limit the runtime
// has (GOMEMLIMIT) if it is lower. The server's live memory is bounded by
// its configuration; without a limit the collector lets the heap grow to
// twice the live memory before it runs (GOGC=100), so a server holding a
// full budget would take twice it: a GOMEMLIMIT above the limit, or "off",
// does not lift it (issue 25: a server left without its limit took 891 MiB
// of anonymous memory under 64 calls of 8 MiB messages, 874 MiB measured
// here with GOMEMLIMIT=off, against 378 MiB with it). The memory engine
// keeps every record in memory, outside any bound, so it gets no limit
// (the collector would run without end once the stored records reach it).
// It returns the limit in force (0: none set by the server).
func setMemoryLimit(engine string, budget int64) int64 {
	if engine == "memory" {
		return 0
	}
	limit := int64(math.MaxInt64)
	if budget < math.MaxInt64-memoryHeadroom {
		limit = budget + memoryHeadroom
	}
	if cur := debug.SetMemoryLimit(-1); cur < limit {
		return cur
	}
	debug.SetMemoryLimit(limit)
	return limit
}
