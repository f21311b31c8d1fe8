//go:build unix

package io

import (
	"syscall"
	"unsafe"
)

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

// headerSize is the size of one record header, a []byte.
const headerSize = int(unsafe.Sizeof([]byte(nil)))

// mapHeaders returns n record headers in a mapping of their own, as
// mapBytes does for bytes: the collector neither counts them nor scans
// them at every cycle, as it scans any heap memory that holds pointers.
// Not scanning them is safe because nothing they point to needs them to
// stay alive: each points into a block of record bytes, which is a
// mapping, or a heap block a slab itself holds (mapBytes' fallback, or a
// block of lent memory, held while its calls are), or is an empty record
// (no memory at all). Slots given back are cleared before they are
// written again (clearHeaders): a stale pointer into a heap block freed
// since would crash the next store into the slot.
func mapHeaders(n int) [][]byte {
	b, err := syscall.Mmap(-1, 0, n*headerSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([][]byte, n)
	}
	return unsafe.Slice((*[]byte)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// unmapHeaders releases a block from mapHeaders; as unmapBytes, it leaves
// one from the heap to the collector.
func unmapHeaders(h [][]byte) {
	if cap(h) == 0 {
		return
	}
	_ = syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), cap(h)*headerSize))
}
