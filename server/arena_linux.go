package server

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms where
// Linux has them (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// mapChunk maps n bytes (a multiple of hugePage) of anonymous memory
// aligned to hugePage, so that all of it can be huge pages, and asks for
// them (MADV_HUGEPAGE: transparent_hugepage's default setting, "madvise",
// gives them only on request). It returns nil if mapping fails.
func mapChunk(n int) []byte {
	size := uintptr(n + hugePage)
	p, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil
	}
	// Keep the aligned n bytes, unmap the rest (the raw calls: x/sys's
	// Munmap takes only whole mappings).
	start := uintptr(p)
	head := (hugePage - start%hugePage) % hugePage
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := size - head - uintptr(n); tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, head+uintptr(n)), tail)
	}
	c := unsafe.Slice((*byte)(unsafe.Add(p, head)), n)
	_ = unix.Madvise(c, unix.MADV_HUGEPAGE) // a hint: small pages work too
	return c
}

// unmapChunk unmaps a chunk of mapChunk.
func unmapChunk(c []byte) {
	_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(c)), uintptr(len(c)))
}
