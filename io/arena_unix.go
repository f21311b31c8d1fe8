//go:build unix

package io

import "syscall"

// mapBytes returns n bytes of anonymous memory mapped for this block alone,
// outside the Go heap: the collector neither scans it nor counts it. When
// the mapping fails it falls back to the heap, which unmapBytes leaves to
// the collector.
func mapBytes(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// unmapBytes releases a block from mapBytes. A block that came from the
// heap is not a mapping: Munmap refuses it, and the collector frees it.
func unmapBytes(b []byte) {
	_ = syscall.Munmap(b)
}
