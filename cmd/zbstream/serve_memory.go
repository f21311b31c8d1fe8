package main

import (
	"os"
	"runtime/debug"
)

// serveMemoryHeadroom is what the server may use beyond its receive
// budget: the store's group commit (bbolt holds up to 16 MiB of records
// and their dirty pages), gRPC's fixed per-call windows and buffers, the
// admin endpoint's pages, goroutines. See docs/server.md, "Memory".
const serveMemoryHeadroom = 128 << 20

// setServeMemoryLimit sets the Go runtime's soft memory limit to the
// receive budget plus serveMemoryHeadroom, unless GOMEMLIMIT is set. The
// server's live memory is bounded by its configuration; without a limit
// the collector lets the heap grow to twice the live memory before it
// runs (GOGC=100), so a server holding a full budget would take twice it.
// The memory engine keeps every record in memory, outside any bound, so
// it gets no limit (the collector would run without end once the stored
// records reach it). It returns the limit set (0: none, or GOMEMLIMIT's).
func setServeMemoryLimit(engine string, budget int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" || engine == "memory" {
		return 0
	}
	limit := budget + serveMemoryHeadroom
	debug.SetMemoryLimit(limit)
	return limit
}
