//go:build !unix

package io

// mapBytes returns n bytes from the Go heap: this platform has no anonymous
// mappings in package syscall, so the arena's copies count as live heap.
func mapBytes(n int) []byte { return make([]byte, n) }

// unmapBytes leaves a block to the collector.
func unmapBytes([]byte) {}

// mapHeaders returns n record headers from the Go heap (see mapBytes).
func mapHeaders(n int) [][]byte { return make([][]byte, n) }

// unmapHeaders leaves a block of headers to the collector.
func unmapHeaders([][]byte) {}
